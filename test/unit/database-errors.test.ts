import t from 'tap'
import { databaseUnavailable } from '../../src/db/errors.js'
import { unexpected } from '../../src/errors.js'

/** An error as postgres.js raises it (`code`), and as Drizzle wraps it (`cause`). */
const driver = (code: string) => Object.assign(new Error(code), { code })
const wrapped = (code: string) => Object.assign(new Error('Failed query'), { cause: driver(code) })

t.test('the database lost, restarting, failing over or demoted: 503 service_unavailable, sent again', async (t) => {
  for (const code of [
    'CONNECTION_CLOSED',
    'CONNECTION_ENDED',
    'CONNECTION_DESTROYED',
    'CONNECT_TIMEOUT',
    'ECONNREFUSED',
    'ECONNRESET',
    'ETIMEDOUT',
    '57P01', // terminated by an administrator (a failover manager stopping the old primary)
    '57P02', // crash shutdown
    '57P03', // starting up or in recovery
    '53300', // too many connections
    '25006', // a write on a server that is now a standby
    '08006', // connection failure
    '08001'
  ]) {
    t.ok(databaseUnavailable(driver(code)), code)
    t.ok(databaseUnavailable(wrapped(code)), `${code}, wrapped by Drizzle`)
    const answer = unexpected(wrapped(code))
    t.equal(answer.statusCode, 503, code)
    t.equal(answer.code, 'service_unavailable', code)
  }
})

t.test("any other failure is the service's own: 500 server_error", async (t) => {
  for (const err of [
    wrapped('23505'), // a unique violation nobody expected
    wrapped('42P01'), // an undefined table
    wrapped('40001'), // a serialization failure
    driver('UNDEFINED_VALUE'),
    new TypeError('x is undefined'),
    null,
    'text'
  ]) {
    t.notOk(databaseUnavailable(err), String((err as { code?: string } | null)?.code ?? err))
    t.equal(unexpected(err).statusCode, 500)
    t.equal(unexpected(err).code, 'server_error')
  }
})

import t, { type Test } from 'tap'
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { rowsOf } from '../src/db/index.js'
import { ConfigError } from '../src/config.js'
import { COUNT_ALONE_MS } from '../src/plugins/rate-limits.js'
import { buildSharedTestApp, buildTestApp, testConfig, TEST_OPERATOR_KEY } from './helpers/app.js'
import { holdLocks, testDatabaseUrl } from './helpers/database.js'
import { createTenant } from './helpers/graphql.js'

const ONLY_POSTGRES = testDatabaseUrl
  ? false
  : 'the embedded database serves one process, which counts in memory (PostgreSQL only)'
const METRICS_TOKEN = 'metrics-token-for-the-shared-limits-test-0123456789'

const obtainToken = (app: FastifyInstance, remoteAddress = '127.0.0.1', headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/graphql',
    remoteAddress,
    headers,
    payload: { query: `mutation { obtainToken(input: {APIKey: "${TEST_OPERATOR_KEY}"}) { token } }` }
  })

async function metric(app: FastifyInstance, name: string): Promise<number | undefined> {
  const res = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  const line = res.body.split('\n').find((l) => l.startsWith(`${name} `))
  return line === undefined ? undefined : Number(line.split(' ')[1])
}

async function keys(app: FastifyInstance): Promise<string[]> {
  return rowsOf<{ key: string }>(await app.db.execute(sql`select key from rate_limit_counts order by key`)).map(
    (r) => r.key
  )
}

function assertThrottled(
  t: Test,
  res: { statusCode: number; json(): any; headers: Record<string, unknown> },
  what: string
) {
  t.equal(res.statusCode, 429, what)
  t.equal(res.json().code, 'throttled', `${what}: throttled`)
  t.ok(Number(res.headers['retry-after']) >= 1, `${what}: Retry-After`)
}

t.test(
  'two server processes on one database count against one obtainToken limit',
  { skip: ONLY_POSTGRES },
  async (t) => {
    const env = { TOKEN_RATE_LIMIT_PER_MINUTE: '4' }
    const one = await buildTestApp(t, { env })
    const two = await buildTestApp(t, { env, database: one.database })
    for (const [i, app] of [one.app, two.app, one.app, two.app].entries()) {
      t.equal((await obtainToken(app)).statusCode, 200, `call ${i + 1} is allowed`)
    }
    assertThrottled(t, await obtainToken(one.app), 'the 5th call, on the first process')
    assertThrottled(t, await obtainToken(two.app), 'the 6th call, on the second process')
    t.equal((await obtainToken(two.app, '127.0.0.9')).statusCode, 200, 'another address has its own budget')
  }
)

t.test(
  'two server processes on one database count against one organisation limit',
  { skip: ONLY_POSTGRES },
  async (t) => {
    const env = { ORG_RATE_LIMIT_PER_MINUTE: '3' }
    const one = await buildTestApp(t, { env })
    const two = await buildTestApp(t, { env, database: one.database })
    const acme = await createTenant(one.app, 'Acme', 'ACME')
    const list = (app: FastifyInstance) =>
      app.inject({ url: '/v1/data-import/all-account-import-processes/ACME/', headers: { authorization: acme.token } })
    t.equal((await list(one.app)).statusCode, 200)
    t.equal((await list(two.app)).statusCode, 200)
    t.equal((await list(one.app)).statusCode, 200)
    assertThrottled(t, await list(two.app), 'the 4th call, on the second process')
    assertThrottled(t, await list(one.app), 'the 5th call, on the first process')
  }
)

t.test('a limit that is off is not counted anywhere', async (t) => {
  const { app } = await buildTestApp(t)
  const acme = await createTenant(app, 'Acme', 'ACME')
  for (let i = 0; i < 5; i++) {
    const res = await app.inject({
      url: '/v1/data-import/all-account-import-processes/ACME/',
      headers: { authorization: acme.token }
    })
    t.equal(res.statusCode, 200)
  }
  const counted = await keys(app)
  t.same(
    counted.filter((k) => k.startsWith('org:')),
    [],
    'no organisation count in the database: the off limit costs no round trip'
  )
  if (app.database.kind === 'pglite') t.same(counted, [], 'the embedded database counts in memory')
  else {
    t.ok(
      counted.some((k) => k.startsWith('token:')),
      'token requests are counted in the database'
    )
  }
})

t.test(
  'the shared count out of reach: each process counts alone, says so, and never answers 5xx',
  { skip: ONLY_POSTGRES },
  async (t) => {
    const shared = await buildSharedTestApp(t)
    const { app, logs } = await buildTestApp(t, {
      database: shared.database,
      captureLogs: true,
      env: { TOKEN_RATE_LIMIT_PER_MINUTE: '2', METRICS_TOKEN }
    })
    t.equal(await metric(app, 'amis_rate_limits_shared'), 1, 'counted in the database at first')
    // Another session holds the table: the count cannot be made.
    const release = await holdLocks(t, shared.url!, (s) => s`lock table rate_limit_counts in access exclusive mode`)
    const first = await obtainToken(app)
    t.equal(first.statusCode, 200, 'answered, counted by this process alone')
    t.equal(await metric(app, 'amis_rate_limits_shared'), 0, '/metrics says it counts alone')
    t.equal(await metric(app, 'amis_rate_limits_counted_alone_total'), 1, 'and how many times it began to')
    t.match(logs(), /rate limits: the shared count cannot be reached/, 'a warning in the log')
    t.equal((await obtainToken(app)).statusCode, 200, 'the 2nd call, counted alone')
    assertThrottled(t, await obtainToken(app), 'the 3rd call, over the limit counted alone')
    await release()
    await new Promise((resolve) => setTimeout(resolve, COUNT_ALONE_MS + 200))
    t.equal((await obtainToken(app)).statusCode, 200, 'the database again: its own count had one call')
    t.equal(await metric(app, 'amis_rate_limits_shared'), 1, 'counted in the database again')
  }
)

t.test('TRUST_PROXY: behind a trusted proxy the client is the address X-Forwarded-For names', async (t) => {
  const proxied = await buildTestApp(t, {
    env: { TOKEN_RATE_LIMIT_PER_MINUTE: '1', TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' }
  })
  const from = (address: string, peer = '127.0.0.1') => obtainToken(proxied.app, peer, { 'x-forwarded-for': address })
  t.equal((await from('203.0.113.5')).statusCode, 200, 'a client behind the proxy')
  assertThrottled(t, await from('203.0.113.5'), 'the same client again')
  t.equal((await from('203.0.113.6')).statusCode, 200, 'another client behind the same proxy has its own budget')
  t.equal((await from('203.0.113.7', '10.1.2.3')).statusCode, 200, 'a client through a proxy in the range')
  t.equal((await from('203.0.113.8', '10.1.2.3')).statusCode, 200, 'and another through it')
  t.equal((await from('203.0.113.9', '192.0.2.1')).statusCode, 200, 'a peer that is no proxy: itself the client')
  assertThrottled(t, await from('203.0.113.10', '192.0.2.1'), 'its X-Forwarded-For is not believed')

  const direct = await buildTestApp(t, { env: { TOKEN_RATE_LIMIT_PER_MINUTE: '1' } })
  t.equal((await obtainToken(direct.app, '127.0.0.1', { 'x-forwarded-for': '203.0.113.5' })).statusCode, 200)
  assertThrottled(
    t,
    await obtainToken(direct.app, '127.0.0.1', { 'x-forwarded-for': '203.0.113.6' }),
    'without TRUST_PROXY, X-Forwarded-For changes nothing'
  )
})

t.test('TRUST_PROXY takes addresses and CIDR ranges only', async (t) => {
  for (const value of ['loopback', '10.0.0.0/33', '300.1.1.1', '::1/129', '10.0.0.1/8/2']) {
    t.throws(() => testConfig({ TRUST_PROXY: value }), ConfigError, value)
  }
  t.same(testConfig({ TRUST_PROXY: ' 10.0.0.1 , ::1, fd00::/8 ' }).trustProxy, ['10.0.0.1', '::1', 'fd00::/8'])
  t.same(testConfig().trustProxy, [])
})

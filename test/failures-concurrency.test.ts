import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'drizzle-orm'
import { buildSharedTestApp } from './helpers/app.js'
import { exampleAccount } from './helpers/accounts.js'
import { rowsOf, testDatabaseUrl } from './helpers/database.js'
import { createTenant } from './helpers/graphql.js'
import { startServers, type Running } from './helpers/server.js'

/**
 * Failure records under concurrency, from two server processes on one PostgreSQL database:
 * concurrent failures keep one record counting every attempt, and the record ends in the state of
 * the last answer — a success never leaves a stale failure behind.
 */

const good = exampleAccount({ external_account_number: 'RACE-1' })
const bad = exampleAccount({ external_account_number: 'RACE-1', customers: [{ ...exampleAccount().customers[0], landline: 'abcde' }] })

function validate(server: Running, token: string, account: unknown) {
  return fetch(`${server.url}/v1/data-import/validate-account/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(account)
  }).then(async (res) => {
    await res.arrayBuffer()
    return { status: res.status, at: performance.now() }
  })
}

if (!testDatabaseUrl) {
  t.skip('failure records under concurrency are tested against the PostgreSQL server (set TEST_DATABASE_URL)', () => {})
} else {
  t.test('two server processes, one account, many answers at once', async (t) => {
    const { app, database, url } = await buildSharedTestApp(t)
    const tenant = await createTenant(app, 'Acme', 'ACME_ENERGY')
    const servers = await startServers(t, url!, 2)
    const record = async () => rowsOf<{ attempts: number }>(await database.db.execute(sql`select attempts from import_failures
      where external_account_number = 'RACE-1' and step = 'validate'`))

    t.test('concurrent failures keep one record whose attempts count every one', async (t) => {
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => validate(servers[i % 2]!, tenant.token, bad)))
      t.ok(answers.every((a) => a.status === 400), 'every one failed')
      const rows = await record()
      t.equal(rows.length, 1, 'one record')
      t.equal(rows[0]?.attempts, 40, 'attempts: 40')
    })

    t.test('mixed answers at once end in the state of the last answer', async (t) => {
      let decided = 0
      for (let round = 0; round < 30; round++) {
        // Mostly failures, with successes among them, all at once on both servers.
        // Sent over 100 ms, so that they overlap yet finish at moments that can be told apart.
        const answers = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
          const success = (i + round) % 3 === 0
          await sleep(Math.random() * 100)
          return validate(servers[i % 2]!, tenant.token, success ? good : bad).then((a) => ({ ...a, success }))
        }))
        answers.sort((a, b) => a.at - b.at)
        const last = answers[answers.length - 1]!
        const other = [...answers].reverse().find((a) => a.success !== last.success)
        const open = (await record()).length === 1
        // Answers 15 ms apart or less may have been written in either order; beyond that the order is known.
        if (!other || last.at - other.at > 15) {
          decided++
          t.equal(open, !last.success, `round ${round}: the last answer was a ${last.success ? 'success' : 'failure'}`)
        }
      }
      t.ok(decided > 0, `${decided} of 30 rounds had a clear last answer`)
      await validate(servers[0]!, tenant.token, good)
      t.same(await record(), [], 'a success after them all leaves no record')
    })
  })
}

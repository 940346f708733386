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
const bad = exampleAccount({
  external_account_number: 'RACE-1',
  customers: [{ ...exampleAccount().customers[0], landline: 'abcde' }]
})

function validate(server: Running, token: string, account: unknown) {
  const sent = performance.now()
  return fetch(`${server.url}/v1/data-import/validate-account/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(account)
  }).then(async (res) => {
    await res.arrayBuffer()
    return { status: res.status, sent, received: performance.now() }
  })
}

if (!testDatabaseUrl) {
  t.skip('failure records under concurrency are tested against the PostgreSQL server (set TEST_DATABASE_URL)', () => {})
} else {
  t.test('two server processes, one account, many answers at once', async (t) => {
    const { app, database, url } = await buildSharedTestApp(t)
    const tenant = await createTenant(app, 'Acme', 'ACME_ENERGY')
    const servers = await startServers(t, url!, 2)
    const record = async () =>
      rowsOf<{ attempts: number }>(
        await database.db.execute(sql`select attempts from import_failures
      where external_account_number = 'RACE-1' and step = 'validate'`)
      )

    t.test('concurrent failures keep one record whose attempts count every one', async (t) => {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => validate(servers[i % 2]!, tenant.token, bad))
      )
      t.ok(
        answers.every((a) => a.status === 400),
        'every one failed'
      )
      const rows = await record()
      t.equal(rows.length, 1, 'one record')
      t.equal(rows[0]?.attempts, 40, 'attempts: 40')
    })

    t.test('mixed answers at once end in the state of the last answer', async (t) => {
      let decided = 0
      for (let round = 0; round < 30; round++) {
        // Mostly failures, with successes among them, all at once on both servers, sent over 150 ms.
        const answers = await Promise.all(
          Array.from({ length: 8 }, async (_, i) => {
            const success = (i + round) % 3 === 0
            await sleep(Math.random() * 150)
            return validate(servers[i % 2]!, tenant.token, success ? good : bad).then((a) => ({ ...a, success }))
          })
        )
        const open = (await record()).length === 1
        // The order is known only by cause and effect: an answer received before another request was
        // sent was written before that request's write. The last request sent after every answer of
        // the other kind had come back decides the final state; a round without one decides nothing.
        const deciding = [...answers]
          .sort((a, b) => b.sent - a.sent)
          .find((a) => answers.every((o) => o.success === a.success || o.received < a.sent))
        if (deciding) {
          decided++
          t.equal(
            open,
            !deciding.success,
            `round ${round}: the deciding answer was a ${deciding.success ? 'success' : 'failure'}`
          )
        }
      }
      t.ok(decided > 0, `${decided} of 30 rounds had a clear last answer`)
      await validate(servers[0]!, tenant.token, good)
      t.same(await record(), [], 'a success after them all leaves no record')
    })
  })
}

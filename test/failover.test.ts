import t, { type Test } from 'tap'
import postgres from 'postgres'
import { setTimeout as sleep } from 'node:timers/promises'
import { TEST_OPERATOR_KEY, TEST_TOKEN_SECRET } from './helpers/app.js'
import { exampleAccount, TEAM } from './helpers/accounts.js'
import { testDatabaseUrl } from './helpers/database.js'
import { formationMissing, startFormation, FAST_MONITOR } from './helpers/formation.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { clientArgs, clientInBackground, generated, inputFile, readReport } from './helpers/migrate.js'
import { remote, startServer } from './helpers/server.js'
import { join } from 'node:path'
import { tempDir } from './helpers/temp-dir.js'

/**
 * Failover under a running server: a pg_auto_failover formation (monitor, primary, standby) of the
 * test's own; the server's DATABASE_URL names both nodes with target_session_attrs=read-write.
 * The primary is SIGKILLed while requests keep coming: each answers 2xx or 503 with Retry-After
 * (never a 500, never a hang), and once the standby is promoted the same server process answers
 * /readyz 200 and creates accounts on it; every account is created exactly once.
 */

/** A formation of the test's own, a server process on it (its multi-host URL), an organisation and the team. */
async function serverOnFormation(t: Test) {
  const formation = await startFormation(t)
  t.comment(`formation started in ${formation.startMs} ms (monitor settings: ${JSON.stringify(FAST_MONITOR)})`)
  const server = await startServer({
    DATABASE_URL: formation.url,
    DATA_DIR: tempDir(t),
    TOKEN_SECRET: TEST_TOKEN_SECRET,
    OPERATOR_API_KEY: TEST_OPERATOR_KEY,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info'
  })
  t.teardown(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
    await server.exit
  })
  const app = remote(server.url)
  const tenant = await createTenant(app, 'Acme', 'ACME_ENERGY')
  await asOperator(app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
  return { formation, server, tenant }
}

const missing = !testDatabaseUrl
  ? 'a failover needs PostgreSQL servers of its own (set TEST_DATABASE_URL to run the PostgreSQL half)'
  : formationMissing()

if (missing !== undefined) {
  t.skip(`not run: ${missing}`, () => {})
} else {
  t.test('the primary is lost: requests answer 2xx or 503, then the server works on the new primary', async (t) => {
    const { formation, server, tenant } = await serverOnFormation(t)

    interface Answer {
      at: number
      status: number | 'hang' | 'network'
      retryAfter: string | null
      body: string
    }
    const answers: Answer[] = []
    const call = async (path: string, body?: unknown): Promise<Answer> => {
      const at = Date.now()
      let answer: Answer
      try {
        const res = await fetch(server.url + path, {
          method: body === undefined ? 'GET' : 'POST',
          headers: {
            authorization: `Token ${tenant.token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' })
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(30_000)
        })
        answer = { at, status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() }
      } catch (e) {
        answer = { at, status: (e as Error).name === 'TimeoutError' ? 'hang' : 'network', retryAfter: null, body: '' }
      }
      answers.push(answer)
      return answer
    }
    const stage = (external: string) =>
      call(
        '/v1/data-import/account-import-process/create-or-update/',
        exampleAccount({ external_account_number: external })
      )
    const create = (external: string) =>
      call('/v1/data-import/account-import-process/process/', {
        external_account_number: external,
        import_supplier_code: 'ACME_ENERGY',
        operations_team_name: TEAM
      })
    const ok = (a: Answer) => typeof a.status === 'number' && a.status >= 200 && a.status < 300
    /** Stages and creates an account, sending each step again after a 503 (as a client told to retry does). */
    const importAccount = async (external: string, deadline: number) => {
      for (const step of [stage, create]) {
        for (;;) {
          const a = await step(external)
          if (ok(a)) break
          // A create whose answer was lost but whose transaction committed: already imported.
          if (step === create && a.status === 400 && a.body.includes('account_already_imported')) break
          if (a.status !== 503 || Date.now() > deadline) return false
          await sleep(Math.min(1000 * Number(a.retryAfter ?? 1), 1000))
        }
      }
      return true
    }

    const before = Array.from({ length: 10 }, (_, i) => `FO-A${i}`)
    for (const external of before) t.ok(await importAccount(external, Date.now() + 30_000), `${external} created`)
    t.equal((await call('/readyz')).status, 200)

    // Four clients import accounts one after the other while the primary is killed.
    const run = { stop: false }
    const created: string[] = []
    const failed: string[] = []
    let next = 0
    const clients = Array.from({ length: 4 }, async () => {
      while (!run.stop) {
        const external = `FO-B${next++}`
        if (await importAccount(external, Date.now() + 60_000)) created.push(external)
        else failed.push(external)
      }
    })
    await sleep(1500)
    const killedAt = Date.now()
    formation.killPrimary()
    const promotedMs = await formation.waitForPromotion(60_000)
    t.comment(`standby promoted ${promotedMs} ms after the primary was killed`)
    let readyAt = 0
    const readyDeadline = Date.now() + 60_000
    while (Date.now() < readyDeadline) {
      if ((await call('/readyz')).status === 200) {
        readyAt = Date.now()
        break
      }
      await sleep(250)
    }
    t.ok(readyAt > 0, '/readyz is 200 again, same server process')
    const createdBefore = created.length
    const waitCreates = Date.now() + 30_000
    while (created.length < createdBefore + 8 && Date.now() < waitCreates) await sleep(100)
    run.stop = true
    await Promise.all(clients)
    t.ok(created.length >= createdBefore + 8, 'accounts are created on the new primary')
    t.same(failed, [], 'every account of the clients was created in the end')
    t.ok(server.child.exitCode === null && server.child.signalCode === null, 'the server process never restarted')

    const bad = answers.filter((a) => !ok(a) && !(a.status === 503 && a.retryAfter !== null))
    // 400 account_already_imported after a lost answer is expected; anything else is not.
    const unexpected = bad.filter((a) => !(a.status === 400 && a.body.includes('account_already_imported')))
    t.same(
      unexpected.map((a) => `${a.status} ${a.body.slice(0, 200)}`),
      [],
      'every answer is 2xx or 503 with Retry-After: never 500, never a hang'
    )
    const outage = answers.filter((a) => a.status === 503 && a.at >= killedAt)
    const lastBad = outage.length > 0 ? Math.max(...outage.map((a) => a.at)) - killedAt : 0
    t.comment(
      `outage seen by requests: ${outage.length} answers 503 (Retry-After ${[...new Set(outage.map((a) => a.retryAfter))].join(', ')}), ` +
        `the first ${outage.length > 0 ? Math.min(...outage.map((a) => a.at)) - killedAt : 0} ms and the last ${lastBad} ms after the kill ` +
        `(${outage.filter((a) => a.at >= readyAt).length} of them after /readyz was 200 again, ${readyAt - killedAt} ms after the kill); ` +
        `${answers.length} requests, ${created.length} accounts created during the run, ${bad.length - unexpected.length} already imported after a lost answer`
    )

    // Exactly once, on the new primary.
    const sql = postgres(formation.url, { max: 1, onnotice: () => {} })
    t.teardown(() => sql.end({ timeout: 1 }))
    const rows = await sql<
      Array<{ external: string; n: number }>
    >`select external_account_number as external, count(*)::int as n from accounts group by 1`
    const counts = new Map(rows.map((r) => [r.external, r.n]))
    const expected = [...before, ...created]
    t.same(
      expected.filter((e) => counts.get(e) !== 1),
      [],
      'every account created exactly once'
    )
    t.equal(rows.length, expected.length, 'no other account row')
    const [primary] = await sql<Array<{ recovery: boolean }>>`select pg_is_in_recovery() as recovery`
    t.equal(primary!.recovery, false, 'the multi-host URL reaches the new primary')
    t.comment(await formation.state())
  })

  t.test('the migration client runs through a failover: every account created once, none failed', async (t) => {
    const { formation, server, tenant } = await serverOnFormation(t)
    const dir = tempDir(t)
    const count = 300
    const file = inputFile(
      dir,
      'accounts.ndjson',
      generated(count, 'failover', { postImportShare: 0 }).map((l) => l.line)
    )
    const report = join(dir, 'report.ndjson')
    const started = Date.now()
    const { run, done } = clientInBackground(clientArgs(file, server.url, report, '--concurrency', '4'), {
      AMIS_API_KEY: tenant.apiKey
    })
    // Kill the primary once the run is under way.
    const sql = postgres(formation.url, { max: 1, onnotice: () => {} })
    t.teardown(() => sql.end({ timeout: 1 }))
    for (;;) {
      const [row] = await sql<Array<{ n: number }>>`select count(*)::int as n from accounts`
      if (row!.n >= 30 || run.code !== -1) break
      await sleep(200)
    }
    await sql.end({ timeout: 1 })
    const killedAt = Date.now()
    formation.killPrimary()
    const promotedMs = await formation.waitForPromotion(60_000)
    const result = await done
    t.comment(
      `standby promoted ${promotedMs} ms after the kill (${killedAt - started} ms into the run); the client ended ${Date.now() - killedAt} ms after the kill`
    )
    t.equal(result.code, 0, 'the client ends with 0')
    if (result.code !== 0) t.comment(result.stdout + result.stderr)
    t.match(result.stdout, new RegExp(`created: +${count}\\n {2}already completed: +0\\n {2}failed: +0\\n`))
    t.comment(
      result.stdout
        .split('\n')
        .filter((l) => /waited|retried|created|failed|time:/.test(l))
        .map((l) => l.trim().replace(/ +/g, ' '))
        .join('; ')
    )
    const entries = readReport(report)
    t.same(
      entries.filter((e) => e.outcome === 'failed'),
      [],
      'no account failed'
    )
    const after = postgres(formation.url, { max: 1, onnotice: () => {} })
    t.teardown(() => after.end({ timeout: 1 }))
    const rows = await after<
      Array<{ n: number; distinct: number; most: number }>
    >`select count(*)::int as n, count(distinct external_account_number)::int as distinct, coalesce(max(c), 0)::int as most from (select external_account_number, count(*) over (partition by external_account_number) as c from accounts) a`
    t.same(rows[0], { n: count, distinct: count, most: 1 }, 'every account created exactly once, on the new primary')
  })
}

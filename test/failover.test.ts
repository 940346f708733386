import t, { type Test } from 'tap'
import postgres from 'postgres'
import { setTimeout as sleep } from 'node:timers/promises'
import { exampleAccount, TEAM } from './helpers/accounts.js'
import { testDatabaseUrl } from './helpers/database.js'
import { formationMissing, startFormation, FAST_MONITOR } from './helpers/formation.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { clientArgs, clientInBackground, generated, inputFile, readReport, runClient } from './helpers/migrate.js'
import { expectedAccount } from '../src/cli/migrate/expected.js'
import { parseLine, type Item } from '../src/cli/migrate/input.js'
import { Big } from '../src/decimal.js'
import { remote, testServer } from './helpers/server.js'
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
  const server = await testServer(t, { DATABASE_URL: formation.url })
  const app = remote(server.url)
  const tenant = await createTenant(app, 'Acme', 'ACME_ENERGY')
  await asOperator(app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
  return { formation, server, tenant }
}

const missing = !testDatabaseUrl
  ? 'a failover needs PostgreSQL servers of its own (set TEST_DATABASE_URL to run the PostgreSQL half)'
  : formationMissing()

// Three formations of three PostgreSQL servers each, one after another: about 100 s alone on two
// cores, three times that while the other tests run beside it (the run's default is 300 s).
t.setTimeout(600_000)

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

    t.same(
      outage.filter((a) => a.at >= readyAt).map((a) => `${a.status} sent ${a.at - readyAt} ms after /readyz was 200`),
      [],
      'no 503 once /readyz is 200: the server reconnects only to a primary that takes writes'
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

  t.test(
    '3,000 accounts with history in batches through a failover: each once, counts and balances as the file says',
    async (t) => {
      const { formation, server, tenant } = await serverOnFormation(t)
      // The driver follows target_session_attrs=read-write past a standby named first. PostgreSQL 14
      // and later report default_transaction_read_only (off on a standby) as a connection starts, and
      // the driver, unpatched, took that alone for "accepts writes".
      const standbyFirst = postgres(
        formation.url.replace(
          /@[^/]+\//,
          `@127.0.0.1:${formation.ports.standby},127.0.0.1:${formation.ports.primary}/`
        ),
        { max: 1, onnotice: () => {} }
      )
      const [reached] = await standbyFirst<
        Array<{ recovery: boolean; port: string }>
      >`select pg_is_in_recovery() as recovery, current_setting('port') as port`
      await standbyFirst.end({ timeout: 1 })
      t.same(
        reached,
        { recovery: false, port: String(formation.ports.primary) },
        'read-write with the standby named first: the primary'
      )
      const dir = tempDir(t)
      const count = 3000
      const lines = generated(count, 'failover-batches', { postImportShare: 1 }).map((l) => l.line)
      const file = inputFile(dir, 'accounts.ndjson', lines)
      const report = join(dir, 'report.ndjson')

      // Every request the client makes, as it sees it: when it was sent and answered, and how.
      interface Seen {
        path: string
        sent: number
        answered: number
        /** `entries 503`: a batch answered 200 with an entry answered 503 (nothing of it stored). */
        status: number | 'network' | 'entries 503'
      }
      const seen: Seen[] = []
      const watched: typeof fetch = async (input, init) => {
        const path = new URL(input instanceof Request ? input.url : String(input)).pathname
        const sent = Date.now()
        try {
          const res = await fetch(input, init)
          let status: Seen['status'] = res.status
          if (res.status === 200 && path.endsWith('/batches/')) {
            const body = (await res.clone().json()) as { results?: Array<{ status?: number }> }
            if (body.results?.some((r) => r.status === 503)) status = 'entries 503'
          }
          seen.push({ path, sent, answered: Date.now(), status })
          return res
        } catch (e) {
          seen.push({ path, sent, answered: Date.now(), status: 'network' })
          throw e
        }
      }
      const started = Date.now()
      const { run, done } = clientInBackground(
        clientArgs(file, server.url, report, '--batch-size', '100'),
        { AMIS_API_KEY: tenant.apiKey },
        { fetch: watched }
      )
      // Kill the primary at about a third, as the client's progress lines say.
      const progress = () => {
        const all = [...run.stderr.matchAll(/progress: (\d+)\/\d+ accounts done/g)]
        return all.length > 0 ? Number(all[all.length - 1]![1]) : 0
      }
      while (progress() < count / 3 && run.code === -1) await sleep(50)
      t.equal(run.code, -1, 'the client is still running at a third')
      const doneAtKill = progress()
      const killedAt = Date.now()
      formation.killPrimary()
      // The server's readiness, from outside, every 250 ms.
      let readyAt = 0
      const readyDeadline = Date.now() + 60_000
      const promoted = formation.waitForPromotion(60_000)
      while (Date.now() < readyDeadline) {
        await sleep(250)
        const ready = await fetch(server.url + '/readyz', { signal: AbortSignal.timeout(5000) }).catch(() => undefined)
        if (ready?.status === 200) {
          readyAt = Date.now()
          break
        }
      }
      const promotedMs = await promoted
      t.ok(readyAt > 0, '/readyz is 200 again')
      const result = await done
      const endedAt = Date.now()
      t.equal(result.code, 0, 'the client ends by itself with 0')
      if (result.code !== 0) t.comment(result.stdout + result.stderr)
      t.ok(
        server.child.exitCode === null && server.child.signalCode === null,
        'the same server process, never restarted'
      )
      t.match(result.stdout, new RegExp(`created: +${count}\\n {2}already completed: +0\\n {2}failed: +0\\n`))
      t.same(
        readReport(report).filter((e) => e.outcome === 'failed'),
        [],
        'no account failed'
      )

      // The outage the client saw. With failed requests (5xx, no answer, or a batch with an entry
      // answered 503): from the first failure to the first success of a request sent after it. The
      // service may instead hold requests until the new primary takes writes: then it is the
      // longest wait between two successful answers. The client's own readiness probes are not
      // counted.
      const api = seen.filter((s) => s.path !== '/readyz' && s.path !== '/healthz')
      const failedStatus = (s: Seen) => typeof s.status !== 'number' || s.status >= 500
      const failures = api.filter(failedStatus).sort((a, b) => a.answered - b.answered)
      const firstFailed = failures[0]
      const firstOk = api
        .filter((s) => !failedStatus(s) && firstFailed !== undefined && s.sent >= firstFailed.answered)
        .sort((a, b) => a.answered - b.answered)[0]
      const failedFor = firstFailed && firstOk ? firstOk.answered - firstFailed.answered : 0
      const oks = api
        .filter((s) => !failedStatus(s))
        .map((s) => s.answered)
        .sort((a, b) => a - b)
      let gap = { ms: 0, from: 0, to: 0 }
      for (let i = 1; i < oks.length; i++) {
        if (oks[i]! - oks[i - 1]! > gap.ms) gap = { ms: oks[i]! - oks[i - 1]!, from: oks[i - 1]!, to: oks[i]! }
      }
      const outageMs = Math.max(failedFor, gap.ms)
      const afterReady = failures.filter((s) => s.sent >= readyAt)
      t.comment(
        `killed at ${doneAtKill}/${count} accounts done, ${killedAt - started} ms into the run; standby promoted ${promotedMs} ms ` +
          `after the kill, /readyz 200 ${readyAt - killedAt} ms after it; client ended ${endedAt - killedAt} ms after the kill, ` +
          `${endedAt - started} ms in all`
      )
      t.comment(
        `outage seen by the client: ${outageMs} ms. No successful answer for ${gap.ms} ms ` +
          `(from ${gap.from - killedAt} to ${gap.to - killedAt} ms after the kill); ${failures.length} failed requests` +
          (firstFailed
            ? ` (${failures.map((s) => s.status).join(', ')}), the first ${firstFailed.answered - killedAt} ms after the kill, ` +
              `a success ${failedFor} ms after it`
            : '') +
          `; ${api.length} requests in all`
      )
      t.ok(outageMs < 30_000, `the outage the client saw is under 30 s (${outageMs} ms)`)
      t.same(
        afterReady.map((s) => `${s.path} ${s.status} sent ${s.sent - readyAt} ms after /readyz was 200`),
        [],
        'no request of the client fails once /readyz is 200'
      )
      t.comment(
        result.stdout
          .split('\n')
          .filter((l) => /waited|retried|time:/.test(l))
          .map((l) => l.trim().replace(/ +/g, ' '))
          .join('; ')
      )

      // Against the file: every count and ledger balance, through the reconciliation endpoint.
      const reconciled = await runClient(
        ['reconcile', file, '--url', server.url, '--report', join(dir, 'reconcile.ndjson')],
        { AMIS_API_KEY: tenant.apiKey }
      )
      t.equal(reconciled.code, 0, 'reconciliation: every account matches the file')
      t.match(reconciled.stdout, new RegExp(`checked: +${count}\\n`))
      t.match(reconciled.stdout, new RegExp(`matching: +${count}\\n`))
      if (reconciled.code !== 0) t.comment(reconciled.stdout + reconciled.stderr)

      // And straight from the new primary: each account once, its ENERGY balance the file's, no process left staged or locked.
      const sql = postgres(formation.url, { max: 1, onnotice: () => {} })
      t.teardown(() => sql.end({ timeout: 1 }))
      const [primary] = await sql<Array<{ recovery: boolean }>>`select pg_is_in_recovery() as recovery`
      t.equal(primary!.recovery, false, 'the multi-host URL reaches the new primary')
      const accounts = await sql<
        Array<{ external: string; n: number }>
      >`select external_account_number as external, count(*)::int as n from accounts group by 1`
      t.equal(accounts.length, count, 'as many accounts as the file has')
      t.same(
        accounts.filter((a) => a.n !== 1).map((a) => a.external),
        [],
        'no account twice'
      )
      const energy = new Map(
        (
          await sql<
            Array<{ external: string; balance: string }>
          >`select a.external_account_number as external, l.balance::text as balance from accounts a join ledgers l on l.account_id = a.id where l.ledger_code = 'ENERGY'`
        ).map((r) => [r.external, r.balance])
      )
      const wrong: string[] = []
      let withEnergy = 0
      for (const line of lines) {
        const expected = expectedAccount((parseLine(JSON.stringify(line)) as { item: Item }).item)!
        const want = expected.ledgers?.find((l) => l.ledger_code === 'ENERGY')
        if (!want) continue
        withEnergy++
        const got = energy.get(expected.external_account_number)
        if (got === undefined || !new Big(got).eq(new Big(want.balance))) {
          wrong.push(`${expected.external_account_number}: expected ${want.balance}, got ${got}`)
        }
      }
      t.ok(withEnergy > count / 2, `${withEnergy} accounts of the file have an ENERGY ledger`)
      t.same(wrong.slice(0, 20), [], 'every ENERGY balance is as the file says')
      const states = await sql<
        Array<{ state: string; n: number }>
      >`select state::text as state, count(*)::int as n from import_processes group by 1`
      t.same(
        states,
        [{ state: 'IMPORTED', n: count }],
        'every process imported: none left staged (so none IN_PROGRESS)'
      )
      const [locks] = await sql<
        Array<{ n: number }>
      >`select count(*)::int as n from pg_locks where locktype = 'advisory' and pid <> pg_backend_pid()`
      t.equal(locks!.n, 0, 'no create lock held')
    }
  )
}

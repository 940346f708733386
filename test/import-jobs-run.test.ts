import t from 'tap'
import { sql } from 'drizzle-orm'
import { exampleAccount, importSetup, jobSettled, TEAM } from './helpers/accounts.js'
import { buildSharedTestApp, buildTestApp } from './helpers/app.js'
import { holdLocks, rowsOf, testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant } from './helpers/graphql.js'

/**
 * Import jobs run by the service: every line gets exactly one result (blank, unreadable,
 * invalid, repeated and good lines alike), through the batch engine's rules; a dry run stores no
 * account; a paused supplier pauses the job; a chunk cut short by a dead process is run again by
 * another, and the accounts it had created are reported as created; a line waits for its
 * supplier's concurrency slot for as long as it is held (PostgreSQL only).
 */

type App = Awaited<ReturnType<typeof importSetup>>['app']

const headersOf = (token: string) => ({ authorization: `Bearer ${token}` })

async function submit(app: App, token: string, text: string, query = '') {
  const res = await app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/?import_supplier=ACME_ENERGY&operations_team_name=${TEAM}${query}`,
    headers: { ...headersOf(token), 'content-type': 'application/x-ndjson' },
    payload: text
  })
  if (res.statusCode !== 202) throw new Error(`submit: ${res.statusCode} ${res.body}`)
  return res.json().id as string
}

async function results(app: App, token: string, id: string, query = '') {
  const res = await app.inject({ url: `/v1/data-import/import-jobs/${id}/results/${query}`, headers: headersOf(token) })
  return res.body
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
}

const entry = (external: string, more: Record<string, unknown> = {}) =>
  JSON.stringify({ account: exampleAccount({ external_account_number: external }), ...more })

t.test('every line gets one result, in line order; failed lines come back unchanged', async (t) => {
  const setup = await importSetup(t)
  const { app, tenant } = setup
  const invalid = entry('J-4', { account: exampleAccount({ external_account_number: 'J-4', transfer_balance: 'x' }) })
  const lines = [
    entry('J-1', { notes: [{ body: 'Moved.' }] }),
    '',
    'this is not JSON',
    invalid,
    entry('J-2'),
    entry('J-1'),
    '[1, 2]',
    entry('J-3', { notes: [{ body: 'Hello' }, { body: 'Again' }] })
  ]
  const id = await submit(app, tenant.token, lines.map((line) => line + '\n').join(''))
  const job = await jobSettled(app, tenant.token, id)
  t.match(job, {
    state: 'COMPLETED',
    lines: {
      total: 8,
      done: 8,
      created: 3,
      already_imported: 0,
      would_create: 0,
      failed: 4,
      not_processed: 0,
      skipped_blank: 1
    },
    eta_seconds: null
  })
  t.ok(job.finished_at, 'finished_at set')
  t.same(
    job.failure_codes,
    [
      { code: 'invalid', lines: 2 },
      { code: 'duplicate_external_account_number', lines: 1 },
      { code: 'invalid_decimal', lines: 1 }
    ],
    'failure_codes: most lines first, then by code'
  )

  const all = await results(app, tenant.token, id)
  t.same(
    all.map((r: { line: number; outcome: string; step: string | null; code: string | null }) => [
      r.line,
      r.outcome,
      r.step,
      r.code
    ]),
    [
      [1, 'created', null, null],
      [2, 'skipped_blank', null, null],
      [3, 'failed', 'stage', 'invalid_request'],
      [4, 'failed', 'stage', 'account_failed_validation'],
      [5, 'created', null, null],
      [6, 'failed', 'stage', 'account_failed_validation'],
      [7, 'failed', 'stage', 'invalid_request'],
      [8, 'created', null, null]
    ]
  )
  t.same(all[2].errors, [{ code: 'invalid', attr: null }], 'not JSON: invalid at null')
  t.same(all[5].errors, [{ code: 'duplicate_external_account_number', attr: 'external_account_number' }])
  t.match(all[0], { external_account_number: 'J-1', service_account_number: /^A-/ })
  t.notOk(JSON.stringify(all).includes('"detail"'), 'codes and attrs only')

  const failed = await results(app, tenant.token, id, '?outcome=failed')
  t.same(
    failed.map((r: { line: number }) => r.line),
    [3, 4, 6, 7]
  )
  const failedLines = await app.inject({
    url: `/v1/data-import/import-jobs/${id}/failed-lines/`,
    headers: headersOf(tenant.token)
  })
  t.equal(failedLines.body, [lines[2], lines[3], lines[5], lines[6]].map((line) => line + '\n').join(''))

  const [counts] = rowsOf<{ accounts: number; notes: number }>(
    await app.db.execute(sql`select (select count(*)::int from accounts) as accounts,
      (select count(*)::int from notes) as notes`)
  )
  t.same(counts, { accounts: 3, notes: 3 }, 'the accounts and their notes, once each')
  // The failure records and events are the batch engine's.
  const [records] = rowsOf<{ n: number }>(await app.db.execute(sql`select count(*)::int as n from import_failures`))
  t.equal(records!.n, 1, "the invalid account's failure record (lines without a usable number have none)")
})

t.test('a dry-run job creates nothing and says what would be created', async (t) => {
  const { app, tenant } = await importSetup(t)
  const id = await submit(app, tenant.token, `${entry('D-1')}\n${entry('D-2')}\n`, '&dry_run=true')
  const job = await jobSettled(app, tenant.token, id)
  t.match(job, { dry_run: true, state: 'COMPLETED', lines: { would_create: 2, created: 0 } })
  const [row] = rowsOf<{ n: number }>(await app.db.execute(sql`select count(*)::int as n from accounts`))
  t.equal(row!.n, 0)
})

const setStatus = (app: App, status: string) =>
  asOperator(
    app,
    'mutation($c: String!, $s: ImportSupplierStatus!) { updateImportSupplier(input: {code: $c, status: $s}) { code } }',
    { c: 'ACME_ENERGY', s: status }
  )

t.test('a supplier Paused pauses its jobs; Ongoing again, they go on; Complete cancels them', async (t) => {
  const setup = await importSetup(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const { app, tenant } = setup
  const id = await submit(app, tenant.token, `${entry('P-1')}\n${entry('P-2')}\n`)
  await setStatus(app, 'Paused')
  // Another server process on the same database runs the jobs.
  const other = await buildTestApp(t, { database: setup.database })
  await other.app.ready()
  t.match(await jobSettled(app, tenant.token, id, { states: ['PAUSED'] }), { state: 'PAUSED', lines: { done: 0 } })
  await setStatus(app, 'Ongoing')
  t.match(await jobSettled(app, tenant.token, id), { state: 'COMPLETED', lines: { created: 2 } })

  const second = await submit(app, tenant.token, `${entry('P-3')}\n`)
  void second
  await setStatus(app, 'Paused')
  await jobSettled(app, tenant.token, second, { states: ['PAUSED'] })
  await setStatus(app, 'Complete')
  t.match(await jobSettled(app, tenant.token, second), {
    state: 'CANCELLED',
    cancelled_reason: 'supplier_complete',
    lines: { not_processed: 1, done: 1 }
  })
})

t.test('a chunk cut short by a dead process is run again by another; what it created counts as created', async (t) => {
  const setup = await importSetup(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const { app, tenant } = setup
  const id = await submit(app, tenant.token, `${entry('K-1', { notes: [{ body: 'Once' }] })}\n${entry('K-2')}\n`)
  // The dead process had claimed the job, begun its chunk and created K-1 (with its note) before it died.
  await app.db.execute(sql`update import_jobs set state = 'RUNNING', claimed_by = 'dead:1',
    claimed_until = now() - interval '1 second', chunk_started_at = now() - interval '1 minute' where id = ${id}::uuid`)
  const batch = await app.inject({
    method: 'POST',
    url: '/v1/data-import/batches/',
    headers: headersOf(tenant.token),
    payload: {
      import_supplier: 'ACME_ENERGY',
      operations_team_name: TEAM,
      accounts: [JSON.parse(entry('K-1', { notes: [{ body: 'Once' }] }))]
    }
  })
  t.equal(batch.json().results[0].outcome, 'created')

  const other = await buildTestApp(t, { database: setup.database })
  await other.app.ready()
  const job = await jobSettled(app, tenant.token, id)
  t.match(job, { state: 'COMPLETED', lines: { created: 2, already_imported: 0, failed: 0, done: 2 } })
  const [row] = rowsOf<{ accounts: number; notes: number; results: number }>(
    await app.db.execute(sql`select (select count(*)::int from accounts) as accounts,
      (select count(*)::int from notes) as notes, (select count(*)::int from import_job_results) as results`)
  )
  t.same(row, { accounts: 2, notes: 1, results: 2 }, 'nothing written twice, one result per line')

  // A claim that is still live is left alone.
  const live = await submit(app, tenant.token, `${entry('K-3')}\n`)
  await app.db.execute(sql`update import_jobs set state = 'RUNNING', claimed_by = 'alive:1',
    claimed_until = now() + interval '1 hour' where id = ${live}::uuid`)
  await new Promise((resolve) => setTimeout(resolve, 1500))
  t.match(
    (await app.inject({ url: `/v1/data-import/import-jobs/${live}/`, headers: headersOf(tenant.token) })).json(),
    { state: 'RUNNING', lines: { done: 0 } },
    'not run by another process while its claim holds'
  )
})

if (!testDatabaseUrl) {
  t.skip(
    "a job's line waiting for its supplier's only slot needs the slot held from a second connection, and PGlite has one connection (set TEST_DATABASE_URL)",
    () => {}
  )
} else {
  t.test(
    "PostgreSQL: a line waits for its supplier's only slot for as long as it is held (past a batch's 30 s), then every line is created",
    async (t) => {
      const { app, url } = await buildSharedTestApp(t)
      const tenant = await createTenant(app, 'Acme', 'ACME_ENERGY')
      await asOperator(app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
      await asOperator(
        app,
        'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", maxConcurrentProcessing: 1}) { code } }'
      )
      const [supplier] = rowsOf<{ id: string }>(
        await app.db.execute(sql`select id from import_suppliers where code = 'ACME_ENERGY'`)
      )
      // The supplier's only slot, held by another session (as a create running elsewhere would).
      const release = await holdLocks(t, url!, (s) => s`select pg_advisory_xact_lock(hashtext(${supplier!.id}), 0)`)
      const id = await submit(
        app,
        tenant.token,
        `${entry('W-1', { notes: [{ body: 'Waited.' }] })}\n${entry('W-2')}\n${entry('W-3')}\n`
      )
      await jobSettled(app, tenant.token, id, { states: ['RUNNING'] })
      // A batch's entry gives up after 30 s with too_many_accounts_processing; a job's line waits on.
      const counts = async () =>
        rowsOf<{ accounts: number; failures: number }>(
          await app.db.execute(sql`select (select count(*)::int from accounts) as accounts,
            (select count(*)::int from import_failures) as failures`)
        )[0]
      const holdUntil = Date.now() + 35_000
      let waiting: { state: string; lines: { done: number } } | undefined
      while (Date.now() < holdUntil) {
        waiting = (
          await app.inject({ url: `/v1/data-import/import-jobs/${id}/`, headers: headersOf(tenant.token) })
        ).json()
        if (waiting!.state !== 'RUNNING' || waiting!.lines.done !== 0) break
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
      t.match(
        waiting,
        { state: 'RUNNING', lines: { done: 0, failed: 0, created: 0 } },
        'after 35 s the job still waits for the slot'
      )
      t.same(await counts(), { accounts: 0, failures: 0 }, 'nothing created, no failure recorded')

      await release()
      const job = await jobSettled(app, tenant.token, id)
      t.match(job, {
        state: 'COMPLETED',
        lines: { total: 3, done: 3, created: 3, failed: 0, already_imported: 0, not_processed: 0 }
      })
      t.same(
        (await results(app, tenant.token, id)).map((r: { line: number; outcome: string; code: string | null }) => [
          r.line,
          r.outcome,
          r.code
        ]),
        [
          [1, 'created', null],
          [2, 'created', null],
          [3, 'created', null]
        ]
      )
      t.same(await counts(), { accounts: 3, failures: 0 }, 'every line created once, no failure recorded')
      const [notes] = rowsOf<{ n: number }>(await app.db.execute(sql`select count(*)::int as n from notes`))
      t.equal(notes!.n, 1, "the waiting line's note too")
    }
  )
}

t.test('a line naming text PostgreSQL cannot hold (U+0000) fails alone; the rest of its part runs', async (t) => {
  const { app, tenant } = await importSetup(t)
  const headers = headersOf(tenant.token)
  const created = await app.inject({
    method: 'POST',
    url: '/v1/data-import/import-jobs/',
    headers,
    payload: { import_supplier: 'ACME_ENERGY', operations_team_name: TEAM }
  })
  t.equal(created.statusCode, 201, created.body)
  const id = created.json().id as string
  const lines = [
    entry('Z-1'),
    entry('Z-\u00002'), // a NUL in the external account number
    entry('Z-3', { 'no\u0000tes': [] }), // a NUL in a key: the attr of its refusal names it
    entry('\ud800Z-4'), // a lone surrogate, the other thing text cannot hold
    entry('Z-5')
  ]
  const text = lines.map((line) => line + '\n').join('')
  t.ok(text.includes('\\u0000'), 'the NUL reaches the service as its JSON escape')
  const part = await app.inject({
    method: 'PUT',
    url: `/v1/data-import/import-jobs/${id}/parts/1/`,
    headers: { ...headers, 'content-type': 'application/x-ndjson' },
    payload: text
  })
  t.equal(part.statusCode, 200, `the part is stored: ${part.body}`)
  t.same(part.json(), { part: 1, lines: 5, bytes: Buffer.byteLength(text) })
  const started = await app.inject({ method: 'POST', url: `/v1/data-import/import-jobs/${id}/start/`, headers })
  t.equal(started.statusCode, 202, started.body)
  const job = await jobSettled(app, tenant.token, id)
  t.match(job, { state: 'COMPLETED', lines: { total: 5, done: 5, created: 2, failed: 3 } })

  const all = await results(app, tenant.token, id)
  const invalidNumber = {
    external_account_number: null,
    outcome: 'failed',
    service_account_number: null,
    step: 'stage',
    status: 400,
    code: 'account_failed_validation',
    errors: [{ code: 'invalid', attr: 'external_account_number' }]
  }
  t.match(all, [
    { line: 1, external_account_number: 'Z-1', outcome: 'created' },
    { line: 2, ...invalidNumber },
    {
      line: 3,
      external_account_number: 'Z-3',
      outcome: 'failed',
      step: 'stage',
      status: 400,
      code: 'invalid_request',
      errors: [{ code: 'unexpected_field', attr: 'no\ufffdtes' }]
    },
    { line: 4, ...invalidNumber },
    { line: 5, external_account_number: 'Z-5', outcome: 'created' }
  ])
  t.equal(all.length, 5)
  const failedLines = await app.inject({ url: `/v1/data-import/import-jobs/${id}/failed-lines/`, headers })
  t.equal(failedLines.body, [lines[1], lines[2], lines[3]].map((line) => line + '\n').join(''), 'sent back unchanged')
  const [row] = rowsOf<{ accounts: number }>(await app.db.execute(sql`select count(*)::int as accounts from accounts`))
  t.equal(row!.accounts, 2, 'the other lines created their accounts')
})

import t, { type Test } from 'tap'
import postgres from 'postgres'
import { sql as dsql } from 'drizzle-orm'
import { openPglite } from '../src/db/index.js'
import { createImportJobsRepository } from '../src/modules/import-jobs/repository.js'
import { CHUNK_LINES } from '../src/modules/import-jobs/runner.js'
import { exampleAccount, importSetup, TEAM } from './helpers/accounts.js'
import { buildTestApp, TEST_OPERATOR_KEY, TEST_TOKEN_SECRET } from './helpers/app.js'
import { freshDatabase, rowsOf, testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant, type Tenant } from './helpers/graphql.js'
import { remote, startServer, startServers, type Running } from './helpers/server.js'
import { tempDir } from './helpers/temp-dir.js'
import { waitFor } from './helpers/wait.js'

/**
 * Import jobs under faults, with real server processes: a server SIGKILLed mid-chunk and
 * restarted (on PostgreSQL and on a PGlite DATA_DIR) finishes the job with exactly one result per
 * line and the file's accounts, notes, transactions and balances, read with SQL; two servers on
 * one job run no line twice and both take part; two organisations' jobs in one process take turns.
 */

// Server processes started, killed and started again on new databases: beside the rest of the
// suite one start alone has taken a minute (the run's default is 300 s for the file).
t.setTimeout(600_000)

const SUPPLIER = 'ACME_ENERGY'
const ENERGY_BALANCE = '6.26'

const line = (i: number) =>
  JSON.stringify({
    account: exampleAccount({ external_account_number: `F-${String(i).padStart(6, '0')}` }),
    notes: [{ body: `First note of ${i}` }, { body: `Second note of ${i}` }]
  })

async function call(base: string, token: string, method: string, path: string, body?: string, type?: string) {
  const res = await fetch(`${base}/v1/data-import/${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(type ? { 'content-type': type } : {}) },
    body
  })
  const text = await res.text()
  return { status: res.status, text, json: () => JSON.parse(text) }
}

async function submit(base: string, tenant: Tenant, lines: string[]): Promise<string> {
  const res = await call(
    base,
    tenant.token,
    'POST',
    `import-jobs/?import_supplier=${tenant.supplier}&operations_team_name=${TEAM}`,
    lines.map((l) => l + '\n').join(''),
    'application/x-ndjson'
  )
  if (res.status !== 202) throw new Error(`submit: ${res.status} ${res.text}`)
  return res.json().id
}

const jobOf = async (base: string, tenant: Tenant, id: string) =>
  (await call(base, tenant.token, 'GET', `import-jobs/${id}/`)).json()

/** How long each wait here may take; an error while asking counts as not yet. */
const WAIT = { timeoutMs: 120_000, ignoreErrors: true, intervalMs: 25 }

/** The SQL figures the checks compare with the file (`query` runs one statement). */
async function figures(query: (text: string) => Promise<Array<Record<string, unknown>>>, jobId: string) {
  const [row] = await query(`select
      (select count(*)::int from import_job_results where job_id = '${jobId}') as results,
      (select count(distinct line)::int from import_job_results where job_id = '${jobId}') as lines,
      (select count(*)::int from accounts) as accounts,
      (select count(*)::int from import_processes where state = 'IMPORTED') as imported,
      (select count(*)::int from notes) as notes,
      (select count(*)::int from ledger_transactions) as transactions,
      (select count(*)::int from ledgers where ledger_code = 'ENERGY') as energy_ledgers,
      (select count(*)::int from ledgers where ledger_code = 'ENERGY' and balance <> ${ENERGY_BALANCE}) as wrong_balances,
      (select count(*)::int from import_events where type = 'CREATED') as created_events,
      (select count(*)::int from (select import_process_id from import_events where type = 'CREATED'
        group by 1 having count(*) > 1) twice) as created_twice`)
  return row as Record<string, number>
}

/** Per account of the file: 2 notes and the example's 4 transactions, one ENERGY ledger. */
const fileFigures = (n: number) => ({
  results: n,
  lines: n,
  accounts: n,
  imported: n,
  notes: 2 * n,
  transactions: 4 * n,
  energy_ledgers: n,
  wrong_balances: 0,
  created_events: n,
  created_twice: 0
})

async function setUp(base: string, options: { oneAtATime: boolean }) {
  const app = remote(base)
  const tenant = await createTenant(app, 'Acme', SUPPLIER)
  await asOperator(app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
  if (options.oneAtATime) {
    // A supplier with a limit of creates at once: each account is created in a transaction of its
    // own, so a kill mid-chunk leaves accounts created whose lines have no result yet.
    await asOperator(
      app,
      'mutation($c: String!) { updateImportSupplier(input: {code: $c, maxConcurrentProcessing: 4}) { code } }',
      { c: SUPPLIER }
    )
  }
  return { app, tenant }
}

const serverEnv = (extra: Record<string, string> = {}) => ({
  TOKEN_SECRET: TEST_TOKEN_SECRET,
  OPERATOR_API_KEY: TEST_OPERATOR_KEY,
  NODE_ENV: 'test',
  IMPORT_JOB_WORKERS: '1',
  TOKEN_RATE_LIMIT_PER_MINUTE: '100000',
  ...extra
})

function killAtTeardown(t: Test, server: Running) {
  t.teardown(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
    await server.exit
  })
}

/**
 * The kill: once `after` lines have their result, waits until the account of a line past them
 * (in the chunk being run) is created, then SIGKILLs the server. Returns that line and `done`
 * as last read.
 */
async function killMidChunk(t: Test, server: Running, tenant: Tenant, id: string, after: number) {
  const done = await waitFor(
    `${after} lines done`,
    async () => {
      const job = await jobOf(server.url, tenant, id)
      return job.lines.done >= after ? (job.lines.done as number) : undefined
    },
    WAIT
  )
  const witness = done + 30
  const external = `F-${String(witness).padStart(6, '0')}`
  await waitFor(
    `${external} created`,
    async () => {
      const res = await call(server.url, tenant.token, 'GET', `account-transfer-status/${SUPPLIER}/${external}/`)
      return res.json().status === 'COMPLETED'
    },
    WAIT
  )
  server.child.kill('SIGKILL')
  await server.exit
  return { witness, external, done }
}

async function resultsOf(base: string, tenant: Tenant, id: string) {
  const res = await call(base, tenant.token, 'GET', `import-jobs/${id}/results/`)
  return res.text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { line: number; outcome: string; external_account_number: string })
}

/** After the restart: the job completes, one result per line, every line `created`. */
async function finishAndCheckResults(
  t: Test,
  server: Running,
  tenant: Tenant,
  id: string,
  n: number,
  cut: { done: number }
) {
  const restarted = Date.now()
  const resumedAfter = await waitFor(
    'the job resumed',
    async () => {
      const job = await jobOf(server.url, tenant, id)
      return job.lines.done > cut.done ? Date.now() - restarted : undefined
    },
    WAIT
  )
  t.comment(`takeover: the restarted server stored its first chunk ${resumedAfter} ms after it listened`)
  const job = await waitFor(
    'the job completed',
    async () => {
      const job = await jobOf(server.url, tenant, id)
      return job.state === 'COMPLETED' ? job : undefined
    },
    WAIT
  )
  t.match(job.lines, { total: n, done: n, created: n, already_imported: 0, failed: 0 })
  const results = await resultsOf(server.url, tenant, id)
  t.same(
    results.map((r) => r.line),
    Array.from({ length: n }, (_, i) => i + 1),
    'exactly one result per line, in line order'
  )
  t.same(
    results.filter((r) => r.outcome !== 'created').map((r) => [r.line, r.outcome]),
    [],
    'every line created, those created before the kill too'
  )
  return results
}

if (!testDatabaseUrl) {
  t.skip(
    'a server killed mid-job on PostgreSQL, and two servers on one job, need the PostgreSQL server (set TEST_DATABASE_URL)',
    () => {}
  )
} else {
  t.test('PostgreSQL: a server SIGKILLed mid-chunk, restarted: the job completes as the file says', async (t) => {
    const fresh = await freshDatabase()
    await fresh.database.close()
    t.teardown(fresh.drop)
    const sql = postgres(fresh.url!, { max: 1, onnotice: () => {} })
    t.teardown(() => sql.end())
    const query = (text: string) => sql.unsafe(text) as unknown as Promise<Array<Record<string, unknown>>>
    const n = 1000
    const env = serverEnv({ DATABASE_URL: fresh.url!, DATA_DIR: tempDir(t) })
    const first = await startServer(env)
    killAtTeardown(t, first)
    const { tenant } = await setUp(first.url, { oneAtATime: true })
    const id = await submit(
      first.url,
      tenant,
      Array.from({ length: n }, (_, i) => line(i + 1))
    )
    const cut = await killMidChunk(t, first, tenant, id, 300)

    const [state] =
      await query(`select done, (select count(*)::int from accounts) as accounts, claimed_until > now() as claimed
      from import_jobs where id = '${id}'`)
    t.ok(
      (state!.accounts as number) > (state!.done as number),
      `killed mid-chunk: ${state!.accounts} accounts, ${state!.done} results`
    )
    t.ok(state!.claimed, "the dead process's claim still holds")
    cut.done = state!.done as number

    const second = await startServer({ ...env, DATA_DIR: tempDir(t) })
    killAtTeardown(t, second)
    const results = await finishAndCheckResults(t, second, tenant, id, n, cut)
    t.equal(results[cut.witness - 1]!.external_account_number, cut.external)
    t.same(await figures(query, id), fileFigures(n), "the file's accounts, notes, transactions and balances, once each")
  })

  t.test('PostgreSQL: two servers on one job, the one running it stalled past its claim', async (t) => {
    const fresh = await freshDatabase()
    await fresh.database.close()
    t.teardown(fresh.drop)
    const sql = postgres(fresh.url!, { max: 1, onnotice: () => {} })
    t.teardown(() => sql.end())
    const query = (text: string) => sql.unsafe(text) as unknown as Promise<Array<Record<string, unknown>>>
    const [a, b] = await startServers(t, fresh.url!, 2, serverEnv())
    t.teardown(() => {
      if (a!.child.exitCode === null) a!.child.kill('SIGCONT')
    })
    const { tenant } = await setUp(a!.url, { oneAtATime: false })
    const n = 1500
    const id = await submit(
      a!.url,
      tenant,
      Array.from({ length: n }, (_, i) => line(i + 1))
    )
    const claimants = new Set<string>()
    const claim = async () => {
      const [row] = await query(`select claimed_by, state, done, chunk_failures from import_jobs where id = '${id}'`)
      const pid = row!.claimed_by ? String(row!.claimed_by).split(':')[1]! : undefined
      if (pid) claimants.add(pid)
      return { pid, state: row!.state as string, done: row!.done as number, failures: row!.chunk_failures }
    }
    // A single job runs a chunk at a time: whichever process holds it claims it again at once.
    const holder = await waitFor(
      '300 lines done',
      async () => {
        const now = await claim()
        return now.done >= 300 && now.pid ? now.pid : undefined
      },
      WAIT
    )
    const [stalled, other] = holder === String(a!.child.pid) ? [a!, b!] : [b!, a!]
    stalled.child.kill('SIGSTOP')
    const stoppedAt = Date.now()
    await waitFor('the other server took the job', async () => (await claim()).pid === String(other.child.pid), WAIT)
    t.comment(`takeover: the other server claimed the job ${Date.now() - stoppedAt} ms after the holder stalled`)
    // The stalled one wakes with its chunk half run and its claim gone, and may end it first.
    stalled.child.kill('SIGCONT')
    let latest: unknown
    const job = await waitFor(
      'the job completed',
      async () => {
        const now = await claim()
        latest = now
        return now.state === 'COMPLETED' ? now : undefined
      },
      {
        ...WAIT,
        // On timeout: the job as it stands, and what each server warned of.
        seen: () => ({
          job: latest,
          warnings: [a!, b!].map((s) =>
            s
              .output()
              .split('\n')
              .filter((l) => /"level":(40|50|60)/.test(l))
              .slice(-5)
          )
        })
      }
    )
    t.equal(job.done, n, 'every line counted once')
    t.same(
      [...claimants].sort(),
      [String(a!.child.pid), String(b!.child.pid)].sort(),
      'both server processes ran chunks of it'
    )
    t.same(await figures(query, id), fileFigures(n), 'no line run twice: one CREATED event per account')
    const results = await resultsOf(other.url, tenant, id)
    t.same(
      results.map((r) => r.line),
      Array.from({ length: n }, (_, i) => i + 1),
      'exactly one result per line'
    )
    t.same(
      results.filter((r) => r.outcome !== 'created').map((r) => [r.line, r.outcome]),
      [],
      'every line created'
    )
  })
}

// The PostgreSQL half runs the test above instead (a server on a PGlite DATA_DIR needs no database server).
if (!testDatabaseUrl) {
  t.test(
    'PGlite: a server SIGKILLed mid-chunk, restarted on its DATA_DIR: the job completes as the file says',
    async (t) => {
      const dataDir = tempDir(t)
      const env = serverEnv({ DATA_DIR: dataDir })
      // Three chunks: an HTTP read on the embedded database waits behind the runner's transactions,
      // so on a loaded machine the first chunk may be seen done only once the second is; the kill
      // then still falls in the third.
      const n = 3 * CHUNK_LINES
      const first = await startServer(env)
      killAtTeardown(t, first)
      const { tenant } = await setUp(first.url, { oneAtATime: true })
      const id = await submit(
        first.url,
        tenant,
        Array.from({ length: n }, (_, i) => line(i + 1))
      )
      // Accounts are created one at a time here, so a chunk takes a few seconds: kill the server
      // part-way through a later chunk.
      const doneSeen = await waitFor(
        'the first chunk done',
        async () => {
          const done = (await jobOf(first.url, tenant, id)).lines.done as number
          return done >= CHUNK_LINES ? done : undefined
        },
        WAIT
      )
      // Killed once the next line's account is created: part-way through the chunk after the one
      // seen done (a chunk of accounts created one at a time takes seconds).
      const witness = `F-${String(doneSeen + 1).padStart(6, '0')}`
      await waitFor(
        `${witness} created`,
        async () => {
          const res = await call(first.url, tenant.token, 'GET', `account-transfer-status/${SUPPLIER}/${witness}/`)
          return res.json().status === 'COMPLETED'
        },
        WAIT
      )
      first.child.kill('SIGKILL')
      await first.exit

      // What the dead server left, read from its files before a new one starts (which takes the job
      // over at once: one process owns an embedded database, so no claim is waited out).
      const left = await openPglite({ dataDir })
      let atRestart: number
      const createdBefore: number[] = []
      try {
        const query = async (text: string) => rowsOf<Record<string, unknown>>(await left.db.execute(dsql.raw(text)))
        atRestart = Number((await query(`select done from import_jobs where id = '${id}'`))[0]!.done)
        const imported = new Set(
          (await query(`select external_account_number as e from import_processes where state = 'IMPORTED'`)).map(
            (row) => row.e as string
          )
        )
        for (let i = atRestart + 1; i <= Math.min(atRestart + CHUNK_LINES, n); i++) {
          if (imported.has(`F-${String(i).padStart(6, '0')}`)) createdBefore.push(i)
        }
      } finally {
        await left.close()
      }
      const second = await startServer(env)
      killAtTeardown(t, second)
      t.ok(
        createdBefore.length > 0,
        `killed mid-chunk: ${atRestart} results stored, ${createdBefore.length} more accounts created`
      )
      const results = await finishAndCheckResults(t, second, tenant, id, n, { done: atRestart })
      t.same(
        createdBefore.map((i) => results[i - 1]!.outcome),
        createdBefore.map(() => 'created'),
        'the accounts created before the kill are reported created'
      )

      second.child.kill('SIGTERM')
      t.equal(await second.exit, 0)
      const database = await openPglite({ dataDir })
      try {
        const query = async (text: string) => rowsOf<Record<string, unknown>>(await database.db.execute(dsql.raw(text)))
        t.same(
          await figures(query, id),
          fileFigures(n),
          "the file's accounts, notes, transactions and balances, once each"
        )
      } finally {
        await database.close()
      }
    }
  )
}

t.test('a chunk ended by a process whose claim another took stores nothing', async (t) => {
  const { app, tenant } = await importSetup(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const res = await app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/?import_supplier=${SUPPLIER}&operations_team_name=${TEAM}`,
    headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/x-ndjson' },
    payload: '\n\n'
  })
  const id = res.json().id as string
  const repo = createImportJobsRepository(app.db)
  await app.db.execute(dsql`update import_jobs set state = 'RUNNING', claimed_by = 'new:1',
    claimed_until = now() + interval '30 seconds' where id = ${id}::uuid`)
  const blank = (line: number) => ({
    line,
    outcome: 'skipped_blank' as const,
    external_account_number: null,
    service_account_number: null,
    step: null,
    status: null,
    code: null,
    errors: null
  })
  await repo.finishChunk(id, 'stalled:1', [blank(1), blank(2)], 3)
  const state = async () =>
    rowsOf<{ done: number; results: number; claimed_by: string | null }>(
      await app.db.execute(dsql`select done, claimed_by,
        (select count(*)::int from import_job_results where job_id = ${id}::uuid) as results
        from import_jobs where id = ${id}::uuid`)
    )[0]
  t.same(await state(), { done: 0, results: 0, claimed_by: 'new:1' }, "the stalled process's results are not stored")
  await repo.finishChunk(id, 'new:1', [blank(1), blank(2)], 3)
  t.same(await state(), { done: 2, results: 2, claimed_by: null }, "the holder's are, and counted")
})

t.test('two organisations: their jobs take turns, chunk by chunk, in one process', async (t) => {
  const setup = await importSetup(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const { app } = setup
  const beta = await createTenant(app, 'Beta', 'BETA_ENERGY')
  // Mostly blank lines (quick chunks) with an account in each chunk.
  const file = (prefix: string, chunks: number) =>
    Array.from({ length: chunks * CHUNK_LINES }, (_, i) =>
      i % CHUNK_LINES === 0
        ? JSON.stringify({ account: exampleAccount({ external_account_number: `${prefix}-${i}` }) })
        : ''
    )
      .map((l) => l + '\n')
      .join('')
  const submitAs = async (tenant: Tenant, text: string) => {
    const res = await app.inject({
      method: 'POST',
      url: `/v1/data-import/import-jobs/?import_supplier=${tenant.supplier}&operations_team_name=${TEAM}`,
      headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/x-ndjson' },
      payload: text
    })
    return res.json().id as string
  }
  const first = await submitAs(setup.tenant, file('A', 6))
  const second = await submitAs(beta, file('B', 3))
  // One runner, in another app on the same database.
  const runner = await buildTestApp(t, { database: setup.database, env: { IMPORT_JOB_WORKERS: '1' } })
  await runner.app.ready()
  const samples = await waitFor(
    'both jobs completed',
    async () => {
      const rows = rowsOf<{ id: string; state: string; progress: Array<[number, number]> | string }>(
        await app.db.execute(dsql`select id, state, progress from import_jobs`)
      )
      if (!rows.every((row) => row.state === 'COMPLETED')) return undefined
      return rows.flatMap((row) =>
        (typeof row.progress === 'string' ? JSON.parse(row.progress) : row.progress).map(
          ([at]: [number, number]) => [at, row.id === first ? 'A' : 'B'] as const
        )
      )
    },
    WAIT
  )
  // A chunk stores its results as its batches finish: a turn is a run of one job's samples.
  const order = samples
    .sort((x, y) => x[0] - y[0])
    .map(([, who]) => who)
    .join('')
    .replace(/(.)\1+/g, '$1')
  t.equal(order, 'ABABABA', 'chunks alternate while both have lines; the second job did not wait for the first')
  void second
})

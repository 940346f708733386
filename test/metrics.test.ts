import t from 'tap'
import { eq, sql, type SQL } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { importProcesses } from '../drizzle/schema/index.js'
import type { Database } from '../src/db/index.js'
import { exampleAccount, importClient, importedSetup, importSetup, TEAM } from './helpers/accounts.js'
import { rowsOf, testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant, operatorToken } from './helpers/graphql.js'
import { waitFor } from './helpers/wait.js'

/** One sample of the Prometheus text: name, labels, value. */
interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** Parses Prometheus text exposition (comments skipped, label values unescaped). */
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const l of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1')
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) })
  }
  return samples
}

/** The value of the one sample with exactly these labels (among those named), or undefined. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value
}

async function scrape(app: FastifyInstance, token: string) {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${token}` } })
  if (res.statusCode !== 200) throw new Error(`scrape: ${res.statusCode} ${res.body}`)
  return { res, samples: parseMetrics(res.body) }
}

const STAGE_ROUTE = '/v1/data-import/account-import-process/create-or-update/'
const CREATE_ROUTE = '/v1/data-import/account-import-process/process/'

t.test('GET /metrics needs an operator token', async (t) => {
  const { app, tenant } = await importSetup(t)
  const none = await app.inject({ method: 'GET', url: '/metrics' })
  t.equal(none.statusCode, 401)
  t.same(none.json(), {
    detail: 'Authentication credentials were not provided.',
    code: 'not_authenticated',
    errors: []
  })
  const bad = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Token not-a-token' } })
  t.equal(bad.statusCode, 401)
  t.equal(bad.json().code, 'authentication_failed')
  for (const form of ['Token', 'Bearer', 'JWT']) {
    const org = await app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `${form} ${tenant.token}` }
    })
    t.equal(org.statusCode, 403, `organisation token (${form})`)
    t.same(org.json(), { detail: 'Only the service operator may read metrics.', code: 'permission_denied', errors: [] })
    t.notMatch(org.body, /amis_/, 'no metrics in the refusal')
  }
  const op = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: await operatorToken(app) } })
  t.equal(op.statusCode, 200, 'the bare token form works too')
})

t.test('per-supplier counts, request counters and process metrics', async (t) => {
  const { app, database, config, tenant, client } = await importSetup(t)
  const beta = await createTenant(app, 'Beta', 'BETA_POWER')
  const betaClient = importClient(app, beta)
  await createTenant(app, 'Gamma', 'GAMMA_GAS')
  const op = await operatorToken(app)

  for (const ext of ['A-1', 'A-2', 'A-3', 'A-4', 'A-5']) {
    t.equal((await client.stage(exampleAccount({ external_account_number: ext }))).statusCode, 201)
  }
  t.equal((await client.stage(exampleAccount({ external_account_number: 'A-1' }))).statusCode, 200, 'restaged')
  t.equal((await client.create('A-1')).statusCode, 201)
  t.equal((await client.create('A-2')).statusCode, 201)
  t.equal((await client.create('A-3', { team: 'No Such Team' })).statusCode, 400, 'a failed create')
  t.equal((await client.create('A-4', { dryRun: true })).statusCode, 400, 'a dry run is no failure')
  await asOperator(
    app,
    'mutation { skipImportProcess(input: {importSupplierCode: "ACME_ENERGY", externalAccountNumber: "A-5"}) { state } }'
  )
  await asOperator(
    app,
    'mutation { skipImportProcess(input: {importSupplierCode: "ACME_ENERGY", externalAccountNumber: "NEVER-STAGED"}) { state } }'
  )
  const b1 = exampleAccount({ external_account_number: 'B-1', import_supplier: 'BETA_POWER' })
  t.equal((await betaClient.stage(b1)).statusCode, 201)
  t.equal((await betaClient.create('B-1', { supplier: 'BETA_POWER' })).statusCode, 201)
  for (const path of ['/no/such/path-abc123', '/no/such/path-xyz789', '/v1/data-import/nowhere-qq11/']) {
    t.equal((await app.inject({ method: 'GET', url: path })).statusCode, 404)
  }

  const { res, samples } = await scrape(app, op)
  t.equal(res.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8', 'Prometheus text')
  t.match(res.body, /^# HELP amis_accounts_created Accounts created, by supplier\.$/m)
  t.match(res.body, /^# TYPE amis_http_requests_total counter$/m)

  const perSupplier = (name: string) =>
    Object.fromEntries(samples.filter((s) => s.name === name).map((s) => [s.labels.supplier, s.value]))
  t.same(perSupplier('amis_accounts_staged'), { ACME_ENERGY: 5, BETA_POWER: 1, GAMMA_GAS: 0 }, 'ever staged')
  t.same(
    perSupplier('amis_accounts_pending'),
    { ACME_ENERGY: 2, BETA_POWER: 0, GAMMA_GAS: 0 },
    'staged, not created or skipped'
  )
  t.same(perSupplier('amis_accounts_created'), { ACME_ENERGY: 2, BETA_POWER: 1, GAMMA_GAS: 0 })
  t.same(perSupplier('amis_accounts_failed'), { ACME_ENERGY: 1, BETA_POWER: 0, GAMMA_GAS: 0 })
  t.same(perSupplier('amis_accounts_skipped'), { ACME_ENERGY: 2, BETA_POWER: 0, GAMMA_GAS: 0 })
  t.same(perSupplier('amis_creates_in_flight'), { ACME_ENERGY: 0, BETA_POWER: 0, GAMMA_GAS: 0 })

  const requests = (route: string, status: string, method = 'POST') =>
    valueOf(samples, 'amis_http_requests_total', { method, route, status })
  t.equal(requests(STAGE_ROUTE, '201'), 6, 'stages answered 201, both suppliers on one route pattern')
  t.equal(requests(STAGE_ROUTE, '200'), 1)
  t.equal(requests(CREATE_ROUTE, '201'), 3)
  t.equal(requests(CREATE_ROUTE, '400'), 2)
  t.equal(requests('unmatched', '404', 'GET'), 3, 'unknown URLs share one label')
  t.notMatch(res.body, /abc123|xyz789|qq11/, 'no label per raw URL')
  t.notOk(
    samples.some((s) => s.labels.route?.includes('A-1') || s.labels.route?.includes('ACME_ENERGY')),
    'patterns, not paths'
  )
  t.equal(
    valueOf(samples, 'amis_http_request_duration_seconds_count', {
      method: 'POST',
      route: CREATE_ROUTE,
      status: '201'
    }),
    3
  )
  t.equal(
    valueOf(samples, 'amis_http_request_duration_seconds_bucket', {
      method: 'POST',
      route: CREATE_ROUTE,
      status: '201',
      le: '+Inf'
    }),
    3
  )
  const seconds = valueOf(samples, 'amis_http_request_duration_seconds_sum', {
    method: 'POST',
    route: CREATE_ROUTE,
    status: '201'
  })!
  t.ok(seconds > 0 && seconds < 60, `latency in seconds (${seconds})`)
  t.equal(
    valueOf(samples, 'amis_http_requests_total', { route: '/metrics' }),
    undefined,
    'a scrape is counted once answered'
  )

  t.ok((valueOf(samples, 'process_cpu_user_seconds_total') ?? -1) >= 0, 'default process metrics')
  t.ok(samples.some((s) => s.name === 'nodejs_heap_size_used_bytes'))
  if (database.kind === 'postgres') {
    t.equal(valueOf(samples, 'amis_database_pool_size'), config.databasePoolSize)
  } else {
    t.equal(valueOf(samples, 'amis_database_pool_size'), undefined, 'no pool on the embedded database')
  }

  // A read of a status by path parameters: counted under the pattern.
  t.equal((await client.status('A-1')).statusCode, 200)
  await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Token ${tenant.token}` } })
  const again = (await scrape(app, op)).samples
  t.equal(
    valueOf(again, 'amis_http_requests_total', { method: 'GET', route: '/metrics', status: '200' }),
    1,
    'the previous scrape'
  )
  t.equal(valueOf(again, 'amis_http_requests_total', { method: 'GET', route: '/metrics', status: '403' }), 1)
  t.equal(
    valueOf(again, 'amis_http_requests_total', {
      method: 'GET',
      route: '/v1/data-import/account-transfer-status/:supplier/:external/',
      status: '200'
    }),
    1
  )
  t.equal(
    valueOf(again, 'amis_http_requests_total', { route: STAGE_ROUTE, status: '201' }),
    6,
    'counters keep their values'
  )
})

t.test('creates in flight: the process locks held now', async (t) => {
  const { app, database, client } = await importSetup(t)
  const op = await operatorToken(app)
  t.equal((await client.stage(exampleAccount({ external_account_number: 'LOCKED' }))).statusCode, 201)
  const [process] = await database.db
    .select({ id: importProcesses.id })
    .from(importProcesses)
    .where(eq(importProcesses.externalAccountNumber, 'LOCKED'))
  const id = process!.id
  const inFlight = async () =>
    valueOf((await scrape(app, op)).samples, 'amis_creates_in_flight', { supplier: 'ACME_ENERGY' })

  /** Holds advisory locks (each an SQL list of key arguments) while `fn` runs. */
  async function holding(keys: SQL[], fn: () => Promise<void>): Promise<void> {
    if (database.kind === 'postgres') {
      // As a create holds them: in a transaction on another connection, while the app scrapes.
      await database.db.transaction(async (tx) => {
        for (const key of keys) await tx.execute(sql`select pg_advisory_xact_lock(${key})`)
        await fn()
      })
      return
    }
    // PGlite has one connection: session locks on it, released right after.
    for (const key of keys) await database.db.execute(sql`select pg_advisory_lock(${key})`)
    try {
      await fn()
    } finally {
      for (const key of keys) await database.db.execute(sql`select pg_advisory_unlock(${key})`)
    }
  }

  const processLock = sql`(1::bigint << 40) + ${id}::bigint`
  t.equal(await inFlight(), 0)
  await holding([processLock], async () => {
    t.equal(await inFlight(), 1, 'one create running')
    t.equal((await client.status('LOCKED')).json().status, 'IN_PROGRESS', 'as the status endpoint sees it')
  })
  t.equal(await inFlight(), 0, 'released')
  // A concurrency slot (two int keys) and a bigint key that is not a process lock are not creates.
  await holding([sql`hashtext('x'), 1`, sql`${id}::bigint`], async () => {
    t.equal(await inFlight(), 0, 'slot and other locks are not counted')
  })
})

t.test('429 responses show in the status label', async (t) => {
  const { app, client } = await importSetup(t, { env: { ORG_RATE_LIMIT_PER_MINUTE: '2' } })
  const statuses = []
  for (let i = 0; i < 3; i++) statuses.push((await client.list('all')).statusCode)
  t.same(statuses, [200, 200, 429])
  const { samples } = await scrape(app, await operatorToken(app))
  const route = '/v1/data-import/all-account-import-processes/:supplier/'
  t.equal(valueOf(samples, 'amis_http_requests_total', { method: 'GET', route, status: '200' }), 2)
  t.equal(valueOf(samples, 'amis_http_requests_total', { method: 'GET', route, status: '429' }), 1)
})

t.test('each app counts its own requests', async (t) => {
  const first = await importSetup(t)
  const second = await importSetup(t)
  await first.app.inject({ method: 'GET', url: '/healthz' })
  await first.app.inject({ method: 'GET', url: '/healthz' })
  const one = (await scrape(first.app, await operatorToken(first.app))).samples
  const two = (await scrape(second.app, await operatorToken(second.app))).samples
  t.equal(valueOf(one, 'amis_http_requests_total', { route: '/healthz' }), 2)
  t.equal(valueOf(two, 'amis_http_requests_total', { route: '/healthz' }), undefined)
  t.ok(valueOf(two, 'process_cpu_user_seconds_total') !== undefined, 'process metrics in every app')
})

/** Holds every account row (`FOR UPDATE`) in a transaction of the app's own pool until the returned function is called. */
async function holdAccounts(database: Database): Promise<() => Promise<void>> {
  let unlock!: () => void
  const held = new Promise<void>((resolve) => {
    unlock = resolve
  })
  let locked!: () => void
  const lockTaken = new Promise<void>((resolve) => {
    locked = resolve
  })
  const holder = database.db.transaction(async (tx) => {
    await tx.execute(sql`select id from accounts for update`)
    locked()
    await held
  })
  await lockTaken
  return async () => {
    unlock()
    await holder
  }
}

t.test('post-import requests beyond DATABASE_POOL_SIZE wait their turn, and all are answered', async (t) => {
  if (!testDatabaseUrl) {
    t.skip(
      'needs the PostgreSQL server: PGlite has one connection, so a held row lock would block the test too',
      () => {}
    )
    return
  }
  const { app, database, post } = await importedSetup(t, { env: { DATABASE_POOL_SIZE: '2' } })
  const op = await operatorToken(app)
  const gauges = async () => {
    const { samples } = await scrape(app, op)
    return [valueOf(samples, 'amis_write_requests_active'), valueOf(samples, 'amis_write_requests_waiting')]
  }
  t.same(await gauges(), [0, 0])

  // The account's row lock, held here, keeps the first requests busy inside their transaction.
  const unlock = await holdAccounts(database)
  const sent = [1, 2, 3, 4, 5].map((i) => post('notes/create/', { notes: [{ body: `Turn ${i}` }] }))
  const seen = await waitFor(
    'one request at work and four waiting',
    async () => {
      const seen = await gauges()
      return seen[0] === 1 && seen[1] === 4 && seen
    },
    { timeoutMs: 10_000 }
  ).catch(() => gauges()) // after 10 s: t.same shows the gauges as they are, and the test still unlocks the rows
  t.same(seen, [1, 4], 'one at work (the pool size less the turn kept for another organisation), four waiting')
  await unlock()
  const answers = await Promise.all(sent)
  t.same(
    answers.map((a) => a.statusCode),
    [201, 201, 201, 201, 201],
    answers.map((a) => a.body).join('\n')
  )
  t.same(await gauges(), [0, 0], 'every turn given back')
})

t.test('a client that leaves while waiting for its turn gives the turn on: nothing is held for ever', async (t) => {
  if (!testDatabaseUrl) {
    t.skip(
      'needs the PostgreSQL server: PGlite has one connection, so a held row lock would block the test too',
      () => {}
    )
    return
  }
  const { app, database, ref, tenant } = await importedSetup(t, { env: { DATABASE_POOL_SIZE: '1' } })
  const op = await operatorToken(app)
  const gauges = async () => {
    const { samples } = await scrape(app, op)
    return [valueOf(samples, 'amis_write_requests_active'), valueOf(samples, 'amis_write_requests_waiting')]
  }
  /**
   * The gauges once they read `want` (active, waiting); after 10 s the gauges as they are, for the
   * t.same that follows to show (the test goes on to unlock the rows it holds).
   */
  const gaugesRead = (want: number[]) =>
    waitFor(
      `the gauges read ${JSON.stringify(want)}`,
      async () => {
        const seen = await gauges()
        return JSON.stringify(seen) === JSON.stringify(want) && seen
      },
      { timeoutMs: 10_000 }
    ).catch(() => gauges())
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  const note = (body: string, signal?: AbortSignal) =>
    fetch(`${base}/v1/data-import/notes/create/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${tenant.token}` },
      body: JSON.stringify({ ...ref, notes: [{ body }] }),
      signal
    })

  const unlock = await holdAccounts(database)
  const first = note('At work')
  t.same(await gaugesRead([1, 0]), [1, 0], 'the first request is at work')
  const leaving = [new AbortController(), new AbortController()]
  const left = leaving.map((c, i) => note(`Leaving ${i}`, c.signal).catch((err: Error) => err.name))
  t.same(await gaugesRead([1, 2]), [1, 2], 'two wait their turn')
  for (const c of leaving) c.abort()
  t.same(await Promise.all(left), ['AbortError', 'AbortError'])
  await unlock()
  t.equal((await first).status, 201)
  t.same(await gaugesRead([0, 0]), [0, 0], 'the turns of the clients that left are given back')
  const after = await note('After')
  t.equal(after.status, 201, 'a new request gets its turn')
  const stored = await database.db.execute(sql`select body from notes where body like 'Leaving%'`)
  t.same(rowsOf(stored), [], 'nothing of the requests whose clients left')
})

t.test('METRICS_TOKEN lets a scrape job read /metrics without a token that expires', async (t) => {
  const token = 'scrape-token-0123456789-abcdefghijklmnop'
  const { app, tenant } = await importSetup(t, { env: { METRICS_TOKEN: token } })
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${token}` } })
  t.equal(res.statusCode, 200)
  t.match(res.body, /amis_accounts_staged/)
  const wrong = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${token}x` } })
  t.equal(wrong.statusCode, 401, 'another token is not it')
  const org = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${tenant.token}` } })
  t.equal(org.statusCode, 403, 'organisation tokens still may not')
  const data = await app.inject({
    method: 'GET',
    url: '/v1/data-import/all-account-import-processes/ACME_ENERGY/',
    headers: { authorization: `Bearer ${token}` }
  })
  t.equal(data.statusCode, 401, 'the scrape token opens nothing else')
  const { samples } = await scrape(app, await operatorToken(app))
  t.ok(samples.length > 0, 'operator tokens still work')
})

t.test('recorded failures are counted by supplier, step and code', async (t) => {
  const { app, client } = await importSetup(t)
  const bad = exampleAccount({
    external_account_number: 'M-1',
    customers: [{ ...exampleAccount().customers[0], landline: 'abcde' }],
    transfer_balance: 'x'
  })
  await client.validate(bad)
  await client.validate(bad)
  await client.create('M-2')
  await client.validate({ ...bad, import_supplier: 'NOPE' })
  const { samples } = await scrape(app, await operatorToken(app))
  const name = 'amis_failures_recorded_total'
  t.equal(valueOf(samples, name, { supplier: 'ACME_ENERGY', step: 'validate', code: 'invalid_phone_number' }), 2)
  t.equal(valueOf(samples, name, { supplier: 'ACME_ENERGY', step: 'validate', code: 'invalid_decimal' }), 2)
  t.equal(valueOf(samples, name, { supplier: 'ACME_ENERGY', step: 'create', code: 'import_process_does_not_exist' }), 1)
  t.equal(samples.filter((s) => s.name === name).length, 3, 'nothing counted for an unknown supplier')
})

t.test('import jobs: their lines by outcome and the jobs by state, by supplier', async (t) => {
  const { app, tenant } = await importSetup(t)
  const beta = await createTenant(app, 'Beta', 'BETA_POWER')
  await createTenant(app, 'Gamma', 'GAMMA_GAS')
  const jobsUrl = '/v1/data-import/import-jobs/'
  const line = (external: string, changes: Record<string, unknown> = {}) =>
    JSON.stringify({ account: exampleAccount({ external_account_number: external, ...changes }) }) + '\n'
  const ask = async (token: string, method: 'GET' | 'POST' | 'PUT', url: string, payload?: string | object) => {
    const res = await app.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${token}`,
        ...(typeof payload === 'string' ? { 'content-type': 'application/x-ndjson' } : {})
      },
      ...(payload === undefined ? {} : { payload })
    })
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
    return res.json()
  }
  const settings = (supplier: string, dryRun = false) =>
    `?import_supplier=${supplier}&operations_team_name=${TEAM}${dryRun ? '&dry_run=true' : ''}`
  const finished = (token: string, id: string) =>
    waitFor(`job ${id} completed`, async () => (await ask(token, 'GET', `${jobsUrl}${id}/`)).state === 'COMPLETED', {
      timeoutMs: 60_000
    })
  const open = async (token: string, supplier: string, text: string) => {
    const job = await ask(token, 'POST', jobsUrl, { import_supplier: supplier, operations_team_name: TEAM })
    await ask(token, 'PUT', `${jobsUrl}${job.id}/parts/1/`, text)
    return job.id as string
  }

  // ACME: a job run (2 created, 1 failed, 1 blank), a dry run (1 would create), one naming an
  // account created before (already imported), one cancelled before it began (3 not processed),
  // one left OPEN.
  const ran = await ask(
    tenant.token,
    'POST',
    jobsUrl + settings('ACME_ENERGY'),
    [line('J-1'), '\n', line('J-2', { transfer_balance: 'x' }), line('J-3')].join('')
  )
  await finished(tenant.token, ran.id)
  const dry = await ask(tenant.token, 'POST', jobsUrl + settings('ACME_ENERGY', true), line('J-4'))
  await finished(tenant.token, dry.id)
  const again = await ask(tenant.token, 'POST', jobsUrl + settings('ACME_ENERGY'), line('J-1'))
  await finished(tenant.token, again.id)
  const cancelled = await open(tenant.token, 'ACME_ENERGY', line('C-1') + line('C-2') + line('C-3'))
  await ask(tenant.token, 'POST', `${jobsUrl}${cancelled}/cancel/`)
  await open(tenant.token, 'ACME_ENERGY', line('O-1'))
  // BETA: a job started while its supplier is Paused: PAUSED, its 2 lines waiting.
  const paused = await open(beta.token, 'BETA_POWER', line('B-1') + line('B-2'))
  await asOperator(app, 'mutation { updateImportSupplier(input: {code: "BETA_POWER", status: Paused}) { code } }')
  t.match(await ask(beta.token, 'POST', `${jobsUrl}${paused}/start/`), { state: 'PAUSED' })

  const { res, samples } = await scrape(app, await operatorToken(app))
  t.match(res.body, /^# TYPE amis_import_job_lines gauge$/m)
  t.match(res.body, /^# TYPE amis_import_jobs gauge$/m)
  const of = (name: string, label: string, supplier: string) =>
    Object.fromEntries(
      samples.filter((s) => s.name === name && s.labels.supplier === supplier).map((s) => [s.labels[label], s.value])
    )
  const noLines = { created: 0, already_imported: 0, would_create: 0, failed: 0, not_processed: 0, skipped_blank: 0 }
  const noJobs = { OPEN: 0, QUEUED: 0, RUNNING: 0, PAUSED: 0, COMPLETED: 0, CANCELLED: 0 }
  t.same(
    of('amis_import_job_lines', 'outcome', 'ACME_ENERGY'),
    { ...noLines, created: 2, already_imported: 1, would_create: 1, failed: 1, not_processed: 3, skipped_blank: 1 },
    'lines by outcome, over every job of the supplier'
  )
  t.same(of('amis_import_jobs', 'state', 'ACME_ENERGY'), { ...noJobs, OPEN: 1, COMPLETED: 3, CANCELLED: 1 })
  t.same(of('amis_import_job_lines', 'outcome', 'BETA_POWER'), noLines, 'a paused job has no outcome yet')
  t.same(of('amis_import_jobs', 'state', 'BETA_POWER'), { ...noJobs, PAUSED: 1 })
  t.equal(valueOf(samples, 'amis_import_job_lines_waiting', { supplier: 'BETA_POWER' }), 2, 'its lines wait')
  t.equal(valueOf(samples, 'amis_import_job_lines_waiting', { supplier: 'ACME_ENERGY' }), 0)
  t.same(of('amis_import_job_lines', 'outcome', 'GAMMA_GAS'), noLines, 'a supplier without jobs: zeros')
  t.same(of('amis_import_jobs', 'state', 'GAMMA_GAS'), noJobs)
})

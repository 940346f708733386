import { execFileSync, spawn } from 'node:child_process'
import { createServer as createHttpServer } from 'node:http'
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net'
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { openPostgres } from '../src/db/index.js'
import { projectRoot } from '../src/paths.js'
import { accountWriter } from './ceilings.js'
import { cpuSplit } from './cpu.js'
import { mapScenario } from './map.js'
import { rssMb, start } from './processes.js'
import { scaleScenario } from './scale.js'
import { responsiveScenario } from './responsive.js'
import { exampleAccount } from '../schemas/examples.js'
import { WEBHOOK_EVENT_TYPES } from '../schemas/webhooks.js'

/**
 * `npm run bench`: load benchmarks of a running server (a separate process) against the
 * PostgreSQL server and against PGlite, measured side by side with the ceilings of the same
 * machine in the same run, with the CPU each request costs in the server and in PostgreSQL.
 * Writes bench/results/<date>.json and .md.
 *
 * Settings (environment): BENCH_DATABASE_URL (a database on the server the bench may create
 * databases beside; default the local server's `postgres` database), BENCH_SECONDS (15),
 * BENCH_CONNECTIONS (64), BENCH_RUNS (3: runs per scenario, the median is reported),
 * BENCH_PRELOAD (50000 accounts written before the create scenarios), BENCH_E2E (20000 accounts
 * migrated by the client in batches), BENCH_E2E_SINGLE (2000, one by one), BENCH_PGLITE=0 to skip
 * PGlite. `npm run bench -- --table <results.json>` writes that run's Markdown table again;
 * `npm run bench -- --only dry-run` runs the dry-run row alone, on both databases; `--only jobs` the
 * client's batches, the import job of the same file and the large upload; `--only webhooks` (PostgreSQL
 * only) BENCH_WEBHOOKS (2000) accounts migrated by the client three times: without a webhook
 * endpoint, with one that never answers, and with a healthy local receiver, drained;
 * `--only single` the single-account rows (validate to notes) alone, on both databases;
 * `--only map` (PostgreSQL's import job as the reference, bench/map.ts) the job rows, then an
 * extract of BENCH_MAP_ACCOUNTS (1,000,000) accounts mapped by the starter mapping;
 * `--only pglite-responsive` (PGlite only, bench/responsive.ts) BENCH_RESPONSIVE (3000) accounts
 * migrated by the client while a prober measures /healthz, obtainToken and a status read;
 * `--only production` the stage, create and batch rows with tracing off, with tracing on (to a
 * loopback OTLP collector) and with the organisation limit on, each on a new database;
 * `BENCH_POSTGRES=0` skips the PostgreSQL server's rows (every row on PGlite alone);
 * `BENCH_SERVER_ENV="HEAP_GROWTH_PERCENT=50"` gives our server settings to try.
 */

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const PRELOAD = Number(process.env.BENCH_PRELOAD ?? 50_000)
const E2E = Number(process.env.BENCH_E2E ?? 20_000)
const E2E_SINGLE = Number(process.env.BENCH_E2E_SINGLE ?? 2_000)
const WEBHOOK_ACCOUNTS = Number(process.env.BENCH_WEBHOOKS ?? 2_000)
const WARMUP_SECONDS = 3
/** The server is left alone this long after it started before its idle RSS is read. */
const IDLE_SECONDS = 15
const LIST_ROWS = 100_000
const FAILING_ACCOUNTS = 100_000
const BATCH_ACCOUNTS = 100
/** Entries of the dry-run batch and of the real batch it is compared with. */
const DRY_RUN_ACCOUNTS = 1000
/** A dry-run batch may take at most this many times the real batch of the same entries. */
const DRY_RUN_CEILING = 1.5
/** BENCH_SERVER_ENV="NAME=value NAME=value": settings given to our server, to try one against the defaults. */
const SERVER_ENV = Object.fromEntries(
  (process.env.BENCH_SERVER_ENV ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)])
)
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined
const TOKEN_SECRET = 'bench-secret-bench-secret-bench-secret-0123'
const OPERATOR_KEY = 'amo_bench-operator-key-0123456789abcdefghijklmn'
/** The bench's own database: PostgreSQL CPU is counted for its backends (and the server's shared processes) only. */
const DATABASE = `amis_bench_${Date.now()}`

const account: Record<string, any> = exampleAccount()
// The ceilings' plain schema has no "blank optional = omitted" rule: send the example without its blank fields.
delete account.billing_address.administrative_area
for (const a of account.supply_addresses) delete a.supply_address.administrative_area

interface Measured {
  rps: number
  p50: number
  p99: number
  errors: number
  non2xx: number
  /** Answers by HTTP status over every run of the row (the load generator's counts). */
  statuses?: Record<string, number>
  /** Non-2xx answers by status and error code (`404 not_found/account_not_found`), over every run. */
  refusals?: Record<string, number>
  peakRssMb: number
  /** CPU per request, ms: in the measured server process and in PostgreSQL. */
  serverMs?: number
  postgresMs?: number
}
interface Row extends Measured {
  scenario: string
  database: string
  unit?: string
  perSecond?: number
  note?: string
  /** Compared with a ceiling of its own (the dry-run row: dry-run time over real time). */
  ratio?: number
  /** Webhooks (c): distinct webhook-ids the receiver got minus the outbox's events of the run. */
  webhookIdsApart?: number
}

/** `404 not_found/account_not_found`: a refusal's status and its codes, read from its body. */
function refusalOf(status: number, body: string): string {
  try {
    const answer = JSON.parse(body) as { code?: string; errors?: Array<{ code?: string }> }
    const entry = answer.errors?.[0]?.code
    return `${status} ${answer.code ?? '?'}${entry ? `/${entry}` : ''}`
  } catch {
    return `${status} (not JSON)`
  }
}

const addTo = (into: Record<string, number>, key: string, n: number) => {
  into[key] = (into[key] ?? 0) + n
}

async function load(url: string, pid: number, options: Partial<autocannon.Options>, per = 1): Promise<Measured> {
  const runs: Measured[] = []
  const statuses: Record<string, number> = {}
  const refusals: Record<string, number> = {}
  // Every answer that is not 2xx is read for its code, so that a refusal is never silent.
  const onResponse = (status: number, body: string) => {
    if (status < 200 || status > 299) addTo(refusals, refusalOf(status, body), 1)
  }
  const requests = (options.requests ?? [{}]).map((r: any) => ({
    ...r,
    onResponse: (status: number, body: string, context: Record<string, unknown>, headers: unknown) => {
      onResponse(status, body)
      r.onResponse?.(status, body, context, headers)
    }
  }))
  for (let i = 0; i < RUNS; i++) {
    let peak = rssMb(pid)
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(pid))
    }, 200)
    let cpu: ReturnType<typeof cpuSplit> | undefined
    const warmup =
      'warmup' in options
        ? options.warmup
        : { connections: options.connections ?? CONNECTIONS, duration: WARMUP_SECONDS }
    const instance = autocannon({
      url,
      connections: CONNECTIONS,
      duration: SECONDS,
      ...options,
      requests,
      warmup
    } as autocannon.Options)
    // CPU is counted from the end of the warm-up (or the start) to the end of the run.
    if (warmup) {
      setTimeout(() => {
        cpu = cpuSplit(pid, DATABASE)
      }, WARMUP_SECONDS * 1000)
    } else cpu = cpuSplit(pid, DATABASE)
    const result = await instance
    const used = cpu?.stop()
    clearInterval(sampler)
    const total = result.requests.total || 1
    for (const [status, { count }] of Object.entries(result.statusCodeStats ?? {})) addTo(statuses, status, count ?? 0)
    runs.push({
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.errors + result.timeouts,
      non2xx: result.non2xx,
      peakRssMb: Math.round(peak),
      ...(used ? { serverMs: used.serverMs / (total * per), postgresMs: used.postgresMs / (total * per) } : {})
    })
  }
  runs.sort((a, b) => a.rps - b.rps)
  return { ...runs[Math.floor(runs.length / 2)]!, statuses, refusals }
}

async function json(url: string, body: unknown, token?: string, path = '/graphql'): Promise<any> {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body)
  })
  return res.json()
}

const SUPPLIERS = [
  'BENCH',
  'BENCH_LIST',
  'BENCH_BULK',
  'BENCH_CEIL',
  'BENCH_FAIL',
  'BENCH_E2E',
  'BENCH_E2E1',
  'BENCH_BIG',
  'BENCH_DRY',
  'BENCH_JOB',
  'BENCH_UPLOAD',
  'BENCH_WH_WARM',
  'BENCH_WH_NONE',
  'BENCH_WH_DEAD',
  'BENCH_WH_LIVE'
]

/** Organisation, key, suppliers and team through the operator GraphQL; returns a client token and the key. */
async function setUp(url: string): Promise<{ token: string; key: string }> {
  const gql = (query: string, token?: string) => json(url, { query }, token)
  const op = (await gql(`mutation { obtainToken(input: {APIKey: "${OPERATOR_KEY}"}) { token } }`)).data.obtainToken
    .token
  await gql('mutation { createOrganisation(input: {name: "Bench"}) { id } }', op)
  const key = (await gql('mutation { createApiKey(input: {organisation: "Bench"}) { key } }', op)).data.createApiKey.key
  for (const code of SUPPLIERS) {
    await gql(`mutation { createImportSupplier(input: {code: "${code}", organisation: "Bench"}) { code } }`, op)
  }
  await gql('mutation { createOperationsTeam(input: {name: "Migrations"}) { id } }', op)
  return {
    token: (await gql(`mutation { obtainToken(input: {APIKey: "${key}"}) { token } }`)).data.obtainToken.token,
    key
  }
}

const withExternal = (external: string, supplier = 'BENCH') => ({
  ...account,
  import_supplier: supplier,
  external_account_number: external
})
const batchBody = (supplier: string, externals: string[], dryRun = false) =>
  JSON.stringify({
    import_supplier: supplier,
    operations_team_name: 'Migrations',
    ...(dryRun ? { dry_run: true } : {}),
    accounts: externals.map((x) => ({ account: withExternal(x, supplier) }))
  })

/**
 * A dry-run batch of DRY_RUN_ACCOUNTS new accounts, then the real batch of the same entries (as a
 * migration would: try the file, then send it), BENCH_RUNS times; the run with the median ratio
 * of their times is reported. Meanwhile one status request at a time (a database read) measures
 * how long the server keeps another request waiting. CPU is per account of the dry run.
 */
async function dryRunAgainstReal(
  api: string,
  headers: Record<string, string>,
  pid: number
): Promise<{ measured: Measured; ratio: number; note: string }> {
  const runs: Array<{
    dryMs: number
    realMs: number
    ratio: number
    dryWaitMs: number
    realWaitMs: number
    cpu: { serverMs: number; postgresMs: number }
    peak: number
  }> = []
  const probe = async (work: Promise<unknown>) => {
    let longest = 0
    const state = { done: false }
    void work
      .finally(() => {
        state.done = true
      })
      .catch(() => {})
    while (!state.done) {
      const t0 = Date.now()
      // A kept-alive connection the server has just closed fails at once: the next request tries again.
      await fetch(`${api}/account-transfer-status/BENCH_DRY/PROBE/`, { headers }).then(
        (res) => res.arrayBuffer(),
        () => {}
      )
      longest = Math.max(longest, Date.now() - t0)
    }
    return longest
  }
  const send = async (body: string, expect: string) => {
    const t0 = Date.now()
    const res = await fetch(`${api}/batches/`, { method: 'POST', headers, body })
    const answer = (await res.json()) as { counts?: Record<string, number> }
    if (res.status !== 200 || answer.counts?.[expect] !== DRY_RUN_ACCOUNTS) {
      throw new Error(`${expect} batch answered ${res.status}: ${JSON.stringify(answer).slice(0, 500)}`)
    }
    return Date.now() - t0
  }
  // Warm-up (unmeasured): the first batches after a start pay for compiling the code they run.
  const warm = Array.from({ length: DRY_RUN_ACCOUNTS }, (_, i) => `DRY-W-${i}`)
  await send(batchBody('BENCH_DRY', warm, true), 'would_create')
  await send(batchBody('BENCH_DRY', warm), 'created')
  for (let r = 0; r < RUNS; r++) {
    const externals = Array.from({ length: DRY_RUN_ACCOUNTS }, (_, i) => `DRY-${r}-${i}`)
    let peak = rssMb(pid)
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(pid))
    }, 100)
    const cpu = cpuSplit(pid, DATABASE)
    const dry = send(batchBody('BENCH_DRY', externals, true), 'would_create')
    const dryWaitMs = await probe(dry)
    const dryMs = await dry
    const used = cpu.stop()
    const real = send(batchBody('BENCH_DRY', externals), 'created')
    const realWaitMs = await probe(real)
    const realMs = await real
    clearInterval(sampler)
    runs.push({ dryMs, realMs, ratio: dryMs / realMs, dryWaitMs, realWaitMs, cpu: used, peak })
    console.log(
      `dry run ${r}: dry ${dryMs} ms, real ${realMs} ms, ratio ${(dryMs / realMs).toFixed(2)}; longest wait of a status request: ${dryWaitMs} ms during the dry run, ${realWaitMs} ms during the real one`
    )
  }
  runs.sort((a, b) => a.ratio - b.ratio)
  const m = runs[Math.floor(runs.length / 2)]!
  return {
    measured: {
      rps: (DRY_RUN_ACCOUNTS / m.dryMs) * 1000,
      p50: 0,
      p99: m.dryMs,
      errors: 0,
      non2xx: 0,
      peakRssMb: Math.round(m.peak),
      serverMs: m.cpu.serverMs / DRY_RUN_ACCOUNTS,
      postgresMs: m.cpu.postgresMs / DRY_RUN_ACCOUNTS
    },
    ratio: m.ratio,
    note:
      `dry run ${m.dryMs} ms, real batch ${m.realMs} ms (${Math.round((DRY_RUN_ACCOUNTS / m.realMs) * 1000)} accounts/s): ` +
      `ratio ${m.ratio.toFixed(2)}; a status request waited at most ${m.dryWaitMs} ms during the dry run (${m.realWaitMs} ms during the real one)`
  }
}

/** Runs the migration client (compiled) on `file`; returns accounts/s and its summary. */
async function migrateFile(
  url: string,
  key: string,
  file: string,
  args: string[]
): Promise<{ perSecond: number; summary: string }> {
  const started = Date.now()
  const child = spawn(
    process.execPath,
    [
      'dist/src/cli/migrate/index.js',
      file,
      '--url',
      url,
      '--team',
      'Migrations',
      '--report',
      `${file}.${args.join('')}.report`,
      ...args
    ],
    {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? '', AMIS_API_KEY: key },
      stdio: ['ignore', 'pipe', 'ignore']
    }
  )
  let out = ''
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString()
  })
  await new Promise((resolve) => child.once('exit', resolve))
  const accounts = Number(/accounts: +(\d+)/.exec(out)?.[1] ?? 0)
  const failed = Number(/failed: +(\d+)/.exec(out)?.[1] ?? 0)
  if (accounts === 0 || failed > 0) console.log(out)
  return { perSecond: accounts / ((Date.now() - started) / 1000), summary: out }
}

/** Parts of an NDJSON file, cut at line breaks, of about `bytes` each. */
function partsOf(text: Buffer, bytes: number): Buffer[] {
  const parts: Buffer[] = []
  for (let start = 0; start < text.length;) {
    let end = Math.min(start + bytes, text.length)
    if (end < text.length) end = text.lastIndexOf(10, end - 1) + 1
    parts.push(text.subarray(start, end))
    start = end
  }
  return parts
}

/** Uploads a file to a new import job in 8 MB parts, starts it and waits for it to complete: accounts/s from the first byte. */
async function runJob(url: string, token: string, file: string, supplier: string) {
  const api = `${url}/v1/data-import/import-jobs/`
  const headers = { authorization: `Bearer ${token}` }
  const started = Date.now()
  const job = await json(
    url,
    { import_supplier: supplier, operations_team_name: 'Migrations' },
    token,
    '/v1/data-import/import-jobs/'
  )
  const parts = partsOf(readFileSync(file), 8 * 1024 * 1024)
  for (const [i, part] of parts.entries()) {
    const res = await fetch(`${api}${job.id}/parts/${i + 1}/`, {
      method: 'PUT',
      headers: { ...headers, 'content-type': 'application/x-ndjson' },
      body: part
    })
    if (res.status !== 200) throw new Error(`part ${i + 1}: ${res.status} ${await res.text()}`)
  }
  const uploadedMs = Date.now() - started
  await fetch(`${api}${job.id}/start/`, { method: 'POST', headers })
  for (;;) {
    const state = (await (await fetch(`${api}${job.id}/`, { headers })).json()) as {
      state: string
      lines: { created: number; failed: number }
    }
    if (state.state === 'COMPLETED' || state.state === 'CANCELLED') {
      const seconds = (Date.now() - started) / 1000
      if (state.lines.failed > 0) console.log(`job: ${state.lines.failed} lines failed`)
      return {
        perSecond: state.lines.created / seconds,
        note: `${parts.length} parts uploaded in ${(uploadedMs / 1000).toFixed(1)} s, ${state.lines.created} created, ${state.lines.failed} failed`
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/** Uploads `mb` MB of lines to a job (never started) in 8 MB parts, sampling the server's RSS. */
async function uploadOnly(url: string, token: string, pid: number, mb: number) {
  const api = `${url}/v1/data-import/import-jobs/`
  const headers = { authorization: `Bearer ${token}` }
  const job = await json(
    url,
    { import_supplier: 'BENCH_UPLOAD', operations_team_name: 'Migrations' },
    token,
    '/v1/data-import/import-jobs/'
  )
  const line = JSON.stringify({ account: { ...account, import_supplier: 'BENCH_UPLOAD' } })
  const perPart = Math.floor((8 * 1024 * 1024) / (line.length + 1))
  const part = Buffer.from((line + '\n').repeat(perPart))
  const count = Math.ceil((mb * 1024 * 1024) / part.length)
  const before = rssMb(pid)
  let peak = before
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(pid))
  }, 50)
  const started = Date.now()
  try {
    for (let i = 1; i <= count; i++) {
      const res = await fetch(`${api}${job.id}/parts/${i}/`, {
        method: 'PUT',
        headers: { ...headers, 'content-type': 'application/x-ndjson' },
        body: part
      })
      if (res.status !== 200) throw new Error(`upload part ${i}: ${res.status} ${await res.text()}`)
    }
  } finally {
    clearInterval(sampler)
  }
  await fetch(`${api}${job.id}/cancel/`, { method: 'POST', headers })
  const total = (count * part.length) / 1024 / 1024
  return { mb: Math.round(total), growth: peak - before, peak, mbPerSecond: total / ((Date.now() - started) / 1000) }
}

/** Generated accounts with their post-import data (half of them), one per line. */
function generate(file: string, count: number, supplier: string, seed: string): Promise<void> {
  const out = createWriteStream(file)
  const child = spawn(
    process.execPath,
    ['dist/src/cli/migrate/index.js', 'generate', String(count), '--seed', seed, '--supplier', supplier],
    {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['ignore', 'pipe', 'ignore']
    }
  )
  child.stdout.pipe(out)
  return new Promise((resolve) => out.once('finish', () => resolve()))
}

/** A loopback TCP server that accepts connections and never answers. */
async function silentServer() {
  const sockets = new Set<Socket>()
  const server = createTcpServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    close: () => {
      for (const s of sockets) s.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

/** A loopback receiver answering 204 at once, counting requests and distinct webhook-ids. */
async function countingReceiver() {
  const ids = new Set<string>()
  let requests = 0
  const server = createHttpServer((request, response) => {
    request.resume()
    request.on('end', () => {
      requests++
      ids.add(String(request.headers['webhook-id']))
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    ids,
    requests: () => requests,
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

/**
 * `--only webhooks`: WEBHOOK_ACCOUNTS generated accounts with post-import data migrated by the
 * client's batches, three times on one server (after an unmeasured warm-up migration): (a) with no
 * webhook endpoint anywhere, (b) with one endpoint that never answers, subscribed to every event,
 * (c) with a healthy local receiver instead, subscribed to every event, whose queue is then
 * waited out: its distinct webhook-ids against the outbox's rows of that run, and the time to drain.
 */
async function webhooksScenario(
  url: string,
  token: string,
  key: string,
  sql: postgres.Sql,
  dir: string,
  record: (scenario: string, m: Measured, extra?: Partial<Row>) => void,
  pid: number
) {
  const gql = async (query: string, variables: Record<string, unknown>) => {
    const answer = await json(url, { query, variables }, token)
    if (answer.errors) throw new Error(JSON.stringify(answer.errors))
    return answer.data
  }
  const addEndpoint = async (target: string) =>
    (
      await gql('mutation($i: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $i) { id } }', {
        i: { organisation: 'Bench', url: target, events: WEBHOOK_EVENT_TYPES }
      })
    ).createWebhookEndpoint.id as string
  const migrate = async (supplier: string, count = WEBHOOK_ACCOUNTS, seed = `bench-${supplier}`) => {
    const file = join(dir, `webhooks-${seed}.ndjson`)
    await generate(file, count, supplier, seed)
    // CPU per account too: unlike the rate, it hardly moves with the machine's other load.
    const cpu = cpuSplit(pid, DATABASE)
    const run = await migrateFile(url, key, file, [])
    const used = cpu.stop()
    return { ...run, serverMs: used.serverMs / count, postgresMs: used.postgresMs / count }
  }
  const eventsOf = async (supplier: string) =>
    Number(
      (await sql`select count(*)::int as n from webhook_events where data->>'import_supplier' = ${supplier}`)[0]!.n
    )
  const accounts = `${WEBHOOK_ACCOUNTS.toLocaleString('en')} accounts with post-import data, batches`
  const rate = (perSecond: number, cpu: { serverMs: number; postgresMs: number }, extra: Partial<Row>) =>
    record(
      extra.scenario ?? '',
      {
        rps: perSecond,
        p50: 0,
        p99: 0,
        errors: 0,
        non2xx: 0,
        peakRssMb: Math.round(rssMb(pid)),
        serverMs: cpu.serverMs,
        postgresMs: cpu.postgresMs
      },
      { unit: 'accounts/s', perSecond: Math.round(perSecond), ...extra }
    )

  // Warm-up (unmeasured): the first batches after a start pay for compiling the code they run.
  await migrate('BENCH_WH_WARM', 500)

  // (a) and (b) alternate, BENCH_RUNS rounds (the machine's load moves between runs); medians reported.
  type Run = Awaited<ReturnType<typeof migrate>>
  const rounds: Array<{ none: Run; dead: Run; queued: number }> = []
  const silent = await silentServer()
  try {
    for (let r = 0; r < RUNS; r++) {
      const none = await migrate('BENCH_WH_NONE', WEBHOOK_ACCOUNTS, `bench-webhooks-none-${r}`)
      const dead = await addEndpoint(silent.url)
      const withDead = await migrate('BENCH_WH_DEAD', WEBHOOK_ACCOUNTS, `bench-webhooks-dead-${r}`)
      const [queued] = await sql`select count(*)::int as n from webhook_deliveries
        where endpoint_id = ${dead}::uuid and state = 'PENDING'`
      // Removed with its deliveries: the next round's (a) runs with no endpoint anywhere.
      await gql('mutation($i: DeleteWebhookEndpointInput!) { deleteWebhookEndpoint(input: $i) { id } }', {
        i: { id: dead }
      })
      rounds.push({ none, dead: withDead, queued: queued!.n })
      console.log(
        `webhooks round ${r}: (a) ${Math.round(none.perSecond)} accounts/s, (b) ${Math.round(withDead.perSecond)} accounts/s, ` +
          `${queued!.n} deliveries left pending for the silent endpoint`
      )
    }
  } finally {
    await silent.close()
  }
  const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!
  const medians = (runs: Run[]) => ({
    serverMs: median(runs.map((r) => r.serverMs)),
    postgresMs: median(runs.map((r) => r.postgresMs))
  })
  const none = median(rounds.map((r) => r.none.perSecond))
  const dead = median(rounds.map((r) => r.dead.perSecond))
  const each = rounds.map((r) => `${Math.round(r.none.perSecond)}/${Math.round(r.dead.perSecond)}`).join(', ')
  rate(none, medians(rounds.map((r) => r.none)), {
    scenario: `webhooks (a): migrate ${accounts}, no webhook endpoint`,
    note: `median of ${RUNS} run(s), (a)/(b) by round: ${each}`
  })
  rate(dead, medians(rounds.map((r) => r.dead)), {
    scenario: `webhooks (b): migrate ${accounts}, one endpoint that never answers`,
    ratio: dead / none,
    note: `${(dead / none).toFixed(2)}× (a); median of ${RUNS} run(s); ${median(rounds.map((r) => r.queued))} deliveries left pending for it per run`
  })

  const receiver = await countingReceiver()
  try {
    const live = await addEndpoint(receiver.url)
    const started = Date.now()
    const withLive = await migrate('BENCH_WH_LIVE')
    const migrated = Date.now()
    for (;;) {
      const [left] = await sql`select count(*)::int as n from webhook_deliveries
        where endpoint_id = ${live}::uuid and state = 'PENDING'`
      if (left!.n === 0) break
      if (Date.now() - migrated > 600_000) {
        throw new Error(`webhooks (c): ${left!.n} deliveries still pending after 10 min`)
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const drainedMs = Date.now() - migrated
    const events = await eventsOf('BENCH_WH_LIVE')
    const [states] = await sql`select count(*) filter (where state = 'DELIVERED')::int as delivered,
        count(*)::int as deliveries from webhook_deliveries where endpoint_id = ${live}::uuid`
    rate(withLive.perSecond, withLive, {
      scenario: `webhooks (c): migrate ${accounts}, one healthy local receiver`,
      ratio: withLive.perSecond / none,
      note:
        `${(withLive.perSecond / none).toFixed(2)}× (a); one run; receiver: ${receiver.ids.size} distinct webhook-ids ` +
        `(${receiver.requests()} requests), webhook_events: ${events} rows, deliveries ${states!.delivered}/${states!.deliveries} DELIVERED; ` +
        `queue drained ${(drainedMs / 1000).toFixed(1)} s after the migration ended ` +
        `(${((migrated - started + drainedMs) / 1000).toFixed(1)} s from its start)`,
      webhookIdsApart: receiver.ids.size - events
    })
  } finally {
    await receiver.close()
  }
}

async function ours(
  database: string,
  env: Record<string, string>,
  admin: { url: string; sql: postgres.Sql } | undefined,
  dir: string,
  variant?: string
): Promise<Row[]> {
  // The compiled server, as `npm start` runs it.
  const server = await start(
    ['dist/src/server.js'],
    {
      // The default log level: every request is logged, as in production.
      ...env,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      TOKEN_SECRET,
      OPERATOR_API_KEY: OPERATOR_KEY,
      TOKEN_TTL_SECONDS: '86400',
      TOKEN_RATE_LIMIT_PER_MINUTE: '100000',
      // PostgreSQL's pool as a production server would size it; the embedded database keeps its
      // default (two write turns), since its rows measure what a person trying the service gets.
      ...(env.DATABASE_URL ? { DATABASE_POOL_SIZE: '20' } : {}),
      BODY_LIMIT_BYTES: String(64 * 1024 * 1024),
      // The webhooks rows deliver to loopback receivers.
      ...(ONLY === 'webhooks' ? { WEBHOOK_ALLOW_PRIVATE: '1' } : {}),
      ...SERVER_ENV
    },
    /Server listening at (http:\/\/127\.0\.0\.1:\d+)/
  )
  const pid = server.child.pid!
  const rows: Row[] = []
  const record = (name: string, m: Measured, extra: Partial<Row> = {}) => {
    const scenario = variant ? `${name}, ${variant}` : name
    rows.push({ scenario, database, ...m, ...extra })
    const cpu = m.serverMs !== undefined ? ` cpu ${m.serverMs.toFixed(2)}+${m.postgresMs!.toFixed(2)} ms` : ''
    console.log(
      `${database} ${scenario}: ${Math.round(m.rps)} req/s p50 ${m.p50} ms p99 ${m.p99} ms rss ${m.peakRssMb} MB${cpu}${extra.perSecond !== undefined ? ` (${extra.perSecond} ${extra.unit})` : ''}; answers ${answers(m)}`
    )
  }
  try {
    const { token, key } = await setUp(server.url)
    if (!ONLY || ONLY === 'single') {
      // What a person trying the service sees at rest: RSS once the started server has been left alone.
      await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000))
      record(`idle, ${IDLE_SECONDS} s after start and set-up`, {
        rps: 0,
        p50: 0,
        p99: 0,
        errors: 0,
        non2xx: 0,
        peakRssMb: Math.round(rssMb(pid))
      })
    }
    const headers = { 'content-type': 'application/json', authorization: `Token ${token}` }
    const api = `${server.url}/v1/data-import`
    const dryRun = async () => {
      const { measured, ratio, note } = await dryRunAgainstReal(api, headers, pid)
      record(
        `dry-run batch of ${DRY_RUN_ACCOUNTS.toLocaleString('en')} accounts against the real batch of them`,
        measured,
        { unit: 'accounts/s', perSecond: Math.round(measured.rps), ratio, note }
      )
    }
    if (ONLY === 'dry-run') {
      await dryRun()
      return rows
    }
    /** The migration client's batches against an import job of the same kind of file, and a large upload. */
    const endToEnd = async () => {
      // End to end: the migration client, generated accounts with their post-import data.
      const e2e = database === 'postgres' ? E2E : Math.round(E2E / 4)
      const batchFile = join(dir, `${database}-e2e.ndjson`)
      await generate(batchFile, e2e, 'BENCH_E2E', `bench-${database}`)
      const byBatch = await migrateFile(server.url, key, batchFile, [])
      record(
        `migrate ${e2e} accounts with post-import data, batches`,
        { rps: byBatch.perSecond, p50: 0, p99: 0, errors: 0, non2xx: 0, peakRssMb: Math.round(rssMb(pid)) },
        { unit: 'accounts/s', perSecond: Math.round(byBatch.perSecond) }
      )
      // The same kind of file as an import job: uploaded in parts, then run by the service.
      const jobFile = join(dir, `${database}-job.ndjson`)
      await generate(jobFile, e2e, 'BENCH_JOB', `bench-${database}`)
      const job = await runJob(server.url, token, jobFile, 'BENCH_JOB')
      record(
        `import job of ${e2e} accounts with post-import data`,
        { rps: job.perSecond, p50: 0, p99: 0, errors: 0, non2xx: 0, peakRssMb: Math.round(rssMb(pid)) },
        {
          unit: 'accounts/s',
          perSecond: Math.round(job.perSecond),
          ratio: job.perSecond / byBatch.perSecond,
          note: `${job.note}; ${(job.perSecond / byBatch.perSecond).toFixed(2)}× the client's batches`
        }
      )
      const upload = await uploadOnly(server.url, token, pid, database === 'postgres' ? 200 : 50)
      record(
        `upload ${upload.mb} MB to an import job`,
        { rps: upload.mbPerSecond, p50: 0, p99: 0, errors: 0, non2xx: 0, peakRssMb: Math.round(upload.peak) },
        { unit: 'MB RSS growth', perSecond: Math.round(upload.growth), note: `${upload.mbPerSecond.toFixed(1)} MB/s` }
      )

      return byBatch
    }
    if (ONLY === 'jobs') {
      await endToEnd()
      return rows
    }
    if (ONLY === 'map') {
      // The import job's rate, then the mapping of an extract of MAP_ACCOUNTS accounts: at least
      // five times the job's accounts/s, so that mapping never holds a migration up.
      await endToEnd()
      const m = await mapScenario(true)
      const job = rows.find((x) => x.scenario.startsWith('import job'))
      record(
        `map ${m.accounts} accounts × 10 transactions (${m.rows} source rows, ${m.extractMb} MB, starter mapping)`,
        { rps: m.perSecond, p50: 0, p99: 0, errors: 0, non2xx: 0, peakRssMb: m.peakRssMb },
        {
          unit: 'accounts/s',
          perSecond: Math.round(m.perSecond),
          ...(job?.perSecond ? { ratio: m.perSecond / job.perSecond } : {}),
          note: `${m.seconds.toFixed(0)} s from start to exit; peak RSS of the map process, its engine given --memory ${m.memory}`
        }
      )
      return rows
    }
    if (ONLY === 'webhooks') {
      await webhooksScenario(server.url, token, key, admin!.sql, dir, record, pid)
      return rows
    }

    if (admin && ONLY !== 'single' && ONLY !== 'production') {
      // Fair ceilings on tables that are not empty: PRELOAD accounts written 200 per transaction
      // (the bulk ceiling, timed), then the create ceiling: one account per transaction over HTTP.
      const ids = await admin.sql`select (select id from import_suppliers where code = 'BENCH_BULK') as bulk,
        (select id from import_suppliers where code = 'BENCH_CEIL') as ceil, (select id from operations_teams where name = 'Migrations') as team`
      const db = await openPostgres(admin.url, 4)
      const writer = accountWriter(db, ids[0]!.bulk, ids[0]!.team)
      let written = 0
      let busyMs = 0
      const cpu = cpuSplit(process.pid, DATABASE)
      while (written < PRELOAD) {
        const externals = Array.from({ length: Math.min(200, PRELOAD - written) }, (_, i) => `PL-${written + i}`)
        const t0 = Date.now()
        await writer.write(externals)
        busyMs += Date.now() - t0
        written += externals.length
      }
      const used = cpu.stop()
      await db.close()
      await admin.sql`analyze`
      record(
        'ceiling: bulk (200 accounts/transaction)',
        {
          rps: (written / busyMs) * 1000,
          p50: 0,
          p99: 0,
          errors: 0,
          non2xx: 0,
          peakRssMb: 0,
          postgresMs: used.postgresMs / written,
          serverMs: used.serverMs / written
        },
        { unit: 'accounts/s', perSecond: Math.round((written / busyMs) * 1000), note: `${written} accounts preloaded` }
      )

      const ceiling = await start(
        ['--import', 'tsx', 'bench/ceiling-server.ts'],
        {
          DATABASE_URL: admin.url,
          OURS_DATABASE_URL: admin.url,
          POOL: '20',
          CEILING_SUPPLIER_ID: ids[0]!.ceil,
          CEILING_TEAM_ID: ids[0]!.team
        },
        /ceiling listening at (http:\/\/127\.0\.0\.1:\d+)/
      )
      try {
        record(
          'ceiling: create (prebuilt rows, 1 account/transaction)',
          await load(`${ceiling.url}/create-prebuilt`, ceiling.child.pid!, { method: 'POST' })
        )
      } finally {
        ceiling.child.kill('SIGTERM')
        await new Promise((resolve) => ceiling.child.once('exit', resolve))
      }
    }

    if (ONLY !== 'production') {
      record(
        'validate',
        await load(`${api}/validate-account/`, pid, {
          method: 'POST',
          headers,
          body: JSON.stringify(withExternal('V-1'))
        })
      )
    }

    // The accounts each row works on are those the server acknowledged (2xx), never those the load
    // generator merely prepared: a request cut at the end of a run (or of its warm-up) may never
    // have been run, and a later row's request for that account is then refused, rightly.
    const staged: string[] = []
    const created: string[] = []
    /** A request for `external` (kept in the connection's context), `done` on its 2xx answer. */
    const acknowledged = (
      body: (external: string) => string,
      next: () => string,
      done?: (external: string) => void
    ) => ({
      setupRequest: (req: any, context: any) => {
        const external = next()
        context.external = external
        return { ...req, body: body(external) }
      },
      onResponse: (status: number, _body: string, context: any) => {
        if (status >= 200 && status < 300) done?.(context.external as string)
      }
    })
    let toStage = 0
    record(
      'stage',
      await load(`${api}/account-import-process/create-or-update/`, pid, {
        method: 'POST',
        headers,
        requests: [
          acknowledged(
            (external) => JSON.stringify(withExternal(external)),
            () => `S-${toStage++}`,
            (external) => staged.push(external)
          )
        ]
      })
    )

    // Each staged account is created once: an account sent again would be refused as already imported.
    let toCreate = 0
    record(
      'create',
      await load(`${api}/account-import-process/process/`, pid, {
        method: 'POST',
        headers,
        requests: [
          acknowledged(
            (external) =>
              JSON.stringify({
                external_account_number: external,
                import_supplier_code: 'BENCH',
                operations_team_name: 'Migrations'
              }),
            () => staged[toCreate++ % staged.length]!,
            (external) => created.push(external)
          )
        ]
      })
    )
    if (toCreate > staged.length) console.log(`create: ${toCreate} requests for ${staged.length} staged accounts`)

    let statusIndex = 0
    if (ONLY !== 'production') {
      record(
        'status',
        await load(`${api}/account-transfer-status/BENCH/S-0/`, pid, {
          headers,
          requests: [
            {
              setupRequest: (req: any) => ({
                ...req,
                path: `/v1/data-import/account-transfer-status/BENCH/${staged[statusIndex++ % staged.length]}/`
              })
            }
          ]
        })
      )
    }

    // Batches of new accounts without sections: what a batch's stage and create cost per account.
    let batches = 0
    const batch =
      ONLY === 'single'
        ? undefined
        : await load(
            `${api}/batches/`,
            pid,
            {
              method: 'POST',
              headers,
              connections: 4,
              requests: [
                {
                  setupRequest: (req: any) => {
                    const n = batches++
                    return {
                      ...req,
                      body: batchBody(
                        'BENCH',
                        Array.from({ length: BATCH_ACCOUNTS }, (_, i) => `BA-${n}-${i}`)
                      )
                    }
                  }
                }
              ]
            },
            BATCH_ACCOUNTS
          )
    if (batch) {
      record(`batch (${BATCH_ACCOUNTS} accounts/request, 4 connections)`, batch, {
        unit: 'accounts/s',
        perSecond: Math.round(batch.rps * BATCH_ACCOUNTS)
      })
      if (ONLY === 'production') return rows
      await dryRun()
    }

    // 500 new transactions per request, spread over the created accounts (each account's writes are serialised).
    let txBatch = 0
    const day = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)
    const tx = await load(`${api}/transactions/create/`, pid, {
      method: 'POST',
      headers,
      requests: [
        {
          setupRequest: (req: any) => {
            const n = txBatch++
            const transactions = Array.from({ length: 500 }, (_, i) => ({
              transaction_id: `BT-${n}-${i}`,
              transaction_date: day,
              amount: '0.01',
              type: 'CREDIT'
            }))
            return {
              ...req,
              body: JSON.stringify({
                import_supplier: 'BENCH',
                external_account_number: created[n % Math.min(created.length, 2000)],
                transactions
              })
            }
          }
        }
      ]
    })
    record('transactions (500/request)', tx, { unit: 'transactions/s', perSecond: Math.round(tx.rps * 500) })

    let noteBatch = 0
    const notes = await load(`${api}/notes/create/`, pid, {
      method: 'POST',
      headers,
      requests: [
        {
          setupRequest: (req: any) => {
            const n = noteBatch++
            const notes = Array.from({ length: 50 }, (_, i) => ({ body: `Bench note ${n}-${i}` }))
            return {
              ...req,
              body: JSON.stringify({
                import_supplier: 'BENCH',
                external_account_number: created[n % Math.min(created.length, 2000)],
                notes
              })
            }
          }
        }
      ]
    })
    record('notes (50/request)', notes, { unit: 'notes/s', perSecond: Math.round(notes.rps * 50) })
    if (ONLY === 'single') return rows

    if (admin) {
      // 100,000 processes for the list, written straight into the database.
      await admin.sql`insert into import_processes (supplier_id, external_account_number, state, first_staged_at)
        select (select id from import_suppliers where code = 'BENCH_LIST'), 'L-' || lpad(g::text, 7, '0'), 'STAGED', now() from generate_series(1, ${LIST_ROWS}) g`
      // 100,000 failing accounts (five codes) and a week of timeline minutes.
      await admin.sql`insert into import_failures (supplier_id, external_account_number, step, failed_at, attempts, http_status, code, errors, codes)
        select (select id from import_suppliers where code = 'BENCH_FAIL'), 'F-' || lpad(g::text, 7, '0'), (array['validate', 'stage', 'create'])[1 + g % 3]::import_step,
          now(), 1 + g % 4, 400, 'account_failed_validation',
          jsonb_build_array(jsonb_build_object('code', c, 'attr', 'billing_address.postal_code')), array[c]
        from generate_series(1, ${FAILING_ACCOUNTS}) g, lateral (select (array['invalid_postcode', 'invalid_phone_number', 'invalid_email', 'min_items', 'invalid_decimal'])[1 + g % 5] as c) codes`
      await admin.sql`insert into migration_minutes (supplier_id, minute, staged, created, failed)
        select (select id from import_suppliers where code = 'BENCH_FAIL'), date_trunc('minute', now()) - make_interval(mins => g), 10 + g % 7, 9, g % 3
        from generate_series(0, 10079) g`
      await admin.sql`analyze`
    }
    // On PGlite the database lives in the server process: its list is the accounts staged above.
    const before = rssMb(pid)
    const list = await load(`${api}/all-account-import-processes/${admin ? 'BENCH_LIST' : 'BENCH'}/`, pid, {
      headers,
      connections: 4,
      warmup: undefined
    } as never)
    record(`all- list (${admin ? LIST_ROWS : staged.length} rows, 4 connections)`, list, {
      unit: 'MB growth',
      perSecond: Math.round(list.peakRssMb - before)
    })

    if (admin) {
      record(
        `failure summary (${FAILING_ACCOUNTS} failing accounts, 1 connection)`,
        await load(`${api}/failure-summary/BENCH_FAIL/`, pid, {
          headers,
          connections: 1,
          duration: 10,
          warmup: undefined
        } as never)
      )
      record(
        'timeline of a week (10,080 minutes, 1 connection)',
        await load(`${api}/migration-timeline/BENCH_FAIL/?minutes=10080`, pid, {
          headers,
          connections: 1,
          duration: 10,
          warmup: undefined
        } as never)
      )
    }

    // Eight batches of 1,000 new accounts at once: the server's memory with the largest batches.
    {
      let peak = rssMb(pid)
      const sampler = setInterval(() => {
        peak = Math.max(peak, rssMb(pid))
      }, 100)
      const t0 = Date.now()
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, b) =>
          fetch(`${api}/batches/`, {
            method: 'POST',
            headers,
            body: batchBody(
              'BENCH_BIG',
              Array.from({ length: 1000 }, (_, i) => `BIG-${b}-${i}`)
            )
          }).then((r) => r.status)
        )
      )
      clearInterval(sampler)
      const seconds = (Date.now() - t0) / 1000
      record(
        '8 batches of 1,000 accounts at once',
        {
          rps: 8 / seconds,
          p50: 0,
          p99: Math.round(seconds * 1000),
          errors: 0,
          non2xx: answers.filter((s) => s !== 200).length,
          peakRssMb: Math.round(peak)
        },
        { unit: 'accounts/s', perSecond: Math.round(8000 / seconds) }
      )
    }

    await endToEnd()
    const single = database === 'postgres' ? E2E_SINGLE : Math.round(E2E_SINGLE / 2)

    const singleFile = join(dir, `${database}-e2e1.ndjson`)
    await generate(singleFile, single, 'BENCH_E2E1', `bench1-${database}`)
    const oneByOne = await migrateFile(server.url, key, singleFile, ['--batch-size', '1', '--concurrency', '16'])
    record(
      `migrate ${single} accounts with post-import data, one by one (16 at once)`,
      { rps: oneByOne.perSecond, p50: 0, p99: 0, errors: 0, non2xx: 0, peakRssMb: Math.round(rssMb(pid)) },
      { unit: 'accounts/s', perSecond: Math.round(oneByOne.perSecond) }
    )
  } finally {
    server.child.kill('SIGTERM')
    await new Promise((resolve) => server.child.once('exit', resolve))
  }
  return rows
}

async function ceilings(url: string): Promise<Row[]> {
  const ceiling = await start(
    ['--import', 'tsx', 'bench/ceiling-server.ts'],
    { DATABASE_URL: url, POOL: '20' },
    /ceiling listening at (http:\/\/127\.0\.0\.1:\d+)/
  )
  const rows: Row[] = []
  try {
    const headers = { 'content-type': 'application/json' }
    let n = 0
    for (const route of ['parse-validate', 'upsert', 'normalised']) {
      const m = await load(`${ceiling.url}/${route}`, ceiling.child.pid!, {
        method: 'POST',
        headers,
        requests: [{ setupRequest: (req: any) => ({ ...req, body: JSON.stringify(withExternal(`K-${n++}`)) }) }]
      })
      rows.push({ scenario: `ceiling: ${route}`, database: 'postgres', ...m })
      console.log(
        `ceiling ${route}: ${Math.round(m.rps)} req/s p50 ${m.p50} ms p99 ${m.p99} ms cpu ${m.serverMs?.toFixed(2)}+${m.postgresMs?.toFixed(2)} ms; answers ${answers(m)}`
      )
    }
  } finally {
    ceiling.child.kill('SIGTERM')
    await new Promise((resolve) => ceiling.child.once('exit', resolve))
  }
  return rows
}

/** Each target that applies to a row: met, or short by how much. */
function verdict(r: Row, rows: Row[]): string {
  const find = (scenario: string) => rows.find((x) => x.database === 'postgres' && x.scenario.startsWith(scenario))
  const checks: string[] = []
  const check = (name: string, ok: boolean, short: string) =>
    checks.push(ok ? `${name} met` : `${name} short: ${short}`)
  const ratioOf = (ceiling: string, min: number, value = r.rps) => {
    const c = find(ceiling)
    if (!c) return
    const ratio = value / c.rps
    check(
      `≥ ${min} of ${ceiling.replace('ceiling: ', '')}`,
      ratio >= min,
      `${ratio.toFixed(2)} (×${(min / ratio).toFixed(1)})`
    )
  }
  const postgres = r.database === 'postgres'
  if (postgres && r.scenario === 'validate') {
    ratioOf('ceiling: parse-validate', 0.7)
    if (r.serverMs !== undefined) check('server CPU ≤ 0.4 ms', r.serverMs <= 0.4, `${r.serverMs.toFixed(2)} ms`)
  }
  if (postgres && r.scenario === 'stage') ratioOf('ceiling: upsert', 0.7)
  if (postgres && r.scenario === 'create') {
    ratioOf('ceiling: create', 0.6)
    check('p99 < 150 ms', r.p99 < 150, `${r.p99} ms`)
  }
  if (postgres && r.scenario.startsWith('batch (')) ratioOf('ceiling: bulk', 0.5, r.perSecond ?? 0)
  if (r.scenario.startsWith('import job') && r.ratio !== undefined) {
    check("≥ 0.9× the client's batches", r.ratio >= 0.9, `${r.ratio.toFixed(2)}×`)
    if (postgres) check('≥ 500 accounts/s', (r.perSecond ?? 0) >= 500, `${r.perSecond}/s`)
  }
  if (r.scenario.startsWith('map ') && r.ratio !== undefined) {
    check("≥ 5× the import job's accounts/s", r.ratio >= 5, `${r.ratio.toFixed(2)}×`)
  }
  if (r.scenario.startsWith('webhooks (b)') && r.ratio !== undefined) {
    check('≥ 0.9× without an endpoint', r.ratio >= 0.9, `${r.ratio.toFixed(2)}×`)
  }
  if (r.scenario.startsWith('webhooks (c)')) {
    const apart = r.webhookIdsApart ?? 0
    check('distinct webhook-ids = webhook_events rows', apart === 0, `${apart} apart`)
  }
  if (r.scenario.startsWith('upload')) check('RSS growth < 50 MB', (r.perSecond ?? 0) < 50, `${r.perSecond} MB`)
  if (r.scenario.startsWith('transactions')) check('rate ≥ 20,000/s', (r.perSecond ?? 0) >= 20_000, `${r.perSecond}/s`)
  if (r.scenario.startsWith('all- list')) check('growth < 50 MB', (r.perSecond ?? 0) < 50, `${r.perSecond} MB`)
  if (r.scenario.startsWith('failure summary') || r.scenario.startsWith('timeline')) {
    check('p99 < 200 ms', r.p99 < 200, `${r.p99} ms`)
  }
  if (postgres && r.scenario.startsWith('migrate') && r.scenario.endsWith('batches')) {
    check('≥ 500 accounts/s', (r.perSecond ?? 0) >= 500, `${r.perSecond}/s (×${(500 / (r.perSecond || 1)).toFixed(1)})`)
  }
  if (r.ratio !== undefined && r.scenario.startsWith('dry-run batch')) {
    check(
      `dry run ≤ ${DRY_RUN_CEILING}× the real batch`,
      r.ratio <= DRY_RUN_CEILING,
      `${r.ratio.toFixed(2)}× (×${(r.ratio / DRY_RUN_CEILING).toFixed(1)})`
    )
  }
  if (r.scenario.startsWith('idle')) {
    if (!postgres) check('RSS < 250 MB', r.peakRssMb < 250, `${r.peakRssMb} MB`)
  } else if (r.scenario.startsWith('8 batches') || !postgres) {
    check('RSS < 400 MB', r.peakRssMb < 400, `${r.peakRssMb} MB`)
  } else if (
    postgres &&
    !r.scenario.startsWith('ceiling') &&
    !r.scenario.startsWith('migrate') &&
    !r.scenario.startsWith('webhooks') &&
    !r.scenario.startsWith('map ')
  ) {
    check('RSS < 300 MB', r.peakRssMb < 300, `${r.peakRssMb} MB`)
  }
  return checks.join('; ')
}

/**
 * A row's answers by status over all its runs (`201: 40,210; 404: 14`), then each refusal's codes;
 * errors (connections that failed or timed out) apart. Rows that do not count answers say so.
 */
function answers(r: Measured): string {
  const n = (x: number) => x.toLocaleString('en')
  if (!r.statuses) return r.non2xx + r.errors > 0 ? `${r.non2xx} non-2xx, ${r.errors} errors` : 'not counted'
  const parts = Object.entries(r.statuses)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, count]) => `${status}: ${n(count)}`)
  const refused = Object.entries(r.refusals ?? {})
    .sort(([, a], [, b]) => b - a)
    .map(([what, count]) => `${n(count)} × ${what}`)
  return [
    parts.join('; '),
    refused.length ? `refused: ${refused.join(', ')}` : '',
    r.errors ? `${r.errors} errors` : ''
  ]
    .filter(Boolean)
    .join('; ')
}

function table(rows: Row[]): string {
  const lines = [
    '| database | scenario | req/s | p50 ms | p99 ms | peak RSS MB | CPU ms/unit: server + PostgreSQL | answers (all runs) | also | verdict |',
    '|---|---|---|---|---|---|---|---|---|---|'
  ]
  for (const r of rows) {
    const cpu = r.serverMs !== undefined ? `${r.serverMs.toFixed(2)} + ${r.postgresMs!.toFixed(2)}` : ''
    const also = [r.unit ? `${r.perSecond} ${r.unit}` : '', r.note ?? ''].filter(Boolean).join('; ')
    lines.push(
      `| ${r.database} | ${r.scenario} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.peakRssMb} | ${cpu} | ${answers(r)} | ${also} | ${verdict(r, rows)} |`
    )
  }
  return lines.join('\n') + '\n'
}

/** An OTLP/HTTP collector on loopback that reads each export and answers 200: what traces cost the server, not a collector. */
async function otlpSink() {
  let exports = 0
  let bytes = 0
  const server = createHttpServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length))
    req.on('end', () => {
      exports++
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counted: () => ({ exports, bytes }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/**
 * `--only production`: the stage, create and batch rows three times on each database, each time on
 * a new database: tracing off (the default), tracing on (exported over OTLP/HTTP to a loopback
 * collector), and the organisation limit on (counted in the shared database on PostgreSQL). Each
 * row after the first says its rate against the tracing-off row of the same database.
 */
async function productionScenario(adminSql: postgres.Sql, url: string, dataDir: string): Promise<Row[]> {
  const sink = await otlpSink()
  const variants: Array<{ name: string; env: Record<string, string> }> = [
    { name: 'tracing off', env: {} },
    { name: 'tracing on', env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } },
    // High enough never to refuse: what counting costs, not what refusing does.
    { name: 'organisation limit on', env: { ORG_RATE_LIMIT_PER_MINUTE: '100000000' } }
  ]
  const rows: Row[] = []
  try {
    for (const database of ['postgres', 'pglite']) {
      if (database === 'postgres' && process.env.BENCH_POSTGRES === '0') continue
      if (database === 'pglite' && process.env.BENCH_PGLITE === '0') continue
      for (const [i, variant] of variants.entries()) {
        const before = sink.counted()
        let measured: Row[]
        if (database === 'postgres') {
          // A new database of the same name (PostgreSQL's CPU is counted by its name).
          if (i > 0) {
            await adminSql.unsafe(`drop database if exists "${DATABASE}" with (force)`)
            await adminSql.unsafe(`create database "${DATABASE}"`)
          }
          measured = await ours(database, { DATABASE_URL: url, ...variant.env }, undefined, dataDir, variant.name)
        } else {
          const env = { DATA_DIR: join(dataDir, `pglite-${i}`), ...variant.env }
          measured = await ours(database, env, undefined, dataDir, variant.name)
        }
        const after = sink.counted()
        for (const r of measured) {
          const off = rows.find(
            (x) => x.database === database && x.scenario === r.scenario.replace(variant.name, 'tracing off')
          )
          const rate = r.perSecond ?? r.rps
          const offRate = off ? (off.perSecond ?? off.rps) : undefined
          if (offRate) r.ratio = rate / offRate
          const notes = [
            r.note,
            offRate ? `${((rate / offRate - 1) * 100).toFixed(1)} % against tracing off` : undefined,
            variant.name === 'tracing on' && r === measured[measured.length - 1]
              ? `${after.exports - before.exports} exports, ${((after.bytes - before.bytes) / 1e6).toFixed(1)} MB sent to the collector over the three rows`
              : undefined
          ].filter(Boolean)
          if (notes.length) r.note = notes.join('; ')
        }
        rows.push(...measured)
      }
    }
  } finally {
    await sink.close()
  }
  return rows
}

async function main(): Promise<void> {
  // BENCH_SCALE=<accounts>: the scale scenario alone (bench/scale.ts).
  if (process.env.BENCH_SCALE) return scaleScenario(ADMIN_URL)
  const alone = ['dry-run', 'jobs', 'map', 'webhooks', 'pglite-responsive', 'single', 'production']
  if (ONLY !== undefined && !alone.includes(ONLY)) {
    throw new Error(`--only: the rows that run alone are ${alone.join(', ')}, not ${ONLY}`)
  }
  execFileSync('npm', ['run', 'build'], { cwd: projectRoot, stdio: 'inherit' })
  // PGlite only: no PostgreSQL database to make.
  if (ONLY === 'pglite-responsive') return responsiveScenario({ generate, migrateFile })
  const name = DATABASE
  const adminSql = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  await adminSql.unsafe(`create database "${name}"`)
  const url = new URL(ADMIN_URL)
  url.pathname = '/' + name
  const dataDir = mkdtempSync(join(tmpdir(), 'amis-bench-'))
  const rows: Row[] = []
  try {
    if (ONLY === 'production') {
      rows.push(...(await productionScenario(adminSql, url.toString(), dataDir)))
    } else {
      if (process.env.BENCH_POSTGRES !== '0') {
        if (!ONLY) rows.push(...(await ceilings(url.toString())))
        const sql = postgres(url.toString(), { max: 1, onnotice: () => {} })
        rows.push(...(await ours('postgres', { DATABASE_URL: url.toString() }, { url: url.toString(), sql }, dataDir)))
        await sql.end()
      }
      if (process.env.BENCH_PGLITE !== '0' && ONLY !== 'webhooks' && ONLY !== 'map') {
        rows.push(...(await ours('pglite', { DATA_DIR: join(dataDir, 'pglite') }, undefined, dataDir)))
      }
    }
  } finally {
    await adminSql.unsafe(`drop database if exists "${name}" with (force)`)
    await adminSql.end()
    rmSync(dataDir, { recursive: true, force: true })
  }
  const stamp = `${ONLY ? `${ONLY}-` : ''}${new Date().toISOString().slice(0, 16).replace(':', '-')}`
  const dir = join(projectRoot, 'bench', 'results')
  mkdirSync(dir, { recursive: true })
  const meta = {
    at: new Date().toISOString(),
    seconds: SECONDS,
    connections: CONNECTIONS,
    runs: RUNS,
    node: process.version
  }
  writeFileSync(join(dir, `${stamp}.json`), JSON.stringify({ ...meta, rows }, null, 2) + '\n')
  const md = markdown(meta, rows)
  writeFileSync(join(dir, `${stamp}.md`), md)
  console.log('\n' + md + `\nwritten to bench/results/${stamp}.json and .md`)
}

/** The Markdown of a results file, as a run writes it. */
function markdown(
  meta: { at: string; seconds: number; connections: number; runs: number; node: string },
  rows: Row[]
): string {
  return (
    `# Benchmark ${meta.at}\n\n${meta.seconds} s per scenario after a ${WARMUP_SECONDS} s warm-up, ${meta.connections} connections unless said, ` +
    `median of ${meta.runs} run(s), ${meta.node}. CPU per request (per account for batches and accounts/s rows), counted from /proc for the ` +
    `measured process and for PostgreSQL (the backends of the bench's database and the server's shared processes; other databases' backends are not counted). The targets are for the PostgreSQL server; why the missed ones are missed: bench/README.md.\n\n${table(rows)}`
  )
}

const tableOf = process.argv.indexOf('--table')
;(tableOf > 0
  ? Promise.resolve().then(() => {
      const file = process.argv[tableOf + 1]!
      const { rows, ...meta } = JSON.parse(readFileSync(file, 'utf8'))
      writeFileSync(file.replace(/\.json$/, '.md'), markdown(meta, rows))
    })
  : main()
).catch((err) => {
  console.error(err)
  process.exit(1)
})

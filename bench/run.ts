import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { projectRoot } from '../src/paths.js'
import { rssMb, start } from './processes.js'

/**
 * `npm run bench`: load benchmarks of a running server (a separate process) against the
 * PostgreSQL server and against PGlite, measured side by side with the ceilings of the same
 * machine in the same run. Writes bench/results/<date>.json and .md.
 *
 * Settings (environment): BENCH_DATABASE_URL (a database on the server the bench may create
 * databases beside; default the local server's `postgres` database), BENCH_SECONDS (15),
 * BENCH_CONNECTIONS (64), BENCH_RUNS (3: runs per scenario, the median is reported).
 * `npm run bench -- --table <results.json>` writes that run's Markdown table again.
 */

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const WARMUP_SECONDS = 3
const LIST_ROWS = 100_000
const TOKEN_SECRET = 'bench-secret-bench-secret-bench-secret-0123'
const OPERATOR_KEY = 'amo_bench-operator-key-0123456789abcdefghijklmn'

const account = JSON.parse(readFileSync(join(projectRoot, 'test', 'fixtures', 'account.json'), 'utf8'))
// The ceilings' plain schema has no "blank optional = omitted" rule: send the example without its blank fields.
delete account.billing_address.administrative_area
for (const a of account.supply_addresses) delete a.supply_address.administrative_area

interface Measured { rps: number; p50: number; p99: number; errors: number; non2xx: number; peakRssMb: number }
interface Row extends Measured { scenario: string; database: string; unit?: string; perSecond?: number }

async function load(url: string, pid: number, options: Partial<autocannon.Options>): Promise<Measured> {
  const runs: Measured[] = []
  for (let i = 0; i < RUNS; i++) {
    let peak = rssMb(pid)
    const sampler = setInterval(() => { peak = Math.max(peak, rssMb(pid)) }, 200)
    const result = await autocannon({
      url, connections: CONNECTIONS, duration: SECONDS, warmup: { connections: CONNECTIONS, duration: WARMUP_SECONDS }, ...options
    } as autocannon.Options)
    clearInterval(sampler)
    runs.push({
      rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99,
      errors: result.errors + result.timeouts, non2xx: result.non2xx, peakRssMb: Math.round(peak)
    })
  }
  runs.sort((a, b) => a.rps - b.rps)
  return runs[Math.floor(runs.length / 2)]!
}

async function json(url: string, body: unknown, token?: string, path = '/graphql'): Promise<any> {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body)
  })
  return res.json()
}

/** Organisation, key, supplier and team through the operator GraphQL; returns a client token. */
async function setUp(url: string): Promise<string> {
  const gql = (query: string, token?: string) => json(url, { query }, token)
  const op = (await gql(`mutation { obtainToken(input: {APIKey: "${OPERATOR_KEY}"}) { token } }`)).data.obtainToken.token
  await gql('mutation { createOrganisation(input: {name: "Bench"}) { id } }', op)
  const key = (await gql('mutation { createApiKey(input: {organisation: "Bench"}) { key } }', op)).data.createApiKey.key
  await gql('mutation { createImportSupplier(input: {code: "BENCH", organisation: "Bench"}) { code } }', op)
  await gql('mutation { createImportSupplier(input: {code: "BENCH_LIST", organisation: "Bench"}) { code } }', op)
  await gql('mutation { createOperationsTeam(input: {name: "Migrations"}) { id } }', op)
  return (await gql(`mutation { obtainToken(input: {APIKey: "${key}"}) { token } }`)).data.obtainToken.token
}

const withExternal = (external: string) => JSON.stringify({ ...account, import_supplier: 'BENCH', external_account_number: external })

async function ours(database: string, env: Record<string, string>, listSql: postgres.Sql | undefined): Promise<Row[]> {
  // The compiled server, as `npm start` runs it.
  const server = await start(['dist/src/server.js'], {
    // The default log level: every request is logged, as in production.
    ...env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', NODE_ENV: 'production', TOKEN_SECRET, OPERATOR_API_KEY: OPERATOR_KEY,
    TOKEN_TTL_SECONDS: '86400', TOKEN_RATE_LIMIT_PER_MINUTE: '100000', DATABASE_POOL_SIZE: '20'
  }, /Server listening at (http:\/\/127\.0\.0\.1:\d+)/)
  const pid = server.child.pid!
  const rows: Row[] = []
  try {
    const token = await setUp(server.url)
    const headers = { 'content-type': 'application/json', authorization: `Token ${token}` }
    const api = `${server.url}/v1/data-import`
    const record = (scenario: string, m: Measured, unit?: string, per = 1) => {
      rows.push({ scenario, database, ...m, ...(unit ? { unit, perSecond: Math.round(m.rps * per) } : {}) })
      console.log(`${database} ${scenario}: ${Math.round(m.rps)} req/s p50 ${m.p50} ms p99 ${m.p99} ms rss ${m.peakRssMb} MB (non-2xx ${m.non2xx}, errors ${m.errors})`)
    }

    record('validate', await load(`${api}/validate-account/`, pid, { method: 'POST', headers, body: withExternal('V-1') }))

    let staged = 0
    record('stage', await load(`${api}/account-import-process/create-or-update/`, pid, {
      method: 'POST', headers,
      requests: [{ setupRequest: (req: any) => ({ ...req, body: withExternal(`S-${staged++}`) }) }]
    }))

    let created = 0
    record('create', await load(`${api}/account-import-process/process/`, pid, {
      method: 'POST', headers,
      requests: [{
        setupRequest: (req: any) => ({
          ...req,
          body: JSON.stringify({ external_account_number: `S-${created++ % staged}`, import_supplier_code: 'BENCH', operations_team_name: 'Migrations' })
        })
      }]
    }))
    const createdAccounts = Math.min(created, staged)

    let statusIndex = 0
    record('status', await load(`${api}/account-transfer-status/BENCH/S-0/`, pid, {
      headers,
      requests: [{ setupRequest: (req: any) => ({ ...req, path: `/v1/data-import/account-transfer-status/BENCH/S-${statusIndex++ % staged}/` }) }]
    }))

    // 500 new transactions per request, spread over the created accounts (each account's writes are serialised).
    let batch = 0
    const day = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)
    record('transactions (500/request)', await load(`${api}/transactions/create/`, pid, {
      method: 'POST', headers,
      requests: [{
        setupRequest: (req: any) => {
          const n = batch++
          const transactions = Array.from({ length: 500 }, (_, i) => ({ transaction_id: `BT-${n}-${i}`, transaction_date: day, amount: '0.01', type: 'CREDIT' }))
          return { ...req, body: JSON.stringify({ import_supplier: 'BENCH', external_account_number: `S-${n % Math.max(1, Math.min(createdAccounts, 2000))}`, transactions }) }
        }
      }]
    }), 'transactions/s', 500)

    let noteBatch = 0
    record('notes (50/request)', await load(`${api}/notes/create/`, pid, {
      method: 'POST', headers,
      requests: [{
        setupRequest: (req: any) => {
          const n = noteBatch++
          const notes = Array.from({ length: 50 }, (_, i) => ({ body: `Bench note ${n}-${i}` }))
          return { ...req, body: JSON.stringify({ import_supplier: 'BENCH', external_account_number: `S-${n % Math.max(1, Math.min(createdAccounts, 2000))}`, notes }) }
        }
      }]
    }), 'notes/s', 50)

    if (listSql) {
      // 100,000 processes for the list, written straight into the database.
      const [supplier] = await listSql`select id from import_suppliers where code = 'BENCH_LIST'`
      await listSql`insert into import_processes (supplier_id, external_account_number, state, first_staged_at)
        select ${supplier!.id}, 'L-' || lpad(g::text, 7, '0'), 'STAGED', now() from generate_series(1, ${LIST_ROWS}) g`
      await listSql`analyze`
    }
    // On PGlite the database lives in the server process: its list is the accounts staged above.
    const before = rssMb(pid)
    const list = await load(`${api}/all-account-import-processes/${listSql ? 'BENCH_LIST' : 'BENCH'}/`, pid, { headers, connections: 4, warmup: undefined } as never)
    record(`all- list (${listSql ? LIST_ROWS : staged} rows, 4 connections)`, { ...list, peakRssMb: list.peakRssMb }, 'MB growth', 0)
    rows.at(-1)!.perSecond = Math.round(list.peakRssMb - before)
  } finally {
    server.child.kill('SIGTERM')
    await new Promise((resolve) => server.child.once('exit', resolve))
  }
  return rows
}

async function ceilings(url: string): Promise<Row[]> {
  const ceiling = await start(['--import', 'tsx', 'bench/ceiling-server.ts'], { DATABASE_URL: url, POOL: '20' }, /ceiling listening at (http:\/\/127\.0\.0\.1:\d+)/)
  const rows: Row[] = []
  try {
    const headers = { 'content-type': 'application/json' }
    let n = 0
    for (const route of ['parse-validate', 'upsert', 'normalised']) {
      const m = await load(`${ceiling.url}/${route}`, ceiling.child.pid!, {
        method: 'POST', headers, requests: [{ setupRequest: (req: any) => ({ ...req, body: withExternal(`K-${n++}`) }) }]
      })
      rows.push({ scenario: `ceiling: ${route}`, database: 'postgres', ...m })
      console.log(`ceiling ${route}: ${Math.round(m.rps)} req/s p50 ${m.p50} ms p99 ${m.p99} ms (non-2xx ${m.non2xx}, errors ${m.errors})`)
    }
  } finally {
    ceiling.child.kill('SIGTERM')
    await new Promise((resolve) => ceiling.child.once('exit', resolve))
  }
  return rows
}

function table(rows: Row[]): string {
  const find = (scenario: string, database = 'postgres') => rows.find((r) => r.scenario === scenario && r.database === database)
  const ratio = (ours: string, ceiling: string, database = 'postgres') => {
    const a = find(ours, database)
    const b = find(ceiling)
    return a && b ? a.rps / b.rps : undefined
  }
  const targets: Record<string, string> = {
    validate: '≥ 0.7 of parse-validate', stage: '≥ 0.7 of upsert; p99 < 100 ms', create: '≥ 0.6 of normalised; p99 < 100 ms',
    'transactions (500/request)': '≥ 20,000 transactions/s', 'notes (50/request)': '', status: ''
  }
  const ceilingOf: Record<string, string> = { validate: 'ceiling: parse-validate', stage: 'ceiling: upsert', create: 'ceiling: normalised' }
  const minRatio: Record<string, number> = { validate: 0.7, stage: 0.7, create: 0.6 }
  /** Each target of the scenario that applies to the row, met or short by how much. */
  const verdict = (r: Row, ratio: number | undefined): string => {
    const checks: string[] = []
    const check = (name: string, ok: boolean, short: string) => checks.push(ok ? `${name} met` : `${name} short: ${short}`)
    if (ratio !== undefined && minRatio[r.scenario] !== undefined) {
      check('ratio', ratio >= minRatio[r.scenario]!, `${ratio.toFixed(2)} of ${minRatio[r.scenario]} (×${(minRatio[r.scenario]! / ratio).toFixed(1)})`)
    }
    if (r.scenario === 'stage' || r.scenario === 'create') check('p99', r.p99 < 100, `${r.p99} ms (×${(r.p99 / 100).toFixed(1)})`)
    if (r.scenario.startsWith('transactions')) check('rate', (r.perSecond ?? 0) >= 20_000, `${r.perSecond}/s (×${(20_000 / (r.perSecond || 1)).toFixed(1)})`)
    if (r.scenario.startsWith('all- list')) check('growth', (r.perSecond ?? 0) < 50, `${r.perSecond} MB`)
    if (r.database === 'postgres' && !r.scenario.startsWith('ceiling')) check('RSS', r.peakRssMb < 300, `${r.peakRssMb} MB`)
    return checks.join('; ')
  }
  const lines = [
    '| database | scenario | req/s | p50 ms | p99 ms | peak RSS MB | ratio to ceiling | also | target | verdict |',
    '|---|---|---|---|---|---|---|---|---|---|'
  ]
  for (const r of rows) {
    const c = ceilingOf[r.scenario]
    const q = c ? ratio(r.scenario, c, r.database) : undefined
    const also = r.unit ? `${r.perSecond} ${r.unit}` : ''
    const bad = r.non2xx + r.errors > 0 ? ` (${r.non2xx} non-2xx, ${r.errors} errors)` : ''
    lines.push(`| ${r.database} | ${r.scenario}${bad} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.peakRssMb} | ${q === undefined ? '' : q.toFixed(2)} | ${also} | ${targets[r.scenario] ?? ''} | ${verdict(r, q)} |`)
  }
  return lines.join('\n') + '\n'
}

async function main(): Promise<void> {
  execFileSync('npm', ['run', 'build'], { cwd: projectRoot, stdio: 'inherit' })
  const name = `amis_bench_${Date.now()}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database "${name}"`)
  const url = new URL(ADMIN_URL)
  url.pathname = '/' + name
  const dataDir = mkdtempSync(join(tmpdir(), 'amis-bench-'))
  const rows: Row[] = []
  try {
    rows.push(...await ceilings(url.toString()))
    const listSql = postgres(url.toString(), { max: 1, onnotice: () => {} })
    rows.push(...await ours('postgres', { DATABASE_URL: url.toString() }, listSql))
    await listSql.end()
    if (process.env.BENCH_PGLITE !== '0') rows.push(...await ours('pglite', { DATA_DIR: dataDir }, undefined))
  } finally {
    await admin.unsafe(`drop database if exists "${name}" with (force)`)
    await admin.end()
    rmSync(dataDir, { recursive: true, force: true })
  }
  const stamp = new Date().toISOString().slice(0, 16).replace(':', '-')
  const dir = join(projectRoot, 'bench', 'results')
  mkdirSync(dir, { recursive: true })
  const meta = { at: new Date().toISOString(), seconds: SECONDS, connections: CONNECTIONS, runs: RUNS, node: process.version }
  writeFileSync(join(dir, `${stamp}.json`), JSON.stringify({ ...meta, rows }, null, 2) + '\n')
  const md = markdown(meta, rows)
  writeFileSync(join(dir, `${stamp}.md`), md)
  console.log('\n' + md + `\nwritten to bench/results/${stamp}.json and .md`)
}

/** The Markdown of a results file, as a run writes it. */
function markdown(meta: { at: string; seconds: number; connections: number; runs: number; node: string }, rows: Row[]): string {
  return `# Benchmark ${meta.at}\n\n${meta.seconds} s per scenario after a ${WARMUP_SECONDS} s warm-up, ${meta.connections} connections, median of ${meta.runs} run(s), ${meta.node}.\nThe targets are for the PostgreSQL server; why the missed ones are missed: bench/README.md.\n\n${table(rows)}`
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

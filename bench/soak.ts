import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Big from 'big.js'
import postgres from 'postgres'
import { projectRoot } from '../src/paths.js'
import { rssMb as exactRssMb, start } from './processes.js'
import { setTimeout as sleep } from 'node:timers/promises'
import { exampleAccount } from '../schemas/examples.js'

/**
 * `npm run soak`: the compiled server against a fresh database on the PostgreSQL server, under a
 * steady mixed load for a few minutes: validate, stage, create, transactions, notes, status,
 * bad requests (invalid accounts, unknown suppliers, malformed JSON) and retries of requests
 * already answered (idempotency). The generator records what it expects (the accounts created,
 * each ledger's balance as an exact decimal); afterwards every account and balance in the
 * database is checked against that record. Reports server RSS over time, requests by status and
 * any 5xx. Writes bench/results/soak-<date>.json and .md. Not part of the tests.
 *
 * Settings (environment): SOAK_DATABASE_URL (admin URL, default the local server's `postgres`
 * database), SOAK_SECONDS (180), SOAK_RATE (requests per second, 40).
 */

const ADMIN_URL = process.env.SOAK_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SECONDS = Number(process.env.SOAK_SECONDS ?? 180)
const RATE = Number(process.env.SOAK_RATE ?? 40)
const SAMPLE_MS = 5000
const TOKEN_SECRET = 'soak-secret-soak-secret-soak-secret-01234567'
const OPERATOR_KEY = 'amo_soak-operator-key-0123456789abcdefghijklmnop'
const FIXTURE: Record<string, any> = exampleAccount()
const OPENING_BALANCE = new Big(FIXTURE.ledgers[0].ledger_balance)
const DAY = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)

/** Resident memory of the server in whole MB. */
const rssMb = (pid: number) => Math.round(exactRssMb(pid))

/** A random integer in [0, n). */
const pick = (n: number) => Math.floor(Math.random() * n)
const any = <T>(xs: T[]): T | undefined => xs[pick(xs.length)]

async function main(): Promise<void> {
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  const name = `amis_soak_${Date.now()}`
  await admin.unsafe(`create database "${name}"`)
  const url = new URL(ADMIN_URL)
  url.pathname = '/' + name
  console.log('building…')
  execFileSync(
    process.execPath,
    [join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    { cwd: projectRoot, stdio: 'inherit' }
  )
  const dataDir = mkdtempSync(join(tmpdir(), 'amis-soak-'))
  // After the server listens, only 5xx-related lines are kept (level 50: errors).
  const errorLines: string[] = []
  const { child, url: base } = await start(
    ['dist/src/server.js'],
    {
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      DATA_DIR: dataDir,
      DATABASE_URL: url.toString(),
      TOKEN_SECRET,
      OPERATOR_API_KEY: OPERATOR_KEY,
      TOKEN_TTL_SECONDS: '86400',
      TOKEN_RATE_LIMIT_PER_MINUTE: '100000'
    },
    /Server listening at (http:\/\/127\.0\.0\.1:\d+)/,
    (text) => {
      for (const line of text.split('\n')) {
        if (line.includes('"level":50') && errorLines.length < 20) errorLines.push(line.slice(0, 500))
      }
    }
  )
  const pid = child.pid!

  try {
    const report = await soak(base, pid, url.toString(), errorLines)
    write(report)
  } finally {
    child.kill('SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
    rmSync(dataDir, { recursive: true, force: true })
    await admin.unsafe(`drop database if exists "${name}" with (force)`)
    await admin.end()
  }
}

async function soak(base: string, pid: number, databaseUrl: string, errorLines: string[]) {
  const gql = async (query: string, token?: string) =>
    (await (
      await fetch(base + '/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ query })
      })
    ).json()) as any
  const op = (await gql(`mutation { obtainToken(input: {APIKey: "${OPERATOR_KEY}"}) { token } }`)).data.obtainToken
    .token
  await gql('mutation { createOrganisation(input: {name: "Soak"}) { id } }', op)
  const key = (await gql('mutation { createApiKey(input: {organisation: "Soak"}) { key } }', op)).data.createApiKey.key
  await gql('mutation { createImportSupplier(input: {code: "SOAK", organisation: "Soak"}) { code } }', op)
  await gql('mutation { createOperationsTeam(input: {name: "Migrations"}) { id } }', op)
  const token = (await gql(`mutation { obtainToken(input: {APIKey: "${key}"}) { token } }`)).data.obtainToken
    .token as string

  const byStatus: Record<string, number> = {}
  const byAction: Record<string, Record<string, number>> = {}
  const serverErrors: Array<{ action: string; status: number; body: string }> = []
  const surprises: Array<{ action: string; expected: string; got: string }> = []
  async function call(action: string, path: string, body: string | undefined): Promise<{ status: number; json: any }> {
    let status = 0
    let text = ''
    try {
      const res = await fetch(`${base}/v1/data-import/${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          authorization: `Token ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' })
        },
        body
      })
      status = res.status
      text = await res.text()
    } catch (err) {
      text = String(err)
    }
    byStatus[status] = (byStatus[status] ?? 0) + 1
    const counts = (byAction[action] ??= {})
    counts[status] = (counts[status] ?? 0) + 1
    if (status >= 500 || status === 0) serverErrors.push({ action, status, body: text.slice(0, 300) })
    let json: any
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status, json }
  }
  const expect = (action: string, expected: number | number[], got: number, detail = '') => {
    if (!([] as number[]).concat(expected).includes(got)) {
      surprises.push({ action, expected: String(expected), got: `${got} ${detail}`.trim() })
    }
  }

  // What the generator expects to find afterwards.
  let seq = 0
  const staged: string[] = []
  const created = new Map<string, { balance: Big; busy: boolean; batches: Array<{ body: string; delta: Big }> }>()
  const creating = new Set<string>()
  const account = (external: string, changes: Record<string, unknown> = {}) =>
    JSON.stringify({ ...FIXTURE, import_supplier: 'SOAK', external_account_number: external, ...changes })

  const actions: Array<[number, string, () => Promise<void>]> = [
    [
      8,
      'validate',
      async () => {
        const r = await call('validate', 'validate-account/', account(`V-${seq++}`))
        expect('validate', 200, r.status)
      }
    ],
    [
      4,
      'validate invalid account',
      async () => {
        const r = await call(
          'validate invalid account',
          'validate-account/',
          account(`V-${seq++}`, { account_type: 'SPACESHIP', customers: [] })
        )
        expect('validate invalid account', 400, r.status)
      }
    ],
    [
      14,
      'stage',
      async () => {
        const external = `S-${seq++}`
        const r = await call('stage', 'account-import-process/create-or-update/', account(external))
        expect('stage', 201, r.status)
        if (r.status === 201) staged.push(external)
      }
    ],
    [
      3,
      'stage again (retry)',
      async () => {
        const external = any(staged.filter((e) => !created.has(e) && !creating.has(e)))
        if (!external) return
        const r = await call('stage again (retry)', 'account-import-process/create-or-update/', account(external))
        // A create may have started meanwhile.
        expect('stage again (retry)', [200, 400], r.status)
      }
    ],
    [
      3,
      'stage unknown supplier',
      async () => {
        const r = await call(
          'stage unknown supplier',
          'account-import-process/create-or-update/',
          account(`U-${seq++}`, { import_supplier: 'NOPE' })
        )
        expect('stage unknown supplier', 400, r.status)
      }
    ],
    [
      3,
      'malformed JSON',
      async () => {
        const r = await call('malformed JSON', 'transactions/create/', '{"import_supplier": "SOAK", "transactions": [')
        expect('malformed JSON', 400, r.status)
      }
    ],
    [
      12,
      'create',
      async () => {
        const external = staged.find((e) => !created.has(e) && !creating.has(e))
        if (!external) return
        creating.add(external)
        const r = await call(
          'create',
          'account-import-process/process/',
          JSON.stringify({
            external_account_number: external,
            import_supplier_code: 'SOAK',
            operations_team_name: 'Migrations'
          })
        )
        expect('create', 201, r.status)
        if (r.status === 201) created.set(external, { balance: OPENING_BALANCE, busy: false, batches: [] })
        creating.delete(external)
      }
    ],
    [
      3,
      'create again (retry)',
      async () => {
        const external = any([...created.keys()])
        if (!external) return
        const r = await call(
          'create again (retry)',
          'account-import-process/process/',
          JSON.stringify({
            external_account_number: external,
            import_supplier_code: 'SOAK',
            operations_team_name: 'Migrations'
          })
        )
        expect('create again (retry)', 400, r.status, r.json?.errors?.[0]?.code)
      }
    ],
    [
      22,
      'transactions',
      async () => {
        const external = any([...created.keys()].filter((e) => !created.get(e)!.busy))
        if (!external) return
        const a = created.get(external)!
        a.busy = true
        const n = a.batches.length
        let delta = new Big(0)
        const transactions = Array.from({ length: 1 + pick(5) }, (_, i) => {
          const amount = new Big(pick(100_000)).div(100).plus('0.01')
          const type = Math.random() < 0.5 ? 'CREDIT' : 'CHARGE'
          delta = type === 'CREDIT' ? delta.plus(amount) : delta.minus(amount)
          return { transaction_id: `T-${n}-${i}`, transaction_date: DAY, amount: amount.toFixed(2), type }
        })
        const body = JSON.stringify({ import_supplier: 'SOAK', external_account_number: external, transactions })
        const r = await call('transactions', 'transactions/create/', body)
        expect('transactions', 201, r.status)
        if (r.status === 201) {
          a.balance = a.balance.plus(delta)
          a.batches.push({ body, delta })
        }
        a.busy = false
      }
    ],
    [
      6,
      'transactions again (retry)',
      async () => {
        const external = any(
          [...created.keys()].filter((e) => !created.get(e)!.busy && created.get(e)!.batches.length > 0)
        )
        if (!external) return
        const a = created.get(external)!
        a.busy = true
        const r = await call('transactions again (retry)', 'transactions/create/', any(a.batches)!.body)
        expect('transactions again (retry)', 201, r.status)
        const statuses = new Set((r.json?.results ?? []).map((x: { status: string }) => x.status))
        if (r.status === 201 && (statuses.size !== 1 || !statuses.has('TRANSACTION_ALREADY_EXISTS'))) {
          surprises.push({
            action: 'transactions again (retry)',
            expected: 'TRANSACTION_ALREADY_EXISTS',
            got: [...statuses].join(',')
          })
        }
        a.busy = false
      }
    ],
    [
      8,
      'notes',
      async () => {
        const external = any([...created.keys()])
        if (!external) return
        // A note from a small set: repeats are retries and must come back NOTE_ALREADY_EXISTS.
        const r = await call(
          'notes',
          'notes/create/',
          JSON.stringify({
            import_supplier: 'SOAK',
            external_account_number: external,
            notes: [{ body: `Soak note ${pick(3)}`, created_at: '2026-11-01T09:00:00Z' }]
          })
        )
        expect('notes', 201, r.status)
      }
    ],
    [
      10,
      'status',
      async () => {
        const external = any(staged)
        if (!external) return
        const r = await call('status', `account-transfer-status/SOAK/${external}/`, undefined)
        expect('status', 200, r.status)
      }
    ],
    [
      2,
      'status unknown supplier',
      async () => {
        const r = await call('status unknown supplier', 'account-transfer-status/NOPE/X-1/', undefined)
        expect('status unknown supplier', 404, r.status)
      }
    ]
  ]
  const total = actions.reduce((s, [w]) => s + w, 0)
  const choose = () => {
    let x = pick(total)
    for (const a of actions) if ((x -= a[0]) < 0) return a
    return actions[0]!
  }

  const memory: Array<{ second: number; rssMb: number }> = [{ second: 0, rssMb: rssMb(pid) }]
  const started = Date.now()
  const sampler = setInterval(
    () => memory.push({ second: Math.round((Date.now() - started) / 1000), rssMb: rssMb(pid) }),
    SAMPLE_MS
  )
  const inFlight = new Set<Promise<void>>()
  let sent = 0
  let skipped = 0
  console.log(`soak: ${SECONDS} s at ${RATE} requests/s against ${base}`)
  // A steady rate: one request every 1/RATE s, whatever the answers' latency (at most 200 in flight).
  while (Date.now() - started < SECONDS * 1000) {
    const due = started + (sent + skipped) * (1000 / RATE)
    const wait = due - Date.now()
    if (wait > 0) await sleep(wait)
    if (inFlight.size >= 200) {
      skipped++
      continue
    }
    const [, , run] = choose()
    const p: Promise<void> = run()
      .catch((err) => {
        surprises.push({ action: 'generator', expected: 'no throw', got: String(err) })
      })
      .finally(() => {
        inFlight.delete(p)
      })
    inFlight.add(p)
    sent++
    if (sent % (RATE * 30) === 0) {
      console.log(`  ${Math.round((Date.now() - started) / 1000)} s: ${sent} requests, rss ${rssMb(pid)} MB`)
    }
  }
  await Promise.all(inFlight)
  clearInterval(sampler)
  memory.push({ second: Math.round((Date.now() - started) / 1000), rssMb: rssMb(pid) })

  // Every account and every ledger balance in the database against the record.
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  const rows = await sql`select p.external_account_number as external, l.balance::text as balance
    from accounts a join import_processes p on p.id = a.import_process_id join ledgers l on l.account_id = a.id`
  const processes = await sql`select count(*)::int as n from import_processes`
  await sql.end()
  const mismatches: string[] = []
  const inDatabase = new Map(rows.map((r) => [r.external as string, r.balance as string]))
  for (const [external, a] of created) {
    const stored = inDatabase.get(external)
    if (stored === undefined) mismatches.push(`${external}: missing`)
    else if (!new Big(stored).eq(a.balance)) {
      mismatches.push(`${external}: balance ${stored}, expected ${a.balance.toFixed(2)}`)
    }
  }
  for (const external of inDatabase.keys()) if (!created.has(external)) mismatches.push(`${external}: not expected`)
  const transactionsAdded = [...created.values()].reduce((s, a) => s + a.batches.length, 0)

  return {
    date: new Date().toISOString(),
    seconds: SECONDS,
    rate: RATE,
    requests: sent,
    skippedAt200InFlight: skipped,
    byStatus,
    byAction,
    serverErrors: serverErrors.length,
    serverErrorSamples: serverErrors.slice(0, 10),
    serverErrorLog: errorLines,
    surprises: surprises.length,
    surpriseSamples: surprises.slice(0, 20),
    staged: staged.length,
    processesInDatabase: processes[0]!.n as number,
    accountsExpected: created.size,
    accountsInDatabase: inDatabase.size,
    transactionBatches: transactionsAdded,
    balanceMismatches: mismatches,
    memory
  }
}

function write(report: Awaited<ReturnType<typeof soak>>): void {
  const rss = report.memory.map((m) => m.rssMb)
  const stamp = report.date.slice(0, 16).replace(':', '-')
  const dir = join(projectRoot, 'bench', 'results')
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, `soak-${stamp}.json`), JSON.stringify(report, null, 2) + '\n')
  const actions = Object.entries(report.byAction).sort()
  const md = [
    `# Soak run ${report.date}`,
    '',
    `${report.seconds} s at ${report.rate} requests/s: ${report.requests} requests against the compiled server on a fresh PostgreSQL database.`,
    '',
    `- Requests by status: ${Object.entries(report.byStatus)
      .map(([s, n]) => `${s}: ${n}`)
      .join(', ')}`,
    `- 5xx or no answer: ${report.serverErrors}; answers other than expected: ${report.surprises}`,
    `- Accounts: ${report.staged} staged (${report.processesInDatabase} import processes in the database), ${report.accountsExpected} created and expected, ${report.accountsInDatabase} in the database`,
    `- Ledger balances checked exactly against the record: ${report.accountsExpected - report.balanceMismatches.length} match, ${report.balanceMismatches.length} differ (${report.transactionBatches} transaction batches added)`,
    `- Server RSS: start ${rss[0]} MB, min ${Math.min(...rss)} MB, max ${Math.max(...rss)} MB, end ${rss.at(-1)} MB`,
    '',
    '| action | answers by status |',
    '|---|---|',
    ...actions.map(
      ([a, c]) =>
        `| ${a} | ${Object.entries(c)
          .map(([s, n]) => `${s}: ${n}`)
          .join(', ')} |`
    ),
    '',
    `RSS every ${SAMPLE_MS / 1000} s (MB): ${report.memory.map((m) => `${m.second}s ${m.rssMb}`).join(', ')}`,
    ''
  ].join('\n')
  writeFileSync(join(dir, `soak-${stamp}.md`), md)
  console.log('\n' + md + `\nwritten to bench/results/soak-${stamp}.json and .md`)
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})

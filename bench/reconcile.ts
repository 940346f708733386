import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openPostgres } from '../src/db/index.js'
import { projectRoot } from '../src/paths.js'
import { RECONCILED_COUNTS } from '../schemas/reconciliation.js'
import { accountWriter } from './ceilings.js'

/**
 * `npx tsx bench/reconcile.ts`: reconciliation of 100,000 created accounts (the example account
 * with its ledgers, transactions and agreements), as a migration team runs it at cutover: the
 * expected figures of every account sent in pages of 10,000 (a hundredth of them differing), then
 * the supplier's totals. The server listens on loopback in this process, on a database of its own
 * on the PostgreSQL server, created and dropped here. Target: the 100,000 accounts in under 60 s.
 * Writes bench/results/reconcile-<date>.json and .md.
 *
 * Settings (environment): BENCH_DATABASE_URL (a database on the server beside which the bench may
 * create its own; default the local server's `postgres`), BENCH_RECONCILE_ACCOUNTS (100000).
 */

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const ACCOUNTS = Number(process.env.BENCH_RECONCILE_ACCOUNTS ?? 100_000)
const PAGE = 10_000
const OPERATOR_KEY = 'amo_bench-operator-key-0123456789abcdefghijklmn'

interface Summary {
  ledgers: Array<{ ledger_code: string; balance: string }>
  counts: Record<string, number>
}

async function main(): Promise<void> {
  const name = `amis_bench_reconcile_${Date.now()}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database "${name}"`)
  const url = new URL(ADMIN_URL)
  url.pathname = '/' + name
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} })
  const app = await buildApp(
    loadConfig({
      DATABASE_URL: url.toString(),
      NODE_ENV: 'production',
      LOG_LEVEL: 'silent',
      TOKEN_SECRET: 'bench-secret-bench-secret-bench-secret-0123',
      OPERATOR_API_KEY: OPERATOR_KEY,
      TOKEN_RATE_LIMIT_PER_MINUTE: '100000'
    }),
    { announce: () => {} }
  )
  try {
    const base = await app.listen({ host: '127.0.0.1', port: 0 })
    const call = async (path: string, token: string | undefined, body?: unknown) => {
      const res = await fetch(base + path, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' })
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const answer = (await res.json()) as any
      if (res.status !== 200 || answer?.errors?.length) {
        throw new Error(`${path}: ${res.status} ${JSON.stringify(answer).slice(0, 500)}`)
      }
      return answer
    }
    const graphql = async (query: string, token?: string) => (await call('/graphql', token, { query })).data
    const op = (await graphql(`mutation { obtainToken(input: {APIKey: "${OPERATOR_KEY}"}) { token } }`)).obtainToken
      .token
    await graphql('mutation { createOrganisation(input: {name: "Bench"}) { id } }', op)
    const key = (await graphql('mutation { createApiKey(input: {organisation: "Bench"}) { key } }', op)).createApiKey
      .key
    await graphql('mutation { createImportSupplier(input: {code: "BENCH", organisation: "Bench"}) { code } }', op)
    await graphql('mutation { createOperationsTeam(input: {name: "Migrations"}) { id } }', op)
    const token = (await graphql(`mutation { obtainToken(input: {APIKey: "${key}"}) { token } }`)).obtainToken.token

    console.log(`writing ${ACCOUNTS} created accounts…`)
    const [ids] = await sql`select (select id from import_suppliers where code = 'BENCH') as supplier,
      (select id from operations_teams where name = 'Migrations') as team`
    const database = await openPostgres(url.toString(), 4)
    const writer = accountWriter(database, ids!.supplier, ids!.team)
    const externals = Array.from({ length: ACCOUNTS }, (_, i) => `RC-${String(i).padStart(7, '0')}`)
    for (let i = 0; i < externals.length; i += 500) await writer.write(externals.slice(i, i + 500))
    await database.close()
    await sql`vacuum analyze`
    const [size] = await sql`select pg_size_pretty(pg_database_size(current_database())) as size`

    // Every account holds what the first one does; a hundredth of the entries expect 0.01 more.
    const held = (await call(`/v1/data-import/accounts/BENCH/${externals[0]}/`, token)) as Summary
    const entries = externals.map((external, i) => ({
      external_account_number: external,
      ledgers: held.ledgers.map((l) => ({
        ledger_code: l.ledger_code,
        balance: i % 100 === 7 && l.ledger_code === 'ENERGY' ? (Number(l.balance) + 0.01).toFixed(2) : l.balance
      })),
      counts: Object.fromEntries(RECONCILED_COUNTS.map((name) => [name, held.counts[name]]))
    }))

    console.log(`reconciling them in pages of ${PAGE}…`)
    const pages: number[] = []
    let matching = 0
    let differences = 0
    const started = performance.now()
    for (let i = 0; i < entries.length; i += PAGE) {
      const t0 = performance.now()
      const answer = await call('/v1/data-import/reconciliation/BENCH/', token, {
        accounts: entries.slice(i, i + PAGE)
      })
      pages.push(performance.now() - t0)
      matching += answer.matching
      differences += answer.differences.length
    }
    const seconds = (performance.now() - started) / 1000
    const t0 = performance.now()
    const totals = await call('/v1/data-import/reconciliation/BENCH/', token)
    const totalsMs = performance.now() - t0
    if (matching !== ACCOUNTS - ACCOUNTS / 100 || differences !== ACCOUNTS / 100) {
      throw new Error(`expected ${ACCOUNTS / 100} differences, got ${differences} (${matching} matching)`)
    }

    const sorted = [...pages].sort((a, b) => a - b)
    const result = {
      at: new Date().toISOString(),
      accounts: ACCOUNTS,
      database_size: size!.size as string,
      seconds: Math.round(seconds * 10) / 10,
      accounts_per_second: Math.round(ACCOUNTS / seconds),
      page_ms: { p50: Math.round(sorted[Math.floor(sorted.length / 2)]!), max: Math.round(sorted.at(-1)!) },
      differences,
      totals_ms: Math.round(totalsMs),
      totals_accounts_created: totals.accounts_created as number,
      target: { seconds: 60, met: seconds < 60 }
    }
    const stamp = result.at.slice(0, 16).replace(':', '-')
    const dir = join(projectRoot, 'bench', 'results')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `reconcile-${stamp}.json`), JSON.stringify(result, null, 2) + '\n')
    const md = [
      `# Reconciliation of ${ACCOUNTS.toLocaleString('en')} accounts (${result.at})`,
      '',
      '| accounts | pages of 10,000 | total | accounts/s | page p50 / max | differences | supplier totals | database | target < 60 s |',
      '|---|---|---|---|---|---|---|---|---|',
      `| ${ACCOUNTS.toLocaleString('en')} | ${pages.length} | ${result.seconds} s | ${result.accounts_per_second.toLocaleString('en')} | ${result.page_ms.p50} / ${result.page_ms.max} ms | ${differences} | ${result.totals_ms} ms | ${result.database_size} | ${result.target.met ? 'met' : 'short'} |`,
      ''
    ].join('\n')
    writeFileSync(join(dir, `reconcile-${stamp}.md`), md)
    console.log(md)
    console.log(`written to bench/results/reconcile-${stamp}.json and .md`)
  } finally {
    await app.close()
    await sql.end()
    await admin.unsafe(`drop database if exists "${name}" with (force)`)
    await admin.end()
  }
}

await main()

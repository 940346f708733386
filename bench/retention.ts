import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import postgres from 'postgres'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { createRetentionService } from '../src/modules/retention/service.js'
import { projectRoot } from '../src/paths.js'
import { exampleAccount } from '../schemas/examples.js'

/**
 * `npx tsx bench/retention.ts`: the retention erasure of 100,000 imported accounts with ~3 KB
 * payloads (past the period, a quarter with a failed create on record), while creates and
 * single-row updates of other processes go on, to show the job does not hold them up. The app
 * runs in this process on a database of its own on the PostgreSQL server, created and dropped here.
 * Writes bench/results/retention-<date>.json and .md.
 *
 * Settings (environment): BENCH_DATABASE_URL (a database on the server beside which the bench may
 * create its own; default the local server's `postgres`), BENCH_RETENTION_ROWS (100000).
 */

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const ROWS = Number(process.env.BENCH_RETENTION_ROWS ?? 100_000)
const STAGED = 3000
const CREATE_WORKERS = 4
const BASELINE_MS = 10_000
const OPERATOR_KEY = 'amo_bench-operator-key-0123456789abcdefghijklmn'
const account: Record<string, any> = exampleAccount()

interface Latencies {
  count: number
  p50: number
  p99: number
  max: number
}

function summarise(ms: number[]): Latencies {
  const sorted = [...ms].sort((a, b) => a - b)
  const at = (q: number) =>
    Math.round((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) * 10) / 10
  return { count: sorted.length, p50: at(0.5), p99: at(0.99), max: at(1) }
}

async function graphql(app: FastifyInstance, query: string, token?: string): Promise<any> {
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: token ? { authorization: `Bearer ${token}` } : {},
    payload: { query }
  })
  const body = res.json()
  if (body.errors) throw new Error(JSON.stringify(body.errors))
  return body.data
}

/** Creates of staged accounts by `CREATE_WORKERS` workers until `until()` says stop; each one's latency. */
async function createLoop(
  app: FastifyInstance,
  token: string,
  externals: string[],
  until: () => boolean
): Promise<number[]> {
  const latencies: number[] = []
  const worker = async () => {
    while (!until() && externals.length > 0) {
      const external = externals.shift()!
      const started = performance.now()
      const res = await app.inject({
        method: 'POST',
        url: '/v1/data-import/account-import-process/process/',
        headers: { authorization: `Token ${token}` },
        payload: {
          external_account_number: external,
          import_supplier_code: 'BENCH',
          operations_team_name: 'Migrations'
        }
      })
      latencies.push(performance.now() - started)
      if (res.statusCode !== 201) throw new Error(`create ${external}: ${res.statusCode} ${res.body}`)
    }
  }
  await Promise.all(Array.from({ length: CREATE_WORKERS }, worker))
  return latencies
}

/** Single-row updates of pending processes (not the ones created) from a connection of their own. */
async function updateLoop(sql: postgres.Sql, ids: number[], until: () => boolean): Promise<number[]> {
  const latencies: number[] = []
  for (let i = 0; !until(); i++) {
    const started = performance.now()
    await sql`update import_processes set updated_at = now() where id = ${ids[i % ids.length]!}`
    latencies.push(performance.now() - started)
  }
  return latencies
}

async function main(): Promise<void> {
  const name = `amis_bench_retention_${Date.now()}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database "${name}"`)
  const url = new URL(ADMIN_URL)
  url.pathname = '/' + name
  const sql = postgres(url.toString(), { max: 2, onnotice: () => {} })
  let app: FastifyInstance | undefined
  try {
    // The app's own job keeps everything (3650 days): the measured run is the one below.
    app = await buildApp(
      loadConfig({
        DATABASE_URL: url.toString(),
        DATABASE_POOL_SIZE: '20',
        NODE_ENV: 'production',
        LOG_LEVEL: 'silent',
        TOKEN_SECRET: 'bench-secret-bench-secret-bench-secret-0123',
        OPERATOR_API_KEY: OPERATOR_KEY,
        TOKEN_RATE_LIMIT_PER_MINUTE: '100000',
        STAGED_DATA_RETENTION_DAYS: '3650'
      }),
      { announce: () => {} }
    )
    const op = (await graphql(app, `mutation { obtainToken(input: {APIKey: "${OPERATOR_KEY}"}) { token } }`))
      .obtainToken.token
    await graphql(app, 'mutation { createOrganisation(input: {name: "Bench"}) { id } }', op)
    const key = (await graphql(app, 'mutation { createApiKey(input: {organisation: "Bench"}) { key } }', op))
      .createApiKey.key
    await graphql(app, 'mutation { createImportSupplier(input: {code: "BENCH", organisation: "Bench"}) { code } }', op)
    await graphql(app, 'mutation { createOperationsTeam(input: {name: "Migrations"}) { id } }', op)
    const token = (await graphql(app, `mutation { obtainToken(input: {APIKey: "${key}"}) { token } }`)).obtainToken
      .token

    console.log(`staging ${STAGED} accounts to create during the runs…`)
    const externals = Array.from({ length: STAGED }, (_, i) => `NEW-${i}`)
    for (const external of externals) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/data-import/account-import-process/create-or-update/',
        headers: { authorization: `Token ${token}` },
        payload: { ...account, import_supplier: 'BENCH', external_account_number: external }
      })
      if (res.statusCode !== 201) throw new Error(`stage: ${res.body}`)
    }
    const [{ id: supplierId }] = (await sql`select id from import_suppliers where code = 'BENCH'`) as unknown as [
      { id: string }
    ]
    const others = (
      await sql`select id from import_processes where external_account_number like 'NEW-%' order by id desc limit 200`
    ).map((r) => Number(r.id))

    console.log(`inserting ${ROWS} imported accounts, 31 days old…`)
    const failed = JSON.stringify({
      errors: [
        {
          detail: 'Ann Example <ann@example.test> is not a valid e-mail address.',
          code: 'invalid_email',
          attr: 'customers.0.email'
        }
      ]
    })
    for (let from = 1; from <= ROWS; from += 10_000) {
      const to = Math.min(ROWS, from + 9_999)
      await sql`with p as (
          insert into import_processes (supplier_id, external_account_number, state, staged_data, first_staged_at, service_account_number, account_created_at)
          select ${supplierId}::uuid, 'OLD-' || g, 'IMPORTED', jsonb_set(${sql.json(account)}::jsonb, '{external_account_number}', to_jsonb('OLD-' || g)),
            now() - interval '40 days', 'A-OLD-' || g, now() - interval '31 days' - g * interval '1 second'
          from generate_series(${from}::int, ${to}::int) as g
          returning id, external_account_number)
        insert into import_events (import_process_id, type, actor, detail)
        select id, 'CREATE_FAILED', 'organisation:Bench', ${failed}::jsonb from p where right(external_account_number, 1) in ('0', '4')`
    }
    await sql`vacuum analyze import_processes`
    await sql`vacuum analyze import_events`
    const [{ size }] =
      (await sql`select pg_size_pretty(pg_total_relation_size('import_processes')) as size`) as unknown as [
        { size: string }
      ]

    console.log(`baseline: ${BASELINE_MS / 1000} s of creates and updates without the job…`)
    const baselineEnd = Date.now() + BASELINE_MS
    const [baseCreates, baseUpdates] = await Promise.all([
      createLoop(app, token, externals, () => Date.now() > baselineEnd),
      updateLoop(sql, others, () => Date.now() > baselineEnd)
    ])

    console.log('the retention run, with creates and updates alongside…')
    const job = createRetentionService(app.db, { retentionDays: 30 })
    let done = false
    const started = performance.now()
    const [totals, creates, updates] = await Promise.all([
      job.runOnce().finally(() => {
        done = true
      }),
      createLoop(app, token, externals, () => done),
      updateLoop(sql, others, () => done)
    ])
    const seconds = (performance.now() - started) / 1000
    const [left] = await sql`select count(*) filter (where staged_data is not null) as payloads,
      (select count(*) from import_events e, jsonb_array_elements(e.detail -> 'errors') x where x.value ? 'detail') as details
      from import_processes where external_account_number like 'OLD-%'`

    const result = {
      at: new Date().toISOString(),
      node: process.version,
      rows: ROWS,
      tableSizeBefore: size,
      erased: totals,
      seconds: Math.round(seconds * 10) / 10,
      perSecond: Math.round(totals.payloads / seconds),
      left: { payloads: Number(left!.payloads), details: Number(left!.details) },
      baseline: { creates: summarise(baseCreates), updates: summarise(baseUpdates) },
      duringRun: { creates: summarise(creates), updates: summarise(updates) }
    }
    const ms = (l: Latencies) => `${l.count} | ${l.p50} | ${l.p99} | ${l.max}`
    const md = [
      `# Retention benchmark ${result.at}`,
      '',
      `${ROWS.toLocaleString('en')} imported accounts with ~3 KB payloads past the period (import_processes ${size}); one run of the job,`,
      `batches of 1,000, on the PostgreSQL server, ${process.version}, 2 shared cores. Creates: ${CREATE_WORKERS} at a time, in process;`,
      'updates: single-row updates of other pending processes from a connection of their own.',
      '',
      `**${totals.payloads.toLocaleString('en')} payloads erased in ${result.seconds} s (${result.perSecond.toLocaleString('en')}/s)**; left afterwards: ${result.left.payloads} payloads, ${result.left.details} error details.`,
      '',
      '| | count | p50 ms | p99 ms | max ms |',
      '|---|---|---|---|---|',
      `| creates, baseline (${BASELINE_MS / 1000} s, no job) | ${ms(result.baseline.creates)} |`,
      `| creates during the run | ${ms(result.duringRun.creates)} |`,
      `| updates, baseline | ${ms(result.baseline.updates)} |`,
      `| updates during the run | ${ms(result.duringRun.updates)} |`,
      ''
    ].join('\n')
    const stamp = result.at.slice(0, 16).replace(':', '-')
    const dir = join(projectRoot, 'bench', 'results')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `retention-${stamp}.json`), JSON.stringify(result, null, 2) + '\n')
    writeFileSync(join(dir, `retention-${stamp}.md`), md)
    console.log('\n' + md + `\nwritten to bench/results/retention-${stamp}.json and .md`)
  } finally {
    await app?.close()
    await sql.end()
    await admin.unsafe(`drop database if exists "${name}" with (force)`)
    await admin.end()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})

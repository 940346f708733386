import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { projectRoot } from '../src/paths.js'
import { processCpuMs } from './cpu.js'
import { rssMb, start } from './processes.js'

/**
 * `npm run bench -- --only pglite-responsive`: the compiled server on the embedded PGlite (a new
 * DATA_DIR), the migration client migrating RESPONSIVE_ACCOUNTS generated accounts with their
 * post-import data in batches, once alone and once while a prober sends, one at a time, `GET
 * /healthz`, `obtainToken` (GraphQL) and an account's status read, round and round. Reports each
 * probe's p50 and p99, and the migration's accounts/s and the server's CPU time per account (all
 * its threads: steadier than the rate on a shared machine) with and without the prober. BENCH_SERVER
 * names the compiled server to run (default dist/src/server.js), to measure an earlier build. Writes
 * bench/results/pglite-responsive-<date>.json and .md.
 */

const ACCOUNTS = Number(process.env.BENCH_RESPONSIVE ?? 3000)
/** The server's entry: BENCH_SERVER names another compiled copy (an earlier build kept to compare). */
const SERVER = process.env.BENCH_SERVER ?? 'dist/src/server.js'
const TOKEN_SECRET = 'bench-secret-bench-secret-bench-secret-0123'
const OPERATOR_KEY = 'amo_bench-operator-key-0123456789abcdefghijklmn'
/** Pause between two probes: the prober is a monitor, not a load. */
const PROBE_GAP_MS = 20

export interface ResponsiveDeps {
  generate(file: string, count: number, supplier: string, seed: string): Promise<void>
  migrateFile(url: string, key: string, file: string, args: string[]): Promise<{ perSecond: number; summary: string }>
}

interface Probe {
  name: string
  count: number
  p50: number
  p99: number
  max: number
  failed: number
}

const quantile = (sorted: number[], q: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!

async function post(url: string, body: unknown, token?: string): Promise<any> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body)
  })
  return res.json()
}

export async function responsiveScenario(deps: ResponsiveDeps): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'amis-bench-responsive-'))
  const server = await start(
    [SERVER],
    {
      DATA_DIR: join(dir, 'data'),
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      TOKEN_SECRET,
      OPERATOR_API_KEY: OPERATOR_KEY,
      TOKEN_TTL_SECONDS: '86400',
      TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
      DATABASE_POOL_SIZE: '20'
    },
    /Server listening at (http:\/\/127\.0\.0\.1:\d+)/
  )
  const pid = server.child.pid!
  const url = server.url
  try {
    const gql = (query: string, token?: string) => post(`${url}/graphql`, { query }, token)
    const op = (await gql(`mutation { obtainToken(input: {APIKey: "${OPERATOR_KEY}"}) { token } }`)).data.obtainToken
      .token
    await gql('mutation { createOrganisation(input: {name: "Bench"}) { id } }', op)
    const key = (await gql('mutation { createApiKey(input: {organisation: "Bench"}) { key } }', op)).data.createApiKey
      .key
    for (const code of ['BENCH_WARM', 'BENCH_ALONE', 'BENCH_PROBED']) {
      await gql(`mutation { createImportSupplier(input: {code: "${code}", organisation: "Bench"}) { code } }`, op)
    }
    await gql('mutation { createOperationsTeam(input: {name: "Migrations"}) { id } }', op)
    const token = (await gql(`mutation { obtainToken(input: {APIKey: "${key}"}) { token } }`)).data.obtainToken.token

    // Warm-up (JIT, caches), and an account whose status the prober reads.
    const warmFile = join(dir, 'warm.ndjson')
    await deps.generate(warmFile, 200, 'BENCH_WARM', 'bench-responsive-warm')
    await deps.migrateFile(url, key, warmFile, [])
    const firstExternal = JSON.parse(readFileSync(warmFile, 'utf8').split('\n')[0]!).account.external_account_number
    const statusUrl = `${url}/v1/data-import/account-transfer-status/BENCH_WARM/${encodeURIComponent(firstExternal)}/`
    const statusCheck = await fetch(statusUrl, { headers: { authorization: `Token ${token}` } })
    if (statusCheck.status !== 200) throw new Error(`status read answered ${statusCheck.status}`)

    const aloneFile = join(dir, 'alone.ndjson')
    const probedFile = join(dir, 'probed.ndjson')
    await deps.generate(aloneFile, ACCOUNTS, 'BENCH_ALONE', 'bench-responsive-alone')
    await deps.generate(probedFile, ACCOUNTS, 'BENCH_PROBED', 'bench-responsive-probed')

    const loadAtStart = loadavg()[0]!
    /** The server's CPU time (all its threads) per account migrated by `run`. */
    const cpuPerAccount = async <T>(run: () => Promise<T>): Promise<[T, number]> => {
      const before = processCpuMs(pid)
      const result = await run()
      return [result, Math.round(((processCpuMs(pid) - before) / ACCOUNTS) * 100) / 100]
    }
    const [alone, aloneCpu] = await cpuPerAccount(() => deps.migrateFile(url, key, aloneFile, []))
    console.log(
      `pglite: migrate ${ACCOUNTS} alone: ${Math.round(alone.perSecond)} accounts/s, server CPU ${aloneCpu} ms/account`
    )

    const probes: Record<string, { times: number[]; failed: number }> = {
      healthz: { times: [], failed: 0 },
      obtainToken: { times: [], failed: 0 },
      status: { times: [], failed: 0 }
    }
    const kinds: Array<[string, () => Promise<boolean>]> = [
      ['healthz', async () => (await fetch(`${url}/healthz`)).status === 200],
      [
        'obtainToken',
        async () => !!(await gql(`mutation { obtainToken(input: {APIKey: "${key}"}) { token } }`)).data?.obtainToken
      ],
      ['status', async () => (await fetch(statusUrl, { headers: { authorization: `Token ${token}` } })).status === 200]
    ]
    const state = { running: true }
    let peakRss = rssMb(pid)
    const prober = (async () => {
      for (let i = 0; state.running; i++) {
        const [name, probe] = kinds[i % kinds.length]!
        const began = performance.now()
        const ok = await probe().catch(() => false)
        const ms = performance.now() - began
        if (!state.running) break // the migration ended during this probe: not counted
        probes[name]!.times.push(ms)
        if (!ok) probes[name]!.failed++
        peakRss = Math.max(peakRss, rssMb(pid))
        await sleep(PROBE_GAP_MS)
      }
    })()
    const [probed, probedCpu] = await cpuPerAccount(() => deps.migrateFile(url, key, probedFile, []))
    state.running = false
    await prober
    console.log(
      `pglite: migrate ${ACCOUNTS} probed: ${Math.round(probed.perSecond)} accounts/s, server CPU ${probedCpu} ms/account`
    )

    const results: Probe[] = Object.entries(probes).map(([name, { times, failed }]) => {
      const sorted = [...times].sort((a, b) => a - b)
      return {
        name,
        count: sorted.length,
        p50: Math.round(quantile(sorted, 0.5) * 10) / 10,
        p99: Math.round(quantile(sorted, 0.99) * 10) / 10,
        max: Math.round((sorted.at(-1) ?? 0) * 10) / 10,
        failed
      }
    })
    for (const p of results) {
      console.log(
        `pglite: ${p.name} during the migration: n ${p.count} p50 ${p.p50} ms p99 ${p.p99} ms max ${p.max} ms`
      )
    }

    const at = new Date().toISOString()
    const stamp = `pglite-responsive-${at.slice(0, 19).replace(/:/g, '-')}`
    const out = join(projectRoot, 'bench', 'results')
    mkdirSync(out, { recursive: true })
    const record = {
      at,
      server: SERVER,
      node: process.version,
      accounts: ACCOUNTS,
      probeGapMs: PROBE_GAP_MS,
      aloneAccountsPerSecond: Math.round(alone.perSecond),
      probedAccountsPerSecond: Math.round(probed.perSecond),
      /** The server's CPU ms (all threads) per account, alone and probed (the probed run's includes serving the probes). */
      serverCpuMsPerAccount: [aloneCpu, probedCpu],
      peakRssMb: Math.round(peakRss),
      /** The machine's one-minute load average before and after the two migrations (other work on it; 2 cores). */
      load: [loadAtStart, loadavg()[0]!].map((l) => Math.round(l * 10) / 10),
      probes: results
    }
    writeFileSync(join(out, `${stamp}.json`), JSON.stringify(record, null, 2) + '\n')
    const md =
      `# PGlite responsiveness ${at}\n\n` +
      `The compiled server (${SERVER}) on the embedded PGlite (a new DATA_DIR), Node ${process.version}. The migration client migrates ` +
      `${ACCOUNTS.toLocaleString('en')} generated accounts with their post-import data in batches, alone and then ` +
      `while a prober sends one request at a time (${PROBE_GAP_MS} ms apart): GET /healthz, obtainToken, an ` +
      `account's status read.\n\n` +
      `Migration alone: ${record.aloneAccountsPerSecond} accounts/s; with the prober: ${record.probedAccountsPerSecond} accounts/s. ` +
      `The server's CPU time per account (all its threads): ${aloneCpu} ms alone, ${probedCpu} ms with the prober. ` +
      `Server RSS at most ${record.peakRssMb} MB. The machine's load average (1 min) was ${record.load[0]} before and ` +
      `${record.load[1]} after (other work on it).\n\n` +
      `| Probe during the migration | n | p50 ms | p99 ms | max ms | failed |\n| --- | --: | --: | --: | --: | --: |\n` +
      results.map((p) => `| ${p.name} | ${p.count} | ${p.p50} | ${p.p99} | ${p.max} | ${p.failed} |`).join('\n') +
      '\n'
    writeFileSync(join(out, `${stamp}.md`), md)
    console.log('\n' + md + `\nwritten to bench/results/${stamp}.json and .md`)
  } finally {
    server.child.kill('SIGTERM')
    await new Promise((resolve) => server.child.once('exit', resolve))
    rmSync(dir, { recursive: true, force: true })
  }
}

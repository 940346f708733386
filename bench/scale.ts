import { execFileSync, spawn } from 'node:child_process'
import {
  accessSync,
  constants,
  createReadStream,
  createWriteStream,
  mkdirSync,
  mkdtempSync,
  readFileSync
} from 'node:fs'
import { rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { createInterface } from 'node:readline'
import { chromium } from 'playwright-core'
import postgres from 'postgres'
import { projectRoot } from '../src/paths.js'
import { cpuSplit, machineSampler, outsideCpu, type MachineReference, type OutsideCpu } from './cpu.js'
import { startOwnPostgres } from './own-postgres.js'
import { profileArgs, sliceProfiler, STATEMENT_SETTINGS } from './scale-profile.js'
import { rssMb, start } from './processes.js'

/**
 * `BENCH_SCALE=<accounts> npm run bench`: a migration of that many generated accounts (a tenth with
 * post-import history, 5 % invalid) through import jobs (`npm run migrate -- submit <file> --team
 * T --follow`, the compiled client), one generated file and one job per slice, on a database of its
 * own on a PostgreSQL server of the bench's own, set as docs/scaling.md advises for a large migration
 * (bench/own-postgres.ts; or on the server of BENCH_DATABASE_URL with BENCH_SCALE_POSTGRES=shared). Per slice: time, accounts/s, CPU per account (server + PostgreSQL,
 * as bench/cpu.ts counts it), the server's RSS, table and index sizes, and the CPU time of the same
 * fixed work done every 10 s during it (bench/cpu.ts, machineSampler), which tells a machine that
 * slows down from a migration whose cost grows. Then, on the full tables:
 * p50/p99 of the dashboard's queries, of status and of the account summary, and the all- list
 * streamed whole (time, bytes, RSS growth). Writes bench/results/scale-<date>.json, .md and a chart
 * (.png, uPlot in headless Chromium) of accounts/s and CPU per account by slice.
 *
 * Settings (environment): BENCH_SCALE (accounts), BENCH_SCALE_SLICE (accounts per slice; default
 * 100,000, or a tenth of BENCH_SCALE when that is smaller, so a small run still has ten slices),
 * BENCH_SCALE_SAMPLES (50: timed requests per query), BENCH_SCALE_POSTGRES (`own`, the default, or
 * `shared`: a database on the server of BENCH_DATABASE_URL, as for the other rows),
 * CHROMIUM_PATH (else `chromium` on PATH), BENCH_SCALE_KEEP=1 to keep the database at the end
 * (dropped otherwise).
 */

const SCALE = Number(process.env.BENCH_SCALE ?? 0)
const SLICE = Number(process.env.BENCH_SCALE_SLICE ?? Math.min(100_000, Math.ceil(SCALE / 10)))
const SAMPLES = Number(process.env.BENCH_SCALE_SAMPLES ?? 50)
/** Leave the database in place at the end (to look at its plans). */
const KEEP = process.env.BENCH_SCALE_KEEP === '1'
const OWN_POSTGRES = (process.env.BENCH_SCALE_POSTGRES ?? 'own') === 'own'
/** A folder for where each slice's CPU goes (bench/scale-profile.ts); unset, nothing is profiled. */
const PROFILE = process.env.BENCH_SCALE_PROFILE
const HISTORY_SHARE = 0.1
const INVALID_SHARE = 0.05
const SUPPLIER = 'SCALE'
const TEAM = 'Migrations'
const TOKEN_SECRET = 'bench-secret-bench-secret-bench-secret-0123'
const OPERATOR_KEY = 'amo_bench-operator-key-0123456789abcdefghijklmn'
const DATABASE = `amis_bench_scale_${Date.now()}`

/** Targets, printed next to the figures. */
const TARGETS = {
  lastOverFirst: 0.9,
  rssMb: 400,
  dashboardP99Ms: 200,
  accountP99Ms: 50,
  listGrowthMb: 50
}

interface TableSize {
  table: string
  totalMb: number
  indexesMb: number
}
interface Slice {
  slice: number
  /** Accounts sent up to the end of this slice. */
  accountsTo: number
  lines: number
  created: number
  failed: number
  seconds: number
  /** Lines per second of the `submit --follow` command, upload included. */
  perSecond: number
  /** The same from the job's own started_at/finished_at (upload excluded). */
  jobPerSecond: number
  serverMsPerAccount: number
  postgresMsPerAccount: number
  peakRssMb: number
  endRssMb: number
  /** The server's V8 heap in use at the slice's end (from /metrics), to tell the JavaScript heap from the rest of the RSS. */
  heapUsedMb: number
  tables: TableSize[]
  /** /proc/loadavg's one-minute figure at the slice's end (other work on the machine). */
  load: number
  io: SliceIo
  /**
   * The fixed work's CPU time during the slice (absent in runs before 2026-11-27 14:00; the run of
   * 14:19 timed it just before and just after each slice instead).
   */
  reference?: MachineReference | { before: Omit<MachineReference, 'tries'>; after: Omit<MachineReference, 'tries'> }
  /** The machine's CPU during the slice that went to none of the run's processes (absent before 2026-11-28). */
  outside?: OutsideCpu
}
/** What the slice cost PostgreSQL's write-ahead log and buffer cache (differences of its statistics views). */
interface SliceIo {
  /** Write-ahead log written (the whole server's: the bench is its only writer). */
  walMb: number
  /** Full-page images in that log: pages written whole because the slice was the first to change them since a checkpoint. */
  fullPageImages: number
  /** Checkpoints started (timed or requested by the log's size). */
  checkpoints: number
  /** Blocks the bench's database read from outside its buffer cache. */
  blocksRead: number
  /** The five indexes that read the most blocks from outside the buffer cache in the slice. */
  indexesRead: Array<{ index: string; blocks: number }>
}
interface Latency {
  name: string
  kind: 'dashboard' | 'account'
  samples: number
  p50: number
  p99: number
  max: number
}
interface ListStream {
  ms: number
  bytes: number
  rows: number
  rssBeforeMb: number
  peakRssMb: number
  growthMb: number
}
interface Results {
  at: string
  node: string
  scale: number
  slice: number
  samples: number
  historyShare: number
  invalidShare: number
  loadAtStart: number
  loadAtEnd: number
  slices: Slice[]
  /** The server's settings that differ from PostgreSQL's defaults when it was the bench's own (absent: the shared server). */
  ownPostgres?: Record<string, string>
  /** The PostgreSQL server's autovacuum setting (off: no statistics are gathered as the tables grow). */
  autovacuum: string
  /** Whether any table had been analyzed (by hand or by autovacuum) when the queries were first timed. */
  analyzedDuringRun: boolean
  analyzeMs: number
  /** The queries as the migration left the tables, and after an ANALYZE of every table. */
  /**
   * Each sampled account read for the first time, as the migration left the tables: on a machine
   * whose page cache no longer holds them, from disk. Absent in runs before 2026-11-27 12:00.
   */
  latenciesFirst?: Latency[]
  /** The same requests again: the same statistics, the pages read once already. */
  latencies: Latency[]
  latenciesAnalyzed: Latency[]
  list: ListStream
  peakRssMb: number
}

const round = (n: number, digits = 0) => Number(n.toFixed(digits))

/** "kdamond.0 8.1, kworker 1.2, …": the processes outside the run with the most CPU, % of a core. */
const outsideText = (o: OutsideCpu) => o.top.map((p) => `${p.name} ${p.percent}`).join(', ')

/** The fixed work's time around a slice: the mean of before and after. */
function referenceOf(s: Slice): Omit<MachineReference, 'tries'> | undefined {
  if (!s.reference || !('before' in s.reference)) return s.reference
  const { before, after } = s.reference
  return { jsMs: (before.jsMs + after.jsMs) / 2, postgresMs: (before.postgresMs + after.postgresMs) / 2 }
}

/**
 * How much slower the machine did the fixed work around the last slice than around the first,
 * each side weighted by its share of the first slice's CPU (1.1: 10 % slower); undefined without
 * the reference.
 */
export function machineSlowing(first: Slice, last: Slice): number | undefined {
  const a = referenceOf(first)
  const b = referenceOf(last)
  if (!a || !b) return undefined
  const server = first.serverMsPerAccount / (first.serverMsPerAccount + first.postgresMsPerAccount)
  return server * (b.jsMs / a.jsMs) + (1 - server) * (b.postgresMs / a.postgresMs)
}

/** Percentile of sorted values (nearest rank): of 50 samples, p99 is the largest. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0
}

/** Runs the compiled migration client; resolves with its exit code and output. */
function client(args: string[], env: Record<string, string>, stdout?: string): Promise<{ code: number; out: string }> {
  const child = spawn(process.execPath, ['dist/src/cli/migrate/index.js', ...args], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  const file = stdout ? createWriteStream(stdout) : undefined
  if (file) child.stdout.pipe(file)
  else child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)))
  child.stderr.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)))
  const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)))
  const flushed = file ? new Promise<void>((resolve) => file.once('finish', () => resolve())) : Promise.resolve()
  return Promise.all([exited, flushed]).then(([code]) => ({ code, out }))
}

/** The external account numbers of some lines of a file that carry post-import history (one line in `every` read). */
async function withHistory(file: string, every: number): Promise<string[]> {
  const found: string[] = []
  let n = 0
  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    if (n++ % every !== 0 || !line) continue
    const entry = JSON.parse(line) as { account?: { external_account_number?: string } }
    if (Object.keys(entry).length > 1 && entry.account?.external_account_number) {
      found.push(entry.account.external_account_number)
    }
  }
  return found
}

/** `CHROMIUM_PATH`, else `chromium` on PATH (as the browser tests find it). */
function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      accessSync(join(dir, 'chromium'), constants.X_OK)
      return join(dir, 'chromium')
    } catch {
      // not here
    }
  }
  return undefined
}

/** The chart (uPlot, drawn by headless Chromium): accounts/s and CPU ms per account by slice, on two y axes. */
export async function drawChart(results: Results, file: string): Promise<void> {
  const executablePath = findChromium()
  if (!executablePath) throw new Error('no Chromium: set CHROMIUM_PATH or put chromium on PATH')
  const uplot = join(projectRoot, 'node_modules', 'uplot', 'dist')
  const data = [
    results.slices.map((s) => s.accountsTo / 1000),
    results.slices.map((s) => round(s.perSecond)),
    results.slices.map((s) => round(s.serverMsPerAccount + s.postgresMsPerAccount, 2)),
    results.slices.map((s) => round(s.serverMsPerAccount, 2))
  ]
  const title =
    `${results.scale.toLocaleString('en')} accounts through import jobs, slices of ` +
    `${results.slice.toLocaleString('en')} (${results.at.slice(0, 16).replace('T', ' ')})`
  const options = {
    title,
    width: 960,
    height: 440,
    legend: { live: false },
    scales: { x: { time: false }, rate: { auto: true }, cpu: { auto: true } },
    axes: [
      { label: 'accounts migrated (thousands), at the end of each slice' },
      { scale: 'rate', label: 'accounts/s' },
      { scale: 'cpu', side: 1, label: 'CPU ms per account', grid: { show: false } }
    ],
    series: [
      { label: 'thousand accounts' },
      { label: 'accounts/s', scale: 'rate', stroke: '#1f5fbf', width: 2, points: { show: true, size: 7 } },
      {
        label: 'CPU ms/account (server + PostgreSQL)',
        scale: 'cpu',
        stroke: '#c0392b',
        width: 2,
        points: { show: true, size: 7 }
      },
      { label: 'of which server', scale: 'cpu', stroke: '#e59866', width: 1, dash: [6, 4], points: { show: false } }
    ]
  }
  const html = `<!doctype html><html><head><meta charset="utf-8"><style>${readFileSync(join(uplot, 'uPlot.min.css'), 'utf8')}
body { margin: 0; background: #fff; font-family: sans-serif; } #chart { display: inline-block; padding: 8px 12px; }</style></head>
<body><div id="chart"></div><script>${readFileSync(join(uplot, 'uPlot.iife.min.js'), 'utf8')}</script><script>
const options = ${JSON.stringify(options)};
const zeroBased = (u, min, max) => [0, max > 0 ? max * 1.15 : 1];
options.scales.rate.range = zeroBased;
options.scales.cpu.range = zeroBased;
new uPlot(options, ${JSON.stringify(data)}, document.getElementById('chart'));
document.body.dataset.drawn = '1';
</script></body></html>`
  const browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu'] })
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 560 } })
    await page.setContent(html)
    await page.waitForSelector('body[data-drawn="1"] .uplot canvas')
    await page.waitForTimeout(200)
    await page.locator('#chart').screenshot({ path: file })
  } finally {
    await browser.close()
  }
}

function markdown(r: Results, png: string): string {
  const first = r.slices[0]
  const last = r.slices[r.slices.length - 1]
  const ratio = first && last ? last.perSecond / first.perSecond : 0
  const mark = (ok: boolean, short: string) => (ok ? 'met ✓' : `missed: ${short}`)
  // The tables worth a column: the largest at the end, by total size.
  const biggest = (last?.tables ?? [])
    .slice()
    .sort((a, b) => b.totalMb - a.totalMb)
    .slice(0, 6)
    .map((t) => t.table)
  const size = (s: Slice, table: string) => {
    const t = s.tables.find((x) => x.table === table)
    return t ? `${Math.round(t.totalMb)} (${Math.round(t.indexesMb)})` : ''
  }
  const all = (s: Slice) => {
    const total = s.tables.reduce((n, t) => n + t.totalMb, 0)
    const indexes = s.tables.reduce((n, t) => n + t.indexesMb, 0)
    return `${Math.round(total)} (${Math.round(indexes)})`
  }
  const withReference = r.slices.every((s) => s.reference)
  const slowing = first && last ? machineSlowing(first, last) : undefined
  const lines = [
    `# Scale: ${r.scale.toLocaleString('en')} accounts through import jobs (${r.at})`,
    '',
    `\`BENCH_SCALE=${r.scale} npm run bench\`: ${r.scale.toLocaleString('en')} generated accounts ` +
      `(${r.historyShare * 100} % with post-import history, ${r.invalidShare * 100} % invalid) in slices of ` +
      `${r.slice.toLocaleString('en')}, one file and one import job per slice (\`npm run migrate -- submit <file> --team T --follow\`, ` +
      `the compiled client; accounts/s from the command's start to its end, upload and the 1 s follow poll included), ` +
      `on PostgreSQL (${
        r.ownPostgres
          ? `a server of the bench's own, set as docs/scaling.md advises for a large migration: ${Object.entries(
              r.ownPostgres
            )
              .map(([k, v]) => `\`${k} = ${v}\``)
              .join(', ')}, the rest PostgreSQL's defaults`
          : 'a database of its own on the shared server'
      }), the compiled server (${r.node}, \`NODE_ENV=production\`, \`LOG_LEVEL=info\`, \`DATABASE_POOL_SIZE=20\`). ` +
      `CPU per account (per line of the slice) from /proc: the server process, and PostgreSQL's backends of the bench's database ` +
      `plus its shared processes. Load average (1 min) ${r.loadAtStart.toFixed(1)} at the start, ${r.loadAtEnd.toFixed(1)} at the end ` +
      `(2 cores; other work on the machine shows there and makes the figures noisy).`,
    '',
    `![accounts/s and CPU per account by slice](${png})`,
    '',
    `Sizes in MB: total of the table with its indexes and TOAST (indexes alone in brackets).`,
    '',
    ...(withReference
      ? [
          (r.slices.some((s) => s.reference && 'before' in s.reference)
            ? `The fixed work, ms: the same JavaScript (CPU time of the bench's process) and the same PostgreSQL query (its time), ` +
              `each the median of five tries just before and just after the slice (the mean of the two). `
            : `The fixed work, ms: the CPU time of the same JavaScript (the bench's process) and of the same PostgreSQL query ` +
              `(its backend, left out of PostgreSQL's CPU per account), the mean of the tries made every 10 s during the slice, ` +
              `under the migration's load (bench/cpu.ts, machineSampler). `) +
            `It grows when the machine slows down, not when the tables do.`,
          ''
        ]
      : []),
    `| slice | accounts to | s | accounts/s | job's own accounts/s | created | failed | CPU ms/account: server + PostgreSQL |${withReference ? ' fixed work ms: JS + PostgreSQL |' : ''} peak RSS MB | heap used MB | load | ${biggest.join(' | ')} | all tables |`,
    `|---|---|---|---|---|---|---|---|${withReference ? '---|' : ''}---|---|---|${biggest.map(() => '---|').join('')}---|`
  ]
  for (const s of r.slices) {
    lines.push(
      `| ${s.slice} | ${s.accountsTo.toLocaleString('en')} | ${s.seconds.toFixed(1)} | ${Math.round(s.perSecond)} | ${Math.round(s.jobPerSecond)} | ` +
        `${s.created.toLocaleString('en')} | ${s.failed.toLocaleString('en')} | ${s.serverMsPerAccount.toFixed(2)} + ${s.postgresMsPerAccount.toFixed(2)} | ` +
        (withReference ? `${Math.round(referenceOf(s)!.jsMs)} + ${Math.round(referenceOf(s)!.postgresMs)} | ` : '') +
        `${s.peakRssMb} | ${s.heapUsedMb} | ${s.load.toFixed(1)} | ${biggest.map((t) => size(s, t)).join(' | ')} | ${all(s)} |`
    )
  }
  if (r.slices.every((s) => s.io)) {
    lines.push(
      '',
      `PostgreSQL's write-ahead log and reads from outside its buffer cache, per account of each slice (full-page images: ` +
        `pages logged whole because the slice changed them first since a checkpoint):`,
      '',
      '| slice | WAL KB | full-page images | checkpoints in the slice | blocks read | indexes that read the most blocks in the slice |',
      '|---|---|---|---|---|---|'
    )
    for (const s of r.slices) {
      lines.push(
        `| ${s.slice} | ${((s.io.walMb * 1024) / s.lines).toFixed(1)} | ${(s.io.fullPageImages / s.lines).toFixed(2)} | ` +
          `${s.io.checkpoints} | ${(s.io.blocksRead / s.lines).toFixed(2)} | ` +
          `${s.io.indexesRead.map((x) => `${x.index} ${x.blocks.toLocaleString('en')}`).join(', ')} |`
      )
    }
  }
  if (r.slices.every((s) => s.outside)) {
    lines.push(
      '',
      `The machine's CPU during each slice (/proc/stat): the cores busy, the time the hypervisor gave them to other ` +
        `machines (steal), and the part of the busy time that went to none of the run's processes ` +
        `(the server, PostgreSQL's, the bench's and the migration client's): other work and the kernel's own threads, ` +
        `which no figure above counts (bench/cpu.ts, outsideCpu):`,
      '',
      '| slice | cores busy | stolen, % of a core | outside the run, % of a core | the most of it, % of a core |',
      '|---|---|---|---|---|'
    )
    for (const s of r.slices) {
      lines.push(
        `| ${s.slice} | ${s.outside!.busyCores.toFixed(2)} | ${s.outside!.stealPercent?.toFixed(1) ?? ''} | ` +
          `${s.outside!.outsidePercent.toFixed(1)} | ${outsideText(s.outside!)} |`
      )
    }
  }
  const total = r.slices.reduce((n, s) => n + s.seconds, 0)
  lines.push(
    '',
    `All ${r.scale.toLocaleString('en')} in ${(total / 60).toFixed(1)} min (${Math.round(r.scale / total)} accounts/s overall).`,
    '',
    `On the full tables, ${r.samples} requests each, one at a time, after 3 unmeasured ones${r.latenciesFirst ? ' of other accounts' : ''} (p99 by nearest rank${r.samples < 100 ? `: of ${r.samples} samples, the slowest` : ''}):`,
    '',
    `| query | target |${r.latenciesFirst ? ' first read: p50 ms | p99 ms | verdict |' : ''} p50 ms | p99 ms | verdict | after ANALYZE: p50 ms | p99 ms | verdict |`,
    `|---|---|${r.latenciesFirst ? '---|---|---|' : ''}---|---|---|---|---|---|`
  )
  const targetOf = (l: Latency) => (l.kind === 'dashboard' ? TARGETS.dashboardP99Ms : TARGETS.accountP99Ms)
  const judged = (l: Latency) =>
    mark(l.p99 < targetOf(l), `${l.p99.toFixed(0)} ms (×${(l.p99 / targetOf(l)).toFixed(1)})`)
  for (const [i, l] of r.latencies.entries()) {
    const a = r.latenciesAnalyzed[i]!
    const f = r.latenciesFirst?.[i]
    lines.push(
      `| ${l.name} | p99 < ${targetOf(l)} |${f ? ` ${f.p50.toFixed(1)} | ${f.p99.toFixed(1)} | ${judged(f)} |` : ''} ${l.p50.toFixed(1)} | ${l.p99.toFixed(1)} | ${judged(l)} | ${a.p50.toFixed(1)} | ${a.p99.toFixed(1)} | ${judged(a)} |`
    )
  }
  lines.push(
    '',
    `The PostgreSQL server's autovacuum was ${r.autovacuum}${r.analyzedDuringRun ? '' : ' and no table had been analyzed when the queries were first timed'}: ` +
      (r.latenciesFirst
        ? `the first read of each sampled account and the second are the tables as the migration left them (the first read comes from disk where the ` +
          `machine's page cache no longer holds the account's pages; the second shows the plans alone), the last after an ANALYZE of every table (${(r.analyzeMs / 1000).toFixed(1)} s).`
        : `the first columns are the tables as the migration left them, the last after an ANALYZE of every table (${(r.analyzeMs / 1000).toFixed(1)} s).`)
  )
  lines.push(
    '',
    `All- list streamed whole: ${r.list.rows.toLocaleString('en')} rows, ${(r.list.bytes / 1024 / 1024).toFixed(1)} MB in ${(r.list.ms / 1000).toFixed(1)} s; ` +
      `server RSS ${Math.round(r.list.rssBeforeMb)} MB before, ${Math.round(r.list.peakRssMb)} MB at most (growth ${r.list.growthMb.toFixed(0)} MB).`,
    '',
    '| target | figure | verdict |',
    '|---|---|---|',
    `| last slice's accounts/s ≥ ${TARGETS.lastOverFirst} × the first's | ${Math.round(last?.perSecond ?? 0)} / ${Math.round(first?.perSecond ?? 0)} = ${ratio.toFixed(2)} | ${mark(ratio >= TARGETS.lastOverFirst, `${ratio.toFixed(2)}×`)} |`,
    ...(slowing === undefined
      ? []
      : [
          `| the same, with the machine's slowing taken out (the fixed work ${slowing.toFixed(2)}× the first slice's time, weighted by the first slice's CPU split) | ` +
            `${ratio.toFixed(2)} × ${slowing.toFixed(2)} = ${(ratio * slowing).toFixed(2)} | ${mark(ratio * slowing >= TARGETS.lastOverFirst, `${(ratio * slowing).toFixed(2)}×`)} |`
        ]),
    `| server RSS < ${TARGETS.rssMb} MB throughout | at most ${r.peakRssMb} MB | ${mark(r.peakRssMb < TARGETS.rssMb, `${r.peakRssMb} MB`)} |`,
    ...(['dashboard', 'account'] as const).flatMap((kind) =>
      [
        ...(r.latenciesFirst ? [[', first read', r.latenciesFirst]] : []),
        [r.latenciesFirst ? ', read again' : '', r.latencies],
        [', after ANALYZE', r.latenciesAnalyzed]
      ].map(([when, list]) => {
        const of = (list as Latency[]).filter((l) => l.kind === kind)
        const slowest = of.reduce((a, b) => (b.p99 > a.p99 ? b : a))
        const target = kind === 'dashboard' ? TARGETS.dashboardP99Ms : TARGETS.accountP99Ms
        return (
          `| ${kind === 'dashboard' ? "each dashboard query's" : 'status and account summary'} p99 < ${target} ms${when as string} | ` +
          `slowest ${slowest.p99.toFixed(0)} ms (${slowest.name}) | ${mark(
            of.every((l) => l.p99 < target),
            of
              .filter((l) => l.p99 >= target)
              .map((l) => l.name)
              .join(', ')
          )} |`
        )
      })
    ),
    `| all- list RSS growth < ${TARGETS.listGrowthMb} MB | ${r.list.growthMb.toFixed(0)} MB | ${mark(r.list.growthMb < TARGETS.listGrowthMb, `${r.list.growthMb.toFixed(0)} MB`)} |`,
    ''
  )
  return lines.join('\n')
}

export async function scaleScenario(adminUrl: string): Promise<void> {
  if (!Number.isSafeInteger(SCALE) || SCALE < 1) throw new Error(`BENCH_SCALE must be a number of accounts`)
  if (!Number.isSafeInteger(SLICE) || SLICE < 1) throw new Error(`BENCH_SCALE_SLICE must be a number of accounts`)
  execFileSync('npm', ['run', 'build'], { cwd: projectRoot, stdio: 'inherit' })
  const own = OWN_POSTGRES ? await startOwnPostgres(PROFILE ? STATEMENT_SETTINGS : {}) : undefined
  if (own) adminUrl = own.url
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database "${DATABASE}"`)
  const url = new URL(adminUrl)
  url.pathname = '/' + DATABASE
  const dir = mkdtempSync(join(tmpdir(), 'amis-bench-scale-'))
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} })
  const loadAtStart = loadavg()[0]!
  if (PROFILE) {
    mkdirSync(PROFILE, { recursive: true })
    writeFileSync(join(PROFILE, 'server-start.json'), JSON.stringify({ wallMs: Date.now() }) + '\n')
  }
  const server = await start(
    [...(PROFILE ? profileArgs(PROFILE) : []), 'dist/src/server.js'],
    {
      DATABASE_URL: url.toString(),
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      TOKEN_SECRET,
      OPERATOR_API_KEY: OPERATOR_KEY,
      TOKEN_TTL_SECONDS: '86400',
      TOKEN_RATE_LIMIT_PER_MINUTE: '100000',
      DATABASE_POOL_SIZE: '20'
    },
    /Server listening at (http:\/\/127\.0\.0\.1:\d+)/
  )
  const pid = server.child.pid!
  let peakRss = rssMb(pid)
  let slicePeak = peakRss
  const sampler = setInterval(() => {
    const now = rssMb(pid)
    peakRss = Math.max(peakRss, now)
    slicePeak = Math.max(slicePeak, now)
  }, 200)
  try {
    const gql = async (query: string, token?: string, variables: Record<string, unknown> = {}) => {
      const res = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ query, variables })
      })
      const answer = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown[] }
      if (answer.errors?.length || !answer.data) throw new Error(`${query.slice(0, 60)}: ${JSON.stringify(answer)}`)
      return answer.data
    }
    const tokenOf = async (key: string) =>
      ((await gql(`mutation { obtainToken(input: {APIKey: "${key}"}) { token } }`)).obtainToken as { token: string })
        .token
    const op = await tokenOf(OPERATOR_KEY)
    await gql('mutation { createOrganisation(input: {name: "Bench"}) { id } }', op)
    const key = (
      (await gql('mutation { createApiKey(input: {organisation: "Bench"}) { key } }', op)).createApiKey as {
        key: string
      }
    ).key
    await gql(`mutation { createImportSupplier(input: {code: "${SUPPLIER}", organisation: "Bench"}) { code } }`, op)
    await gql(`mutation { createOperationsTeam(input: {name: "${TEAM}"}) { id } }`, op)
    const token = await tokenOf(key)
    const api = `${server.url}/v1/data-import`
    const headers = { authorization: `Bearer ${token}` }

    const sizes = async (): Promise<TableSize[]> => {
      const rows = await sql<Array<{ table: string; total: string; indexes: string }>>`
        select c.relname as table, pg_total_relation_size(c.oid)::text as total, pg_indexes_size(c.oid)::text as indexes
        from pg_class c where c.relkind = 'r' and c.relnamespace = 'public'::regnamespace order by c.relname`
      return rows
        .map((t) => ({
          table: t.table,
          totalMb: round(Number(t.total) / 1024 / 1024, 1),
          indexesMb: round(Number(t.indexes) / 1024 / 1024, 1)
        }))
        .filter((t) => t.totalMb >= 0.1)
    }

    const heapUsedMb = async (): Promise<number> => {
      const text = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${op}` } })).text()
      const used = /^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)
      return used ? Math.round(Number(used[1]) / 1024 / 1024) : Number.NaN
    }

    // Counters of PostgreSQL's statistics views, read before and after each slice.
    const ioCounters = async () => {
      const [wal] = await sql<Array<{ bytes: string; fpi: string }>>`
        select wal_bytes::text as bytes, wal_fpi::text as fpi from pg_stat_wal`
      const [checkpoints] = await sql<Array<{ n: string }>>`
        select (checkpoints_timed + checkpoints_req)::text as n from pg_stat_bgwriter`
      const [db] = await sql<Array<{ n: string }>>`
        select blks_read::text as n from pg_stat_database where datname = current_database()`
      const indexes = await sql<Array<{ index: string; n: string }>>`
        select indexrelname as index, idx_blks_read::text as n from pg_statio_user_indexes`
      return {
        walBytes: Number(wal?.bytes ?? 0),
        fpi: Number(wal?.fpi ?? 0),
        checkpoints: Number(checkpoints?.n ?? 0),
        blocksRead: Number(db?.n ?? 0),
        indexes: new Map(indexes.map((r) => [r.index, Number(r.n)]))
      }
    }
    const ioBetween = (a: Awaited<ReturnType<typeof ioCounters>>, b: typeof a): SliceIo => ({
      walMb: round((b.walBytes - a.walBytes) / 1024 / 1024),
      fullPageImages: b.fpi - a.fpi,
      checkpoints: b.checkpoints - a.checkpoints,
      blocksRead: b.blocksRead - a.blocksRead,
      indexesRead: [...b.indexes]
        .map(([index, n]) => ({ index, blocks: n - (a.indexes.get(index) ?? 0) }))
        .sort((x, y) => y.blocks - x.blocks)
        .slice(0, 5)
    })

    // A backend sends its statistics to the shared counters at most once a second, and an idle one
    // within ten seconds: read them after that long.
    const statsFlushed = () => new Promise((resolve) => setTimeout(resolve, 11_000))
    await statsFlushed()
    let ioStart = await ioCounters()
    const profiler = PROFILE ? await sliceProfiler(PROFILE, sql) : undefined

    const slices: Slice[] = []
    const eventAccounts: string[] = []
    const count = Math.ceil(SCALE / SLICE)
    for (let i = 0; i < count; i++) {
      const lines = Math.min(SLICE, SCALE - i * SLICE)
      const file = join(dir, `slice-${i + 1}.ndjson`)
      const generated = await client(
        [
          'generate',
          String(lines),
          '--seed',
          `scale-${i + 1}`,
          '--supplier',
          SUPPLIER,
          '--invalid-share',
          String(INVALID_SHARE),
          '--post-import-share',
          String(HISTORY_SHARE)
        ],
        {},
        file
      )
      if (generated.code !== 0) throw new Error(`generate: ${generated.out}`)
      eventAccounts.push(...(await withHistory(file, Math.max(1, Math.floor(lines / 100)))))
      slicePeak = rssMb(pid)
      const cpu = cpuSplit(pid, DATABASE)
      const sampler = machineSampler((text) => sql.unsafe(text))
      const machine = outsideCpu(pid)
      const profiled = await profiler?.start()
      const t0 = Date.now()
      const submitted = await client(['submit', file, '--url', server.url, '--team', TEAM, '--follow'], {
        AMIS_API_KEY: key
      })
      const seconds = (Date.now() - t0) / 1000
      const reference = await sampler.stop()
      await profiled?.(i + 1, lines)
      const counted = cpu.stop()
      const outside = machine.stop()
      // The fixed work's query ran in a backend of the bench's database: not the migration's CPU.
      const used = { ...counted, postgresMs: counted.postgresMs - reference.postgresMs * reference.tries }
      await statsFlushed()
      const ioEnd = await ioCounters()
      const io = ioBetween(ioStart, ioEnd)
      ioStart = ioEnd
      const jobs = (await (await fetch(`${api}/import-jobs/?limit=1`, { headers })).json()) as Array<{
        state: string
        started_at: string | null
        finished_at: string | null
        lines: { total: number; created: number; failed: number }
      }>
      const job = jobs[0]
      if (!job || job.state !== 'COMPLETED' || job.lines.total !== lines) {
        throw new Error(`slice ${i + 1}: job ${JSON.stringify(job)}; the client said: ${submitted.out.slice(-2000)}`)
      }
      const jobSeconds = (Date.parse(job.finished_at ?? '') - Date.parse(job.started_at ?? '')) / 1000
      const slice: Slice = {
        slice: i + 1,
        accountsTo: i * SLICE + lines,
        lines,
        created: job.lines.created,
        failed: job.lines.failed,
        seconds: round(seconds, 2),
        perSecond: round(lines / seconds, 1),
        jobPerSecond: round(lines / jobSeconds, 1),
        serverMsPerAccount: round(used.serverMs / lines, 3),
        postgresMsPerAccount: round(used.postgresMs / lines, 3),
        peakRssMb: Math.round(slicePeak),
        endRssMb: Math.round(rssMb(pid)),
        heapUsedMb: await heapUsedMb(),
        tables: await sizes(),
        load: round(loadavg()[0]!, 2),
        io,
        reference,
        outside
      }
      slices.push(slice)
      rmSync(file, { force: true })
      rmSync(`${file}.job.json`, { force: true })
      console.log(
        `slice ${slice.slice}/${count}: ${lines} lines in ${slice.seconds} s, ${Math.round(slice.perSecond)} accounts/s ` +
          `(job ${Math.round(slice.jobPerSecond)}/s), ${slice.created} created, ${slice.failed} failed, ` +
          `CPU ${slice.serverMsPerAccount.toFixed(2)} + ${slice.postgresMsPerAccount.toFixed(2)} ms/account, ` +
          `RSS ${slice.peakRssMb} MB, load ${slice.load}; fixed work ${reference.jsMs} + ${reference.postgresMs} ms; WAL ${io.walMb} MB, ${io.fullPageImages} full pages, ` +
          `${io.checkpoints} checkpoints, ${io.blocksRead} blocks read (${io.indexesRead.map((x) => `${x.index} ${x.blocks}`).join(', ')}); ` +
          `machine ${outside.busyCores} cores busy, ${outside.stealPercent} % of a core stolen, ` +
          `${outside.outsidePercent} % outside the run (${outsideText(outside)})`
      )
    }

    // On the full tables: the dashboard's queries, status and the account summary, one at a time.
    const [imported] = await sql<
      Array<{ n: number }>
    >`select count(*)::int as n from import_processes where state = 'IMPORTED'`
    const sample = (
      await sql<Array<{ x: string }>>`select external_account_number as x from import_processes
        where state = 'IMPORTED' order by random() limit ${SAMPLES + 3}`
    ).map((r) => r.x)
    const withEvents = (
      await sql<Array<{ x: string }>>`select external_account_number as x from import_processes
        where state = 'IMPORTED' and external_account_number = any(${eventAccounts})`
    ).map((r) => r.x)
    if (sample.length === 0 || withEvents.length === 0) throw new Error('no imported accounts to sample')
    console.log(`${imported?.n} accounts imported; timing the queries on the full tables…`)

    const time = async (name: string, kind: Latency['kind'], call: (i: number) => Promise<void>): Promise<Latency> => {
      for (let i = 0; i < 3; i++) await call(SAMPLES + i)
      const ms: number[] = []
      for (let i = 0; i < SAMPLES; i++) {
        const t0 = performance.now()
        await call(i)
        ms.push(performance.now() - t0)
      }
      ms.sort((a, b) => a - b)
      const l = {
        name,
        kind,
        samples: SAMPLES,
        p50: round(percentile(ms, 0.5), 1),
        p99: round(percentile(ms, 0.99), 1),
        max: round(ms[ms.length - 1]!, 1)
      }
      console.log(`${name}: p50 ${l.p50} ms, p99 ${l.p99} ms`)
      return l
    }
    const query =
      (q: string, variables: (i: number) => Record<string, unknown> = () => ({})) =>
      async (i: number) => {
        await gql(q, token, { supplier: SUPPLIER, ...variables(i) })
      }
    const rest = (path: (i: number) => string) => async (i: number) => {
      const res = await fetch(`${api}/${path(i)}`, { headers })
      await res.arrayBuffer()
      if (res.status !== 200) throw new Error(`${path(i)}: ${res.status}`)
    }
    const pick = (list: string[], i: number) => list[i % list.length]!
    const measure = async (): Promise<Latency[]> => [
      await time(
        'GraphQL migrationProgress',
        'dashboard',
        query(
          'query ($supplier: String!) { migrationProgress(importSupplierCode: $supplier) { staged pending imported skipped failed failing } }'
        )
      ),
      await time(
        'GraphQL migrationFailureSummary',
        'dashboard',
        query(`query ($supplier: String!) { migrationFailureSummary(importSupplierCode: $supplier) { failingAccounts
          byStep { validate stage create notes transactions historicalAgreements historicalBillingDocuments historicalStatements paymentInstruction }
          byCode { step code accounts } } }`)
      ),
      await time(
        'GraphQL migrationTimeline(minutes: 1440)',
        'dashboard',
        query(
          'query ($supplier: String!) { migrationTimeline(importSupplierCode: $supplier, minutes: 1440) { minute staged created failed } }'
        )
      ),
      await time(
        'GraphQL migrationFailures(first: 100)',
        'dashboard',
        query(`query ($supplier: String!) { migrationFailures(importSupplierCode: $supplier, first: 100) {
          externalAccountNumber step failedAt attempts httpStatus code errors { code attr } } }`)
      ),
      await time(
        "GraphQL importProcessEvents (an account's events)",
        'dashboard',
        query(
          'query ($supplier: String!, $account: String!) { importProcessEvents(importSupplierCode: $supplier, externalAccountNumber: $account) { type at actor detail } }',
          (i) => ({ account: pick(withEvents, i) })
        )
      ),
      await time(
        'REST account-transfer-status',
        'account',
        rest((i) => `account-transfer-status/${SUPPLIER}/${pick(sample, i)}/`)
      ),
      await time(
        'REST accounts (account summary)',
        'account',
        rest((i) => `accounts/${SUPPLIER}/${pick(sample, i)}/`)
      )
    ]
    // As the migration left the tables (with this server's autovacuum, which gathers the planner's
    // statistics when it is on), then again after an ANALYZE of every table.
    const [autovacuum] = await sql<Array<{ on: string }>>`select current_setting('autovacuum') as on`
    const analyzed = (
      await sql<Array<{ t: Date | null }>>`select max(greatest(last_analyze, last_autoanalyze)) as t
      from pg_stat_user_tables`
    )[0]?.t
    console.log(`autovacuum ${autovacuum?.on}; last analyze ${analyzed?.toISOString() ?? 'never'}`)
    const latenciesFirst = await measure()
    console.log('the same requests again:')
    const latencies = await measure()
    const a0 = performance.now()
    await sql`analyze`
    const analyzeMs = round(performance.now() - a0)
    console.log(`ANALYZE of every table: ${analyzeMs} ms; the queries again:`)
    const latenciesAnalyzed = await measure()

    // The all- list, streamed whole, with the server's RSS sampled closely.
    const rssBefore = rssMb(pid)
    let listPeak = rssBefore
    const close = setInterval(() => {
      listPeak = Math.max(listPeak, rssMb(pid))
    }, 50)
    const t0 = performance.now()
    let bytes = 0
    try {
      const res = await fetch(`${api}/all-account-import-processes/${SUPPLIER}/`, { headers })
      if (res.status !== 200 || !res.body) throw new Error(`all- list: ${res.status}`)
      for await (const chunk of res.body) bytes += chunk.length
    } finally {
      clearInterval(close)
    }
    const list: ListStream = {
      ms: round(performance.now() - t0),
      bytes,
      rows: (await sql<Array<{ n: number }>>`select count(*)::int as n from import_processes`)[0]?.n ?? 0,
      rssBeforeMb: round(rssBefore),
      peakRssMb: round(listPeak),
      growthMb: round(listPeak - rssBefore, 1)
    }
    console.log(`all- list: ${list.rows} rows, ${bytes} bytes in ${list.ms} ms, RSS growth ${list.growthMb} MB`)

    clearInterval(sampler)
    const results: Results = {
      at: new Date().toISOString(),
      node: process.version,
      scale: SCALE,
      slice: SLICE,
      samples: SAMPLES,
      historyShare: HISTORY_SHARE,
      invalidShare: INVALID_SHARE,
      loadAtStart: round(loadAtStart, 2),
      loadAtEnd: round(loadavg()[0]!, 2),
      slices,
      ...(own ? { ownPostgres: own.settings } : {}),
      autovacuum: autovacuum?.on ?? '',
      analyzedDuringRun: analyzed != null,
      analyzeMs,
      latenciesFirst,
      latencies,
      latenciesAnalyzed,
      list,
      peakRssMb: Math.round(Math.max(peakRss, listPeak))
    }
    const stamp = `scale-${results.at.slice(0, 16).replace(':', '-')}`
    const out = join(projectRoot, 'bench', 'results')
    mkdirSync(out, { recursive: true })
    writeFileSync(join(out, `${stamp}.json`), JSON.stringify(results, null, 2) + '\n')
    await drawChart(results, join(out, `${stamp}.png`))
    const md = markdown(results, `${stamp}.png`)
    writeFileSync(join(out, `${stamp}.md`), md)
    console.log('\n' + md + `\nwritten to bench/results/${stamp}.json, .md and .png`)
  } finally {
    clearInterval(sampler)
    server.child.kill('SIGTERM')
    await new Promise((resolve) => server.child.once('exit', resolve))
    await sql.end()
    if (KEEP) console.log(`database ${DATABASE} kept (BENCH_SCALE_KEEP)`)
    else await admin.unsafe(`drop database if exists "${DATABASE}" with (force)`)
    await admin.end()
    own?.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** `npx tsx bench/scale.ts --chart bench/results/scale-<date>.json` draws a run's chart and writes its Markdown again. */
export function redraw(file: string): Promise<void> {
  const results = JSON.parse(readFileSync(file, 'utf8')) as Results
  const png = file.replace(/\.json$/, '.png')
  return drawChart(results, png).then(() => {
    writeFileSync(file.replace(/\.json$/, '.md'), markdown(results, png.slice(png.lastIndexOf('/') + 1)))
  })
}

if (process.argv[1]?.endsWith('scale.ts') && process.argv.includes('--chart')) {
  redraw(process.argv[process.argv.indexOf('--chart') + 1]!).catch((err: unknown) => {
    console.error(err)
    process.exit(1)
  })
}

#!/usr/bin/env node
/**
 * The migration client: `npm run migrate -- <file> [options]` migrates the accounts of a
 * newline-delimited JSON file; `npm run migrate -- generate N [options]` writes synthetic ones;
 * `npm run migrate -- report <report>` summarises a run's report; `submit`, `job`, `jobs`,
 * `results`, `failed-lines` and `cancel` hand a whole file to the service as an import job;
 * `reconcile <file>` checks at cutover that the service holds the balances and counts the file says.
 *
 * Exit codes: 0 every account migrated, 1 an account failed or the run could not go on, 2 usage error.
 */
import { accessSync, constants, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join, resolve } from 'node:path'
import { generateAccounts } from './generate.js'
import { check } from './map/check.js'
import { DocumentError } from './map/schema-check.js'
import { sourcesOfJob } from './map/job-sources.js'
import { sourcesBeside, sourcesFileOf } from './map/source-terms.js'
import { MIN_PART_BYTES, PlanError } from './job-file.js'
import {
  cancelJob,
  download,
  JobCommandError,
  listJobs,
  showJob,
  submit,
  type Connection,
  type JobsIO
} from './jobs.js'
import { OperatorKeyError, PreflightError } from './preflight.js'
import { reconcile, renderReconcileSummary, SHOWN_DIFFERENCES } from './reconcile.js'
import { failedLines, NotAReportError, renderReport, writeFailedLines } from './report-file.js'
import { MapError, runMapping } from './map/index.js'
import { writeStarter } from './map/starter.js'
import { TEMPORARY } from './map/summary.js'
import { migrate, numberedReport, renderSummary, ReportExistsError } from './run.js'
import { AuthenticationError, DEFAULT_RETRY, UnavailableError } from './service-client.js'
import { isEntryPoint, parseCommandLine } from '../entry.js'
import { CLIENT_CODE } from '../../../schemas/error-codes.js'

export interface MigrateCliIO {
  env: Record<string, string | undefined>
  /** Standard output; may return a promise to ask the writer to wait (back-pressure). */
  stdout: (text: string) => void | Promise<void>
  stderr: (text: string) => void
  /** Standard error is a terminal (progress bar). */
  tty?: boolean
  columns?: number
  /** Plain progress lines this often (default 5 s). */
  progressIntervalMs?: number
  fetch?: typeof fetch
  signal?: AbortSignal
  /** How often a followed import job is read (default 1 s). */
  pollIntervalMs?: number
}

export const DEFAULT_URL = 'http://127.0.0.1:3000'
const PROGRAM = 'npm run migrate --'
/** Accounts per batch and batches in flight, from the benchmark (bench/README.md). */
export const DEFAULT_BATCH_SIZE = 100
export const DEFAULT_BATCH_CONCURRENCY = 2

class UsageError extends Error {
  override name = 'UsageError'
}

const OPTIONS = {
  url: { type: 'string' },
  team: { type: 'string' },
  concurrency: { type: 'string' },
  'batch-size': { type: 'string' },
  'dry-run': { type: 'boolean' },
  'validate-only': { type: 'boolean' },
  resume: { type: 'boolean' },
  'resend-history': { type: 'boolean' },
  'retry-failed': { type: 'string' },
  report: { type: 'string' },
  wait: { type: 'string' },
  timeout: { type: 'string' },
  'max-attempts': { type: 'string' },
  seed: { type: 'string' },
  'invalid-share': { type: 'string' },
  'post-import-share': { type: 'string' },
  supplier: { type: 'string' },
  'payment-vendor': { type: 'string' },
  'as-of': { type: 'string' },
  'gb-identifiers': { type: 'boolean' },
  code: { type: 'string' },
  'failed-lines': { type: 'string' },
  input: { type: 'string' },
  follow: { type: 'boolean' },
  'part-size': { type: 'string' },
  out: { type: 'string' },
  failed: { type: 'boolean' },
  state: { type: 'string' },
  limit: { type: 'string' },
  'not-before': { type: 'string' },
  'not-after': { type: 'string' },
  lines: { type: 'string' },
  sources: { type: 'string' },
  extract: { type: 'string' },
  'go-on': { type: 'boolean' },
  memory: { type: 'string' },
  slice: { type: 'string' },
  help: { type: 'boolean', short: 'h' }
} as const
type OptionName = keyof typeof OPTIONS
type Flags = Partial<Record<OptionName, string | boolean>>

const MIGRATE_OPTIONS: OptionName[] = [
  'url',
  'team',
  'concurrency',
  'batch-size',
  'dry-run',
  'validate-only',
  'resume',
  'resend-history',
  'retry-failed',
  'report',
  'timeout',
  'max-attempts',
  'wait',
  'help'
]
const CONNECTION_OPTIONS: OptionName[] = ['url', 'timeout', 'max-attempts', 'wait', 'help']
const JOB_COMMANDS: Record<string, OptionName[]> = {
  submit: [
    ...CONNECTION_OPTIONS,
    'team',
    'dry-run',
    'part-size',
    'supplier',
    'follow',
    'not-before',
    'not-after',
    'extract',
    'go-on',
    'memory',
    'slice'
  ],
  job: [...CONNECTION_OPTIONS, 'follow'],
  jobs: [...CONNECTION_OPTIONS, 'state', 'supplier', 'limit'],
  results: [...CONNECTION_OPTIONS, 'failed', 'out', 'sources'],
  'failed-lines': [...CONNECTION_OPTIONS, 'out', 'sources'],
  'unprocessed-lines': [...CONNECTION_OPTIONS, 'out'],
  cancel: CONNECTION_OPTIONS,
  reconcile: [...CONNECTION_OPTIONS, 'supplier', 'report']
}
/** `map check`: the lines checked here and dry-run by the service. */
const CHECK_OPTIONS: OptionName[] = [
  ...CONNECTION_OPTIONS,
  'team',
  'supplier',
  'lines',
  'sources',
  'extract',
  'out',
  'memory',
  'slice'
]
const JOB_STATES = ['OPEN', 'QUEUED', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED']
const GENERATE_OPTIONS: OptionName[] = [
  'seed',
  'invalid-share',
  'post-import-share',
  'supplier',
  'payment-vendor',
  'as-of',
  'gb-identifiers',
  'help'
]

const HELP = `Account Migration Import Service — migration client

Usage:
  ${PROGRAM} <file.ndjson> --team <operations team> [options]
  ${PROGRAM} report <report.ndjson> [--code <code>] [--failed-lines <out.ndjson>]
  ${PROGRAM} submit <file.ndjson> --team <operations team> [--follow] [--dry-run] [--part-size 8MB]
        [--not-before <time>] [--not-after <time>]
  ${PROGRAM} job <id> [--follow]
  ${PROGRAM} jobs [--state <state>] [--supplier <code>]
  ${PROGRAM} results <id> [--failed] [--out <file>] [--sources <file>]
  ${PROGRAM} failed-lines <id> [--out <file>] [--sources <file>]
  ${PROGRAM} unprocessed-lines <id> [--out <file>]
  ${PROGRAM} cancel <id>
  ${PROGRAM} reconcile <file.ndjson> [--supplier <code>] [--report <out.ndjson>]
  ${PROGRAM} map check <mapping.sql> --team <name> [--extract <dir>] [--out <lines.ndjson>]
  ${PROGRAM} map check --lines <lines.ndjson> --team <name> [--sources <file>]
  ${PROGRAM} generate <N> [options] > accounts.ndjson
  ${PROGRAM} map <mapping.sql> --out <lines.ndjson> [--extract <folder>] [--go-on] [--memory <size>] [--slice <accounts>]
  ${PROGRAM} map init <folder>

Migrates every account of a newline-delimited JSON file (one account per line, optionally with
its post-import data): staged, created and given its post-import data, many accounts per request
(POST batches/), or one account at a time through the single endpoints with --batch-size 1.
The API key comes from the environment variable AMIS_API_KEY. Before sending anything the client
checks that the key is an organisation's (not the operator's), the team, and that the file's
import suppliers are yours and Ongoing.

Options:
  --url <url>              Service URL (env AMIS_URL, default ${DEFAULT_URL}).
  --team <name>            Operations team the accounts are assigned to (env AMIS_TEAM). Required.
  --batch-size <n>         Accounts per request, 1–1000 (default ${DEFAULT_BATCH_SIZE}; 1 = the single endpoints, one account at a time).
  --concurrency <n>        Requests in flight at once, 1–256 (default ${DEFAULT_BATCH_CONCURRENCY} batches, or 8 accounts with --batch-size 1).
  --validate-only          Only validate each account: nothing of the accounts is stored (--team not needed).
  --dry-run                Stage each account and dry-run its create: no account is created, but the
                           accounts stay staged (pending) until a real run creates them.
  --resume                 Carry on after an interrupted run: lines that the earlier reports of the same
                           report name (<file>.report.ndjson, -2, …) show completed are skipped, nothing
                           sent; other accounts already COMPLETED are not created again, their
                           post-import data is sent again (retry-safe).
  --resend-history         With --resume: skip nothing, send the post-import data of every completed
                           account again (nothing is stored twice).
  --retry-failed <report>  Only the lines that failed in that earlier report (of the same file), with --resume.
  --report <file>          Report file, one JSON line per account; never overwritten
                           (default <file>.report.ndjson, then <file>.report-2.ndjson, …; with --resume
                           or --retry-failed a --report name that is taken moves on to -2, -3… too).
  --timeout <seconds>      Time allowed for one request (default ${DEFAULT_RETRY.timeoutMs / 1000}).
  --max-attempts <n>       Attempts of a request failing with a 5xx or a network error (default ${DEFAULT_RETRY.maxAttempts}).
  --wait <seconds>         When the service stops answering mid-run, wait this long for GET /readyz
                           before giving up (default ${DEFAULT_RETRY.waitMs / 1000}; 0: do not wait).
  -h, --help               Show this help.

report <report.ndjson> prints a report's counts, every failure by step and error code with what each
code means, and the failing line numbers of each code (the first 10). It reads a job's results file
(from results <id>) too, counting its lines by the job's outcomes:
  --code <code>            List every line that failed with this code (and nothing else).
  --failed-lines <out>     Write the input lines that failed (with --code: with that code), as they are,
                           to a new file <out>, to fix them there and migrate that file with --resume.
  --input <file>           The input file the report was made from (default: from the report's name,
                           <file>.report.ndjson or <file>.report-N.ndjson).

Import jobs: the whole file handed to the service, which runs it by itself (nothing more is
needed from this terminal; the dashboard and job <id> show its progress). The batch mode above
is for when the client should drive the migration itself.
submit <file.ndjson> uploads the file in parts (whole lines) with a progress bar, then starts the
job. Its lines are batch entries, {"account": {…}, "notes": […], …}. It keeps the upload's state
in <file>.job.json: run the same command again after an interruption and only the parts the
service does not hold yet are sent (then the job is started); for a job already started it says
so and, with --follow, follows it. Remove <file>.job.json to submit the file as a new job.
  --team <name>            Operations team (env AMIS_TEAM). Required.
  --dry-run                A dry-run job: every line is checked and dry-run created, nothing created.
  --part-size <size>       Bytes per part, e.g. 8MB, 512kB, 100000 (default 8MB; at most the
                           service's body limit, 10 MiB unless its operator changed it).
  --supplier <code>        The job's import supplier (default: the one the file's lines name).
  --follow                 Then show the job's progress until it ends (as job <id> --follow).
  --not-before <time>      The job waits until then (at most 7 days ahead), e.g. 2026-11-28T22:00+01:00:
                           a date and time with its UTC offset (or Z); shown back in UTC.
  --not-after <time>       No line begins from then on: the job ends CANCELLED (window_ended) and
                           unprocessed-lines <id> gives the lines it never began.
A job <id> may be given whole or by its first 8 characters or more (as the dashboard shows it).
job <id> prints a job: state, lines done, created, failed, rate and ETA.
  --follow                 Show its progress as the service reports it until it ends, then a summary
                           and how to download the failures. Ctrl-C stops following, never the job.
jobs lists your organisation's newest jobs (--state OPEN|QUEUED|RUNNING|PAUSED|COMPLETED|CANCELLED,
  --supplier <code>, --limit <n>, default 20).
results <id> writes each line's result (NDJSON: line, external account number, outcome, error
  codes) to a new file, job-<id>.results.ndjson by default (-2, -3… when taken).
  --failed                 Only the failed lines' results (job-<id>.failed-results.ndjson).
  --out <file>             The file to write; never overwritten.
failed-lines <id> writes the input lines that failed, unchanged, to a new file
  (job-<id>.failed-lines.ndjson, or --out <file>), to fix and submit as a new job.
unprocessed-lines <id> writes the input lines a cancelled job never began, unchanged, to a new file
  (job-<id>.unprocessed-lines.ndjson, or --out <file>), to submit as a new job.
  --out - writes any of these downloads to standard output.
cancel <id> cancels a job: lines not yet begun are not processed; what was done stays.
With a sources file (written by map beside the lines: <lines>.sources.ndjson), results, failed-lines
and report name each failed line's source file and rows. It is found beside the job's input, through
the upload state submit keeps there (run them in that folder or the one above it), or named with
--sources <file>.

map check <mapping.sql> maps the extract (as map does), checks every line against the service's
published schemas (its OpenAPI document), then dry-runs the lines that pass as an import job (a dry
run checks the accounts; sections are checked against their schemas only), and prints every failure
in the source's terms: the line, the account, the field, the extract column it comes from and the
source rows, grouped by error code with what each code means (the first 3 of each). Exit codes: 0
nothing failed, 1 a line failed or the mapping left source rows out, 2 usage error.
  --team <name>            Operations team of the dry run (env AMIS_TEAM). Required.
  --supplier <code>        The dry run's import supplier (default: the one the lines name).
  --lines <file>           Check lines mapped already (their sources file beside them, or --sources).

reconcile <file.ndjson> checks, at cutover, that the service holds what the file says: for each
account, every ledger's balance (its ledger_balance, moved by the transactions added after import)
and the counts of transactions (those of its ledgers, of its post-import transactions and of its
billing documents), notes, historical agreements, historical statements, billing documents and
payment instructions. The service compares them (10,000 accounts per request) and the client prints
the counts of matching and differing accounts by problem (not_created: the account failed in the
migration; skipped; balance_differs; count_differs) and the first ${SHOWN_DIFFERENCES} differences.
Every difference is written to a new report file. Exit codes: 0 every account matches, 1 an account
differs or a line could not be checked, 2 usage error.
  --supplier <code>        The accounts' import supplier (default: the one each line names).
  --report <file>          The report of differences, NDJSON; never overwritten (default
                           <file>.reconcile.ndjson, then <file>.reconcile-2.ndjson, …).

map <mapping.sql> --out <lines.ndjson> turns an old system's extract (one CSV file per entity, keyed
by the account number; docs/extract-layout.md) into batch entries, one line per account, by a
mapping: SQL run by an embedded DuckDB over the extract's files (docs/mapping.md). It writes the
lines, and <lines.ndjson>.sources.ndjson naming the file and row of every source row of each line,
and prints what became of every row of every file: read, used, rejected (with the reason), orphans
(an account number the accounts file does not have) and repeated account numbers. Exit codes: 0 every
row accounted for, 1 a row rejected, an orphan or a repeated account number (the lines are written
all the same), 2 the mapping or an extract file could not be read (nothing written).
  --extract <folder>       The extract's folder (default: the one the mapping's header names).
  --go-on                  Exit 0 despite rejected rows, orphans and repeats (they stay out of the lines).
  --memory <size>          Memory the mapping's engine may use, e.g. 8GB (default: half the machine's);
                           past it, it spills to a temporary folder where it can.
  --slice <accounts>       Accounts the mapping's last SELECT takes at a time (default 50000): fewer
                           use less memory.
map init <folder> writes a starter mapping for the documented layout, <folder>/mapping.sql, and a
small sample extract in <folder>/extract/ (never overwriting a file).

generate <N> writes N synthetic accounts to standard output:
  --seed <text>            Same seed, same accounts (default: random, printed on standard error).
  --invalid-share <0–1>    Share of deliberately invalid accounts (default 0).
  --post-import-share <0–1>  Share of accounts carrying post-import data (default 0.5).
  --supplier <code>        Import supplier of the accounts (default ACME_ENERGY).
  --payment-vendor <code>  Add CARD payment instructions (reference pi_<external number>) for this vendor.
  --as-of <YYYY-MM-DD>     The day the data is made for; nothing is dated after it (default today, UTC).
  --gb-identifiers         ELECTRICITY supply point identifiers are valid MPAN cores (GAS ones are MPRNs
                           either way), so the accounts pass a supplier with GB supply point checks.

Exit codes: 0 every account migrated, 1 an account failed or the run stopped, 2 usage error.
For jobs: 0 done (a followed job ended with every line through), 1 a line failed, the job was
cancelled or could not be reached, or following or the upload was stopped, 2 usage error.
`

function integer(name: string, value: string, min: number, max: number): number {
  const n = /^[0-9]+$/.test(value.trim()) ? Number(value.trim()) : NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, not "${value}"`)
  }
  return n
}

function share(name: string, value: string | boolean | undefined, fallback: number): number {
  if (typeof value !== 'string') return fallback
  const n = /^(0|1|0?\.[0-9]+|1\.0*)$/.test(value.trim()) ? Number(value) : NaN
  if (!(n >= 0 && n <= 1)) throw new UsageError(`--${name} must be a number from 0 to 1, not "${value}"`)
  return n
}

function serviceUrl(raw: string): string {
  let parsed: URL
  try {
    parsed = new URL(raw.trim())
  } catch {
    throw new UsageError(`--url must be an http(s) URL such as ${DEFAULT_URL}, not "${raw}"`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`--url must be an http(s) URL such as ${DEFAULT_URL}, not "${raw}"`)
  }
  return parsed.href.replace(/\/+$/, '')
}

function onlyOptions(flags: Flags, allowed: OptionName[], command: string): void {
  for (const name of Object.keys(flags) as OptionName[]) {
    if (!allowed.includes(name)) throw new UsageError(`${command} does not take --${name} (see ${PROGRAM} --help)`)
  }
}

async function runGenerate(args: string[], flags: Flags, io: MigrateCliIO): Promise<number> {
  onlyOptions(flags, GENERATE_OPTIONS, 'generate')
  if (args.length !== 1) throw new UsageError(`usage: ${PROGRAM} generate <N> [--seed s] [--invalid-share 0.05]`)
  const count = integer('N', args[0]!, 0, 100_000_000)
  const seedGiven = typeof flags.seed === 'string'
  const seed = seedGiven ? (flags.seed as string) : Math.random().toString(36).slice(2, 10)
  const asOf = typeof flags['as-of'] === 'string' ? flags['as-of'] : new Date().toISOString().slice(0, 10)
  if (!/^\d{4}-\d{2}-\d{2}$/.test(asOf) || Number.isNaN(Date.parse(asOf))) {
    throw new UsageError(`--as-of must be a date YYYY-MM-DD, not "${asOf}"`)
  }
  const supplier = typeof flags.supplier === 'string' ? flags.supplier : 'ACME_ENERGY'
  const options = {
    count,
    seed,
    invalidShare: share('invalid-share', flags['invalid-share'], 0),
    postImportShare: share('post-import-share', flags['post-import-share'], 0.5),
    supplier,
    ...(typeof flags['payment-vendor'] === 'string' ? { paymentVendor: flags['payment-vendor'] } : {}),
    today: asOf,
    gbIdentifiers: flags['gb-identifiers'] === true
  }
  let invalid = 0
  let batch = ''
  for (const { line, invalid: fault } of generateAccounts(options)) {
    if (fault) invalid++
    batch += JSON.stringify(line) + '\n'
    if (batch.length > 64 * 1024) {
      await io.stdout(batch)
      batch = ''
    }
  }
  if (batch) await io.stdout(batch)
  io.stderr(
    `generated ${count} accounts (${invalid} invalid) for ${supplier}, seed ${JSON.stringify(seed)}${seedGiven ? '' : ' (pass --seed to repeat)'}\n`
  )
  return 0
}

/** A file the client must read: a usage mistake when it cannot. */
function readable(path: string, label: string): void {
  try {
    accessSync(path, constants.R_OK)
    if (statSync(path).isDirectory()) throw new UsageError(`${label} is a folder, not a file`)
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (code === 'ENOENT') throw new UsageError(`${label}: no such file`)
    if (code === 'EACCES') throw new UsageError(`${label}: not allowed to read it`)
    throw err
  }
}

/** `--sources <file>`, which must be readable. */
function givenSources(flags: Flags, io: MigrateCliIO): { path: string; label: string } | undefined {
  if (typeof flags.sources !== 'string') return undefined
  const sources = { path: callerPath(io, flags.sources), label: flags.sources }
  readable(sources.path, sources.label)
  return sources
}

/** `npm run` starts scripts in the package folder: paths are the caller's, from where npm was run. */
const callerPath = (io: MigrateCliIO, path: string) => resolve(io.env.INIT_CWD || process.cwd(), path)

/** The input a report was made from, by the report's default name (`<input>.report.ndjson`, `<input>.report-2.ndjson`…). */
const inputByReportName = (report: string) => /^(.+)\.report(?:-\d+)?\.ndjson$/.exec(report)?.[1]

async function runReport(args: string[], flags: Flags, io: MigrateCliIO): Promise<number> {
  onlyOptions(flags, ['help', 'code', 'failed-lines', 'input', 'sources'], 'report')
  if (args.length !== 1) throw new UsageError(`give one report file: ${PROGRAM} report <report.ndjson>`)
  const label = args[0]!
  const path = callerPath(io, label)
  readable(path, label)
  const code = typeof flags.code === 'string' ? flags.code : undefined
  const input = typeof flags.input === 'string' ? flags.input : inputByReportName(label)
  const out = typeof flags['failed-lines'] === 'string' ? flags['failed-lines'] : undefined
  if (out !== undefined) {
    if (input === undefined) {
      throw new UsageError(
        `cannot tell the input file from the report's name ${label}: name it with --input <file> (see ${PROGRAM} --help)`
      )
    }
    readable(callerPath(io, input), input)
  }
  // The sources file: --sources, beside the input, or beside the job's input (its upload state names the job).
  const beside = input !== undefined ? sourcesBeside(callerPath(io, input)) : undefined
  const jobId = /^job-(.+)\.(?:failed-)?results(?:-\d+)?\.ndjson$/.exec(basename(label))?.[1]
  const sources =
    givenSources(flags, io) ??
    (beside ? { path: beside, label: sourcesFileOf(input!) } : undefined) ??
    (jobId ? sourcesOfJob(callerPath(io, '.'), jobId) : undefined)
  await io.stdout(
    await renderReport(path, label, {
      ...(code !== undefined ? { code } : {}),
      ...(input ? { input } : {}),
      ...(sources ? { sources } : {})
    })
  )
  if (out !== undefined) {
    const written = await writeFailedLines(
      { path, label },
      { path: callerPath(io, input!), label: input! },
      { path: callerPath(io, out), label: out },
      code
    )
    const lines = code === undefined ? `failed line${written === 1 ? '' : 's'}` : `line${written === 1 ? '' : 's'}`
    const why = code === undefined ? '' : ` that failed with ${code}`
    await io.stdout(
      written === 0
        ? `No ${lines}${why}: ${out} not written.\n`
        : `Wrote the ${written === 1 ? '' : `${written} `}${lines} of ${input}${why} to ${out}: fix ${written === 1 ? 'it' : 'them'} there, then migrate that file with --resume (an account created before its post-import data failed is not created twice).\n`
    )
  }
  return 0
}

/** The service, the API key and the retry settings of the command line and the environment. */
function connectionOf(flags: Flags, io: MigrateCliIO): Connection {
  const apiKey = io.env.AMIS_API_KEY
  if (!apiKey) throw new UsageError("no API key: set AMIS_API_KEY to the organisation's API key")
  const url = serviceUrl(typeof flags.url === 'string' ? flags.url : io.env.AMIS_URL || DEFAULT_URL)
  const retry = {
    ...DEFAULT_RETRY,
    ...(typeof flags.timeout === 'string' ? { timeoutMs: integer('timeout', flags.timeout, 1, 3600) * 1000 } : {}),
    ...(typeof flags['max-attempts'] === 'string'
      ? { maxAttempts: integer('max-attempts', flags['max-attempts'], 1, 100) }
      : {}),
    ...(typeof flags.wait === 'string' ? { waitMs: integer('wait', flags.wait, 0, 86_400) * 1000 } : {})
  }
  return { apiKey, url, retry }
}

/** `8MB`, `512kB`, `100000`: bytes (k and M are 1024 and 1024², as a body limit is counted). */
function partSize(value: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)\s*(b|k|kb|kib|m|mb|mib)?$/i.exec(value.trim())
  const bytes = m ? Math.floor(Number(m[1]) * ({ k: 1024, m: 1024 * 1024 }[(m[2] ?? 'b')[0]!.toLowerCase()] ?? 1)) : NaN
  if (!(bytes >= MIN_PART_BYTES && bytes <= 1024 * 1024 * 1024)) {
    throw new UsageError(`--part-size must be a size from 1kB to 1024MB (e.g. 8MB, 512kB, 100000), not "${value}"`)
  }
  return bytes
}

function jobsIO(io: MigrateCliIO): JobsIO {
  return {
    stdout: io.stdout,
    stderr: io.stderr,
    tty: io.tty ?? false,
    ...(io.columns !== undefined ? { columns: io.columns } : {}),
    progressIntervalMs: io.progressIntervalMs ?? 5000,
    ...(io.pollIntervalMs !== undefined ? { pollIntervalMs: io.pollIntervalMs } : {}),
    ...(io.fetch ? { fetch: io.fetch } : {}),
    ...(io.signal ? { signal: io.signal } : {})
  }
}

/** Time a job command has after Ctrl-C to stop by itself (and say where it stopped). */
const STOP_GRACE_MS = 1000

/**
 * A job command stopped by Ctrl-C: it finishes by itself when it can (an upload after its part,
 * a follow between two reads); when it is waiting on the service, it is left after a second.
 * Nothing is lost: the job is the service's, and the upload's state file is written whole.
 */
async function stoppable(work: Promise<number>, command: string, io: MigrateCliIO): Promise<number> {
  const signal = io.signal
  if (!signal) return work
  let leave: (() => void) | undefined
  const onAbort = () => {
    const timer = setTimeout(() => leave?.(), STOP_GRACE_MS)
    timer.unref()
  }
  signal.addEventListener('abort', onAbort, { once: true })
  const left = new Promise<number>((resolve) => {
    leave = () => {
      io.stderr(
        command === 'submit'
          ? 'Stopped while waiting for the service: nothing is lost (a job made is not cancelled, and the parts it took are noted); run the same command again to carry on\n'
          : command === 'reconcile'
            ? 'Stopped while waiting for the service: reconcile only reads, nothing was changed; the report holds the differences found so far\n'
            : 'Stopped while waiting for the service; any job goes on in the service\n'
      )
      resolve(1)
    }
  })
  try {
    return await Promise.race([work, left])
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

/** This machine's UTC offset now, as `+01:00`. */
function localOffset(): string {
  const minutes = -new Date().getTimezoneOffset()
  const abs = Math.abs(minutes)
  return `${minutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`
}

/**
 * A time of the start window: a date and time with its UTC offset (`2026-11-28T22:00+01:00`,
 * `2026-11-28 21:00:00Z`), in UTC whole seconds. A time without an offset is refused: it could
 * mean this machine's zone or the service's.
 */
export function windowTime(flag: string, text: string): string {
  const found = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d)(:\d\d(?:\.\d+)?)?\s*(Z|[+-]\d\d:?\d\d)?$/i.exec(text.trim())
  if (!found) {
    throw new UsageError(
      `--${flag} "${text}" is not a date and time: write it as YYYY-MM-DDTHH:MM with its UTC offset, e.g. 2026-11-28T22:00${localOffset()} (this machine's offset) or 2026-11-28T21:00Z`
    )
  }
  if (!found[4]) {
    throw new UsageError(
      `--${flag} "${text}" has no UTC offset: add one, e.g. ${found[1]}T${found[2]}${localOffset()} (this machine's offset now) or ${found[1]}T${found[2]}Z (UTC)`
    )
  }
  const offset = found[4].toUpperCase() === 'Z' ? 'Z' : found[4].replace(/^([+-]\d\d)(\d\d)$/, '$1:$2')
  const at = Date.parse(`${found[1]}T${found[2]}${found[3] ?? ':00'}${offset}`)
  if (Number.isNaN(at)) throw new UsageError(`--${flag} "${text}" is not a real date and time`)
  return new Date(Math.floor(at / 1000) * 1000).toISOString().slice(0, 19) + 'Z'
}

/** submit, job, jobs, results, failed-lines, unprocessed-lines, cancel, reconcile. */
async function runJobCommand(command: string, args: string[], flags: Flags, io: MigrateCliIO): Promise<number> {
  onlyOptions(flags, JOB_COMMANDS[command]!, command)
  if (command === 'submit') {
    if (args.length !== 1) {
      throw new UsageError(`give one input file: ${PROGRAM} submit <file.ndjson> --team <name> (see --help)`)
    }
    const team = typeof flags.team === 'string' ? flags.team : io.env.AMIS_TEAM
    if (!team) throw new UsageError('no operations team: pass --team <name> or set AMIS_TEAM')
    let label = args[0]!
    if (label.endsWith('.sql')) {
      // A mapping: mapped first, to <mapping>.lines.ndjson beside it (its sources beside that).
      label = `${label.slice(0, -'.sql'.length)}.lines.ndjson`
      const { summary } = await mapToLines(args[0]!, { path: callerPath(io, label), label }, flags, io, false)
      if (summary.problems > 0 && flags['go-on'] !== true) {
        throw new JobCommandError(
          `the mapping left source rows out (the summary above): nothing was sent. Fix the extract, or submit with --go-on to migrate the ${summary.lines} lines mapped without them`
        )
      }
      io.stderr(`Mapped ${args[0]} to ${label}: submitting it\n`)
    } else if (flags['go-on'] !== undefined || flags.extract !== undefined) {
      throw new UsageError('--extract and --go-on go with a mapping (a file ending .sql)')
    }
    const file = callerPath(io, label)
    readable(file, label)
    return submit(
      {
        file,
        label,
        team,
        dryRun: flags['dry-run'] === true,
        ...(typeof flags['part-size'] === 'string' ? { partBytes: partSize(flags['part-size']) } : {}),
        ...(typeof flags.supplier === 'string' ? { supplier: flags.supplier } : {}),
        follow: flags.follow === true,
        window: {
          notBefore: typeof flags['not-before'] === 'string' ? windowTime('not-before', flags['not-before']) : null,
          notAfter: typeof flags['not-after'] === 'string' ? windowTime('not-after', flags['not-after']) : null
        }
      },
      connectionOf(flags, io),
      jobsIO(io)
    )
  }
  if (command === 'jobs') {
    if (args.length !== 0) throw new UsageError(`${PROGRAM} jobs takes no argument (see --help)`)
    const state = typeof flags.state === 'string' ? flags.state.toUpperCase() : undefined
    if (state !== undefined && !JOB_STATES.includes(state)) {
      throw new UsageError(`--state must be one of ${JOB_STATES.join(', ')}, not "${flags.state}"`)
    }
    return listJobs(
      {
        ...(state ? { state } : {}),
        ...(typeof flags.supplier === 'string' ? { supplier: flags.supplier } : {}),
        limit: typeof flags.limit === 'string' ? integer('limit', flags.limit, 1, 1000) : 20
      },
      connectionOf(flags, io),
      jobsIO(io)
    )
  }
  if (command === 'reconcile') {
    if (args.length !== 1) {
      throw new UsageError(`give one input file: ${PROGRAM} reconcile <file.ndjson> (see --help)`)
    }
    const file = callerPath(io, args[0]!)
    readable(file, args[0]!)
    const given = typeof flags.report === 'string' ? flags.report : undefined
    const report = given ?? `${args[0]}.reconcile.ndjson`
    const connection = connectionOf(flags, io)
    const summary = await reconcile(
      {
        file,
        label: args[0]!,
        ...(typeof flags.supplier === 'string' ? { supplier: flags.supplier } : {}),
        report: { path: callerPath(io, report), label: report, numbered: given === undefined }
      },
      connection,
      jobsIO(io)
    )
    await io.stdout(renderReconcileSummary(summary, args[0]!, connection.url))
    return summary.checked === summary.matching && summary.differences === 0 && summary.unreadable.length === 0 ? 0 : 1
  }
  if (args.length !== 1) throw new UsageError(`give one job id: ${PROGRAM} ${command} <id> (see --help)`)
  const id = args[0]!.trim()
  if (command === 'job') return showJob(id, flags.follow === true, connectionOf(flags, io), jobsIO(io))
  if (command === 'cancel') return cancelJob(id, connectionOf(flags, io), jobsIO(io))
  const out = typeof flags.out === 'string' ? { path: callerPath(io, flags.out), label: flags.out } : undefined
  const sources = givenSources(flags, io)
  return download(
    {
      id,
      what:
        command === 'failed-lines' || command === 'unprocessed-lines'
          ? command
          : flags.failed === true
            ? 'failed-results'
            : 'results',
      ...(out ? { out } : {}),
      ...(sources ? { sources } : {}),
      folder: (name) => callerPath(io, name)
    },
    connectionOf(flags, io),
    jobsIO(io)
  )
}

/** `map check <mapping.sql>`, or `map check --lines <file> [--sources <file>]` for lines mapped already. */
async function runCheck(args: string[], flags: Flags, io: MigrateCliIO): Promise<number> {
  onlyOptions(flags, CHECK_OPTIONS, 'map check')
  const team = typeof flags.team === 'string' ? flags.team : io.env.AMIS_TEAM
  if (!team) throw new UsageError('no operations team: pass --team <name> or set AMIS_TEAM (the dry run needs one)')
  let lines: { path: string; label: string } | undefined
  let sources: { path: string; label: string } | undefined
  if (typeof flags.lines === 'string') {
    if (args.length !== 0) throw new UsageError('give a mapping or --lines <file>, not both')
    if (typeof flags.extract === 'string' || typeof flags.out === 'string') {
      throw new UsageError('--extract and --out go with a mapping, not with --lines')
    }
    lines = { path: callerPath(io, flags.lines), label: flags.lines }
    readable(lines.path, lines.label)
    const label = typeof flags.sources === 'string' ? flags.sources : sourcesFileOf(flags.lines)
    if (typeof flags.sources === 'string' || existsSync(callerPath(io, label))) {
      sources = { path: callerPath(io, label), label }
      readable(sources.path, label)
    }
  } else {
    if (args.length !== 1) {
      throw new UsageError(`give one mapping: ${PROGRAM} map check <mapping.sql> --team <name> (see --help)`)
    }
    if (typeof flags.sources === 'string') throw new UsageError('--sources goes with --lines: a mapping writes its own')
  }
  const connection = connectionOf(flags, io)
  // Without --out, the lines and their sources go to a folder of their own, removed at the end.
  const folder =
    typeof flags.lines !== 'string' && typeof flags.out !== 'string'
      ? mkdtempSync(join(tmpdir(), 'amis-check-'))
      : undefined
  try {
    if (typeof flags.lines !== 'string') {
      const out = typeof flags.out === 'string' ? flags.out : undefined
      const target = out
        ? { path: callerPath(io, out), label: out }
        : { path: join(folder!, 'lines.ndjson'), label: TEMPORARY }
      const mapped = await mapToLines(args[0]!, target, flags, io, true)
      lines = { path: mapped.lines, label: out ?? args[0]! }
      sources = { path: mapped.sources, label: sourcesFileOf(out ?? 'lines.ndjson') }
    }
    return await check(
      {
        lines: lines!.path,
        linesLabel: lines!.label,
        mapped: typeof flags.lines !== 'string',
        ...(sources ? { sources } : {}),
        team,
        ...(typeof flags.supplier === 'string' ? { supplier: flags.supplier } : {})
      },
      connection,
      jobsIO(io)
    )
  } finally {
    if (folder) rmSync(folder, { recursive: true, force: true })
  }
}

/**
 * Maps `mapping` (the engine's runMapping) to `out`, its summary on standard error. Rows the
 * mapping left out stop a submit unless --go-on; `map check` goes on and counts them as failures.
 */
/**
 * `--memory 8GB`: DuckDB's memory for the mapping, in its own units (KB, MB, GB, TB); `--slice
 * 20000`: the accounts each run of the mapping's last SELECT takes.
 */
function engineOptions(flags: Flags): { memoryLimit?: string; sliceAccounts?: number } {
  const options: { memoryLimit?: string; sliceAccounts?: number } = {}
  if (typeof flags.memory === 'string') {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(KB|MB|GB|TB)\s*$/i.exec(flags.memory)
    if (!m || Number(m[1]) <= 0) {
      throw new UsageError(`--memory takes a size such as 4GB or 512MB, not "${flags.memory}"`)
    }
    options.memoryLimit = `${m[1]}${m[2]!.toUpperCase()}`
  }
  if (typeof flags.slice === 'string') {
    if (!/^\s*[1-9]\d{0,8}\s*$/.test(flags.slice)) {
      throw new UsageError(`--slice takes a number of accounts such as 20000, not "${flags.slice}"`)
    }
    options.sliceAccounts = Number(flags.slice)
  }
  return options
}

async function mapToLines(
  mapping: string,
  out: { path: string; label: string },
  flags: Flags,
  io: MigrateCliIO,
  goOn: boolean
) {
  readable(callerPath(io, mapping), mapping)
  const mapped = await runMapping({
    mapping: callerPath(io, mapping),
    ...(typeof flags.extract === 'string' ? { extract: callerPath(io, flags.extract) } : {}),
    out: out.path,
    label: { mapping, out: out.label },
    goOn: goOn || flags['go-on'] === true,
    ...engineOptions(flags),
    log: io.stderr
  })
  return mapped
}

async function runMigration(args: string[], flags: Flags, io: MigrateCliIO): Promise<number> {
  onlyOptions(flags, MIGRATE_OPTIONS, 'migrate')
  if (args.length !== 1) {
    throw new UsageError(`give one input file: ${PROGRAM} <file.ndjson> --team <name> (see --help)`)
  }
  const file = callerPath(io, args[0]!)
  readable(file, args[0]!)
  const report = typeof flags.report === 'string' ? flags.report : `${args[0]}.report.ndjson`
  const validateOnly = flags['validate-only'] === true
  if (validateOnly && flags['dry-run'] === true) {
    throw new UsageError('--validate-only and --dry-run do not go together: choose one')
  }
  const team = typeof flags.team === 'string' ? flags.team : (io.env.AMIS_TEAM ?? (validateOnly ? '' : undefined))
  if (team === undefined || (team === '' && !validateOnly)) {
    throw new UsageError('no operations team: pass --team <name> or set AMIS_TEAM')
  }
  const resume = flags.resume === true
  const retrying = typeof flags['retry-failed'] === 'string'
  if (flags['resend-history'] === true && !resume && !retrying) {
    throw new UsageError(`--resend-history goes with --resume (see ${PROGRAM} --help)`)
  }
  let onlyLines: Map<number, string | null> | undefined
  if (typeof flags['retry-failed'] === 'string') {
    const earlier = callerPath(io, flags['retry-failed'])
    readable(earlier, flags['retry-failed'])
    onlyLines = await failedLines(earlier, flags['retry-failed'])
    if (onlyLines.size === 0) {
      io.stderr(`${flags['retry-failed']} has no failed lines: nothing to retry\n`)
      return 0
    }
  }
  const { apiKey, url, retry } = connectionOf(flags, io)
  // --resume leaves out the lines this report name's earlier reports show completed.
  let earlierReports: Array<{ path: string; label: string }> | undefined
  if (resume && !retrying && flags['resend-history'] !== true) {
    earlierReports = []
    for (let n = 1; existsSync(numberedReport(callerPath(io, report), n)); n++) {
      earlierReports.push({ path: numberedReport(callerPath(io, report), n), label: numberedReport(report, n) })
    }
  }
  const batchSize =
    typeof flags['batch-size'] === 'string' ? integer('batch-size', flags['batch-size'], 1, 1000) : DEFAULT_BATCH_SIZE
  const summary = await migrate(
    {
      file,
      url,
      apiKey,
      team,
      batchSize,
      concurrency:
        typeof flags.concurrency === 'string'
          ? integer('concurrency', flags.concurrency, 1, 256)
          : batchSize > 1 && !validateOnly
            ? DEFAULT_BATCH_CONCURRENCY
            : 8,
      dryRun: flags['dry-run'] === true,
      validateOnly,
      // Failed lines of an earlier run may have been created before the step that failed.
      resume: resume || (onlyLines !== undefined && !validateOnly),
      reportPath: callerPath(io, report),
      // Run again with --resume (or --retry-failed), a report name given before moves on to -2, -3…
      numberReport: typeof flags.report !== 'string' || resume || retrying,
      ...(onlyLines ? { onlyLines } : {}),
      ...(earlierReports ? { earlierReports } : {}),
      labels: { file: args[0]!, report },
      retry
    },
    {
      stderr: io.stderr,
      tty: io.tty ?? false,
      ...(io.columns !== undefined ? { columns: io.columns } : {}),
      progressIntervalMs: io.progressIntervalMs ?? 5000,
      ...(io.fetch ? { fetch: io.fetch } : {}),
      ...(io.signal ? { signal: io.signal } : {})
    }
  )
  await io.stdout(renderSummary(summary))
  return summary.failed > 0 || summary.stopped ? 1 : 0
}

async function runMap(args: string[], flags: Flags, io: MigrateCliIO): Promise<number> {
  if (args[0] === 'init') {
    onlyOptions(flags, ['help'], 'map init')
    if (args.length !== 2) throw new UsageError(`give one folder: ${PROGRAM} map init <folder>`)
    const written = writeStarter(callerPath(io, args[1]!))
    io.stderr(
      `Wrote a starter mapping and a sample extract (${written.length - 1} files):\n` +
        `  ${args[1]}/mapping.sql\n  ${args[1]}/extract/\n` +
        `Map it: ${PROGRAM} map ${args[1]}/mapping.sql --out ${args[1]}/lines.ndjson\n`
    )
    return 0
  }
  onlyOptions(flags, ['out', 'extract', 'go-on', 'memory', 'slice', 'help'], 'map')
  if (args.length !== 1) throw new UsageError(`give one mapping: ${PROGRAM} map <mapping.sql> --out <lines.ndjson>`)
  if (typeof flags.out !== 'string') {
    throw new UsageError(`name the lines file: ${PROGRAM} map ${args[0]} --out <lines.ndjson>`)
  }
  const { summary } = await runMapping({
    mapping: callerPath(io, args[0]!),
    ...(typeof flags.extract === 'string' ? { extract: callerPath(io, flags.extract) } : {}),
    out: callerPath(io, flags.out),
    label: { mapping: args[0]!, out: flags.out },
    goOn: flags['go-on'] === true,
    ...engineOptions(flags),
    log: io.stderr
  })
  return summary.problems > 0 && flags['go-on'] !== true ? 1 : 0
}

/** Runs the migration client; returns the exit code. Never calls `process.exit` itself. */
export async function runMigrateCli(argv: string[], io: MigrateCliIO): Promise<number> {
  try {
    const { positionals, flags } = parseCommandLine<Flags>(
      argv,
      OPTIONS,
      (message) => new UsageError(`${message} (see ${PROGRAM} --help)`)
    )
    if (flags.help || positionals.length === 0) {
      if (flags.help) await io.stdout(HELP)
      else io.stderr(HELP)
      return flags.help ? 0 : 2
    }
    const [first, ...rest] = positionals
    if (first === 'generate') return await runGenerate(rest, flags, io)
    if (first === 'report') return await runReport(rest, flags, io)
    if (first === 'map' && rest[0] === 'check') return await stoppable(runCheck(rest.slice(1), flags, io), 'map', io)
    if (first === 'map') return await runMap(rest, flags, io)
    if (first !== undefined && Object.hasOwn(JOB_COMMANDS, first)) {
      return await stoppable(runJobCommand(first, rest, flags, io), first, io)
    }
    return await runMigration(positionals, flags, io)
  } catch (err) {
    if (err instanceof JobCommandError) {
      io.stderr(`error: ${err.message}\n`)
      return err.exitCode
    }
    if (err instanceof DocumentError) {
      io.stderr(`error: ${err.message}\n`)
      return 1
    }
    if (err instanceof PlanError) {
      io.stderr(`error: ${err.message}\n`)
      return 2
    }
    if (
      err instanceof UsageError ||
      err instanceof ReportExistsError ||
      err instanceof NotAReportError ||
      err instanceof MapError
    ) {
      io.stderr(`error: ${err.message}\n`)
      return 2
    }
    if (err instanceof AuthenticationError) {
      io.stderr(`error: ${err.code}: ${err.message} (check AMIS_API_KEY)\n`)
      return 1
    }
    if (err instanceof UnavailableError) {
      // No answer at all: most often the service is not running, or not at the URL the client uses.
      const hint =
        err.code === CLIENT_CODE.network_error
          ? '. Is the service running there? Set --url or AMIS_URL to its address.'
          : ''
      io.stderr(`error: ${err.code}: ${err.message}${hint}\n`)
      return 1
    }
    if (err instanceof OperatorKeyError) {
      io.stderr(`error: ${err.message}\n`)
      return 2
    }
    if (err instanceof PreflightError) {
      io.stderr(err.problems.map((p) => `error: ${p}\n`).join('') + 'Nothing was sent.\n')
      return 1
    }
    const code = (err as { code?: unknown }).code
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
      // The report's folder is missing or closed to us: a usage mistake, nothing was sent.
      const path = (err as { path?: unknown }).path
      io.stderr(
        `error: cannot write ${typeof path === 'string' ? path : 'the report'}: ${code === 'ENOENT' ? 'no such folder' : code === 'EACCES' ? 'not allowed' : 'it is a folder'}\n`
      )
      return 2
    }
    throw err
  }
}

/** Signals this close to the first are the same Ctrl-C, delivered twice. */
const SAME_SIGNAL_MS = 1000

/** Writes to standard output, waiting for it to drain (a pipe to a slow reader). */
function writeStdout(text: string): Promise<void> | void {
  if (process.stdout.write(text)) return
  return new Promise((resolve) => process.stdout.once('drain', resolve))
}

if (isEntryPoint(import.meta.url)) {
  // Ctrl-C (or SIGTERM) once: take no more lines, finish the accounts in flight, report. Twice: quit.
  // Under `npm run` one Ctrl-C arrives twice (from the terminal, and forwarded by npm): a second
  // signal within a second of the first is that same keypress.
  const stop = new AbortController()
  let firstSignalAt = 0
  // A job runs in the service: stopping the client never stops it.
  const command = process.argv.slice(2).find((arg) => !arg.startsWith('-'))
  const stopping =
    command === 'submit' || command === 'job'
      ? 'stopping the client; the job is not cancelled'
      : 'finishing the accounts in flight'
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      if (Date.now() - firstSignalAt < SAME_SIGNAL_MS) return
      process.exit(130)
    }
    firstSignalAt = Date.now()
    process.stderr.write(`\n${signal}: ${stopping} (again to quit at once)\n`)
    stop.abort()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0) // `generate … | head`: the reader has had enough
    throw err
  })
  const code = await runMigrateCli(process.argv.slice(2), {
    env: process.env,
    stdout: writeStdout,
    stderr: (s) => process.stderr.write(s),
    tty: process.stderr.isTTY === true,
    columns: process.stderr.columns,
    signal: stop.signal
  })
  process.exit(code)
}

#!/usr/bin/env node
/**
 * The migration client: `npm run migrate -- <file> [options]` migrates the accounts of a
 * newline-delimited JSON file; `npm run migrate -- generate N [options]` writes synthetic ones.
 *
 * Exit codes: 0 every account migrated, 1 an account failed or the run could not go on, 2 usage error.
 */
import { resolve } from 'node:path'
import { generateAccounts } from './generate.js'
import { migrate, renderSummary } from './run.js'
import { AuthenticationError, DEFAULT_RETRY, UnavailableError } from './service-client.js'
import { isEntryPoint, parseCommandLine } from '../entry.js'

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
  resume: { type: 'boolean' },
  report: { type: 'string' },
  timeout: { type: 'string' },
  'max-attempts': { type: 'string' },
  seed: { type: 'string' },
  'invalid-share': { type: 'string' },
  'post-import-share': { type: 'string' },
  supplier: { type: 'string' },
  'payment-vendor': { type: 'string' },
  'as-of': { type: 'string' },
  help: { type: 'boolean', short: 'h' }
} as const
type OptionName = keyof typeof OPTIONS
type Flags = Partial<Record<OptionName, string | boolean>>

const MIGRATE_OPTIONS: OptionName[] = ['url', 'team', 'concurrency', 'batch-size', 'dry-run', 'resume', 'report', 'timeout', 'max-attempts', 'help']
const GENERATE_OPTIONS: OptionName[] = ['seed', 'invalid-share', 'post-import-share', 'supplier', 'payment-vendor', 'as-of', 'help']

const HELP = `Account Migration Import Service — migration client

Usage:
  ${PROGRAM} <file.ndjson> --team <operations team> [options]
  ${PROGRAM} generate <N> [options] > accounts.ndjson

Migrates every account of a newline-delimited JSON file (one account per line, optionally with
its post-import data): staged, created and given its post-import data, many accounts per request
(POST batches/), or one account at a time through the single endpoints with --batch-size 1.
The API key comes from the environment variable AMIS_API_KEY.

Options:
  --url <url>              Service URL (env AMIS_URL, default ${DEFAULT_URL}).
  --team <name>            Operations team the accounts are assigned to (env AMIS_TEAM). Required.
  --batch-size <n>         Accounts per request, 1–1000 (default ${DEFAULT_BATCH_SIZE}; 1 = the single endpoints, one account at a time).
  --concurrency <n>        Requests in flight at once, 1–256 (default ${DEFAULT_BATCH_CONCURRENCY} batches, or 8 accounts with --batch-size 1).
  --dry-run                Validate, stage and dry-run the create only: no account is created.
  --resume                 Accounts already COMPLETED are not created again; their post-import data is sent again (retry-safe).
  --report <file>          Report file, one JSON line per account (default <file>.report.ndjson).
  --timeout <seconds>      Time allowed for one request (default ${DEFAULT_RETRY.timeoutMs / 1000}).
  --max-attempts <n>       Attempts of a request failing with a 5xx or a network error (default ${DEFAULT_RETRY.maxAttempts}).
  -h, --help               Show this help.

generate <N> writes N synthetic accounts to standard output:
  --seed <text>            Same seed, same accounts (default: random, printed on standard error).
  --invalid-share <0–1>    Share of deliberately invalid accounts (default 0).
  --post-import-share <0–1>  Share of accounts carrying post-import data (default 0.5).
  --supplier <code>        Import supplier of the accounts (default ACME_ENERGY).
  --payment-vendor <code>  Add CARD payment instructions (reference pi_<external number>) for this vendor.
  --as-of <YYYY-MM-DD>     The day the data is made for; nothing is dated after it (default today, UTC).

Exit codes: 0 every account migrated, 1 an account failed or the run stopped, 2 usage error.
`

function integer(name: string, value: string, min: number, max: number): number {
  const n = /^[0-9]+$/.test(value.trim()) ? Number(value.trim()) : NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, not "${value}"`)
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
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--url must be an http(s) URL such as ${DEFAULT_URL}, not "${raw}"`)
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
  if (!/^\d{4}-\d{2}-\d{2}$/.test(asOf) || Number.isNaN(Date.parse(asOf))) throw new UsageError(`--as-of must be a date YYYY-MM-DD, not "${asOf}"`)
  const supplier = typeof flags.supplier === 'string' ? flags.supplier : 'ACME_ENERGY'
  const options = {
    count,
    seed,
    invalidShare: share('invalid-share', flags['invalid-share'], 0),
    postImportShare: share('post-import-share', flags['post-import-share'], 0.5),
    supplier,
    ...(typeof flags['payment-vendor'] === 'string' ? { paymentVendor: flags['payment-vendor'] } : {}),
    today: asOf
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
  io.stderr(`generated ${count} accounts (${invalid} invalid) for ${supplier}, seed ${JSON.stringify(seed)}${seedGiven ? '' : ' (pass --seed to repeat)'}\n`)
  return 0
}

async function runMigration(args: string[], flags: Flags, io: MigrateCliIO): Promise<number> {
  onlyOptions(flags, MIGRATE_OPTIONS, 'migrate')
  if (args.length !== 1) throw new UsageError(`give one input file: ${PROGRAM} <file.ndjson> --team <name> (see --help)`)
  // `npm run` starts scripts in the package folder: paths are the caller's, from where npm was run.
  const base = io.env.INIT_CWD || process.cwd()
  const file = resolve(base, args[0]!)
  const report = typeof flags.report === 'string' ? flags.report : `${args[0]}.report.ndjson`
  const team = typeof flags.team === 'string' ? flags.team : io.env.AMIS_TEAM
  if (!team) throw new UsageError('no operations team: pass --team <name> or set AMIS_TEAM')
  const apiKey = io.env.AMIS_API_KEY
  if (!apiKey) throw new UsageError('no API key: set AMIS_API_KEY to the organisation\'s API key')
  const url = serviceUrl(typeof flags.url === 'string' ? flags.url : io.env.AMIS_URL || DEFAULT_URL)
  const retry = {
    ...DEFAULT_RETRY,
    ...(typeof flags.timeout === 'string' ? { timeoutMs: integer('timeout', flags.timeout, 1, 3600) * 1000 } : {}),
    ...(typeof flags['max-attempts'] === 'string' ? { maxAttempts: integer('max-attempts', flags['max-attempts'], 1, 100) } : {})
  }
  const batchSize = typeof flags['batch-size'] === 'string' ? integer('batch-size', flags['batch-size'], 1, 1000) : DEFAULT_BATCH_SIZE
  const summary = await migrate({
    file,
    url,
    apiKey,
    team,
    batchSize,
    concurrency: typeof flags.concurrency === 'string' ? integer('concurrency', flags.concurrency, 1, 256) : batchSize > 1 ? DEFAULT_BATCH_CONCURRENCY : 8,
    dryRun: flags['dry-run'] === true,
    resume: flags.resume === true,
    reportPath: resolve(base, report),
    labels: { file: args[0]!, report },
    retry
  }, {
    stderr: io.stderr,
    tty: io.tty ?? false,
    ...(io.columns !== undefined ? { columns: io.columns } : {}),
    progressIntervalMs: io.progressIntervalMs ?? 5000,
    ...(io.fetch ? { fetch: io.fetch } : {}),
    ...(io.signal ? { signal: io.signal } : {})
  })
  await io.stdout(renderSummary(summary))
  return summary.failed > 0 || summary.stopped ? 1 : 0
}

/** Runs the migration client; returns the exit code. Never calls `process.exit` itself. */
export async function runMigrateCli(argv: string[], io: MigrateCliIO): Promise<number> {
  try {
    const { positionals, flags } = parseCommandLine<Flags>(argv, OPTIONS, (message) => new UsageError(message))
    if (flags.help || positionals.length === 0) {
      if (flags.help) await io.stdout(HELP)
      else io.stderr(HELP)
      return flags.help ? 0 : 2
    }
    const [first, ...rest] = positionals
    if (first === 'generate') return await runGenerate(rest, flags, io)
    return await runMigration(positionals, flags, io)
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`error: ${err.message}\n`)
      return 2
    }
    if (err instanceof AuthenticationError) {
      io.stderr(`error: ${err.code}: ${err.message} (check AMIS_API_KEY)\n`)
      return 1
    }
    if (err instanceof UnavailableError) {
      io.stderr(`error: ${err.code}: ${err.message}\n`)
      return 1
    }
    const code = (err as { code?: unknown }).code
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
      io.stderr(`error: ${(err as Error).message}\n`)
      return 1
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
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      if (Date.now() - firstSignalAt < SAME_SIGNAL_MS) return
      process.exit(130)
    }
    firstSignalAt = Date.now()
    process.stderr.write(`\n${signal}: finishing the accounts in flight (again to quit at once)\n`)
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

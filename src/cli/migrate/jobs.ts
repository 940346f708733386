import { createReadStream, createWriteStream, existsSync, linkSync, rmSync, statSync } from 'node:fs'
import { basename } from 'node:path'
import { createInterface } from 'node:readline'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import { CODE, ERROR_CODES } from '../../../schemas/error-codes.js'
import { isObject } from '../http.js'
import {
  DEFAULT_PART_BYTES,
  partBytes,
  PlanError,
  planParts,
  readState,
  stateFileOf,
  unchangedParts,
  writeState,
  type FilePlan,
  type JobState
} from './job-file.js'
import { readLines } from './lines.js'
import { annotateResults, sourcesOfJob, writeFailedSources } from './map/job-sources.js'
import { sourcesFileOf } from './map/source-terms.js'
import { preflight, refuseOperatorKey, suppliersIn } from './preflight.js'
import { createProgress, duration, size } from './progress.js'
import { aligned, numberedReport } from './run.js'
import {
  createServiceClient,
  hasCode,
  problemsOf,
  retryAfterMs,
  type Answer,
  type RetryPolicy,
  type ServiceClient
} from './service-client.js'

/**
 * Import jobs from the command line: `submit` uploads a file in parts (continuing an upload that
 * stopped, from the state file beside the input) and starts the job; `job` shows one (`--follow`
 * until it ends); `results` and `failed-lines` download its NDJSON; `jobs` lists them; `cancel`.
 */

const PROGRAM = 'npm run migrate --'
const NDJSON = 'application/x-ndjson'
const FINISHED = ['COMPLETED', 'CANCELLED']
/** Lines read for a bare account (a job's lines are batch entries), as the pre-flight reads suppliers. */
const LINES_CHECKED = 1000

export interface Job {
  id: string
  import_supplier: string
  state: string
  dry_run: boolean
  created_at: string
  started_at: string | null
  finished_at: string | null
  not_before: string | null
  not_after: string | null
  cancelled_reason: string | null
  failure_codes: Array<{ code: string; lines: number }>
  lines: {
    total: number
    done: number
    created: number
    already_imported: number
    would_create: number
    failed: number
    not_processed: number
    skipped_blank: number
  }
  rate_per_second: number
  eta_seconds: number | null
}

export interface JobsIO {
  stdout: (text: string) => void | Promise<void>
  stderr: (text: string) => void
  tty: boolean
  columns?: number
  /** Plain progress lines this often when not on a terminal. */
  progressIntervalMs: number
  /** How often a followed job is read (default 1 s). */
  pollIntervalMs?: number
  fetch?: typeof fetch
  /** Aborted (Ctrl-C): stop uploading after the part in flight, stop following, stop waiting. */
  signal?: AbortSignal
}

export interface Connection {
  url: string
  apiKey: string
  retry: RetryPolicy
}

/** A job command could not do its work: the message, and the exit code (1, or 2 for a usage mistake). */
export class JobCommandError extends Error {
  override name = 'JobCommandError'
  constructor(
    message: string,
    readonly exitCode = 1
  ) {
    super(message)
  }
}

const count = (n: number, one: string, many = one + 's') => `${n} ${n === 1 ? one : many}`
const enc = encodeURIComponent

/** Waits `ms`, or less when the signal is aborted. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}

/** The promise's value, or undefined as soon as the signal is aborted (the work itself goes on, unawaited). */
function untilAborted<T>(work: Promise<T>, signal?: AbortSignal): Promise<T | undefined> {
  if (!signal) return work
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined)
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(err)
      }
    )
  })
}

export async function connect(connection: Connection, io: JobsIO): Promise<ServiceClient> {
  const client = createServiceClient({
    url: connection.url,
    apiKey: connection.apiKey,
    retry: connection.retry,
    notice: (text) => io.stderr(text),
    ...(io.fetch ? { fetch: io.fetch } : {})
  })
  await client.login()
  await refuseOperatorKey(client)
  return client
}

/** The service's refusal in one sentence: its detail and its entries' details, with the codes. */
export function refusal(answer: Answer): string {
  const body = answer.body
  const top = isObject(body) && typeof body.detail === 'string' ? body.detail.replace(/\.$/, '') : undefined
  const entries = problemsOf(answer)
    .filter((p) => p.detail !== '' || p.code !== (isObject(body) ? body.code : undefined))
    .map((p) => `${p.detail.replace(/\.$/, '') || p.code}${p.attr ? ` (at ${p.attr})` : ''} (${p.code})`)
  const code = isObject(body) && typeof body.code === 'string' ? body.code : `http_${answer.status}`
  if (entries.length === 0) return `${top ?? `HTTP ${answer.status}`} (${code})`
  return `${top ? `${top}: ` : ''}${entries.join('; ')}`
}

const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** The fewest characters of a job id the client takes for the whole. */
export const MIN_ID_PREFIX = 8

/**
 * The job a whole id or a unique prefix of one (at least 8 characters, as the dashboard shows
 * them) names, among the organisation's jobs; a prefix of two jobs or of none is the command's error.
 */
export async function resolveJobId(client: ServiceClient, url: string, given: string): Promise<string> {
  const id = given.trim().toLowerCase()
  if (JOB_ID.test(id)) return id
  if (id.length < MIN_ID_PREFIX || !/^[0-9a-f-]+$/.test(id)) {
    throw new JobCommandError(
      `"${given}" is not a job id: give the whole id or its first ${MIN_ID_PREFIX} characters or more (${PROGRAM} jobs lists yours)`,
      2
    )
  }
  const found: string[] = []
  let after: string | undefined
  for (;;) {
    const query = new URLSearchParams({ limit: '1000', ...(after ? { after } : {}) })
    const answer = await client.get(`import-jobs/?${query.toString()}`)
    if (answer.status !== 200 || !Array.isArray(answer.body)) {
      throw new JobCommandError(`cannot look up the jobs to find ${given}: ${refusal(answer)}`)
    }
    const page = answer.body as Job[]
    found.push(...page.map((job) => job.id).filter((jobId) => jobId.startsWith(id)))
    if (page.length < 1000) break
    after = page.at(-1)!.id
  }
  if (found.length === 1) return found[0]!
  if (found.length > 1) {
    throw new JobCommandError(
      `${given} is the start of ${found.length} job ids (${found.join(', ')}): give more of it`,
      2
    )
  }
  throw new JobCommandError(
    `no import job whose id starts with ${given} at ${url} for this API key (jobs are seen only by the organisation that made them): check the id (${PROGRAM} jobs lists yours) and --url`
  )
}

/** A job answer, or the command's error: not found names the job and the service. */
async function readJob(client: ServiceClient, url: string, id: string): Promise<Job> {
  const answer = await client.get(`import-jobs/${enc(id)}/`)
  if (answer.status === 200 && isObject(answer.body)) return answer.body as unknown as Job
  if (answer.status === 404) {
    throw new JobCommandError(
      `no import job ${id} at ${url} for this API key (jobs are seen only by the organisation that made them): check the id (${PROGRAM} jobs lists yours) and --url`
    )
  }
  throw new JobCommandError(`cannot read job ${id}: ${refusal(answer)}`)
}

/** Why a job was cancelled, in words. */
const CANCELLED_REASONS: Record<string, string> = {
  cancelled: 'a person cancelled it',
  window_ended: 'its window ended (not_after passed) before every line had begun',
  supplier_complete: 'its import supplier was set Complete',
  never_started: 'it was never started (an OPEN job is cancelled after a day)',
  paused_too_long: 'it was PAUSED for 30 days'
}

/** A job waiting for its window: QUEUED with its not_before ahead. */
const waitsForWindow = (job: Job, now: number) =>
  job.state === 'QUEUED' && job.not_before !== null && Date.parse(job.not_before) > now

/** A running job that, at its rate, will not have begun every line when its window ends. */
const windowEndsFirst = (job: Job, now: number) =>
  job.state === 'RUNNING' &&
  job.not_after !== null &&
  job.eta_seconds !== null &&
  now + job.eta_seconds * 1000 > Date.parse(job.not_after)

/** The window as a row, in UTC. */
function windowText(job: Job): string | undefined {
  if (job.not_before === null && job.not_after === null) return undefined
  const from = job.not_before ? `from ${job.not_before}` : 'from its start'
  const to = job.not_after ? `, no line begun from ${job.not_after}` : ', without end'
  return `${from}${to} (UTC)`
}

/** The codes of the failed lines, each with its number of lines and what it means. */
function failureLines(job: Job): string[] {
  if (job.failure_codes.length === 0) return []
  const width = Math.max(...job.failure_codes.map((f) => f.code.length))
  return [
    'Why lines failed (a line counts once for each code it holds):',
    ...job.failure_codes.map(
      (f) =>
        `  ${f.code.padEnd(width)}  ${count(f.lines, 'line')}: ${(ERROR_CODES as Record<string, { meaning: string }>)[f.code]?.meaning ?? 'see the API documentation'}`
    )
  ]
}

/** GB supply point identifier codes: the supplier checks them and the identifiers are not GB ones. */
const GB_CODES = [CODE.invalid_mpan, CODE.invalid_mprn] as string[]
/** External account numbers `generate` makes. */
const GENERATED = /^SYN[0-9A-F]{8}-\d{7}$/

/**
 * When every failure is a GB identifier code: how to put it right (for accounts from `generate`,
 * generate them with --gb-identifiers). Reads the first failed line's result to tell.
 */
export async function gbHint(client: ServiceClient, job: Job): Promise<string[]> {
  if (job.failure_codes.length === 0 || !job.failure_codes.every((f) => GB_CODES.includes(f.code))) return []
  const answer = await client.get(`import-jobs/${enc(job.id)}/results/?outcome=failed`, { stream: true })
  // The first failed line's result is enough.
  let text = ''
  const reader = answer.response?.body?.getReader()
  if (reader) {
    const decoder = new TextDecoder()
    while (!text.includes('\n')) {
      const { done, value } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
    }
    await reader.cancel().catch(() => undefined)
  }
  let external: unknown
  try {
    external = (JSON.parse(text.split('\n')[0] ?? '') as { external_account_number?: unknown }).external_account_number
  } catch {
    external = undefined
  }
  if (typeof external === 'string' && GENERATED.test(external)) {
    return [
      `Every failure is a GB supply point identifier code: the supplier ${job.import_supplier} checks GB identifiers, and these accounts came from generate without --gb-identifiers. Generate the file again with --gb-identifiers (${PROGRAM} generate <N> --gb-identifiers …) and submit it as a new job`
    ]
  }
  return [
    `Every failure is a GB supply point identifier code: the supplier ${job.import_supplier} checks GB identifiers (MPAN cores, MPRNs); correct the identifiers of the failed lines (${PROGRAM} failed-lines ${job.id}) and submit them as a new job`
  ]
}

/** Lines that are not JSON shown by the job's summaries and downloads (one more is asked for, to tell there are more). */
const NOT_JSON_SHOWN = 10
const NOT_JSON_QUERY = `query NotJson($id: ID!, $first: Int) { importJob(id: $id) { notJsonLines(first: $first) { line reason } } }`

/**
 * The job's lines that are not JSON, each as `line N is not JSON: <the parser's reason>`, as the
 * service finds them (such a line names no account: its result alone says invalid_request). None
 * unless its failed lines hold `invalid`; none either from a service that cannot tell.
 */
export async function notJsonHints(client: ServiceClient, job: Job): Promise<string[]> {
  const codes = job.failure_codes ?? []
  // failure_codes holds 20 codes at most: with 20, invalid may be among those left out.
  if (codes.length < 20 && !codes.some((f) => f.code === CODE.invalid)) return []
  let lines: Array<{ line: number; reason: string | null }>
  try {
    const data = await client.graphql(NOT_JSON_QUERY, { id: job.id, first: NOT_JSON_SHOWN + 1 })
    const found = isObject(data.importJob) ? data.importJob.notJsonLines : undefined
    if (!Array.isArray(found)) return []
    lines = found as typeof lines
  } catch {
    return []
  }
  const shown = lines
    .slice(0, NOT_JSON_SHOWN)
    .map((l) => `Line ${l.line} is not JSON: ${l.reason ?? "the parser's reason is gone with the job's erased input"}`)
  if (lines.length > NOT_JSON_SHOWN) {
    shown.push(
      `… and more lines that are not JSON (their results: invalid_request with one entry invalid at null): ${PROGRAM} results ${job.id} --failed`
    )
  }
  return shown
}

/** A job's hints: its lines that are not JSON, and how to put GB identifiers right. */
const hintsOf = async (client: ServiceClient, job: Job) => [
  ...(await notJsonHints(client, job)),
  ...(await gbHint(client, job).catch(() => []))
]

/** The job's counts as `  key:  value` rows. */
function jobRows(job: Job): Array<[string, string]> {
  const l = job.lines
  const rows: Array<[string, string]> = [
    // A cancelled job's lines never run count as done: say how many ran.
    l.not_processed > 0
      ? [
          'lines',
          `${l.done - l.not_processed} of ${l.total} run${l.skipped_blank > 0 ? ` (${l.skipped_blank} blank)` : ''}`
        ]
      : ['lines', `${l.done} of ${l.total} done${l.skipped_blank > 0 ? ` (${l.skipped_blank} blank)` : ''}`]
  ]
  if (job.dry_run) rows.push(['would be created', String(l.would_create)])
  else rows.push(['created', String(l.created)])
  if (l.already_imported > 0) rows.push(['already imported', String(l.already_imported)])
  rows.push(['failed', String(l.failed)])
  if (l.not_processed > 0) {
    const why = job.cancelled_reason === 'window_ended' ? 'its window ended' : 'the job was cancelled'
    rows.push(['not processed', `${l.not_processed} (${why} before they began)`])
  }
  const window = windowText(job)
  if (window) rows.push(['window', window])
  if (job.state === 'CANCELLED' && job.cancelled_reason) {
    rows.push([
      'cancelled',
      `${CANCELLED_REASONS[job.cancelled_reason] ?? job.cancelled_reason} (${job.cancelled_reason})`
    ])
  }
  return rows
}

/** The job as `job <id>` prints it. */
export function renderJob(job: Job, now = Date.now(), hints: string[] = []): string {
  const rows = jobRows(job)
  if (waitsForWindow(job, now)) {
    rows.push(['starts at', `${job.not_before} UTC (in ${duration(Date.parse(job.not_before!) - now)})`])
  }
  if (job.state === 'RUNNING') {
    rows.push([
      'rate',
      `${job.rate_per_second.toFixed(1)} lines/s${job.eta_seconds !== null ? `, ETA ${duration(job.eta_seconds * 1000)}` : ''}${windowEndsFirst(job, now) ? `: its window ends first, at ${job.not_after} UTC` : ''}`
    ])
  }
  rows.push(['created at', job.created_at])
  if (job.started_at) rows.push(['started at', job.started_at])
  if (job.finished_at) {
    const ran = runTime(job)
    rows.push(['finished at', ran === undefined ? job.finished_at : `${job.finished_at} (${duration(ran)})`])
  } else if (job.started_at) {
    rows.push(['running for', duration(now - Date.parse(job.started_at))])
  }
  const lines = [
    `Job ${job.id} of ${job.import_supplier}${job.dry_run ? ' (dry run)' : ''}: ${job.state}${waitsForWindow(job, now) ? ', waiting for its window' : ''}`,
    ...aligned(rows),
    ...failureLines(job),
    ...hints
  ]
  if (!FINISHED.includes(job.state) && job.state !== 'OPEN') {
    lines.push(`Follow it: ${PROGRAM} job ${job.id} --follow`)
  }
  if (job.state === 'PAUSED') {
    lines.push(
      `Paused while its import supplier ${job.import_supplier} is Paused; it goes on when an operator sets it Ongoing.`
    )
  }
  if (job.state === 'OPEN') {
    lines.push('Not started: its upload is not finished (run submit again for the same file to finish it).')
  }
  lines.push(...downloadHints(job))
  return lines.join('\n') + '\n'
}

/** How to get the failures of a job that has some, and its lines never run. */
function downloadHints(job: Job): string[] {
  const unprocessed =
    job.lines.not_processed > 0
      ? [`The lines never run, to submit as a new job: ${PROGRAM} unprocessed-lines ${job.id}`]
      : []
  if (job.lines.failed === 0) return unprocessed
  return [
    ...unprocessed,
    `Failed lines' results (line, external account number, error codes): ${PROGRAM} results ${job.id} --failed`,
    `The failed input lines, to fix and submit as a new job: ${PROGRAM} failed-lines ${job.id}`
  ]
}

/**
 * How long a finished job ran, in ms: from its start, or from its window's opening when it waited
 * for it (its waiting is no part of its rate).
 */
function runTime(job: Job): number | undefined {
  if (!job.started_at || !job.finished_at) return undefined
  const began = Math.max(Date.parse(job.started_at), job.not_before ? Date.parse(job.not_before) : 0)
  return Math.max(Date.parse(job.finished_at) - began, 0)
}

/** The summary printed when a followed job ends. */
export function renderEnd(job: Job, hints: string[] = []): string {
  const rows = jobRows(job)
  const ran = runTime(job)
  if (ran !== undefined) {
    const lines = job.lines.done - job.lines.not_processed
    const rate = ran > 0 ? (lines / (ran / 1000)).toFixed(1) : '0.0'
    rows.push(['time', lines === 0 ? 'no line ran' : `${duration(ran)} (${rate} lines/s)`])
  }
  const title = `Job ${job.id} of ${job.import_supplier}${job.dry_run ? ' (dry run)' : ''}: ${job.state}`
  const lines = [
    title,
    ...aligned(rows),
    ...failureLines(job),
    ...hints,
    `All results: ${PROGRAM} results ${job.id}`,
    ...downloadHints(job)
  ]
  return lines.join('\n') + '\n'
}

/** The exit code of a job that ended: 0 when every line went through. */
const endCode = (job: Job) => (job.state === 'COMPLETED' && job.lines.failed === 0 ? 0 : 1)

const STATE_NOTES: Record<string, string> = {
  QUEUED: 'queued: it runs when a worker of the service is free',
  RUNNING: 'running',
  PAUSED: 'paused: its import supplier is Paused; it goes on by itself when an operator sets the supplier Ongoing',
  COMPLETED: 'completed',
  CANCELLED: 'cancelled'
}

/**
 * Shows the job's progress as the service reports it until the job ends (then its summary on
 * standard output), or until the signal: following stops, the job goes on.
 */
export async function follow(client: ServiceClient, url: string, id: string, io: JobsIO): Promise<number> {
  let job = await readJob(client, url, id)
  io.stderr(`Following job ${id} (Ctrl-C stops following; the job goes on in the service)\n`)
  const progress = createProgress({
    write: io.stderr,
    tty: io.tty,
    columns: io.columns,
    total: job.lines.total,
    intervalMs: io.progressIntervalMs,
    unit: 'lines'
  })
  let lastState: string | undefined
  try {
    for (;;) {
      const l = job.lines
      // The figures the summary gives; a job running its first lines has no rate yet.
      const first = job.state === 'RUNNING' && job.rate_per_second === 0
      progress.update(
        {
          // The bar shows the lines run: a cancelled job's lines never run are said apart.
          done: l.done - l.not_processed,
          failed: l.failed,
          ...(job.dry_run ? { wouldCreate: l.would_create } : { created: l.created }),
          ...(l.already_imported > 0 ? { alreadyImported: l.already_imported } : {}),
          rate: job.state === 'RUNNING' && !first ? job.rate_per_second : null,
          etaSeconds: job.eta_seconds,
          state: first
            ? 'RUNNING, running the first lines'
            : l.not_processed > 0
              ? `${job.state}, ${l.not_processed} not processed`
              : job.state
        },
        l.total
      )
      const note = waitsForWindow(job, Date.now())
        ? `queued: waiting for its window, starts at ${job.not_before} UTC`
        : windowEndsFirst(job, Date.now())
          ? `running; at this rate its window ends (${job.not_after} UTC) before every line has begun: the lines not begun by then will be not processed (${PROGRAM} unprocessed-lines ${id} gives them once it has ended)`
          : (STATE_NOTES[job.state] ?? job.state)
      if (note !== lastState) {
        progress.note(`job ${id}: ${note}\n`)
        lastState = note
      }
      if (FINISHED.includes(job.state)) break
      await pause(io.pollIntervalMs ?? 1000, io.signal)
      // A busy service may take its time to answer: Ctrl-C does not wait for it.
      const answer = io.signal?.aborted
        ? undefined
        : await untilAborted(client.get(`import-jobs/${enc(id)}/`), io.signal)
      if (answer === undefined) {
        progress.finish()
        io.stderr(
          `Stopped following job ${id}; the job goes on in the service (${job.state}, ${l.done} of ${l.total} lines done). Follow it again: ${PROGRAM} job ${id} --follow\n`
        )
        return 1
      }
      if (answer.status !== 200 || !isObject(answer.body)) {
        progress.finish()
        throw new JobCommandError(
          `stopped following job ${id}: ${refusal(answer)}. The job goes on in the service: follow it again with ${PROGRAM} job ${id} --follow`
        )
      }
      job = answer.body as unknown as Job
    }
  } finally {
    progress.finish()
  }
  await io.stdout(renderEnd(job, await hintsOf(client, job)))
  return endCode(job)
}

export interface SubmitOptions {
  file: string
  /** The file as the user named it. */
  label: string
  team: string
  dryRun: boolean
  /** --part-size, when given. */
  partBytes?: number
  /** --supplier, when given (else the one the file names). */
  supplier?: string
  follow: boolean
  /** --not-before and --not-after, in UTC (null: not given). */
  window?: { notBefore: string | null; notAfter: string | null }
  /** How to name the upload's state file to the person (default `<label>.job.json`). */
  stateLabel?: string
}

function isBareAccount(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text)
    return isObject(value) && !('account' in value) && 'external_account_number' in value
  } catch {
    return false
  }
}

/** The import suppliers the first lines name, and the first line that is an account on its own (not a batch entry). */
async function checkLines(file: string): Promise<{ suppliers: string[]; bare?: number }> {
  const suppliers = await suppliersIn(file)
  const lines = readLines(file, 64)
  try {
    for (let seen = 0; seen < LINES_CHECKED; seen++) {
      const next = await lines.next()
      if (next === undefined) break
      if (next.text.trim() === '') continue
      // The batch mode takes an object without `account` as a bare account; a job takes batch entries only.
      if (isBareAccount(next.text)) return { suppliers, bare: next.number }
    }
  } finally {
    lines.close()
  }
  return { suppliers }
}

/** Uploads the file as a new job, or the rest of the job of its state file; starts it; follows it if asked. */
export async function submit(options: SubmitOptions, connection: Connection, io: JobsIO): Promise<number> {
  const statePath = stateFileOf(options.file)
  const stateLabel = options.stateLabel ?? stateFileOf(options.label)
  let state = readState(statePath)
  if (state) {
    const differ = [
      ...(state.operations_team_name !== options.team ? [`--team ${JSON.stringify(state.operations_team_name)}`] : []),
      ...(state.dry_run !== options.dryRun ? [state.dry_run ? 'with --dry-run' : 'without --dry-run'] : []),
      ...(options.supplier !== undefined && options.supplier !== state.import_supplier
        ? [`--supplier ${state.import_supplier}`]
        : [])
    ]
    if (differ.length > 0) {
      throw new JobCommandError(
        `job ${state.job_id} (${stateLabel}) was made ${differ.join(' and ')}: run submit with the same settings to continue it, or remove ${stateLabel} to submit the file as a new job`,
        2
      )
    }
  }

  const client = await connect(connection, io)
  if (state) {
    const job = await readJob(client, connection.url, state.job_id).catch((err: unknown) => {
      if (err instanceof JobCommandError) {
        // The same service may be reached at another address (a proxy, a name): the job id decides.
        const where =
          state!.url !== connection.url ? ` (its upload began at ${state!.url}: pass --url ${state!.url}?)` : ''
        throw new JobCommandError(
          `${err.message}${where}. ${stateLabel} names it: remove ${stateLabel} to submit the file as a new job`
        )
      }
      throw err
    })
    if (state.url !== connection.url) state = { ...state, url: connection.url }
    if (job.state !== 'OPEN') {
      return submittedBefore(client, connection.url, job, state, statePath, stateLabel, options, io)
    }
  }

  // The plan: the parts of the file as it is now (with the part size of an upload begun, once it has parts on the service).
  const acknowledged = state?.parts.some((p) => p.acknowledged) === true
  const partSize = acknowledged ? state!.part_bytes : (options.partBytes ?? DEFAULT_PART_BYTES)
  if (acknowledged && options.partBytes !== undefined && options.partBytes !== state!.part_bytes) {
    io.stderr(
      `Continuing job ${state!.job_id} with the part size its upload began with (${state!.part_bytes} bytes), not --part-size\n`
    )
  }

  let importSupplier = state?.import_supplier
  if (!state) {
    const { suppliers, bare } = await checkLines(options.file)
    if (bare !== undefined) {
      throw new JobCommandError(
        `line ${bare} of ${options.label} is an account on its own: a job's lines are batch entries, {"account": {…}, "notes": […], …}. Write each account as {"account": …} (the batch mode, ${PROGRAM} ${options.label} --team …, takes either form)`,
        2
      )
    }
    const supplier = options.supplier ?? (suppliers.length === 1 ? suppliers[0] : undefined)
    if (supplier === undefined) {
      throw new JobCommandError(
        suppliers.length === 0
          ? `no line of the first ${LINES_CHECKED} of ${options.label} names an import supplier: name it with --supplier <code>`
          : `${options.label} names the import suppliers ${suppliers.join(', ')}: a job is of one supplier. Split the file by supplier (or name one with --supplier <code>: the other supplier's lines fail)`,
        2
      )
    }
    await preflight(client, { team: options.team, suppliers: [supplier] })
    importSupplier = supplier
  }
  const plan = await planParts(options.file, partSize)
  if (plan.parts.length === 0) throw new JobCommandError(`${options.label} is empty: nothing to submit`, 2)

  let send: number[]
  if (state) {
    const unchanged = unchangedParts(state, plan)
    const stale = state.parts.filter((p) => p.acknowledged && p.part > plan.parts.length)
    if (stale.length > 0) {
      throw new JobCommandError(
        `${options.label} changed since job ${state.job_id}'s upload began: it has ${count(plan.parts.length, 'part')} now, and the service holds part ${stale[0]!.part} of the file as it was. Cancel that job (${PROGRAM} cancel ${state.job_id}), remove ${stateLabel}, and submit the file again`
      )
    }
    const changed = state.parts.filter((p) => p.acknowledged && !unchanged.has(p.part)).map((p) => p.part)
    if (changed.length > 0) {
      io.stderr(
        `${options.label} changed since the upload began: ${count(changed.length, 'part')} the service holds (${changed.join(', ')}) will be sent again as the file is now\n`
      )
    }
    const held = new Set(state.parts.filter((p) => p.acknowledged && unchanged.has(p.part)).map((p) => p.part))
    state = {
      ...state,
      file_bytes: plan.size,
      part_bytes: plan.partBytes,
      parts: plan.parts.map((p) => ({ ...p, acknowledged: held.has(p.part) }))
    }
    writeState(statePath, state)
    send = plan.parts.filter((p) => !held.has(p.part)).map((p) => p.part)
    io.stderr(
      `Continuing job ${state.job_id} (from ${stateLabel}): ${held.size} of ${count(plan.parts.length, 'part')} on the service already, sending ${send.length === 0 ? 'none' : `the other ${send.length}`}\n`
    )
  } else {
    state = await createJob(client, { ...options, supplier: importSupplier! }, connection.url, plan, statePath)
    send = plan.parts.map((p) => p.part)
    io.stderr(
      `Created job ${state.job_id} for ${options.label} (${state.import_supplier}${options.dryRun ? ', dry run' : ''}): ${size(plan.size)} in ${count(plan.parts.length, 'part')}; upload state: ${stateLabel}\n`
    )
  }

  if (!(await upload(client, options, state, send, statePath, stateLabel, io))) return 1
  return start(client, connection.url, state, statePath, options, io)
}

async function createJob(
  client: ServiceClient,
  options: SubmitOptions & { supplier: string },
  url: string,
  plan: FilePlan,
  statePath: string
): Promise<JobState> {
  const supplier = options.supplier
  const answer = await client.post('import-jobs/', {
    import_supplier: supplier,
    operations_team_name: options.team,
    dry_run: options.dryRun
  })
  if (answer.status !== 201 || !isObject(answer.body) || typeof answer.body.id !== 'string') {
    throw new JobCommandError(`the service did not create the job: ${refusal(answer)}. Nothing was sent`)
  }
  const state: JobState = {
    version: 1,
    url,
    job_id: answer.body.id,
    import_supplier: supplier,
    operations_team_name: options.team,
    dry_run: options.dryRun,
    file_bytes: plan.size,
    part_bytes: plan.partBytes,
    parts: plan.parts.map((p) => ({ ...p, acknowledged: false })),
    started: false
  }
  writeState(statePath, state)
  return state
}

/** Sends the parts named, in order, recording each the service takes; false when the upload stopped. */
async function upload(
  client: ServiceClient,
  options: SubmitOptions,
  state: JobState,
  send: number[],
  statePath: string,
  stateLabel: string,
  io: JobsIO
): Promise<boolean> {
  if (send.length === 0) return true
  const total = send.reduce((sum, n) => sum + partLength(state.parts[n - 1]!), 0)
  const progress = createProgress({
    write: io.stderr,
    tty: io.tty,
    columns: io.columns,
    total,
    intervalMs: io.progressIntervalMs,
    unit: 'bytes'
  })
  let before = 0
  const held = () => state.parts.filter((p) => p.acknowledged).length
  const stopped = (why: string) =>
    `Upload of job ${state.job_id} stopped (${why}): ${held()} of ${count(state.parts.length, 'part')} on the service. Run the same command again to send the rest (the job stays OPEN, unstarted, for a day)\n`
  try {
    for (const n of send) {
      if (io.signal?.aborted) {
        progress.finish()
        io.stderr(stopped('interrupted'))
        return false
      }
      const part = state.parts[n - 1]!
      const bytes = await partBytes(options.file, part)
      const answer = await client.put(`import-jobs/${enc(state.job_id)}/parts/${n}/`, {
        bytes,
        contentType: NDJSON,
        onSent: (sent) => progress.update({ done: before + sent, failed: 0 })
      })
      if (answer.status !== 200) {
        progress.finish()
        throw new JobCommandError(partRefused(answer, state, n, held(), stateLabel))
      }
      before += bytes.length
      progress.update({ done: before, failed: 0 })
      part.acknowledged = true
      writeState(statePath, state)
    }
  } finally {
    progress.finish()
  }
  io.stderr(`Uploaded ${count(state.parts.length, 'part')} of job ${state.job_id} (${size(state.file_bytes)})\n`)
  return true
}

const partLength = (p: { start: number; end: number; newline_added?: boolean }) =>
  p.end - p.start + (p.newline_added ? 1 : 0)

/** Why the service refused part `n`, and what to do. */
function partRefused(answer: Answer, state: JobState, n: number, held: number, stateLabel: string): string {
  const id = state.job_id
  const onService = `${held} of ${count(state.parts.length, 'part')} are on the service`
  if (hasCode(answer.body, CODE.too_many_lines) || hasCode(answer.body, CODE.job_too_large)) {
    return `the file is over the service's limit for one job: ${refusal(answer)}. Split it into several files and submit each; job ${id} stays OPEN, unstarted (cancel it: ${PROGRAM} cancel ${id}; remove ${stateLabel})`
  }
  if (answer.status === 413) {
    return `the service refused part ${n} (${size(partLength(state.parts[n - 1]!))}) as larger than its body limit: ${held === 0 ? `pass a smaller --part-size (e.g. --part-size ${Math.max(1, Math.floor(state.part_bytes / 2 / 1024 / 1024))}MB)` : `cancel job ${id} (${PROGRAM} cancel ${id}), remove ${stateLabel} and submit again with a smaller --part-size`}`
  }
  if (hasCode(answer.body, CODE.import_job_not_open)) {
    return `job ${id} is no longer OPEN (it was cancelled or started meanwhile): see ${PROGRAM} job ${id}; to submit the file as a new job, remove ${stateLabel}`
  }
  if (answer.status === 0 || answer.status >= 500) {
    return `part ${n} could not be sent: ${refusal(answer)}. ${onService}: run the same command again to send the rest`
  }
  return `the service refused part ${n}: ${refusal(answer)}. ${onService}`
}

/** Starts the uploaded job, waiting while the organisation has its most jobs going; follows it if asked. */
async function start(
  client: ServiceClient,
  url: string,
  state: JobState,
  statePath: string,
  options: SubmitOptions,
  io: JobsIO
): Promise<number> {
  const id = state.job_id
  const job = await readJob(client, url, id)
  const lines = state.parts.reduce((sum, p) => sum + p.lines, 0)
  if (job.lines.total !== lines) {
    throw new JobCommandError(
      `job ${id} holds ${job.lines.total} lines, but the file's parts have ${lines}: not started. Cancel it (${PROGRAM} cancel ${id}), remove ${stateFileOf(options.label)} and submit again`
    )
  }
  const window = options.window ?? { notBefore: null, notAfter: null }
  const body =
    window.notBefore !== null || window.notAfter !== null
      ? { not_before: window.notBefore, not_after: window.notAfter }
      : undefined
  for (;;) {
    const answer = await client.post(`import-jobs/${enc(id)}/start/`, body, [], {
      throttleCodes: [CODE.too_many_jobs]
    })
    if (answer.status === 202 && isObject(answer.body)) {
      state.started = true
      writeState(statePath, state)
      const started = answer.body as unknown as Job
      const shown = windowText(started)
      io.stderr(
        `Started job ${id}: ${count(started.lines.total, 'line')}, ${started.state}${waitsForWindow(started, Date.now()) ? `, waiting for its window: starts at ${started.not_before} UTC` : ''}\n${shown ? `Window: ${shown}\n` : ''}`
      )
      if (options.follow) return follow(client, url, id, io)
      await io.stdout(
        `Job ${id} started (${started.state}): the service runs it; nothing more is needed from this terminal.\nFollow it: ${PROGRAM} job ${id} --follow\n`
      )
      return 0
    }
    if (answer.status === 429 && hasCode(answer.body, CODE.too_many_jobs)) {
      const wait = retryAfterMs(answer.retryAfter ?? null) ?? ERROR_CODES.too_many_jobs.retryAfterSeconds * 1000
      io.stderr(
        `Your organisation has the most import jobs going at once that the service allows: waiting ${duration(wait)} to start job ${id} (Ctrl-C stops waiting; the job stays uploaded, OPEN: run the same command again to start it)\n`
      )
      await pause(wait, io.signal)
      if (io.signal?.aborted) {
        io.stderr(
          `Job ${id} is uploaded but not started. Run the same command again to start it (within a day: an OPEN job is cancelled after that)\n`
        )
        return 1
      }
      continue
    }
    throw new JobCommandError(`job ${id} could not be started: ${refusal(answer)}`)
  }
}

/**
 * How the input differs from what its job was uploaded from: `same`; `grown` (the job's bytes
 * unchanged, `lines` more after them, from byte `from`); or `changed` (lines the job holds were edited).
 */
async function changeSince(
  file: string,
  state: JobState
): Promise<{ kind: 'same' } | { kind: 'grown'; lines: number; from: number } | { kind: 'changed' }> {
  for (const part of state.parts) {
    try {
      await partBytes(file, part)
    } catch (err) {
      if (err instanceof PlanError) return { kind: 'changed' }
      throw err
    }
  }
  const last = state.parts.at(-1)
  let from = last ? last.end : 0
  const size = statSync(file).size
  if (size <= from) return size === from ? { kind: 'same' } : { kind: 'changed' }
  // The lines after the job's, read as a stream (the file may be large).
  let lines = 0
  let first = true
  let lastByte = 10
  for await (const chunk of createReadStream(file, { start: from }) as AsyncIterable<Buffer>) {
    let bytes = chunk
    // The job's last line had no line break (one was added when it was sent): the new lines begin after it.
    if (first && last?.newline_added === true && bytes[0] === 10) {
      bytes = bytes.subarray(1)
      from += 1
    }
    first = false
    if (bytes.length === 0) continue
    for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) lines++
    lastByte = bytes[bytes.length - 1]!
  }
  if (lastByte !== 10) lines++
  return lines === 0 ? { kind: 'same' } : { kind: 'grown', lines, from }
}

/** `submit` for a file whose job is no longer OPEN: say what became of it. */
async function submittedBefore(
  client: ServiceClient,
  url: string,
  job: Job,
  state: JobState,
  statePath: string,
  stateLabel: string,
  options: SubmitOptions,
  io: JobsIO
): Promise<number> {
  const id = job.id
  const change = await changeSince(options.file, state)
  if (change.kind !== 'same') {
    const jobLines = state.parts.reduce((sum, p) => sum + p.lines, 0)
    const newJob = `remove ${stateLabel} and run the same command again (a new job of the whole file: its lines already imported come back already_imported)`
    throw new JobCommandError(
      change.kind === 'grown'
        ? `${options.label} changed since job ${id} (${job.state}) was uploaded from it: the job holds its first ${count(jobLines, 'line')}, and the ${count(change.lines, 'line')} after them ${change.lines === 1 ? 'is' : 'are'} not in the job. Nothing was sent. To send them: tail -c +${change.from + 1} ${options.label} > ${options.label}.new.ndjson, then submit that file as a new job; or ${newJob}`
        : `${options.label} changed since job ${id} (${job.state}) was uploaded from it: lines the job holds were edited, and the job runs them as they were uploaded. Nothing was sent. To send the file as it is now: ${newJob}`
    )
  }
  if (job.state === 'CANCELLED') {
    await io.stdout(renderJob(job))
    throw new JobCommandError(
      `job ${id} of ${stateLabel} was cancelled${job.started_at ? '' : ' before it was started (an OPEN job is cancelled a day after it was made)'}: to submit ${options.label} as a new job, remove ${stateLabel} and run the same command again`
    )
  }
  if (!state.started) {
    state.started = true
    writeState(statePath, state)
  }
  if (job.state === 'COMPLETED') {
    io.stderr(
      `Job ${id} of ${stateLabel} ran already: nothing sent (to submit ${options.label} again as a new job, remove ${stateLabel})\n`
    )
    await io.stdout(renderEnd(job))
    return endCode(job)
  }
  io.stderr(`Job ${id} of ${stateLabel} was uploaded and started already (${job.state}): nothing sent\n`)
  if (options.follow) return follow(client, url, id, io)
  await io.stdout(renderJob(job))
  return 0
}

/** `job <id>`: the job once, or followed until it ends. */
export async function showJob(given: string, followIt: boolean, connection: Connection, io: JobsIO): Promise<number> {
  const client = await connect(connection, io)
  const id = await resolveJobId(client, connection.url, given)
  if (followIt) return follow(client, connection.url, id, io)
  const job = await readJob(client, connection.url, id)
  await io.stdout(renderJob(job, Date.now(), await hintsOf(client, job)))
  return 0
}

/** `cancel <id>`. */
export async function cancelJob(given: string, connection: Connection, io: JobsIO): Promise<number> {
  const client = await connect(connection, io)
  const id = await resolveJobId(client, connection.url, given)
  const answer = await client.post(`import-jobs/${enc(id)}/cancel/`, undefined)
  if (answer.status === 200 && isObject(answer.body)) {
    const job = answer.body as unknown as Job
    await io.stdout(renderJob(job, Date.now(), await notJsonHints(client, job)))
    return 0
  }
  if (answer.status === 404) await readJob(client, connection.url, id)
  throw new JobCommandError(`job ${id} was not cancelled: ${refusal(answer)}`)
}

/** `jobs`: the organisation's newest jobs. */
export async function listJobs(
  filter: { state?: string; supplier?: string; limit: number },
  connection: Connection,
  io: JobsIO
): Promise<number> {
  const client = await connect(connection, io)
  const query = new URLSearchParams({
    limit: String(filter.limit + 1),
    ...(filter.state ? { state: filter.state } : {}),
    ...(filter.supplier ? { import_supplier: filter.supplier } : {})
  })
  const answer = await client.get(`import-jobs/?${query.toString()}`)
  if (answer.status !== 200 || !Array.isArray(answer.body)) {
    throw new JobCommandError(`cannot list the jobs: ${refusal(answer)}`)
  }
  const jobs = answer.body as Job[]
  if (jobs.length === 0) {
    await io.stdout(
      `No import jobs${filter.state ? ` in state ${filter.state}` : ''}${filter.supplier ? ` of ${filter.supplier}` : ''}.\n`
    )
    return 0
  }
  const rows = jobs
    .slice(0, filter.limit)
    .map((j) => [
      j.id,
      j.import_supplier,
      j.state + (j.dry_run ? ' (dry run)' : ''),
      `${j.lines.done}/${j.lines.total}`,
      String(j.dry_run ? j.lines.would_create : j.lines.created),
      String(j.lines.failed),
      j.created_at.slice(0, 19).replace('T', ' ')
    ])
  const header = ['ID', 'SUPPLIER', 'STATE', 'DONE', 'CREATED', 'FAILED', 'CREATED AT (UTC)']
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const table = [header, ...rows].map((r) =>
    r
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  )
  const more = jobs.length > filter.limit ? [`(newest ${filter.limit} shown; --limit <n> shows more)`] : []
  await io.stdout([...table, ...more].join('\n') + '\n')
  return 0
}

export interface DownloadOptions {
  id: string
  /** `results` (all, or only the failed ones), the failed input lines, or the lines never run. */
  what: 'results' | 'failed-results' | 'failed-lines' | 'unprocessed-lines'
  /** --out as the user wrote it, and its path. */
  out?: { path: string; label: string }
  /** The folder names are taken from (the caller's). */
  folder: (name: string) => string
  /** The sources file of the job's input (`--sources`), else looked for beside it through its upload state. */
  sources?: { path: string; label: string }
}

/** The default file name of a download: `job-<id>.results.ndjson`, … */
const defaultName = (id: string, what: DownloadOptions['what']) => `job-${id}.${what}.ndjson`

/** `results` and `failed-lines`: the stream to a new file (never over an existing one). */
export async function download(options: DownloadOptions, connection: Connection, io: JobsIO): Promise<number> {
  const { what } = options
  // `--out -` is standard output.
  const toStdout = options.out?.label === '-'
  if (options.out && !toStdout && existsSync(options.out.path)) {
    throw new JobCommandError(`${options.out.label} exists already: give another --out, or move that one away`, 2)
  }
  const client = await connect(connection, io)
  const id = await resolveJobId(client, connection.url, options.id)
  const job = await readJob(client, connection.url, id)
  const path =
    what === 'failed-lines' || what === 'unprocessed-lines'
      ? `import-jobs/${enc(id)}/${what}/`
      : `import-jobs/${enc(id)}/results/${what === 'failed-results' ? '?outcome=failed' : ''}`
  const answer = await client.get(path, { stream: true })
  if (answer.status === 410 || hasCode(answer.body, CODE.input_erased)) {
    throw new JobCommandError(
      `the input of job ${id} was erased under the service's retention rules (its lines are personal data, kept a set number of days after the job ended): its ${what === 'unprocessed-lines' ? 'unprocessed' : 'failed'} lines cannot be downloaded any more. Its results are kept: ${PROGRAM} results ${id} --failed gives each failed line's number, external account number and error codes, to find the lines in your copy of the file`
    )
  }
  if (answer.status !== 200 || !answer.response?.body) {
    throw new JobCommandError(`cannot download the ${what.replace('-', ' ')} of job ${id}: ${refusal(answer)}`)
  }
  const running = FINISHED.includes(job.state)
    ? ''
    : ` (job ${job.state}: ${job.lines.done} of ${job.lines.total} lines have a result so far)`
  if (toStdout) {
    let lines = 0
    // A character may be split between chunks.
    const decoder = new TextDecoder()
    try {
      for await (const chunk of Readable.fromWeb(answer.response.body as WebReadableStream<Uint8Array>)) {
        const bytes = chunk as Buffer
        for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) lines++
        await io.stdout(decoder.decode(bytes, { stream: true }))
      }
      await io.stdout(decoder.decode())
    } catch (err) {
      throw new JobCommandError(`the download of job ${id} broke off: ${(err as Error).message}`)
    }
    io.stderr(`Wrote ${count(lines, 'line')} of job ${id} (${what}) to standard output${running}\n`)
    // Standard output holds the data: what the lines that are not JSON are goes beside it.
    if (what !== 'unprocessed-lines') for (const hint of await notJsonHints(client, job)) io.stderr(hint + '\n')
    return 0
  }
  // The name: --out, or the first free default name.
  let target = options.out
  if (!target) {
    const base = defaultName(id, what)
    let n = 1
    while (existsSync(options.folder(numberedReport(base, n)))) n++
    target = { path: options.folder(numberedReport(base, n)), label: numberedReport(base, n) }
  }
  const temporary = `${target.path}.${process.pid}.download`
  let lines = 0
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++
      done(null, chunk)
    }
  })
  try {
    await pipeline(
      Readable.fromWeb(answer.response.body as WebReadableStream<Uint8Array>),
      counter,
      createWriteStream(temporary, { flags: 'wx' }),
      ...(io.signal ? [{ signal: io.signal }] : [])
    )
    if (lines > 0) linkSync(temporary, target.path) // fails rather than replace a file made meanwhile
  } catch (err) {
    if ((err as { code?: unknown }).code === 'EEXIST') {
      throw new JobCommandError(`${target.label} exists already: give another --out, or move that one away`, 2)
    }
    const why = io.signal?.aborted ? 'it was interrupted' : (err as Error).message
    throw new JobCommandError(
      `the download of job ${id} broke off: ${why}. Nothing was written; run the same command again`
    )
  } finally {
    rmSync(temporary, { force: true })
  }
  // The unprocessed lines are submitted as they are: their sources file is the mapping's own.
  const sources =
    lines > 0 && what !== 'unprocessed-lines' ? (options.sources ?? sourcesOfJob(options.folder('.'), id)) : undefined
  let named = ''
  if (sources && what === 'failed-lines') {
    // Its line k is the job's k-th failed line: their numbers, in order, from the failed results.
    const numbers: number[] = []
    const results = await client.get(`import-jobs/${enc(id)}/results/?outcome=failed`, { stream: true })
    if (results.status !== 200 || !results.response?.body) {
      throw new JobCommandError(`cannot read the failed results of job ${id}: ${refusal(results)}`)
    }
    const rl = createInterface({
      input: Readable.fromWeb(results.response.body as WebReadableStream<Uint8Array>),
      crlfDelay: Infinity
    })
    for await (const text of rl) if (text.trim() !== '') numbers.push((JSON.parse(text) as { line: number }).line)
    try {
      await writeFailedSources(target.path, numbers, sources)
      named = `\nTheir source rows (from ${sources.label}) are in ${sourcesFileOf(target.label)}, beside it.`
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'EEXIST') throw err
      named = `\n${sourcesFileOf(target.label)} exists already: their source rows were not written.`
    }
  } else if (sources) {
    const count = await annotateResults(target.path, sources)
    named = `\nEach failed line names its source rows and columns (${count} found in ${sources.label}).`
  }
  // A line that is not JSON names no account: its result says only invalid_request, so say what it is.
  const notJson = lines > 0 && what !== 'unprocessed-lines' ? await notJsonHints(client, job) : []
  if (notJson.length > 0) named += '\n' + notJson.join('\n')
  if (what === 'unprocessed-lines') {
    await io.stdout(
      lines === 0
        ? `No unprocessed lines in job ${id}${job.state === 'CANCELLED' ? '' : ` (${job.state}: only a cancelled job has lines it never ran)`}: nothing written.\n`
        : `Wrote the ${count(lines, 'line')} job ${id} never ran to ${target.label}: submit that file as a new job: ${PROGRAM} submit ${basename(target.label)} --team …\n`
    )
  } else if (what === 'failed-lines') {
    await io.stdout(
      lines === 0
        ? `No failed lines in job ${id}${running}: nothing written.\n`
        : `Wrote the ${count(lines, 'failed line')} of job ${id} to ${target.label}${running}: fix them there, then submit that file as a new job: ${PROGRAM} submit ${basename(target.label)} --team …${named}\n`
    )
  } else {
    const which = what === 'failed-results' ? 'failed line' : 'line'
    await io.stdout(
      lines === 0
        ? `No ${which}s with a result in job ${id}${running}: nothing written.\n`
        : `Wrote the results of ${count(lines, which)} of job ${id} to ${target.label}${running}${named}\n`
    )
  }
  return 0
}

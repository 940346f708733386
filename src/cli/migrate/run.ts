import { createWriteStream, type WriteStream } from 'node:fs'
import { isObject, type Json } from '../http.js'
import { CLIENT_CODE, CODE, formatDetail } from '../../../schemas/error-codes.js'
import { LIST_LIMITS } from '../../../schemas/section-requests.js'
import { SECTIONS as LISTINGS } from '../../../schemas/sections.js'
import { externalOf, guessExternal, parseLine, SECTIONS, type Problem, type Section } from './input.js'
import { batchable, sendBatch, type BatchLine } from './batches.js'
import { emptySummary, tally, type ReportEntry, type Step, type Summary } from './report.js'
import { countLines, readLines } from './lines.js'
import { completedLines, linesToSkip } from './resume.js'
import { createProgress, duration } from './progress.js'
import { preflight, suppliersIn } from './preflight.js'
import {
  AuthenticationError,
  UnavailableError,
  createServiceClient,
  hasCode,
  problemsOf,
  type Answer,
  type RetryPolicy,
  type ServiceClient
} from './service-client.js'

/**
 * The migration run: every line of the input through validate → stage → create → post-import,
 * `concurrency` accounts at a time, one report line per account, and a summary.
 */

export interface MigrateOptions {
  file: string
  /** Accounts per `POST batches/`; 1 sends each account through the single endpoints. */
  batchSize: number
  /** How the summary names the input and the report (as the user wrote them); default their paths. */
  labels?: { file: string; report: string }
  url: string
  apiKey: string
  team: string
  concurrency: number
  dryRun: boolean
  /** Only validate each account (`validate-account/`): nothing of the accounts is stored. */
  validateOnly: boolean
  resume: boolean
  reportPath: string
  /** The report path was chosen by the client: when it is taken, the first free `-2`, `-3`… name is used instead. */
  numberReport: boolean
  /** Only these lines (from an earlier report, with its external account numbers to check them against). */
  onlyLines?: Map<number, string | null>
  /**
   * With --resume (unless --resend-history): the earlier reports of this run's report name, oldest
   * first. A line they show completed, still holding the same account, is skipped: nothing is sent.
   */
  earlierReports?: Array<{ path: string; label: string }>
  retry: RetryPolicy
}

export interface RunIO {
  stderr: (text: string) => void
  /** Standard error is a terminal: draw a progress bar. */
  tty: boolean
  columns?: number
  /** Plain progress lines this often when not on a terminal. */
  progressIntervalMs: number
  fetch?: typeof fetch
  /** Aborted: take no more lines, finish the accounts in flight. */
  signal?: AbortSignal
}

const CREATE_TRANSIENT = [CODE.account_import_in_progress] as const
const PATHS = new Map<string, string>(LISTINGS.map((s) => [s.name, s.path.slice(1)]))
/** The request field holding a list section's items. */
const LIST_FIELD = new Map<string, string>(
  LISTINGS.flatMap((s) => ('list' in s.entry ? [[s.name, s.entry.list] as const] : []))
)
const OBJECT_SECTIONS = new Set<string>(LISTINGS.flatMap((s) => ('object' in s.entry ? [s.name] : [])))

interface PostImportRequest {
  path: string
  body: Json
  /** Items in the request. */
  count: number
  /** The list field and the index of the request's first item in the line's list (split lists). */
  field?: string
  offset: number
}

/** Indexes of a split list's attrs counted from the start of the line's list. */
function shiftAttrs(problems: Problem[], field: string | undefined, offset: number): Problem[] {
  if (!field || offset === 0) return problems
  const prefix = new RegExp(`^${field}\\.(\\d+)(?=\\.|$)`)
  return problems.map((p) => ({
    ...p,
    attr: p.attr?.replace(prefix, (_, i: string) => `${field}.${Number(i) + offset}`) ?? null
  }))
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

function createPipeline(client: ServiceClient, options: MigrateOptions, onFatal: (err: AuthenticationError) => void) {
  const enc = encodeURIComponent

  function failed(
    entry: Omit<ReportEntry, 'outcome'>,
    step: Step,
    answer: Answer,
    field?: string,
    offset = 0
  ): ReportEntry {
    const errors = shiftAttrs(problemsOf(answer), field, offset)
    const body = answer.body
    return {
      ...entry,
      outcome: 'failed',
      step,
      status: answer.status,
      code: isObject(body) && typeof body.code === 'string' ? body.code : errors[0]!.code,
      errors,
      ...(isObject(body) && typeof body.request_id === 'string' ? { request_id: body.request_id } : {})
    }
  }

  /** The import status, waiting (with backoff) while a create of the account is running. */
  async function status(supplier: string, external: string): Promise<Answer> {
    let answer = await client.get(`account-transfer-status/${enc(supplier)}/${enc(external)}/`)
    for (
      let wait = 1;
      answer.status === 200 &&
      isObject(answer.body) &&
      answer.body.status === 'IN_PROGRESS' &&
      wait < options.retry.maxAttempts;
      wait++
    ) {
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(options.retry.backoffMaxMs, options.retry.backoffBaseMs * 2 ** wait))
      )
      answer = await client.get(`account-transfer-status/${enc(supplier)}/${enc(external)}/`)
    }
    return answer
  }

  /** The requests of one post-import section; billing documents get the ledger number they need. */
  async function requestsOf(
    section: Section,
    value: unknown,
    ref: Json,
    ledgers: () => Promise<Array<{ ledger_code: string; ledger_number: string }>>
  ): Promise<PostImportRequest[] | Problem> {
    const path = PATHS.get(section)!
    const field = LIST_FIELD.get(section)
    if (field) {
      const items = value as unknown[]
      const size = LIST_LIMITS.get(section) ?? Math.max(1, items.length)
      return chunks(items, size).map((chunk, i) => ({
        path,
        body: { [field]: chunk, ...ref },
        count: chunk.length,
        field,
        offset: i * size
      }))
    }
    if (OBJECT_SECTIONS.has(section)) return [{ path, body: { ...(value as Json), ...ref }, count: 1, offset: 0 }]
    const requests: PostImportRequest[] = []
    for (const doc of Array.isArray(value) ? (value as Json[]) : [value as Json]) {
      const ledgerCode = typeof doc.ledger_code === 'string' ? doc.ledger_code : 'ENERGY'
      let ledgerNumber = doc.ledger_number
      if (ledgerNumber === undefined) {
        ledgerNumber = (await ledgers()).find((l) => l.ledger_code === ledgerCode)?.ledger_number
        if (ledgerNumber === undefined) {
          return {
            code: CODE.ledger_not_found,
            attr: 'ledger_code',
            detail: formatDetail(CODE.ledger_not_found, { ledger: ledgerCode })
          }
        }
      }
      const documents = Array.isArray(doc.historical_billing_documents) ? doc.historical_billing_documents.length : 0
      requests.push({
        path,
        body: { ...doc, ledger_code: ledgerCode, ledger_number: ledgerNumber, ...ref },
        count: documents,
        offset: 0
      })
    }
    return requests
  }

  /** One account, from its input line to its report entry. */
  async function migrateLine(line: number, text: string): Promise<ReportEntry> {
    const parsed = parseLine(text)
    if ('problems' in parsed) {
      return {
        line,
        external_account_number: guessExternal(text),
        outcome: 'failed',
        service_account_number: null,
        step: 'read',
        code: parsed.problems[0]!.code,
        errors: parsed.problems
      }
    }
    const { account, sections } = parsed.item
    const external = externalOf(account)
    const supplier = typeof account.import_supplier === 'string' ? account.import_supplier : null
    const entry = { line, external_account_number: external, service_account_number: null as string | null }
    let serviceAccountNumber: string | undefined
    let ledgersKnown: Array<{ ledger_code: string; ledger_number: string }> | undefined
    let completedBefore = false

    if (options.validateOnly) {
      const answer = await client.post('validate-account/', account)
      return answer.status === 200 ? { ...entry, outcome: 'valid' } : failed(entry, 'validate', answer)
    }

    /** With --resume, an account already imported is picked up where it was left. */
    const alreadyImported = (answer: Answer) => {
      const body = answer.body
      if (
        !options.resume ||
        answer.status !== 400 ||
        !isObject(body) ||
        !hasCode(body, CODE.account_already_imported)
      ) {
        return false
      }
      serviceAccountNumber = String(body.service_account_number)
      completedBefore = true
      return true
    }

    if (options.resume && external !== null && supplier !== null) {
      const answer = await status(supplier, external)
      if (answer.status === 200 && isObject(answer.body) && answer.body.status === 'COMPLETED') {
        serviceAccountNumber = String(answer.body.service_account_number)
        completedBefore = true
      } else if (answer.status !== 200 && answer.status !== 404) {
        return failed(entry, 'status', answer)
      }
    }

    // Stage runs every check of validate: no separate validate call.
    if (!completedBefore) {
      const staged = await client.post('account-import-process/create-or-update/', account, CREATE_TRANSIENT)
      if (staged.status !== 200 && staged.status !== 201 && !alreadyImported(staged)) {
        return failed(entry, 'stage', staged)
      }
    }
    if (!completedBefore) {
      const request = {
        external_account_number: external,
        import_supplier_code: supplier,
        operations_team_name: options.team
      }
      if (options.dryRun) {
        const dry = await client.post(
          'account-import-process/process/',
          { ...request, dry_run: true },
          CREATE_TRANSIENT
        )
        if (dry.status === 400 && isObject(dry.body) && dry.body.code === CODE.dry_run_rolled_back) {
          return { ...entry, outcome: 'would_create' }
        }
        return failed(entry, 'dry_run', dry)
      }
      const created = await client.post('account-import-process/process/', request, CREATE_TRANSIENT)
      const body = isObject(created.body) ? created.body : {}
      if (created.status === 201) {
        serviceAccountNumber = String(body.service_account_number)
        ledgersKnown = Array.isArray(body.ledgers) ? body.ledgers : undefined
      } else if (created.status === 400 && hasCode(body, CODE.account_already_imported) && created.attempts > 1) {
        // An earlier attempt of this very request was created, but its answer was lost.
        serviceAccountNumber = String(body.service_account_number)
      } else if (!alreadyImported(created)) {
        return failed(entry, 'create', created)
      }
    }
    entry.service_account_number = serviceAccountNumber ?? null
    if (options.dryRun) return { ...entry, outcome: 'already_completed' }

    // Post-import data: every endpoint is retry-safe, so a resumed account's is simply sent again.
    const ref = { import_supplier: supplier, external_account_number: external }
    const ledgers = async () => {
      if (ledgersKnown) return ledgersKnown
      const summary = await client.get(`accounts/${enc(supplier ?? '')}/${enc(external ?? '')}/`)
      ledgersKnown =
        summary.status === 200 && isObject(summary.body) && Array.isArray(summary.body.ledgers)
          ? summary.body.ledgers
          : []
      return ledgersKnown!
    }
    const sent: Partial<Record<Section, number>> = {}
    for (const section of SECTIONS) {
      const value = sections[section]
      if (value === undefined || (Array.isArray(value) && value.length === 0)) continue
      const requests = await requestsOf(section, value, ref, ledgers)
      if (!Array.isArray(requests)) {
        return {
          ...entry,
          outcome: 'failed',
          step: section,
          code: requests.code,
          errors: [requests],
          ...(Object.keys(sent).length > 0 ? { post_import: sent } : {})
        }
      }
      for (const request of requests) {
        const answer = await client.post(request.path, request.body)
        if (answer.status !== 201) {
          return {
            ...failed(entry, section, answer, request.field, request.offset),
            ...(Object.keys(sent).length > 0 ? { post_import: sent } : {})
          }
        }
        sent[section] = (sent[section] ?? 0) + request.count
      }
    }
    return {
      ...entry,
      outcome: completedBefore ? 'already_completed' : 'created',
      ...(Object.keys(sent).length > 0 ? { post_import: sent } : {})
    }
  }

  /** Never throws: an unexpected failure is the account's failure; a refused key stops the run. */
  return async function migrate(line: number, text: string): Promise<ReportEntry> {
    try {
      return await migrateLine(line, text)
    } catch (err) {
      if (err instanceof AuthenticationError) onFatal(err)
      const code =
        err instanceof AuthenticationError || err instanceof UnavailableError ? err.code : CLIENT_CODE.client_error
      const errors = [{ code, attr: null, detail: err instanceof Error ? err.message : String(err) }]
      return {
        line,
        external_account_number: guessExternal(text),
        outcome: 'failed',
        service_account_number: null,
        code,
        errors
      }
    }
  }
}

const REPORT_KEYS: Array<keyof ReportEntry> = [
  'line',
  'external_account_number',
  'outcome',
  'service_account_number',
  'step',
  'status',
  'code',
  'errors',
  'request_id',
  'post_import'
]

/** The entry with its keys in one order, so report lines read alike. */
function inReportOrder(entry: ReportEntry): ReportEntry {
  const ordered: Record<string, unknown> = {}
  for (const key of REPORT_KEYS) if (entry[key] !== undefined) ordered[key] = entry[key]
  return ordered as unknown as ReportEntry
}

/** The n-th name of a report: `x.ndjson`, `x-2.ndjson`, `x-3.ndjson`… */
export function numberedReport(path: string, n: number): string {
  if (n === 1) return path
  const m = /^(.*?)(\.ndjson|\.jsonl|\.json)?$/.exec(path)!
  return `${m[1]}-${n}${m[2] ?? ''}`
}

/** The report exists already; a run never overwrites one. */
export class ReportExistsError extends Error {
  override name = 'ReportExistsError'
}

/**
 * Creates the report (never over an existing file) and writes one JSON line per account, waiting
 * when the disk is behind. With `numbered`, a taken name moves on to the next free one.
 */
async function openReport(
  path: string,
  numbered: boolean
): Promise<{ n: number; write: (entry: ReportEntry) => Promise<void>; close: () => Promise<void> }> {
  let stream: WriteStream | undefined
  let n = 1
  for (; !stream; n++) {
    const candidate = createWriteStream(numberedReport(path, n), { flags: 'wx' })
    const opened = await new Promise<boolean>((resolve, reject) => {
      candidate.once('open', () => resolve(true))
      candidate.once('error', (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') reject(err)
        else if (!numbered) {
          reject(
            new ReportExistsError(`the report ${path} exists already: give another --report, or move that one away`)
          )
        } else resolve(false)
      })
    })
    if (opened) stream = candidate
  }
  n--
  return {
    n,
    async write(entry) {
      if (!stream.write(JSON.stringify(entry) + '\n')) {
        await new Promise<void>((resolve) => stream.once('drain', () => resolve()))
      }
    },
    close: () =>
      new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())))
  }
}

/** Codes that say the run's settings are wrong, not the account: the run stops at the first. */
const CONFIGURATION_CODES: readonly string[] = [
  CODE.operations_team_name_does_not_exist,
  CODE.import_supplier_migration_not_ongoing
]

/**
 * Migrates every account of `options.file`. Throws `AuthenticationError` or `UnavailableError`
 * when no first token can be had, `PreflightError` when the team or a supplier is wrong,
 * `ReportExistsError`, and file errors when the input or report cannot be opened.
 */
export async function migrate(options: MigrateOptions, io: RunIO): Promise<Summary> {
  let notice = io.stderr
  const client = createServiceClient({
    url: options.url,
    apiKey: options.apiKey,
    retry: options.retry,
    notice: (text) => notice(text),
    ...(io.fetch ? { fetch: io.fetch } : {})
  })
  let skip: Set<number> | undefined
  let total: number
  if (options.onlyLines) total = options.onlyLines.size
  else if (options.earlierReports && options.earlierReports.length > 0) {
    ;({ skip, total } = await linesToSkip(
      options.file,
      await completedLines(options.earlierReports.map((r) => r.path))
    ))
  } else total = await countLines(options.file)
  await client.login()
  await preflight(client, {
    team: options.validateOnly ? undefined : options.team,
    suppliers: await suppliersIn(options.file)
  })
  const report = await openReport(options.reportPath, options.numberReport)
  const reportLabel = numberedReport(options.labels?.report ?? options.reportPath, report.n)
  const skipped =
    skip && skip.size > 0
      ? ` (${count(skip.size, 'line')} skipped: completed in ${options.earlierReports!.map((r) => r.label).join(' and ')})`
      : ''
  io.stderr(
    `${options.validateOnly ? 'Validating' : options.dryRun ? 'Dry run of' : 'Migrating'} ${total} accounts of ${options.labels?.file ?? options.file}${skipped}; report: ${reportLabel}\n`
  )
  if (options.earlierReports?.length === 0) {
    io.stderr(
      `No earlier report ${options.labels?.report ?? options.reportPath} to resume from: each account is looked up, and the post-import data of those completed is sent again\n`
    )
  }
  const started = Date.now()
  const summary = emptySummary(
    {
      file: options.labels?.file ?? options.file,
      url: options.url,
      reportPath: reportLabel,
      dryRun: options.dryRun,
      validateOnly: options.validateOnly,
      retries: client.counts
    },
    SECTIONS
  )
  summary.skipped = skip?.size ?? 0
  let stopReason: string | undefined
  const stopWith = (reason: string) => {
    stopReason ??= reason
  }
  const pipeline = createPipeline(client, options, (err) =>
    stopWith(`the service refused the API key (${err.code}: ${err.message})`)
  )
  const progress = createProgress({
    write: io.stderr,
    tty: io.tty,
    columns: io.columns,
    total,
    intervalMs: io.progressIntervalMs
  })
  notice = progress.note

  async function record(entry: ReportEntry): Promise<void> {
    tally(summary, entry)
    if (entry.outcome === 'failed') {
      const configuration = (entry.errors ?? []).find((e) => CONFIGURATION_CODES.includes(e.code))
      if (configuration) stopWith(`${configuration.detail.replace(/\.$/, '')} (${configuration.code})`)
      if (entry.code === CLIENT_CODE.service_unreachable) {
        stopWith(entry.errors?.[0]?.detail.replace(/\.$/, '') ?? 'the service did not answer')
      }
    }
    progress.update({ done: summary.accounts, failed: summary.failed })
    await report.write(inReportOrder(entry))
  }

  const lines = readLines(options.file, options.concurrency * 2 * Math.max(1, options.batchSize))
  const inFlight = new Set<Promise<void>>()
  const stopped = () => io.signal?.aborted === true || stopReason !== undefined
  const start = (work: Promise<void>) => {
    const task: Promise<void> = work.finally(() => {
      inFlight.delete(task)
    })
    inFlight.add(task)
  }
  // Batch mode: lines of one supplier gathered into batches; a line that cannot go in one takes the account-by-account path.
  let pending: BatchLine[] = []
  const texts = new Map<number, string>()
  const sendPending = () => {
    const batch = pending
    pending = []
    start(
      (async () => {
        const { entries, tooLarge } = await sendBatch(client, batch, {
          team: options.team,
          dryRun: options.dryRun
        }).catch((err: unknown) => {
          if (err instanceof AuthenticationError) {
            stopWith(`the service refused the API key (${err.code}: ${err.message})`)
          }
          const code =
            err instanceof AuthenticationError || err instanceof UnavailableError ? err.code : CLIENT_CODE.client_error
          const detail = err instanceof Error ? err.message : String(err)
          return {
            entries: batch.map((l): ReportEntry => ({
              line: l.line,
              external_account_number: l.external,
              outcome: 'failed',
              service_account_number: null,
              code,
              errors: [{ code, attr: null, detail }]
            })),
            tooLarge: [] as BatchLine[]
          }
        })
        for (const entry of entries) await record(entry)
        for (const l of tooLarge) await record(await pipeline(l.line, texts.get(l.line)!))
        for (const l of batch) texts.delete(l.line)
      })()
    )
  }
  try {
    for (;;) {
      while (inFlight.size >= options.concurrency) await Promise.race(inFlight)
      if (stopped()) break
      const next = await lines.next()
      if (next === undefined) break
      if (next.text.trim() === '') continue
      if (skip?.has(next.number)) continue
      if (options.onlyLines) {
        if (!options.onlyLines.has(next.number)) continue
        const expected = options.onlyLines.get(next.number)
        const found = guessExternal(next.text)
        if (expected != null && found !== expected) {
          stopWith(
            `line ${next.number} is ${JSON.stringify(found)} but the report says ${JSON.stringify(expected)}: was the report made from another file?`
          )
          break
        }
      }
      const parsed = options.batchSize > 1 && !options.validateOnly ? parseLine(next.text) : undefined
      if (!parsed || !('item' in parsed) || !batchable(parsed.item)) {
        start(pipeline(next.number, next.text).then(record))
        continue
      }
      const supplier = String(parsed.item.account.import_supplier)
      if (pending.length > 0 && pending[0]!.supplier !== supplier) sendPending()
      pending.push({ line: next.number, item: parsed.item, external: externalOf(parsed.item.account), supplier })
      texts.set(next.number, next.text)
      if (pending.length >= options.batchSize) sendPending()
    }
    if (pending.length > 0 && !stopped()) sendPending()
    await Promise.all(inFlight)
  } finally {
    lines.close()
    progress.finish()
    await report.close()
  }
  summary.elapsedMs = Date.now() - started
  if (stopReason) summary.stopped = stopReason
  else if (io.signal?.aborted) summary.stopped = 'interrupted'
  return summary
}

const count = (n: number, one: string, many = one + 's') => `${n} ${n === 1 ? one : many}`

/** Error codes shown in the summary; `migrate report` lists them all. */
const SUMMARY_CODES = 8

/** The summary's rows of counts (also those of `migrate report`). */
export function countRows(s: Summary): Array<[string, string]> {
  const rows: Array<[string, string]> = [['accounts', String(s.accounts)]]
  if (s.validateOnly) rows.push(['valid', String(s.valid)])
  else if (s.dryRun) rows.push(['would be created', String(s.wouldCreate)])
  else rows.push(['created', String(s.created)])
  if (s.alreadyCompleted > 0 || (!s.dryRun && !s.validateOnly)) {
    rows.push(['already completed', String(s.alreadyCompleted)])
  }
  const steps = Object.entries(s.failedByStep)
    .map(([step, n]) => `${step} ${n}`)
    .join(', ')
  rows.push(['failed', `${s.failed}${steps ? ` (${steps})` : ''}`])
  const sent = SECTIONS.filter((section) => s.postImport[section] > 0).map(
    (section) => `${section} ${s.postImport[section]}`
  )
  if (sent.length > 0) rows.push(['post-import sent', sent.join(', ')])
  if (s.skipped > 0) {
    rows.push([
      'skipped',
      `${count(s.skipped, 'line')} completed in an earlier run (nothing sent; --resend-history sends their post-import data again)`
    ])
  }
  return rows
}

/** Rows as `  key:   value` lines, the values aligned. */
export function aligned(rows: Array<[string, string]>): string[] {
  const width = Math.max(...rows.map(([k]) => k.length)) + 1
  return rows.map(([k, v]) => `  ${(k + ':').padEnd(width)} ${v}`)
}

/** The summary printed at the end of a run. */
export function renderSummary(s: Summary): string {
  const rate = s.elapsedMs > 0 ? (s.accounts / (s.elapsedMs / 1000)).toFixed(1) : '0.0'
  const rows = countRows(s)
  const codes = Object.entries(s.codes).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
  if (codes.length > 0) {
    const more = codes.length > SUMMARY_CODES ? `, +${codes.length - SUMMARY_CODES} more` : ''
    rows.push([
      'top error codes',
      codes
        .slice(0, SUMMARY_CODES)
        .map(([code, n]) => `${code} ${n}`)
        .join(', ') + more
    ])
  }
  const r = s.retries
  rows.push([
    'retried',
    `429 ${r.throttled}, 5xx ${r.serverErrors}, network ${r.networkErrors}, in progress ${r.inProgress}; tokens obtained ${r.tokens}`
  ])
  if (r.outages > 0) {
    rows.push(['waited for the service', `${count(r.outages, 'time')}, ${duration(r.outageMs)} in all`])
  }
  rows.push(['time', `${duration(s.elapsedMs)} (${rate} accounts/s)`])
  const what = s.validateOnly ? 'Validation' : s.dryRun ? 'Dry run' : 'Migration'
  const title = `${what} of ${s.file} against ${s.url}${s.stopped ? `: stopped, ${s.stopped}` : ''}`
  const lines = [title, ...aligned(rows), `Report: ${s.reportPath}`]
  if (s.stopped) {
    const fix = s.stopped === 'interrupted' ? '' : ' (after fixing what stopped the run)'
    lines.push(`Run again with --resume to carry on${fix}: accounts already created are not created twice.`)
  } else if (s.codes.account_already_imported && !s.dryRun && !s.validateOnly) {
    lines.push(
      `${count(s.codes.account_already_imported, 'account was', 'accounts were')} already imported: with --resume they are not created again (those an earlier report shows completed are skipped, the others get their post-import data).`
    )
  }
  if (s.failed > 0) {
    lines.push(`Every failure by step and code: npm run migrate -- report ${s.reportPath}`)
    if (!s.stopped) {
      lines.push(
        `Run only the ${count(s.failed, 'failed account')} again (after fixing them): the same command with --retry-failed ${s.reportPath}`
      )
    }
  }
  return lines.join('\n') + '\n'
}

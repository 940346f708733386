/**
 * `migrate reconcile <file>`: the balances and counts each account of the file should have in the
 * service (src/cli/migrate/expected.ts), checked by the service's reconciliation endpoint in pages,
 * with a summary, the first differences, and every difference in a report file.
 */
import { createWriteStream, type WriteStream } from 'node:fs'
import { isObject } from '../http.js'
import { expectedAccount, type ExpectedAccount } from './expected.js'
import { parseLine } from './input.js'
import { connect, JobCommandError, refusal, type Connection, type JobsIO } from './jobs.js'
import { readLines } from './lines.js'
import { numberedReport } from './run.js'
import { hasCode, type ServiceClient } from './service-client.js'
import { CODE } from '../../../schemas/error-codes.js'

/** Most accounts the endpoint takes in one request. */
export const RECONCILE_PAGE = 10_000
/** Differences printed after the summary. */
export const SHOWN_DIFFERENCES = 20
/** The endpoint's problems, in the summary's order. */
export const PROBLEMS = ['not_created', 'skipped', 'balance_differs', 'count_differs'] as const

export interface Difference {
  external_account_number: string
  problem: string
  field: string | null
  expected: string | number | null
  actual: string | number | null
}

export interface ReconcileOptions {
  file: string
  label: string
  /** Every line's supplier; by default the one each line's account names. */
  supplier?: string
  /** The report's path and how to name it; `numbered`: a taken name moves on to -2, -3… */
  report: { path: string; label: string; numbered: boolean }
  pageSize?: number
}

interface Page {
  supplier: string
  accounts: ExpectedAccount[]
  lines: number[]
}

export interface ReconcileSummary {
  checked: number
  matching: number
  problems: Record<string, number>
  /** Lines that could not be checked (not JSON, no external account number or supplier). */
  unreadable: number[]
  shown: Array<Difference & { line: number }>
  differences: number
  reportLabel: string
}

/** Opens a new file for the report, never over an existing one. */
async function openNew(path: string, numbered: boolean): Promise<{ stream: WriteStream; n: number }> {
  for (let n = 1; ; n++) {
    const candidate = createWriteStream(numberedReport(path, n), { flags: 'wx' })
    const opened = await new Promise<boolean>((resolve, reject) => {
      candidate.once('open', () => resolve(true))
      candidate.once('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'EEXIST' && numbered) resolve(false)
        else if (err.code === 'EEXIST') {
          reject(
            new JobCommandError(`the report ${path} exists already: give another --report, or move that one away`, 2)
          )
        } else reject(err)
      })
    })
    if (opened) return { stream: candidate, n }
  }
}

function write(stream: WriteStream, value: unknown): Promise<void> | void {
  if (!stream.write(JSON.stringify(value) + '\n')) {
    return new Promise<void>((resolve) => stream.once('drain', () => resolve()))
  }
}

const isDifference = (d: unknown): d is Difference =>
  isObject(d) && typeof d.external_account_number === 'string' && typeof d.problem === 'string'

/** Sends one page; the service's answer, or the command's error. */
async function check(
  client: ServiceClient,
  page: Page
): Promise<{ checked: number; matching: number; differences: Difference[] }> {
  const answer = await client.post(`reconciliation/${encodeURIComponent(page.supplier)}/`, { accounts: page.accounts })
  const body = answer.body
  if (
    answer.status === 200 &&
    isObject(body) &&
    typeof body.checked === 'number' &&
    typeof body.matching === 'number' &&
    Array.isArray(body.differences) &&
    body.differences.every(isDifference)
  ) {
    return { checked: body.checked, matching: body.matching, differences: body.differences }
  }
  if (answer.status === 404 && hasCode(body, CODE.import_process_does_not_exist)) {
    throw new JobCommandError(
      `your organisation has no import supplier ${page.supplier} at this URL: check --supplier (or the lines' import_supplier) and --url`
    )
  }
  if (answer.status === 404) {
    throw new JobCommandError(`the service at this URL has no reconciliation endpoint (HTTP 404): is it up to date?`)
  }
  throw new JobCommandError(`the service did not check the accounts of ${page.supplier}: ${refusal(answer)}`)
}

/**
 * Reads the file, sends the expected balances and counts page by page, and writes every
 * difference to the report (with the line it came from).
 */
export async function reconcile(
  options: ReconcileOptions,
  connection: Connection,
  io: JobsIO
): Promise<ReconcileSummary> {
  const pageSize = options.pageSize ?? RECONCILE_PAGE
  const client = await connect(connection, io)
  const { stream, n } = await openNew(options.report.path, options.report.numbered)
  const summary: ReconcileSummary = {
    checked: 0,
    matching: 0,
    problems: {},
    unreadable: [],
    shown: [],
    differences: 0,
    reportLabel: numberedReport(options.report.label, n)
  }
  const pages = new Map<string, Page>()

  const flush = async (page: Page) => {
    pages.delete(page.supplier)
    const result = await check(client, page)
    summary.checked += result.checked
    summary.matching += result.matching
    // The differences come in request order: each is matched to its line in the page.
    let at = 0
    for (const d of result.differences) {
      while (at < page.accounts.length && page.accounts[at]!.external_account_number !== d.external_account_number) at++
      const line =
        page.lines[at] ??
        page.lines[page.accounts.findIndex((a) => a.external_account_number === d.external_account_number)] ??
        null
      const entry = { line, supplier: page.supplier, ...d }
      summary.problems[d.problem] = (summary.problems[d.problem] ?? 0) + 1
      summary.differences++
      if (summary.shown.length < SHOWN_DIFFERENCES) summary.shown.push({ ...d, line: line ?? 0 })
      await write(stream, entry)
    }
    io.stderr(`checked ${summary.checked} accounts, ${summary.checked - summary.matching} differing\n`)
  }

  const lines = readLines(options.file, 1000)
  try {
    for (let next = await lines.next(); next; next = await lines.next()) {
      if (next.text.trim() === '') continue
      const parsed = parseLine(next.text)
      const item = 'item' in parsed ? parsed.item : undefined
      const expected = item && expectedAccount(item)
      const named = item?.account.import_supplier
      const supplier = options.supplier ?? (typeof named === 'string' ? named : undefined)
      if (!expected || supplier === undefined) {
        summary.unreadable.push(next.number)
        continue
      }
      let page = pages.get(supplier)
      if (!page) pages.set(supplier, (page = { supplier, accounts: [], lines: [] }))
      page.accounts.push(expected)
      page.lines.push(next.number)
      if (page.accounts.length >= pageSize) await flush(page)
    }
    for (const page of [...pages.values()]) await flush(page)
  } finally {
    lines.close()
    await new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())))
  }
  return summary
}

const show = (value: string | number | null) => (value === null ? 'absent' : String(value))

/** The summary table and the first differences. */
export function renderReconcileSummary(s: ReconcileSummary, label: string, url: string): string {
  const rows: Array<[string, string]> = [
    ['checked', String(s.checked)],
    ['matching', String(s.matching)],
    ['differing', String(s.checked - s.matching)]
  ]
  const problems = [...PROBLEMS, ...Object.keys(s.problems).filter((p) => !(PROBLEMS as readonly string[]).includes(p))]
  for (const p of problems) rows.push([p, String(s.problems[p] ?? 0)])
  if (s.unreadable.length > 0) {
    const first = s.unreadable.slice(0, 10).join(', ')
    const more = s.unreadable.length > 10 ? ` … and ${s.unreadable.length - 10} more` : ''
    rows.push(['not checked', `${s.unreadable.length} lines without a readable account or supplier: ${first}${more}`])
  }
  const width = Math.max(...rows.map(([k]) => k.length)) + 1
  const out = [`Reconciliation of ${label} against ${url}`, ...rows.map(([k, v]) => `  ${`${k}:`.padEnd(width)}  ${v}`)]
  if (s.shown.length > 0) {
    out.push(
      s.differences > s.shown.length
        ? `First ${s.shown.length} of ${s.differences} differences:`
        : `Differences (${s.differences}):`
    )
    for (const d of s.shown) {
      const values = d.field === null ? '' : `  ${d.field}: expected ${show(d.expected)}, actual ${show(d.actual)}`
      out.push(`  line ${d.line}  ${d.external_account_number}  ${d.problem}${values}`)
    }
  }
  out.push(s.differences > 0 ? `Every difference: ${s.reportLabel}` : `Report: ${s.reportLabel} (no differences)`)
  return out.join('\n') + '\n'
}

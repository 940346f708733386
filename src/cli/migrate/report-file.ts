import { meaningOf } from '../../../schemas/error-codes.js'
import { readLines } from './lines.js'
import { emptySummary, tally, type ReportEntry, type Summary } from './report.js'
import { SECTIONS } from './input.js'
import { aligned, countRows } from './run.js'

/** Reading an earlier run's report: `migrate report <file>` and `--retry-failed <file>`. */

/** The report is not one the client wrote (a line that is not a report entry). */
export class NotAReportError extends Error {
  override name = 'NotAReportError'
}

/** The entries of a report, one at a time (reports can be large). */
async function* entriesOf(path: string, label: string): AsyncGenerator<ReportEntry> {
  const lines = readLines(path, 256)
  try {
    for (;;) {
      const next = await lines.next()
      if (next === undefined) return
      if (next.text.trim() === '') continue
      let entry: unknown
      try {
        entry = JSON.parse(next.text)
      } catch {
        entry = undefined
      }
      const e = entry as Partial<ReportEntry> | undefined
      if (typeof e !== 'object' || e === null || !Number.isSafeInteger(e.line) || typeof e.outcome !== 'string') {
        throw new NotAReportError(`line ${next.number} of ${label} is not a line of a migration report`)
      }
      yield e as ReportEntry
    }
  } finally {
    lines.close()
  }
}

/** The failed lines of a report: line number → the external account number it had (null when unknown). */
export async function failedLines(path: string, label: string): Promise<Map<number, string | null>> {
  const failed = new Map<number, string | null>()
  for await (const entry of entriesOf(path, label)) {
    if (entry.outcome === 'failed') failed.set(entry.line, entry.external_account_number ?? null)
  }
  return failed
}

/** A report's counts, and every failure by step and code with what the code means. */
export async function renderReport(path: string, label: string): Promise<string> {
  const summary: Summary = emptySummary(
    {
      file: label,
      url: '',
      reportPath: label,
      dryRun: false,
      validateOnly: false,
      retries: {
        throttled: 0,
        serverErrors: 0,
        networkErrors: 0,
        inProgress: 0,
        tokens: 0,
        unauthorised: 0,
        outages: 0,
        outageMs: 0
      }
    },
    SECTIONS
  )
  /** Accounts per step and code (an account counts once per code). */
  const byStepAndCode = new Map<string, number>()
  for await (const entry of entriesOf(path, label)) {
    tally(summary, entry)
    if (entry.outcome !== 'failed') continue
    for (const code of new Set((entry.errors ?? []).map((e) => e.code))) {
      const key = `${entry.step ?? 'read'}\t${code}`
      byStepAndCode.set(key, (byStepAndCode.get(key) ?? 0) + 1)
    }
  }
  summary.validateOnly = summary.valid > 0 && summary.created + summary.alreadyCompleted + summary.wouldCreate === 0
  summary.dryRun = summary.wouldCreate > 0 && summary.created === 0
  const lines = [`Report ${label}`, ...aligned(countRows(summary))]
  if (byStepAndCode.size > 0) {
    type Row = [step: string, code: string, accounts: string, meaning: string]
    const rows = [...byStepAndCode].map(([key, n]) => {
      const [step, code] = key.split('\t') as [string, string]
      return [step, code, String(n), meaningOf(code) ?? ''] as Row
    })
    rows.sort(
      (a, b) =>
        b[2].localeCompare(a[2], undefined, { numeric: true }) || a[0].localeCompare(b[0]) || a[1].localeCompare(b[1])
    )
    const header: Row = ['step', 'code', 'accounts', 'meaning']
    const width = [0, 1].map((i) => Math.max(header[i]!.length, ...rows.map((r) => r[i]!.length)))
    const format = (r: Row) =>
      `  ${r[0].padEnd(width[0]!)}  ${r[1].padEnd(width[1]!)}  ${r[2].padStart(8)}  ${r[3]}`.trimEnd()
    lines.push(
      'Failures by step and error code (an account counts once for each code it has):',
      format(header),
      ...rows.map(format)
    )
    lines.push(`Run only the failed accounts again (after fixing them): the run's command with --retry-failed ${label}`)
  }
  return lines.join('\n') + '\n'
}

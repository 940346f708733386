import { createWriteStream, rmSync, type WriteStream } from 'node:fs'
import { meaningOf } from '../../../schemas/error-codes.js'
import { readLines } from './lines.js'
import { emptySummary, tally, type ReportEntry, type Summary } from './report.js'
import { guessExternal, SECTIONS } from './input.js'
import { aligned, countRows, ReportExistsError } from './run.js'

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

/** Failing lines shown per code before `… and N more` (`--code` shows them all). */
const LINES_SHOWN = 10

/** The codes of a failed entry, each once. */
const codesOf = (entry: ReportEntry) => new Set((entry.errors ?? []).map((e) => e.code))

/**
 * A report's counts, and every failure by step and code with what the code means, then the failing
 * line numbers of each code (the first few). With `code`, every line of that code instead of the
 * tables. `input` names the input file the line numbers are of, when known.
 */
export async function renderReport(
  path: string,
  label: string,
  { code: only, input }: { code?: string; input?: string } = {}
): Promise<string> {
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
  /** Failing line numbers per code. */
  const linesByCode = new Map<string, number[]>()
  for await (const entry of entriesOf(path, label)) {
    tally(summary, entry)
    if (entry.outcome !== 'failed') continue
    for (const code of codesOf(entry)) {
      const key = `${entry.step ?? 'read'}\t${code}`
      byStepAndCode.set(key, (byStepAndCode.get(key) ?? 0) + 1)
      const numbers = linesByCode.get(code)
      if (numbers) numbers.push(entry.line)
      else linesByCode.set(code, [entry.line])
    }
  }
  for (const lines of linesByCode.values()) lines.sort((a, b) => a - b)
  summary.validateOnly = summary.valid > 0 && summary.created + summary.alreadyCompleted + summary.wouldCreate === 0
  summary.dryRun = summary.wouldCreate > 0 && summary.created === 0
  const lines = [`Report ${label}`, ...aligned(countRows(summary))]
  if (only !== undefined) {
    const found = linesByCode.get(only)
    if (!found) {
      const codes = [...linesByCode.keys()].sort()
      lines.push(
        `No line failed with ${only} (${codes.length > 0 ? `the report's codes: ${codes.join(', ')}` : 'no line of the report failed'})`
      )
    } else {
      lines.push(`Lines failing with ${only} (${found.length}): ${found.join(', ')}`)
      const meaning = meaningOf(only)
      if (meaning) lines.push(`  ${only}: ${meaning}`)
    }
    return lines.join('\n') + '\n'
  }
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
    const widths = [0, 1].map((i) => Math.max(header[i]!.length, ...rows.map((r) => r[i]!.length)))
    const format = (r: Row) =>
      `  ${r[0].padEnd(widths[0]!)}  ${r[1].padEnd(widths[1]!)}  ${r[2].padStart(8)}  ${r[3]}`.trimEnd()
    lines.push(
      'Failures by step and error code (an account counts once for each code it has):',
      format(header),
      ...rows.map(format)
    )
    const byCode = [...linesByCode].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))
    const width = Math.max(...byCode.map(([code]) => code.length))
    lines.push(
      `Failing lines by error code (line numbers ${input ? `of ${input}` : 'in the input'}; --code <code> lists every line of one code):`,
      ...byCode.map(([code, numbers]) => {
        const more = numbers.length > LINES_SHOWN ? ` … and ${numbers.length - LINES_SHOWN} more` : ''
        return `  ${code.padEnd(width)}  ${numbers.slice(0, LINES_SHOWN).join(', ')}${more}`
      })
    )
    lines.push(`Run only the failed accounts again (after fixing them): the run's command with --retry-failed ${label}`)
  }
  return lines.join('\n') + '\n'
}

/**
 * Writes the input lines that failed in a report (those with `code` when given) to `out`, as they
 * are in the input, in their order: a file to fix and migrate again. Never overwrites `out`; checks
 * each line's external account number against the report's. Returns the lines written (none: no
 * file is made).
 */
export async function writeFailedLines(
  report: { path: string; label: string },
  input: { path: string; label: string },
  out: { path: string; label: string },
  code?: string
): Promise<number> {
  const wanted = new Map<number, string | null>()
  for await (const entry of entriesOf(report.path, report.label)) {
    if (entry.outcome !== 'failed') continue
    if (code === undefined || codesOf(entry).has(code)) wanted.set(entry.line, entry.external_account_number ?? null)
    else wanted.delete(entry.line)
  }
  if (wanted.size === 0) return 0
  const stream: WriteStream = createWriteStream(out.path, { flags: 'wx' })
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve())
    stream.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EEXIST'
          ? new ReportExistsError(`${out.label} exists already: give another name, or move that one away`)
          : err
      )
    )
  })
  const lines = readLines(input.path, 256)
  let written = 0
  try {
    for (let next = await lines.next(); next !== undefined; next = await lines.next()) {
      if (!wanted.has(next.number)) continue
      const expected = wanted.get(next.number)
      const found = guessExternal(next.text)
      if (expected != null && found !== expected) {
        throw new NotAReportError(
          `line ${next.number} of ${input.label} is ${JSON.stringify(found)} but the report says ${JSON.stringify(expected)}: was the report made from another file? Name its input with --input <file>`
        )
      }
      if (!stream.write(next.text + '\n')) await new Promise<void>((resolve) => stream.once('drain', () => resolve()))
      written++
    }
    if (written < wanted.size) {
      throw new NotAReportError(
        `${input.label} has fewer lines than the report names: was the report made from another file? Name its input with --input <file>`
      )
    }
  } catch (err) {
    stream.destroy()
    rmSync(out.path, { force: true })
    throw err
  } finally {
    lines.close()
  }
  await new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())))
  return written
}

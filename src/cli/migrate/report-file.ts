import { discard } from './write-together.js'
import { createWriteStream, rmSync, type WriteStream } from 'node:fs'
import { basename } from 'node:path'
import { meaningOf } from '../../../schemas/error-codes.js'
import { LINE_OUTCOMES, type LineOutcome } from '../../../schemas/import-jobs.js'
import { readLines } from './lines.js'
import { FailureTally, renderFailures, sourcesFor } from './map/source-terms.js'
import { emptySummary, OUTCOMES, tally, type Outcome, type ReportEntry, type Summary } from './report.js'
import { guessExternal, SECTIONS } from './input.js'
import { aligned, countRows, ReportExistsError } from './run.js'

/**
 * Reading an earlier run's report: `migrate report <file>` and `--retry-failed <file>`. `report`
 * also reads a job's results (`results <id>`): the same keys, with the job's outcomes.
 */

const PROGRAM = 'npm run migrate --'

/** A line of a run's report or of a job's results. */
type FileEntry = Omit<ReportEntry, 'outcome'> & { outcome: Outcome | LineOutcome }

const KNOWN_OUTCOMES = new Set<string>([...OUTCOMES, ...LINE_OUTCOMES])
/** Outcomes only a job's results have (already_imported, not_processed, skipped_blank). */
const JOB_ONLY = new Set<string>(LINE_OUTCOMES.filter((o) => !(OUTCOMES as readonly string[]).includes(o)))
/** Outcomes only a run's report has (already_completed, valid). */
const RUN_ONLY = new Set<string>(OUTCOMES.filter((o) => !(LINE_OUTCOMES as readonly string[]).includes(o)))
/** The names `results <id>` gives its downloads: `job-<id>.results.ndjson`, `job-<id>.failed-results-2.ndjson`… */
const JOB_RESULTS_NAME = /^job-(.+)\.(?:failed-)?results(?:-\d+)?\.ndjson$/

/** The report is not one the client wrote (a line that is not a report entry). */
export class NotAReportError extends Error {
  override name = 'NotAReportError'
}

/** The entries of a report (or of a job's results), one at a time (reports can be large). */
async function* entriesOf(path: string, label: string): AsyncGenerator<FileEntry> {
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
      if (!KNOWN_OUTCOMES.has(e.outcome)) {
        throw new NotAReportError(
          `line ${next.number} of ${label} has the outcome ${JSON.stringify(e.outcome)}, which neither a migration report (${OUTCOMES.join(', ')}) nor a job's results (${LINE_OUTCOMES.join(', ')}) have`
        )
      }
      yield e as FileEntry
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

/** The codes of a failed entry, each once: its errors' codes, or its own code when it has none. */
function codesOf(entry: FileEntry): Set<string> {
  const codes = new Set((entry.errors ?? []).map((e) => e.code))
  if (codes.size === 0 && typeof entry.code === 'string') codes.add(entry.code)
  return codes
}

/** A job's results' counts, as `job <id>` shows a job's. */
function jobCountRows(outcomes: Map<string, number>, failedByStep: Summary['failedByStep']): Array<[string, string]> {
  const n = (outcome: LineOutcome) => outcomes.get(outcome) ?? 0
  const total = [...outcomes.values()].reduce((a, b) => a + b, 0)
  const rows: Array<[string, string]> = [
    ['lines', `${total}${n('skipped_blank') > 0 ? ` (${n('skipped_blank')} blank)` : ''}`]
  ]
  if (n('would_create') > 0 && n('created') === 0) rows.push(['would be created', String(n('would_create'))])
  else rows.push(['created', String(n('created'))])
  if (n('already_imported') > 0) rows.push(['already imported', String(n('already_imported'))])
  const steps = Object.entries(failedByStep)
    .map(([step, count]) => `${step} ${count}`)
    .join(', ')
  rows.push(['failed', `${n('failed')}${steps ? ` (${steps})` : ''}`])
  if (n('not_processed') > 0) {
    rows.push(['not processed', `${n('not_processed')} (the job was cancelled before them)`])
  }
  return rows
}

/**
 * A report's counts, and every failure by step and code with what the code means, then the failing
 * line numbers of each code (the first few). With `code`, every line of that code instead of the
 * tables. `input` names the input file the line numbers are of, when known. A job's results file
 * (told by its outcomes, by `step` on its lines that did not fail, or by the name `results`
 * gives it) is counted by the job's outcomes; a file mixing both kinds of line is refused.
 */
export async function renderReport(
  path: string,
  label: string,
  { code: only, input, sources }: { code?: string; input?: string; sources?: { path: string; label: string } } = {}
): Promise<string> {
  /** With the input's sources file: the failures by code in the source's terms (the first few of each). */
  const inSource = sources ? new FailureTally() : undefined
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
  /** Lines per outcome, and the first line that shows each kind of file. */
  const outcomes = new Map<string, number>()
  let runLine: number | undefined
  let jobLine: number | undefined
  for await (const entry of entriesOf(path, label)) {
    outcomes.set(entry.outcome, (outcomes.get(entry.outcome) ?? 0) + 1)
    // A report leaves out the keys a line has no value for; a job's results give every key.
    const passed = entry.outcome !== 'failed'
    if (JOB_ONLY.has(entry.outcome) || (passed && 'step' in entry)) jobLine ??= entry.line
    if (RUN_ONLY.has(entry.outcome) || (passed && !('step' in entry))) runLine ??= entry.line
    if (runLine !== undefined && jobLine !== undefined) {
      throw new NotAReportError(
        `${label} mixes the lines of a migration report (line ${runLine}) and of a job's results (line ${jobLine})`
      )
    }
    if (!JOB_ONLY.has(entry.outcome)) tally(summary, entry as ReportEntry)
    if (entry.outcome !== 'failed') continue
    inSource?.add({
      line: entry.line,
      external: entry.external_account_number ?? null,
      where: 'service',
      step: entry.step ?? null,
      code: entry.code ?? 'failed',
      errors: entry.errors ?? []
    })
    for (const code of codesOf(entry)) {
      const key = `${entry.step ?? 'read'}\t${code}`
      byStepAndCode.set(key, (byStepAndCode.get(key) ?? 0) + 1)
      const numbers = linesByCode.get(code)
      if (numbers) numbers.push(entry.line)
      else linesByCode.set(code, [entry.line])
    }
  }
  for (const lines of linesByCode.values()) lines.sort((a, b) => a - b)
  const jobId = JOB_RESULTS_NAME.exec(basename(label))?.[1]
  const job = jobLine !== undefined || (runLine === undefined && jobId !== undefined)
  summary.validateOnly = summary.valid > 0 && summary.created + summary.alreadyCompleted + summary.wouldCreate === 0
  summary.dryRun = summary.wouldCreate > 0 && summary.created === 0
  const unit = job ? 'line' : 'account'
  const lines = job
    ? [`Job results ${label}`, ...aligned(jobCountRows(outcomes, summary.failedByStep))]
    : [`Report ${label}`, ...aligned(countRows(summary))]
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
    const header: Row = ['step', 'code', `${unit}s`, 'meaning']
    const widths = [0, 1].map((i) => Math.max(header[i]!.length, ...rows.map((r) => r[i]!.length)))
    const format = (r: Row) =>
      `  ${r[0].padEnd(widths[0]!)}  ${r[1].padEnd(widths[1]!)}  ${r[2].padStart(8)}  ${r[3]}`.trimEnd()
    lines.push(
      `Failures by step and error code (${job ? 'a line' : 'an account'} counts once for each code it has):`,
      format(header),
      ...rows.map(format)
    )
    const byCode = [...linesByCode].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))
    const width = Math.max(...byCode.map(([code]) => code.length))
    lines.push(
      `Failing lines by error code (line numbers ${input ? `of ${input}` : job ? "of the job's input" : 'in the input'}; --code <code> lists every line of one code):`,
      ...byCode.map(([code, numbers]) => {
        const more = numbers.length > LINES_SHOWN ? ` … and ${numbers.length - LINES_SHOWN} more` : ''
        return `  ${code.padEnd(width)}  ${numbers.slice(0, LINES_SHOWN).join(', ')}${more}`
      })
    )
    if (inSource && sources) {
      const found = await sourcesFor(sources.path, inSource.exampleLines())
      lines.push(
        `Failures in the source's terms (from ${sources.label}: file and rows, field, column):`,
        ...renderFailures(inSource, found).slice(1)
      )
    }
    lines.push(
      job
        ? `The failed input lines, to fix and submit as a new job: ${PROGRAM} failed-lines ${jobId ?? '<job id>'}`
        : `Run only the failed accounts again (after fixing them): the run's command with --retry-failed ${label}`
    )
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
    discard(stream)
    rmSync(out.path, { force: true })
    throw err
  } finally {
    lines.close()
  }
  await new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())))
  return written
}

import { createWriteStream, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { Readable } from 'node:stream'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import { isObject } from '../../http.js'
import { readState, stateFileOf } from '../job-file.js'
import { connect, JobCommandError, refusal, submit, type Connection, type Job, type JobsIO } from '../jobs.js'
import { readLines } from '../lines.js'
import { aligned } from '../run.js'
import { entryChecker, notJson, type StepFailure } from './schema-check.js'
import { FailureTally, fold, renderFailures, sourcesFor, type SourceLine, type SourcesHeader } from './source-terms.js'

/**
 * `map check`: every line of a mapping's output checked here against the service's published
 * schemas, the lines that pass then dry-run by the service as an import job, and every failure
 * printed in the source's terms (file, row, field, column), grouped by code with what it means.
 */

const PROGRAM = 'npm run migrate --'

export interface CheckOptions {
  /** The lines file, and its name as the person gave it (or as map wrote it). */
  lines: string
  linesLabel: string
  /** The lines were mapped now (the label names the mapping). */
  mapped?: boolean
  /** The sources file beside the lines, when there is one. */
  sources?: { path: string; label: string }
  team: string
  supplier?: string
  /** Lines shown per code (default 3). */
  examples?: number
}

export interface CheckSummary {
  lines: number
  failedHere: number
  sent: number
  wouldCreate: number
  /** Lines whose account the service holds already (a dry run passes them by). */
  alreadyImported: number
  failedOnService: number
  /** Source rows the mapping read but could not use (rejected, orphans, repeated keys). */
  sourceProblems: number
  jobId?: string
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** The failures of a job's results (`?outcome=failed`), one at a time. */
async function* failedResults(
  client: Awaited<ReturnType<typeof connect>>,
  id: string
): AsyncGenerator<{
  line: number
  external_account_number: string | null
  step: string | null
  code: string | null
  errors: Array<{ code: string; attr: string | null }> | null
}> {
  const answer = await client.get(`import-jobs/${encodeURIComponent(id)}/results/?outcome=failed`, { stream: true })
  if (answer.status !== 200 || !answer.response?.body) {
    throw new JobCommandError(`cannot read the results of the dry-run job ${id}: ${refusal(answer)}`)
  }
  const rl = createInterface({
    input: Readable.fromWeb(answer.response.body as WebReadableStream<Uint8Array>),
    crlfDelay: Infinity
  })
  for await (const text of rl) {
    if (text.trim() !== '') yield JSON.parse(text)
  }
}

/** Source rows the mapping left out, per file: rejected by the reader, orphans, repeated account keys. */
function sourceProblems(header: SourcesHeader | undefined, width: number): { count: number; text: string[] } {
  if (!header) return { count: 0, text: [] }
  const text: string[] = []
  let count = 0
  for (const [file, s] of Object.entries(header.files)) {
    const parts: string[] = []
    const rejected = s.rejected ?? []
    const orphans = s.orphans ?? []
    const repeated = s.repeated_keys ?? []
    const counts = {
      rejected: s.rejected_count ?? rejected.length,
      orphans: s.orphan_count ?? orphans.length,
      repeated: s.repeated_key_count ?? repeated.length
    }
    if (counts.rejected > 0) {
      parts.push(
        `${plural(counts.rejected, 'row')} rejected (${rejected
          .slice(0, 3)
          .map((r) => `line ${r.line}: ${r.reason}`)
          .join('; ')}${counts.rejected > 3 ? '; …' : ''})`
      )
    }
    if (counts.orphans > 0) {
      parts.push(
        `${plural(counts.orphans, 'orphan row')}, no such account (${orphans
          .slice(0, 3)
          .map((o) => `row ${o.row}: ${o.key}`)
          .join('; ')}${counts.orphans > 3 ? '; …' : ''})`
      )
    }
    if (counts.repeated > 0) {
      parts.push(
        `${plural(counts.repeated, 'repeated account key')} (${repeated
          .slice(0, 3)
          .map((r) => `${r.key}: rows ${r.rows.join(', ')}`)
          .join('; ')}${counts.repeated > 3 ? '; …' : ''})`
      )
    }
    count += counts.rejected + counts.orphans + counts.repeated
    for (const part of parts) {
      text.push(...fold(`${file}: ${part}`, width - 2, '    ').map((l, i) => (i === 0 ? `  ${l}` : l)))
    }
  }
  return { count, text }
}

/**
 * Checks the lines, dry-runs those that pass, and prints every failure in the source's terms.
 * The dry run's own progress goes to standard error; the findings to standard output. Returns
 * the exit code: 0 nothing failed, 1 otherwise.
 */
export async function check(options: CheckOptions, connection: Connection, io: JobsIO): Promise<number> {
  const width = Math.max(60, Math.min(io.columns ?? 80, 100))
  const client = await connect(connection, io)
  const document = await client.openapi()
  if (document.status !== 200) {
    throw new JobCommandError(`cannot read the service's OpenAPI document (GET /openapi.json): ${refusal(document)}`)
  }
  const checkEntry = entryChecker(document.body)
  const tally = new FailureTally(options.examples ?? 3)
  const summary: CheckSummary = {
    lines: 0,
    failedHere: 0,
    sent: 0,
    wouldCreate: 0,
    alreadyImported: 0,
    failedOnService: 0,
    sourceProblems: 0
  }

  // The lines that pass go, as they are, to a file of their own for the dry run; `original[n-1]` is its line n's number.
  const folder = mkdtempSync(join(tmpdir(), 'amis-check-'))
  try {
    const passed = join(folder, 'passed.ndjson')
    const out = createWriteStream(passed)
    const original: number[] = []
    const reader = readLines(options.lines, 256)
    try {
      for (let next = await reader.next(); next !== undefined; next = await reader.next()) {
        if (next.text.trim() === '') continue
        summary.lines++
        let entry: unknown
        let failures: StepFailure[]
        try {
          entry = JSON.parse(next.text)
          failures = checkEntry(entry)
        } catch (err) {
          if (!(err instanceof SyntaxError)) throw err
          failures = [notJson(next.text)]
        }
        if (failures.length === 0) {
          original.push(next.number)
          if (!out.write(next.text + '\n')) await new Promise<void>((resolve) => out.once('drain', () => resolve()))
          continue
        }
        summary.failedHere++
        const account = isObject(entry) && isObject(entry.account) ? entry.account.external_account_number : null
        for (const f of failures) {
          tally.add({
            line: next.number,
            external: typeof account === 'string' ? account : null,
            where: 'schema check',
            ...f
          })
        }
      }
    } finally {
      reader.close()
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())))
    }
    io.stderr(`Schema check of ${options.linesLabel}: ${plural(summary.lines, 'line')}, ${summary.failedHere} failed\n`)

    summary.sent = original.length
    if (original.length > 0) {
      io.stderr(`Dry run of the other ${plural(original.length, 'line')} on the service (nothing is created)\n`)
      // The job's own summary and hints are left out: what it found is printed below, in the source's terms.
      const quiet: JobsIO = { ...io, stdout: () => {} }
      await submit(
        {
          file: passed,
          label: 'the lines that passed',
          stateLabel: 'a temporary file',
          team: options.team,
          dryRun: true,
          follow: true,
          ...(options.supplier !== undefined ? { supplier: options.supplier } : {})
        },
        connection,
        quiet
      )
      const state = readState(stateFileOf(passed))
      if (!state?.started) throw new JobCommandError('the dry-run job was not started: nothing more to check')
      summary.jobId = state.job_id
      const job = await client.get(`import-jobs/${encodeURIComponent(state.job_id)}/`)
      const counts = isObject(job.body) ? (job.body as unknown as Job) : undefined
      if (!counts || !['COMPLETED', 'CANCELLED'].includes(counts.state)) {
        throw new JobCommandError(
          `the dry-run job ${state.job_id} has not ended (${counts?.state ?? `HTTP ${job.status}`}): follow it with ${PROGRAM} job ${state.job_id} --follow, then read its failures with ${PROGRAM} results ${state.job_id} --failed --sources <file>`
        )
      }
      summary.wouldCreate = counts.lines.would_create
      summary.alreadyImported = counts.lines.already_imported
      for await (const result of failedResults(client, state.job_id)) {
        summary.failedOnService++
        const line = original[result.line - 1] ?? result.line
        tally.add({
          line,
          external: result.external_account_number,
          where: 'dry run',
          step: result.step,
          code: result.code ?? 'failed',
          errors: result.errors ?? []
        })
      }
    }
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }

  let header: SourcesHeader | undefined
  let lines = new Map<number, SourceLine>()
  if (options.sources) {
    ;({ header, lines } = await sourcesFor(options.sources.path, tally.exampleLines()))
  }
  const left = sourceProblems(header, width)
  summary.sourceProblems = left.count
  await io.stdout(renderCheck(options, summary, tally, { header, lines }, left.text, width))
  return summary.failedHere + summary.failedOnService + summary.sourceProblems > 0 ? 1 : 0
}

/** What `map check` prints: the counts, what the mapping left out, then the failures by code. */
export function renderCheck(
  options: Pick<CheckOptions, 'linesLabel' | 'sources' | 'mapped'>,
  s: CheckSummary,
  tally: FailureTally,
  sources: { header?: SourcesHeader | undefined; lines: Map<number, SourceLine> },
  leftOut: string[],
  width = 80
): string {
  const rows: Array<[string, string]> = [
    ['lines', String(s.lines)],
    ['schema check', `${s.lines - s.failedHere} passed, ${s.failedHere} failed`],
    [
      'dry run (accounts)',
      s.sent === 0
        ? 'not run (no line passed the schema check)'
        : `${s.wouldCreate} would be created, ${s.alreadyImported > 0 ? `${s.alreadyImported} already imported, ` : ''}${s.failedOnService} failed`
    ],
    ...(s.jobId ? [['dry-run job', s.jobId] as [string, string]] : [])
  ]
  const out = [
    `Check of ${options.linesLabel}${sources.header && !options.mapped ? ` (mapping ${sources.header.mapping})` : ''}`,
    ...aligned(rows)
  ]
  if (leftOut.length > 0) out.push('', 'Source rows the mapping left out:', ...leftOut)
  if (tally.byCode.size > 0) {
    out.push(
      '',
      `Failures by error code (a line counts once for each code it has${options.sources ? '' : '; no sources file, so no source rows'}):`
    )
    out.push(...renderFailures(tally, sources, width))
  }
  const failed = s.failedHere + s.failedOnService
  out.push(
    '',
    ...fold(
      failed + s.sourceProblems === 0
        ? `Nothing failed: every line would be created.`
        : `${plural(failed, 'line')} failed${s.sourceProblems > 0 ? `, ${plural(s.sourceProblems, 'source row')} left out` : ''}: fix the extract or the mapping, and check again.`,
      width,
      ''
    )
  )
  return out.join('\n') + '\n'
}

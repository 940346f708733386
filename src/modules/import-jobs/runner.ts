import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import { CODE } from '../../../schemas/error-codes.js'
import type { BatchResult } from '../../../schemas/batches.js'
import { storableText } from '../../../schemas/text.js'
import { databaseUnavailable } from '../../db/errors.js'
import { shapeProblem } from '../../json-shape.js'
import type { Db } from '../../db/index.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import type { createBatchesService } from '../batches/service.js'
import { duplicateNumber, failedResult, notJson } from '../batches/entries.js'
import { usableExternal } from './lines.js'
import { createImportJobsRepository, type ClaimedJob, type ResultRow } from './repository.js'
import { rootSpan, traceIdOf, type TraceRoot } from '../../tracing.js'

type BatchesService = ReturnType<typeof createBatchesService>

/** Lines of a batch of the batch engine, as the migration client sends them. */
const BATCH_LINES = 100
/**
 * Batches of a chunk run side by side, as the client keeps batches in flight: while one plans its
 * accounts on this thread, another's transaction runs in the database. Three kept a 20,000-account
 * job at 0.97x the client's rate on PostgreSQL (two: 0.82x; see bench/README.md).
 */
const BATCHES_AT_ONCE = 3
/** Lines run per chunk (claimed, run and stored together). */
export const CHUNK_LINES = BATCH_LINES * BATCHES_AT_ONCE
/** How long a claim holds without being renewed: a process that died lets its job go after this. */
const LEASE_SECONDS = 30
/** How often a runner with nothing to do looks for work, and how often job states are settled. */
const IDLE_MS = 1000
const SETTLE_MS = 5000
/**
 * Runs of a chunk that may fail on an error of the service's own (not the database being
 * unreachable) before its lines are run one at a time, and a line whose run still fails gets the
 * result `server_error`: a chunk that keeps failing never holds its job for ever.
 */
export const MAX_CHUNK_FAILURES = 3

const noResult = {
  service_account_number: null,
  step: null,
  status: null,
  code: null,
  errors: null
} as const

/** A line whose run failed on the service's own error every time: it fails, and the job goes on. */
function brokenRun(line: number, external: string | null): ResultRow {
  return {
    line,
    external_account_number: external,
    outcome: 'failed',
    service_account_number: null,
    step: 'stage',
    status: 500,
    code: CODE.server_error,
    errors: []
  }
}

/** A line whose text an erasure request removed before it ran: it fails, and nothing of it runs. */
function erased(line: number, external: string): ResultRow {
  return {
    line,
    external_account_number: external,
    outcome: 'failed',
    service_account_number: null,
    step: null,
    status: 410,
    code: CODE.input_erased,
    errors: []
  }
}

/** What a line holds, parsed: nothing (blank), not JSON, or an entry. */
export function readLine(text: string): { kind: 'empty' } | { kind: 'unreadable' } | { kind: 'entry'; entry: unknown } {
  if (text.trim() === '') return { kind: 'empty' }
  if (shapeProblem(Buffer.from(text)) !== undefined) return { kind: 'unreadable' }
  try {
    return { kind: 'entry', entry: JSON.parse(text) }
  } catch {
    return { kind: 'unreadable' }
  }
}

/**
 * A line's stored result from the batch engine's: what the entry sent that text cannot hold (a
 * U+0000, a lone surrogate) is not stored as sent: an external account number holding one is
 * null, an attr naming a key holding one shows U+FFFD in its place.
 */
function resultOf(line: number, result: BatchResult): ResultRow {
  return {
    line,
    external_account_number: usableExternal(result.external_account_number),
    outcome: result.outcome,
    service_account_number: result.service_account_number,
    step: result.step,
    status: result.status,
    code: result.code,
    errors: result.errors?.map(({ code, attr }) => ({ code, attr: attr === null ? null : storableText(attr) })) ?? null
  }
}

/**
 * A chunk's lines placed: the results of those that do not run (blank, erased, not JSON, a number
 * an earlier line has), and the entries of those that go to the batch engine with their lines.
 */
function placeLines(
  lines: Array<{ line: number; text: string | null; external: string | null }>,
  first: Map<string, number>
) {
  const results: ResultRow[] = []
  const entries: unknown[] = []
  const entryLines: number[] = []
  for (const line of lines) {
    const read = readLine(line.text ?? '')
    if (read.kind === 'empty' && line.external !== null) {
      // Empty yet naming a number: an erasure request took its text (a blank line names none).
      results.push(erased(line.line, line.external))
    } else if (read.kind === 'empty') {
      results.push({ line: line.line, external_account_number: null, outcome: 'skipped_blank', ...noResult })
    } else if (read.kind === 'unreadable') {
      results.push(resultOf(line.line, failedResult(null, 'stage', notJson())))
    } else if (line.external !== null && (first.get(line.external) ?? line.line) < line.line) {
      // The number is an earlier line's: only its first line of the job may migrate it.
      results.push(resultOf(line.line, failedResult(line.external, 'stage', duplicateNumber(line.external))))
    } else {
      entries.push(read.entry)
      entryLines.push(line.line)
    }
  }
  return { results, entries, entryLines }
}

/**
 * Runs import jobs a chunk at a time through the batch engine (the same rules, events, failure
 * records and slots as a batch). A chunk is claimed for a while and its claim renewed as it runs;
 * its results, counts and the job's place are stored in one transaction at its end, so a process
 * killed mid-chunk leaves the chunk to be run again by whichever process claims the job next.
 */
export function createImportJobsRunner(deps: {
  db: Db
  batches: BatchesService
  log: FastifyBaseLogger
  /** IMPORT_JOBS_PER_ORGANISATION: a job whose window opens waits while its organisation has this many going. */
  perOrganisation: number
  /** Chunks are traced under it (undefined: traces are off). */
  traceRoot?: TraceRoot | undefined
}) {
  const { batches, log } = deps
  const repo = createImportJobsRepository(deps.db)
  const me = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`

  /** One batch of a chunk's entries through the batch engine: a result per entry, or `not_ongoing` (nothing ran). */
  async function runBatch(
    job: ClaimedJob,
    principal: OrganisationPrincipal,
    accounts: unknown[]
  ): Promise<BatchResult[] | 'not_ongoing'> {
    const outcome = await batches.run(
      principal,
      {
        import_supplier: job.supplier_code,
        operations_team_name: job.team_name,
        dry_run: job.dry_run,
        accounts
      },
      log,
      { slotWaitMs: Infinity }
    )
    if (outcome.kind === 'ran') return outcome.response.results
    // The supplier stopped being Ongoing: nothing ran; the job pauses (or is cancelled) as its supplier says.
    if (outcome.reason === 'supplier_not_ongoing') return 'not_ongoing'
    // Any other refusal of the whole (the team gone): every entry fails with it.
    return accounts.map(() => failedResult(null, 'stage', outcome.error))
  }

  async function runChunk(job: ClaimedJob): Promise<void> {
    const lines = await repo.pendingLines(job.id, job.next_line, CHUNK_LINES)
    if (lines.length === 0) return repo.finishChunk(job.id, me, [], job.next_line)
    const first = await repo.firstLines(job.id, [
      ...new Set(lines.map((line) => line.external).filter((e): e is string => e !== null))
    ])
    const { results, entries, entryLines } = placeLines(lines, first)

    if (entries.length > 0) {
      const principal: OrganisationPrincipal = {
        kind: 'organisation',
        organisationId: job.organisation_id,
        organisationName: job.organisation_name,
        apiKeyId: job.api_key_id!
      }
      /** Runs entries through the batch engine and stores their results at once (the job's progress). */
      async function runAndStore(indexes: number[]): Promise<'stored' | 'not_ongoing'> {
        const answered = await runBatch(
          job,
          principal,
          indexes.map((i) => entries[i])
        )
        if (answered === 'not_ongoing') return answered
        // An account the batch finds already imported but this organisation created since the chunk
        // began was created by this job, in a run a crash cut short.
        const already = answered
          .filter((r) => r.outcome === 'already_imported' && r.external_account_number !== null)
          .map((r) => r.external_account_number!)
        const ours = await repo.createdSince(job.supplier_code, job.organisation_id, already, job.chunk_started_at)
        const rows = answered.map((result, i) => {
          const row = resultOf(entryLines[indexes[i]!]!, result)
          if (row.outcome === 'already_imported' && ours.has(row.external_account_number!)) row.outcome = 'created'
          return row
        })
        await repo.storeResults(job.id, me, rows)
        return 'stored'
      }
      const all = entries.map((_, i) => i)
      let settled: Array<PromiseSettledResult<'stored' | 'not_ongoing'>>
      if (job.chunk_failures < MAX_CHUNK_FAILURES) {
        const batchesOf = Array.from({ length: Math.ceil(all.length / BATCH_LINES) }, (_, i) =>
          all.slice(i * BATCH_LINES, (i + 1) * BATCH_LINES)
        )
        settled = await Promise.allSettled(batchesOf.map((indexes) => runAndStore(indexes)))
      } else {
        // This chunk failed every time: its lines one at a time; a line that still fails gets server_error.
        settled = []
        for (const i of all) {
          const [one] = await Promise.allSettled([runAndStore([i])])
          if (one!.status === 'rejected' && !databaseUnavailable(one!.reason)) {
            log.error({ err: one!.reason, job: job.id, line: entryLines[i] }, 'import job line failed on every run')
            results.push(brokenRun(entryLines[i]!, lines.find((l) => l.line === entryLines[i])?.external ?? null))
          } else {
            settled.push(one!)
          }
        }
      }
      // The supplier stopped being Ongoing: what did not run is run with the rest when the job goes on.
      if (settled.some((s) => s.status === 'fulfilled' && s.value === 'not_ongoing')) {
        await repo.storeResults(job.id, me, results)
        return repo.release(job.id, me)
      }
      const failed = settled.find((s) => s.status === 'rejected')
      if (failed) throw failed.reason
    }
    results.sort((a, b) => a.line - b.line)
    await repo.finishChunk(job.id, me, results, Math.max(...lines.map((line) => line.line)) + 1)
  }

  /** Claims a job and runs one chunk of it; false when there was nothing to run. */
  async function step(): Promise<boolean> {
    const job = await repo.claim(me, LEASE_SECONDS, deps.perOrganisation)
    if (!job) return false
    const renewal = setInterval(
      () => {
        repo.renew(job.id, me, LEASE_SECONDS).catch((err: unknown) => log.warn({ err }, 'import job claim not renewed'))
      },
      (LEASE_SECONDS * 1000) / 3
    )
    try {
      // Every chunk of a job goes in one trace, whose id is the job's.
      await rootSpan(
        deps.traceRoot,
        'import-job chunk',
        {
          'amis.import_job.id': job.id,
          'amis.import_job.first_line': job.next_line,
          'amis.import_job.earlier_failed_runs': job.chunk_failures
        },
        () => runChunk(job),
        { traceId: traceIdOf(job.id) }
      )
    } catch (err) {
      // The database unreachable is no fault of the chunk's: run it again without counting.
      const counted = !databaseUnavailable(err)
      log.error(
        { err, job: job.id, runs: job.chunk_failures + (counted ? 1 : 0) },
        'import job chunk failed: it will be run again'
      )
      await (counted ? repo.chunkFailed(job.id, me) : repo.release(job.id, me)).catch(() => undefined)
    } finally {
      clearInterval(renewal)
    }
    return true
  }

  return { step, settleStates: () => repo.settleStates(), releaseAllClaims: () => repo.releaseAllClaims(), me }
}

export type ImportJobsRunner = ReturnType<typeof createImportJobsRunner>

/**
 * The runner's loops in this process (`workers` of them, none with 0): each runs chunks while
 * there are any, then looks again every second or when `wake` is called (a job started here).
 */
export function createImportJobsWorker(runner: ImportJobsRunner, workers: number, log: FastifyBaseLogger) {
  const state = { running: false }
  let loops: Array<Promise<void>> = []
  let wakeUp: (() => void) | undefined
  let settledAt = 0

  const pause = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, IDLE_MS)
      function done() {
        clearTimeout(timer)
        wakeUp = undefined
        resolve()
      }
      wakeUp = done
    })

  async function loop(): Promise<void> {
    while (state.running) {
      try {
        if (Date.now() - settledAt >= SETTLE_MS) {
          settledAt = Date.now()
          await runner.settleStates()
        }
        if (!(await runner.step())) await pause()
      } catch (err) {
        log.error({ err }, 'import job runner failed; trying again shortly')
        await pause()
      }
    }
  }

  return {
    start() {
      if (state.running || workers === 0) return
      state.running = true
      loops = Array.from({ length: workers }, () => loop())
    },
    wake() {
      wakeUp?.()
    },
    async stop() {
      state.running = false
      wakeUp?.()
      await Promise.all(loops)
    }
  }
}

import { newId } from '../../ids.js'
import type { Readable } from 'node:stream'
import { CODE } from '../../../schemas/error-codes.js'
import {
  MAX_FAILURE_CODES,
  type CreateJobRequest,
  type FailureCodeCount,
  type ImportJob,
  type JobListQuery,
  type JobState,
  type LineResult,
  type StartJobRequest
} from '../../../schemas/import-jobs.js'
import { jobWindow } from '../../rules/job-window.js'
import { answer, invalidRequest, notFound, problem, type AppError } from '../../errors.js'
import { wholeRequestRefusal } from '../../accounts/precheck.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import type { AuditTarget, RecordChange } from '../audit/service.js'
import { linesOf, PartError } from './lines.js'
import { whyNotJson } from './not-json.js'
import { createImportJobsRepository, type JobRow, type ResultRow } from './repository.js'
import type { Db, Tx } from '../../db/index.js'

/** Results read per statement when a job's results or failed lines are streamed. */
const PAGE_LINES = 2000
/** Candidates for a job's lines that are not JSON, read per statement. */
const NOT_JSON_PAGE = 200

/** A line of a job that is not JSON, and why (null once the job's input is erased). */
export interface NotJsonLine {
  line: number
  reason: string | null
}

/** How far back the rate looks. */
const RATE_WINDOW_MS = 60_000

export interface ImportJobsLimits {
  /** Bytes of one part (the request body limit). */
  partBytes: number
  maxLines: number
  maxBytes: number
  perOrganisation: number
}

/** Lines given their result per second over the last minute, from the job's progress samples. */
export function rateOf(progress: Array<[number, number]>, now: number): number {
  const recent = progress.filter(([at]) => at >= now - RATE_WINDOW_MS)
  if (recent.length === 0) return 0
  // From the sample just before the window (or the window's first) to the latest.
  const before = progress.filter(([at]) => at < now - RATE_WINDOW_MS).at(-1) ?? recent[0]!
  const last = recent.at(-1)!
  const seconds = Math.max((now - before[0]) / 1000, 1)
  return Math.round(((last[1] - before[1]) / seconds) * 10) / 10
}

/** The failed lines by code, most lines first (ties by code), at most 20. */
export function failureCodesOf(counts: Record<string, number>): FailureCodeCount[] {
  return Object.entries(counts)
    .filter(([, lines]) => lines > 0)
    .map(([code, lines]) => ({ code, lines }))
    .sort((a, b) => b.lines - a.lines || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0))
    .slice(0, MAX_FAILURE_CODES)
}

/** The job as its readers see it: a cancelled job's lines without a result are `not_processed`. */
export function jobObject(row: JobRow, now = Date.now()): ImportJob {
  const notProcessed = row.state === 'CANCELLED' ? Math.max(row.total_lines - row.done, 0) : 0
  const rate = row.state === 'RUNNING' ? rateOf(row.progress, now) : 0
  const left = row.total_lines - row.done
  return {
    id: row.id,
    import_supplier: row.supplier_code,
    state: row.state,
    dry_run: row.dry_run,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
    not_before: row.not_before,
    not_after: row.not_after,
    cancelled_reason: row.state === 'CANCELLED' ? row.cancelled_reason : null,
    lines: {
      total: row.total_lines,
      done: row.done + notProcessed,
      created: row.created,
      already_imported: row.already_imported,
      would_create: row.would_create,
      failed: row.failed,
      not_processed: notProcessed,
      skipped_blank: row.skipped_blank
    },
    failure_codes: failureCodesOf(row.failure_codes),
    rate_per_second: rate,
    eta_seconds: row.state === 'RUNNING' && rate > 0 ? Math.ceil(left / rate) : null
  }
}

/** A job as the audit trail names it. */
const jobTarget = (id: string): AuditTarget => ({ type: 'import_job', id })

/** The audit records of a one-call job: its create and its start, both written in the start's transaction. */
export interface CreateAndStartRecords {
  create: RecordChange
  start: RecordChange
}

const jobNotFound = (): AppError => notFound(CODE.import_job_does_not_exist)
const notOpen = (state: string): AppError => invalidRequest([problem(CODE.import_job_not_open, null, { state })])

/** Import jobs: create, upload parts, start, read, cancel, and stream results and failed lines. */
export function createImportJobsService(db: Db, limits: ImportJobsLimits, onStarted: () => void = () => {}) {
  const repo = createImportJobsRepository(db)

  async function ownJob(principal: OrganisationPrincipal, id: string): Promise<JobRow> {
    const job = await repo.job(id, principal.organisationId)
    if (!job) throw jobNotFound()
    return job
  }

  /** Stores a part's lines as they arrive, then makes them the part (replacing an earlier upload of it). */
  async function upload(job: JobRow, part: number, body: AsyncIterable<Buffer>) {
    if (job.state !== 'OPEN') throw notOpen(job.state)
    const uploadId = newId()
    let lines = 0
    let bytes = 0
    try {
      for await (const group of linesOf(body, limits.partBytes)) {
        await repo.insertLines(job.id, uploadId, group.lines)
        lines += group.lines.length
        bytes = group.bytes
      }
    } catch (err) {
      await repo.discardUpload(uploadId)
      if (err instanceof PartError) throw partProblem(err)
      throw err
    }
    const refusal = await repo.finishUpload(
      job.id,
      part,
      { id: uploadId, lines, bytes },
      { maxLines: limits.maxLines, maxBytes: limits.maxBytes }
    )
    if (refusal === 'closed') throw notOpen((await repo.job(job.id, null))?.state ?? 'CANCELLED')
    if (refusal === 'lines') {
      throw answer(CODE.payload_too_large, [problem(CODE.too_many_lines, null, { limit: limits.maxLines })])
    }
    if (refusal === 'bytes') {
      throw answer(CODE.payload_too_large, [problem(CODE.job_too_large, null, { limit: limits.maxBytes })])
    }
    return { part, lines, bytes }
  }

  function partProblem(err: PartError): AppError {
    if (err.problem === 'oversized') return answer(CODE.payload_too_large)
    if (err.problem === 'encoding') {
      return invalidRequest([problem(CODE.invalid, null, { detail: 'The part is not valid UTF-8.' })])
    }
    return invalidRequest([problem(CODE.incomplete_line, null)])
  }

  /** The window asked for, or its 400 (checked before the job's state: a refusal changes nothing). */
  function windowOf(asked: StartJobRequest) {
    const checked = jobWindow(asked, new Date())
    if ('problems' in checked) throw invalidRequest(checked.problems)
    return checked.window
  }

  /** `record` writes the audit records of the start in its transaction. */
  async function start(
    principal: OrganisationPrincipal,
    job: JobRow,
    asked: StartJobRequest,
    record: (tx: Tx) => Promise<void>
  ): Promise<ImportJob> {
    const window = windowOf(asked)
    const refusal = await repo.start(job.id, principal.organisationId, limits.perOrganisation, window, record)
    if (refusal === 'closed') throw notOpen((await repo.job(job.id, null))?.state ?? job.state)
    if (refusal === 'busy') {
      // Retry-After: the code's wait in the catalogue.
      throw answer(CODE.too_many_jobs, [], {}, { count: limits.perOrganisation })
    }
    onStarted()
    return jobObject((await repo.job(job.id, null))!)
  }

  /** `record`, when given, writes the create's audit record in its transaction. */
  async function create(
    principal: OrganisationPrincipal,
    settings: CreateJobRequest,
    record?: RecordChange
  ): Promise<JobRow> {
    const found = await repo.supplierAndTeam(
      settings.import_supplier,
      principal.organisationId,
      settings.operations_team_name
    )
    const refusal = wholeRequestRefusal(found, settings)
    if (refusal) throw refusal
    const id = await repo.create(
      {
        organisationId: principal.organisationId,
        apiKeyId: principal.apiKeyId,
        supplierId: found.supplier!.id,
        teamId: found.teamId!,
        dryRun: settings.dry_run === true
      },
      record && ((tx, id) => record(tx, jobTarget(id)))
    )
    return (await repo.job(id, null))!
  }

  return {
    async create(
      principal: OrganisationPrincipal,
      settings: CreateJobRequest,
      record: RecordChange
    ): Promise<ImportJob> {
      return jobObject(await create(principal, settings, record))
    },

    /**
     * The one-call form: a job of one part, created and started; nothing is kept if the part is
     * refused. Its create and start are recorded together in the start's transaction: a job
     * removed for a refused part was never made.
     */
    async createAndStart(
      principal: OrganisationPrincipal,
      settings: CreateJobRequest,
      asked: StartJobRequest,
      body: Readable,
      records: CreateAndStartRecords
    ): Promise<ImportJob> {
      windowOf(asked)
      const job = await create(principal, settings)
      try {
        await upload(job, 1, body)
        return await start(principal, job, asked, async (tx) => {
          await records.create(tx, jobTarget(job.id))
          await records.start(tx, jobTarget(job.id))
        })
      } catch (err) {
        await repo.remove(job.id)
        throw err
      }
    },

    async upload(principal: OrganisationPrincipal, id: string, part: number, body: Readable) {
      return upload(await ownJob(principal, id), part, body)
    },

    async start(
      principal: OrganisationPrincipal,
      id: string,
      asked: StartJobRequest,
      record: RecordChange
    ): Promise<ImportJob> {
      const job = await ownJob(principal, id)
      windowOf(asked)
      if (job.state !== 'OPEN') throw notOpen(job.state)
      return start(principal, job, asked, (tx) => record(tx, jobTarget(job.id)))
    },

    async get(principal: OrganisationPrincipal, id: string): Promise<ImportJob> {
      return jobObject(await ownJob(principal, id))
    },

    async list(principal: OrganisationPrincipal, query: JobListQuery): Promise<ImportJob[]> {
      let supplierId: string | undefined
      if (query.import_supplier !== undefined) {
        supplierId = await repo.supplierId(query.import_supplier, principal.organisationId)
        if (supplierId === undefined) {
          throw notFound(CODE.import_process_does_not_exist)
        }
      }
      const rows = await repo.list({
        organisationId: principal.organisationId,
        supplierId,
        state: query.state,
        limit: query.limit,
        after: query.after
      })
      const now = Date.now()
      return rows.map((row) => jobObject(row, now))
    },

    async cancel(principal: OrganisationPrincipal, id: string, record: RecordChange): Promise<ImportJob> {
      const job = await ownJob(principal, id)
      if (!(await repo.cancel(job.id, (tx) => record(tx, jobTarget(job.id))))) {
        const state = (await repo.job(job.id, null))!.state
        throw invalidRequest([problem(CODE.import_job_not_cancellable, null, { state })])
      }
      return jobObject((await repo.job(job.id, null))!)
    },

    /** The job, checked to be the caller's, before a stream of its results starts. */
    ownJob,

    /**
     * Each line's result in line order, a page at a time: the lines with a result so far (a
     * cancelled job's others as `not_processed`); only the failed ones if asked.
     */
    async *results(job: JobRow, failedOnly: boolean): AsyncGenerator<LineResult[]> {
      const cancelled = job.state === 'CANCELLED' && !failedOnly
      for (let from = 1; from <= job.total_lines; from += PAGE_LINES) {
        const to = Math.min(from + PAGE_LINES - 1, job.total_lines)
        const stored = (await repo.results(job.id, from, to, failedOnly)).map(resultOf)
        if (!cancelled) {
          if (stored.length > 0) yield stored
          continue
        }
        // The lines still held without a result are not_processed; the erasure of the input gives
        // the lines it deletes that result first, so stored results and held lines make the page.
        const byLine = new Map(stored.map((result) => [result.line, result]))
        for (const line of await repo.linesIn(job.id, from, to, false)) {
          if (byLine.has(line.line)) continue
          byLine.set(line.line, {
            line: line.line,
            external_account_number: line.external,
            outcome: 'not_processed',
            service_account_number: null,
            step: null,
            status: null,
            code: null,
            errors: null
          })
        }
        const page = [...byLine.values()].sort((a, b) => a.line - b.line)
        if (page.length > 0) yield page
      }
    },

    /** The input text of each failed line, in line order, a page at a time (check `inputHeld` first). */
    async *failedLines(job: JobRow): AsyncGenerator<string[]> {
      for (let from = 1; from <= job.total_lines; from += PAGE_LINES) {
        const to = Math.min(from + PAGE_LINES - 1, job.total_lines)
        const failed = await repo.results(job.id, from, to, true)
        if (failed.length === 0) continue
        const wanted = new Set(failed.map((row) => row.line))
        const lines = await repo.linesIn(job.id, failed[0]!.line, failed.at(-1)!.line, true)
        yield lines.filter((line) => wanted.has(line.line)).map((line) => line.text!)
      }
    },

    /**
     * The input text of each line a cancelled job never ran (`not_processed`), in line order, a
     * page at a time (check `inputHeld` first); none for a job not CANCELLED.
     */
    async *unprocessedLines(job: JobRow): AsyncGenerator<string[]> {
      if (job.state !== 'CANCELLED') return
      for (let from = 1; from <= job.total_lines; from += PAGE_LINES) {
        const to = Math.min(from + PAGE_LINES - 1, job.total_lines)
        const lines = await repo.unprocessedLines(job.id, from, to)
        if (lines.length > 0) yield lines
      }
    },

    inputHeld: (job: JobRow) => repo.inputHeld(job.id)
  }
}

/**
 * The GraphQL fields' jobs: an organisation's own (`organisationId`), or every job for the
 * operator (`null`). Another organisation's job is as one that does not exist.
 */
export function createImportJobsReader(db: Db) {
  const repo = createImportJobsRepository(db)
  return {
    /** The job, or undefined for another organisation's or an id that is none. */
    async get(organisationId: string | null, id: string): Promise<ImportJob | undefined> {
      const row = await repo.job(id, organisationId)
      return row ? jobObject(row) : undefined
    },

    /** Jobs newest first; undefined when `supplierCode` names no supplier the caller may see. */
    async list(
      organisationId: string | null,
      filter: { supplierCode?: string; state?: JobState; limit: number; after?: string }
    ): Promise<ImportJob[] | undefined> {
      let supplierId: string | undefined
      if (filter.supplierCode !== undefined) {
        supplierId = await repo.supplierIdFor(filter.supplierCode, organisationId)
        if (supplierId === undefined) return undefined
      }
      const rows = await repo.list({
        organisationId,
        supplierId,
        state: filter.state,
        limit: filter.limit,
        after: filter.after
      })
      const now = Date.now()
      return rows.map((row) => jobObject(row, now))
    },

    /**
     * The job's lines that are not JSON, with the parser's reason (null once the job's input is
     * erased), the first `first` in line order; none unless its failed lines hold `invalid`.
     */
    async notJsonLines(job: Pick<ImportJob, 'id' | 'failure_codes'>, first: number): Promise<NotJsonLine[]> {
      // failure_codes names at most 20 codes: with 20, `invalid` may be among those left out.
      if (job.failure_codes.length < MAX_FAILURE_CODES && !job.failure_codes.some((f) => f.code === CODE.invalid)) {
        return []
      }
      const found: NotJsonLine[] = []
      for (let after = 0; found.length < first;) {
        const page = await repo.unreadableCandidates(job.id, after, NOT_JSON_PAGE)
        for (const { line, text } of page) {
          // An entry that is JSON but no object fails alike: it is not listed.
          const reason = text === null ? null : whyNotJson(text)
          if (reason !== undefined && found.length < first) found.push({ line, reason })
        }
        if (page.length < NOT_JSON_PAGE) break
        after = page.at(-1)!.line
      }
      return found
    },

    /**
     * Cancels the job: `missing` for another organisation's or none, `finished` once COMPLETED or
     * CANCELLED. `record` writes the cancel's audit record in its transaction.
     */
    async cancel(
      organisationId: string | null,
      id: string,
      record: RecordChange
    ): Promise<{ job: ImportJob } | { refused: 'missing' } | { refused: 'finished'; state: JobState }> {
      const row = await repo.job(id, organisationId)
      if (!row) return { refused: 'missing' }
      if (!(await repo.cancel(row.id, (tx) => record(tx, jobTarget(row.id))))) {
        return { refused: 'finished', state: (await repo.job(row.id, null))!.state }
      }
      return { job: jobObject((await repo.job(row.id, null))!) }
    }
  }
}

export type ImportJobsReader = ReturnType<typeof createImportJobsReader>

function resultOf(row: ResultRow): LineResult {
  return {
    line: row.line,
    external_account_number: row.external_account_number,
    outcome: row.outcome,
    service_account_number: row.service_account_number,
    step: row.step as LineResult['step'],
    status: row.status,
    code: row.code,
    // In the order of every other answer (jsonb keeps keys its own way).
    errors: row.errors?.map(({ code, attr }) => ({ code, attr })) ?? null
  }
}

export type ImportJobsService = ReturnType<typeof createImportJobsService>

import type { RecordChange } from '../audit/service.js'
import { CODE } from '../../../schemas/error-codes.js'
import type { Db } from '../../db/index.js'
import { AppError, fieldError } from '../../errors.js'
import { createRetentionRepository } from './repository.js'

const DAY_MS = 86_400_000

/** Processes erased per transaction: each batch holds its row locks only for a moment. */
export const RETENTION_BATCH_SIZE = 1000
/** Import job input lines deleted per transaction (a job may hold a million). */
export const JOB_LINES_BATCH_SIZE = 5000

/** `retention`: by the background job, once the period ended; `request`: by the operator's mutation. */
export type ErasureReason = 'retention' | 'request'
export type ErasureListener = (erased: { reason: ErasureReason; payloads: number }) => void

export interface RetentionOptions {
  /** Days after an account was imported or skipped before its staged data is erased (0: at once). */
  retentionDays: number
  /** The clock the period is measured with (tests move it). */
  now?: () => Date
  batchSize?: number
  /** Import job input lines deleted per transaction. */
  linesBatchSize?: number
  /** Called after each committed batch of a run (tests interrupt a run there). */
  afterBatch?: (erased: { processes: number; payloads: number }) => void | Promise<void>
}

export interface RunTotals {
  processes: number
  payloads: number
}

export interface JobInputTotals {
  /** Jobs whose input was marked erased in this run. */
  jobs: number
  /** Input lines deleted in this run (of those jobs, or of jobs marked before). */
  lines: number
}

/**
 * Personal-data retention: the staged data of an account imported or skipped more than
 * `retentionDays` ago is erased, and the error entries stored with it (the latest error and the
 * events' errors) lose their `detail`, which may quote the input. The process, its events and the
 * account stay. The operator may erase one pair at once, whatever its state.
 */
export function createRetentionService(db: Db, options: RetentionOptions) {
  const repo = createRetentionRepository(db)
  const now = options.now ?? (() => new Date())
  const batchSize = options.batchSize ?? RETENTION_BATCH_SIZE
  const linesBatchSize = options.linesBatchSize ?? JOB_LINES_BATCH_SIZE
  const listeners: ErasureListener[] = []

  function tell(reason: ErasureReason, payloads: number): void {
    if (payloads > 0) for (const listener of listeners) listener({ reason, payloads })
  }

  return {
    /** Processes imported or skipped at or before this time are due. */
    cutoff(): Date {
      return new Date(now().getTime() - options.retentionDays * DAY_MS)
    },

    /**
     * One run: batches until none is left that was due when the run started (a later one waits
     * for the next run). Safe beside other runs, on this server or others: each batch takes only
     * rows no one else holds. `shouldStop` is asked between batches (the server is closing).
     */
    async runOnce(control: { shouldStop?: () => boolean } = {}): Promise<RunTotals> {
      const cutoff = this.cutoff()
      const totals: RunTotals = { processes: 0, payloads: 0 }
      for (;;) {
        const erased = await repo.eraseBatch(cutoff, batchSize)
        totals.processes += erased.processes
        totals.payloads += erased.payloads
        tell('retention', erased.payloads)
        if (erased.processes > 0) await options.afterBatch?.(erased)
        if (erased.processes < batchSize || control.shouldStop?.() === true) return totals
      }
    },

    /**
     * The input of import jobs that finished or were cancelled more than `retentionDays` ago:
     * each such job is marked erased (its failed lines answer 410 from then on), then its lines
     * are deleted in batches of `linesBatchSize`, each in its own short transaction taking only
     * rows no one else holds. Results stay. A run stopped halfway leaves the rest to the next.
     */
    async eraseJobInputs(control: { shouldStop?: () => boolean } = {}): Promise<JobInputTotals> {
      const cutoff = this.cutoff()
      const totals: JobInputTotals = { jobs: 0, lines: 0 }
      for (;;) {
        const marked = await repo.markJobInputsErased(cutoff, batchSize)
        totals.jobs += marked
        if (marked < batchSize || control.shouldStop?.() === true) break
      }
      for (;;) {
        if (control.shouldStop?.() === true) return totals
        const lines = await repo.eraseJobLinesBatch(linesBatchSize)
        totals.lines += lines
        if (lines < linesBatchSize) return totals
      }
    },

    /**
     * The operator's erasure of one pair (a person's request), whatever its state; the pair's
     * lines in every import job of the supplier lose their text at the same time.
     */
    async eraseStagedData(supplier: { id: string; code: string }, externalAccountNumber: string, record: RecordChange) {
      const { process: erased, jobLines } = await repo.erasePair(supplier.id, externalAccountNumber, 'operator', (tx) =>
        record(tx, { type: 'import_process', id: `${supplier.code}/${externalAccountNumber}` })
      )
      if (!erased) {
        const missing = fieldError(CODE.not_found, {
          what: `Import process ${supplier.code} / ${externalAccountNumber}`
        })
        if (jobLines === 0) throw missing
        // What was erased all the same: a report of work done, not a wording of what went wrong.
        const lines = jobLines === 1 ? 'Its 1 line in import jobs was' : `Its ${jobLines} lines in import jobs were`
        throw new AppError(missing.statusCode, missing.code, `${missing.message} ${lines} erased.`)
      }
      tell('request', erased.payloadErased ? 1 : 0)
      return {
        importSupplierCode: supplier.code,
        externalAccountNumber,
        state: erased.state,
        serviceAccountNumber: erased.serviceAccountNumber
      }
    },

    /** Tells `listener` of every erasure of staged data from now on. */
    onErased(listener: ErasureListener): void {
      listeners.push(listener)
    }
  }
}

export type RetentionService = ReturnType<typeof createRetentionService>

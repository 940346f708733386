import { CODE } from '../../../schemas/error-codes.js'
import type { Db } from '../../db/index.js'
import { fieldError } from '../../errors.js'
import { createRetentionRepository } from './repository.js'

const DAY_MS = 86_400_000

/** Processes erased per transaction: each batch holds its row locks only for a moment. */
export const RETENTION_BATCH_SIZE = 1000

/** `retention`: by the background job, once the period ended; `request`: by the operator's mutation. */
export type ErasureReason = 'retention' | 'request'
export type ErasureListener = (erased: { reason: ErasureReason; payloads: number }) => void

export interface RetentionOptions {
  /** Days after an account was imported or skipped before its staged data is erased (0: at once). */
  retentionDays: number
  /** The clock the period is measured with (tests move it). */
  now?: () => Date
  batchSize?: number
  /** Called after each committed batch of a run (tests interrupt a run there). */
  afterBatch?: (erased: { processes: number; payloads: number }) => void | Promise<void>
}

export interface RunTotals {
  processes: number
  payloads: number
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

    /** The operator's erasure of one pair (a person's request), whatever its state. */
    async eraseStagedData(supplier: { id: string; code: string }, externalAccountNumber: string) {
      const erased = await repo.erasePair(supplier.id, externalAccountNumber, 'operator')
      if (!erased) {
        throw fieldError(CODE.not_found, {
          detail: `No import process for ${supplier.code} / ${externalAccountNumber}.`
        })
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

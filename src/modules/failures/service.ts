import type { FastifyBaseLogger } from 'fastify'
import { SUPPLIER_CODE } from '../../../schemas/common.js'
import { CODE } from '../../../schemas/error-codes.js'
import { isWellFormed, storableText } from '../../../schemas/text.js'
import type { Db } from '../../db/index.js'
import { onPrimary, type Reads } from '../../db/replica.js'
import type { ErrorEntry } from '../../errors.js'
import { formatDateTime } from '../../format.js'
import { createFailuresRepository, STEPS, type FailureFilter, type FailureRow, type Step } from './repository.js'
import { createTimeline, minuteOf } from './timeline.js'

export { STEPS, type Step }

/** How a request of a step was answered, as far as failure records care. */
export interface Answer {
  step: Step
  /** As the request sent them: anything; nothing is recorded unless they are usable. */
  supplierCode: unknown
  externalAccountNumber: unknown
  organisationId: string
  status: number
  code: string
  errors: ErrorEntry[]
}

/** Told of every recorded failure (the metrics counter). */
export type FailureListener = (failure: { supplierCode: string; step: Step; codes: string[] }) => void

/** Entry codes whose answer is about another request, not the account: never recorded. */
const NOT_RECORDED_CODES = new Set<string>([CODE.account_import_in_progress, CODE.account_import_skipped])
/** Answers that clear validate, stage and create: the account is fine (or already there). */
const CLEARING_CODES = new Set<string>([CODE.account_already_imported, CODE.dry_run_rolled_back])
export const ACCOUNT_STEPS: readonly Step[] = ['validate', 'stage', 'create']

/** A usable external account number: 1–128 characters, no leading or trailing whitespace. */
export function isExternalAccountNumber(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length > 0 &&
    value === value.trim() &&
    Array.from(value).length <= 128 &&
    isWellFormed(value)
  )
}

/**
 * A code a supplier can have. Any other (a NUL in it, lower case, too long) names no supplier, so
 * there is no record to write or clear, and it never reaches a query (PostgreSQL refuses a NUL).
 */
export function isSupplierCode(value: unknown): value is string {
  return typeof value === 'string' && SUPPLIER_CODE.test(value)
}

/** The failure list's `after`: an external account number, or `<external>:<step>`. */
export function parseAfter(after: string): { external: string; step?: Step } {
  const at = after.lastIndexOf(':')
  const step = after.slice(at + 1) as Step
  return at >= 0 && STEPS.includes(step) ? { external: after.slice(0, at), step } : { external: after }
}

export interface FailureItem {
  external_account_number: string
  step: Step
  failed_at: string
  attempts: number
  http_status: number
  code: string
  errors: Array<{ code: string; attr: string | null }>
}

export const failureItem = (row: FailureRow): FailureItem => ({
  external_account_number: row.externalAccountNumber,
  step: row.step,
  failed_at: formatDateTime(row.failedAt),
  attempts: row.attempts,
  http_status: row.httpStatus,
  code: row.code,
  errors: row.errors
})

/**
 * Failure records and the timeline: what is recorded and cleared, and the reads. Recording
 * never fails a request: a problem is logged and the answer goes out as it was.
 */
export function createFailuresService(db: Db, options: { log: FastifyBaseLogger; reads?: Reads }) {
  const repo = createFailuresRepository(db)
  // The lists, the summary and the timeline may lag by a moment: on the read replica when there is one.
  const reads = (options.reads ?? onPrimary(db)).repository(createFailuresRepository)
  const listeners: FailureListener[] = []
  const timeline = createTimeline(repo, { log: options.log })

  return {
    repo,
    timeline,

    /**
     * Settles the records of a step after its answer: a 400 or 500 records a failure (with the
     * exceptions below), `account_already_imported` and a successful dry run clear validate, stage
     * and create. A 2xx is cleared by the service that answered it, within its own writes.
     */
    async settle(answer: Answer, log: FastifyBaseLogger = options.log): Promise<void> {
      const { supplierCode, externalAccountNumber: external } = answer
      if (!isSupplierCode(supplierCode) || !isExternalAccountNumber(external)) return
      try {
        if (CLEARING_CODES.has(answer.code)) {
          await repo.clearStatement(
            db,
            { supplierCode, organisationId: answer.organisationId, externalAccountNumber: external },
            ACCOUNT_STEPS
          )
          return
        }
        if (answer.status !== 400 && answer.status !== 500) return
        if (answer.errors.some((e) => NOT_RECORDED_CODES.has(e.code))) return
        // An attr names the keys sent, which may hold what text cannot (an unexpected key with a NUL).
        const errors = answer.errors
          .slice(0, 100)
          .map((e) => ({ code: e.code, attr: e.attr === null ? null : storableText(e.attr) }))
        const supplierId = await repo.record({
          supplierCode,
          organisationId: answer.organisationId,
          externalAccountNumber: external,
          step: answer.step,
          httpStatus: answer.status,
          code: answer.code,
          errors
        })
        if (supplierId === undefined) return
        timeline.count(supplierId, 'failed')
        const codes = errors.length > 0 ? [...new Set(errors.map((e) => e.code))] : [answer.code]
        for (const listener of listeners) listener({ supplierCode, step: answer.step, codes })
      } catch (err) {
        log.error({ err, step: answer.step }, 'failure record could not be written; the answer is sent unchanged')
      }
    },

    /** Clears a step's record after its success (post-import endpoints). Never throws. */
    async cleared(
      answer: Omit<Answer, 'status' | 'code' | 'errors'>,
      log: FastifyBaseLogger = options.log
    ): Promise<void> {
      const { supplierCode, externalAccountNumber: external } = answer
      if (!isSupplierCode(supplierCode) || !isExternalAccountNumber(external)) return
      try {
        await repo.clearStatement(
          db,
          { supplierCode, organisationId: answer.organisationId, externalAccountNumber: external },
          [answer.step]
        )
      } catch (err) {
        log.error({ err, step: answer.step }, 'failure record could not be cleared')
      }
    },

    /** A page of a supplier's failure records, by external account number then step. */
    async list(supplierId: string, filter: FailureFilter): Promise<FailureItem[]> {
      return (await reads.read((r) => r.list(supplierId, filter))).map(failureItem)
    },

    /**
     * A whole list as chunks of items, to be streamed. The first chunk is read here, so a
     * database that fails at once still gets a normal error response (and an unreachable
     * replica, the primary); later failures surface from the generator.
     */
    async stream(
      supplierId: string,
      filter: Omit<FailureFilter, 'limit'>
    ): Promise<AsyncGenerator<FailureItem[], void, undefined>> {
      const { chunks, first } = await reads.read(async (r) => {
        const chunks = r.chunks(supplierId, filter)
        return { chunks, first: await chunks.next() }
      })
      return (async function* items() {
        if (first.done) return
        yield first.value.map(failureItem)
        for await (const rows of chunks) yield rows.map(failureItem)
      })()
    },

    /** The failure-summary body. */
    async summary(supplierId: string) {
      const { failingAccounts, byStep, byCode } = await reads.read((r) => r.summary(supplierId))
      const steps = Object.fromEntries(STEPS.map((s) => [s, 0])) as Record<Step, number>
      for (const row of byStep) steps[row.step] = row.accounts
      const codes = byCode.sort(
        (a, b) =>
          b.accounts - a.accounts ||
          STEPS.indexOf(a.step) - STEPS.indexOf(b.step) ||
          (a.code < b.code ? -1 : a.code > b.code ? 1 : 0)
      )
      return { failing_accounts: failingAccounts, by_step: steps, by_code: codes }
    },

    failingAccounts: (supplierId: string) => reads.read((r) => r.failingAccounts(supplierId)),

    /** The last `minutes` minutes, the current one included, with this process's counts written first. */
    async readTimeline(supplierId: string, minutes: number) {
      await timeline.flush()
      const rows = await reads.read((r) => r.timeline(supplierId, minuteOf(timeline.now()), minutes))
      return rows.map((r) => ({
        minute: formatDateTime(r.minute),
        staged: r.staged,
        created: r.created,
        failed: r.failed
      }))
    },

    /** Tells `listener` of every failure recorded from now on. */
    onFailure(listener: FailureListener): void {
      listeners.push(listener)
    },

    close: () => timeline.close()
  }
}

export type FailuresService = ReturnType<typeof createFailuresService>

import type { AccountData } from '../../../schemas/account.js'
import type { BatchResult } from '../../../schemas/batches.js'
import type { SectionListing } from '../../../schemas/sections.js'
import { CODE } from '../../../schemas/error-codes.js'
import { accountFailed, AppError, invalidRequest, problem, type ErrorEntry } from '../../errors.js'
import { isObject } from '../../objects.js'

export type FailedStep = Exclude<BatchResult['step'], null>

/** One entry of a batch as it goes through the steps. */
export interface Entry {
  index: number
  /** As sent, when a string. */
  external: string | null
  raw: Record<string, unknown>
  /** Validated and normalised: ready to stage. */
  data?: AccountData
  outcome?: 'created' | 'already_imported' | 'would_create'
  serviceAccountNumber?: string
  ledgers?: Array<{ ledger_code: string; ledger_number: string }>
  failure?: { step: FailedStep; error: AppError }
  /** The sections were planned with the set-based create (`sectionFailure`: the one that failed). */
  sectionsPlanned?: boolean
  sectionFailure?: { step: FailedStep; error: AppError } | undefined
  /** The sections were written with the account. */
  sectionsDone?: boolean
}

/**
 * An entry's shape: an object with `account` and known sections only, for the batch's supplier.
 * Pure: what it finds is the entry's stage failure.
 */
export function examineEntry(
  raw: unknown,
  index: number,
  supplierCode: string,
  sectionNames: readonly string[]
): Entry {
  if (!isObject(raw)) {
    return {
      index,
      external: null,
      raw: {},
      failure: {
        step: 'stage',
        error: invalidRequest([
          problem(CODE.invalid, null, { detail: 'An entry must be an object holding an account.' })
        ])
      }
    }
  }
  const account = raw.account
  const external =
    isObject(account) && typeof account.external_account_number === 'string' ? account.external_account_number : null
  const e: Entry = { index, external, raw }
  const shape: ErrorEntry[] = []
  if (account === undefined) shape.push(problem(CODE.required, 'account', { detail: 'This field is required.' }))
  for (const key of Object.keys(raw)) {
    if (key !== 'account' && !sectionNames.includes(key)) {
      shape.push(problem(CODE.unexpected_field, key, { detail: 'This field is not expected here.' }))
    }
  }
  if (shape.length > 0) e.failure = { step: 'stage', error: invalidRequest(shape) }
  else if (
    isObject(account) &&
    typeof account.import_supplier === 'string' &&
    account.import_supplier !== supplierCode
  ) {
    e.failure = {
      step: 'stage',
      error: accountFailed([
        problem(CODE.import_supplier_mismatch, 'import_supplier', {
          account_supplier: account.import_supplier,
          batch_supplier: supplierCode
        })
      ])
    }
  }
  return e
}

/**
 * An entry whose external account number an earlier entry has, in its batch or in an earlier line
 * of its import job: only the first may migrate it.
 */
export function duplicateNumber(external: string): AppError {
  return accountFailed([
    problem(CODE.duplicate_external_account_number, 'external_account_number', { external_account_number: external })
  ])
}

/** An import job's line that is not a JSON text: it fails alone, as an unparseable single request would. */
export function notJson(): AppError {
  return invalidRequest([problem(CODE.invalid, null, { detail: 'A line must be one JSON text.' })])
}

/** The result of an entry that failed at `step` with `error`. */
export function failedResult(
  external: string | null,
  step: FailedStep,
  error: AppError,
  serviceAccountNumber: string | null = null
): BatchResult {
  return {
    external_account_number: external,
    outcome: 'failed',
    service_account_number: serviceAccountNumber,
    step,
    status: error.statusCode,
    code: error.code,
    errors: error.errors
  }
}

/** A request of an entry's section as its endpoint takes it; `root` prefixes its attrs (`1.` for a list's second request). */
export interface SectionRequest {
  request: Record<string, unknown>
  root: string
}

export interface LedgerRef {
  ledger_code: string
  ledger_number: string
}

/**
 * The requests an entry's section makes, by the section's form: a list goes under its key, an
 * object's fields are the request's, and a per-ledger section makes one request per ledger
 * (an object or a list of them), each with the ledger number of its `ledger_code` (default
 * ENERGY) filled in. Throws the 400 of a value of the wrong form (rooted).
 */
export function requestsOf(
  section: SectionListing,
  value: unknown,
  ref: Record<string, string>,
  ledgers: readonly LedgerRef[]
): SectionRequest[] {
  const form = section.entry
  if ('list' in form) return [{ request: { ...ref, [form.list]: value }, root: '' }]
  if ('object' in form) {
    if (!isObject(value)) {
      throw invalidRequest([problem(CODE.invalid, null, { detail: `${section.name} must be an object.` })])
    }
    return [{ request: { ...ref, ...value }, root: '' }]
  }
  const items = Array.isArray(value) ? value : [value]
  return items.map((item, k) => {
    const root = Array.isArray(value) ? `${k}.` : ''
    try {
      if (!isObject(item)) {
        throw invalidRequest([
          problem(CODE.invalid, null, { detail: `Each ${section.name} request must be an object.` })
        ])
      }
      if (item.ledger_number !== undefined) {
        throw invalidRequest([
          problem(CODE.unexpected_field, 'ledger_number', {
            detail: 'The service fills in the ledger number from ledger_code.'
          })
        ])
      }
      const code = item.ledger_code ?? 'ENERGY'
      const ledger = ledgers.find((l) => l.ledger_code === code)
      if (typeof code === 'string' && !ledger) {
        throw invalidRequest([problem(CODE.ledger_not_found, 'ledger_code', { ledger: code })])
      }
      return { root, request: { ...ref, ...item, ledger_code: code, ledger_number: ledger?.ledger_number ?? '' } }
    } catch (err) {
      throw rooted(err, root)
    }
  })
}

/** Two requests of a per-ledger section for one ledger: their rules read each other's rows. */
export function twoForOneLedger(section: SectionListing, value: unknown): boolean {
  return (
    'perLedger' in section.entry &&
    Array.isArray(value) &&
    new Set(value.map((item) => (isObject(item) ? (item.ledger_code ?? 'ENERGY') : item))).size < value.length
  )
}

/** A problem of one request of a list, its attrs rooted at the request's index (`1.` + attr). */
export function rooted(err: unknown, root: string): unknown {
  if (root === '' || !(err instanceof AppError) || err.extra.rooted === true) return err
  const errors = err.errors.map((x) => ({ ...x, attr: x.attr === null ? root.slice(0, -1) : root + x.attr }))
  return new AppError(err.statusCode, err.code, err.message, errors, { ...err.extra, rooted: true }, err.headers)
}

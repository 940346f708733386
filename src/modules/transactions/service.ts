import { newId } from '../../ids.js'
import type { TransactionResult, TransactionsQuery, TransactionsRequest } from '../../../schemas/transaction-import.js'
import type { Db } from '../../db/index.js'
import { sumDecimals } from '../../decimal.js'
import { AppError, invalidRequest, problem, sortEntries, type AttachedInput, type ErrorEntry } from '../../errors.js'
import { CODE } from '../../../schemas/error-codes.js'
import { ruleContext, utcToday } from '../../rules/context.js'
import { signedAmount, transactionRules } from '../../rules/transactions.js'
import { addTransaction, type AccountRows } from '../../accounts/plan.js'
import { createAccountsRepository } from '../../accounts/repository.js'
import { normaliseTransaction } from '../../rules/transactions.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import type { NoteInsert } from '../notes/repository.js'
import { type PostImportBase } from '../post-import/base.js'
import { createTransactionsRepository } from './repository.js'

const IN_TRANSACTION = /^transactions\.(\d+)(\.|$)/

const noEnergyLedger = () => invalidRequest([problem(CODE.ledger_not_found, null, { ledger: 'ENERGY' })])

/**
 * The body of for a problem inside a transaction: every problem of the lowest-indexed failing
 * transaction, with `code` and `attr` copied from the first.
 */
function transactionImportError(sent: unknown, errors: ErrorEntry[]): AppError {
  const sorted = sortEntries(errors)
  const first = sorted[0]!
  return new AppError(400, first.code, 'The transaction could not be imported.', sorted, {
    attr: first.attr,
    status: 'TRANSACTION_IMPORT_ERROR',
    error_detail: first.detail,
    transaction_data: sent
  })
}

/** Groups entries by the transaction they point into; undefined when one points elsewhere. */
function byTransaction(errors: ErrorEntry[]): Map<number, ErrorEntry[]> | undefined {
  const groups = new Map<number, ErrorEntry[]>()
  for (const e of errors) {
    const m = e.attr === null ? null : IN_TRANSACTION.exec(e.attr)
    if (!m) return undefined
    const index = Number(m[1])
    groups.set(index, [...(groups.get(index) ?? []), e])
  }
  return groups
}

const lowest = (groups: Map<number, ErrorEntry[]>): number => Math.min(...groups.keys())

/** The account's ENERGY ledger as a transactions request sees it. */
export interface EnergyLedger {
  id: string
  /** The open statement's first day. */
  openFrom: string
  openStatementId: string
  /** Ids of the request's transactions the ledger already holds. */
  existing: string[]
}

/** What a transactions request stores and answers. */
export interface TransactionsPlan {
  results: TransactionResult[]
  rows: Pick<AccountRows, 'transactions' | 'lineItems' | 'taxItems'>
  /** The signed sum of the added transactions (0 when none). */
  delta: string
  /** The pinned note listing the transactions moved into the open statement, if any. */
  note: NoteInsert | undefined
  detail: Record<string, unknown> | undefined
}

/** Schema problems inside one transaction get the transaction body; others the standard one. */
function checkSchema<T extends Pick<TransactionsRequest, 'transactions'>>(
  body: unknown,
  schemaErrors: ErrorEntry[],
  today: string
): asserts body is T {
  if (schemaErrors.length === 0) return
  const groups = byTransaction(schemaErrors)
  if (!groups) throw invalidRequest(schemaErrors)
  // Every problem is inside a transaction, so the body is an object with a transactions array.
  const transaction = (body as { transactions: unknown[] }).transactions[lowest(groups)]
  const index = lowest(groups)
  const ctx = ruleContext(groups.get(index)!, today)
  transactionRules(transaction, `transactions.${index}`, ctx)
  throw transactionImportError(transaction, ctx.errors)
}

/** The rules that read only the request (they come after the account is found): problems by transaction index. */
function checkRules(body: Pick<TransactionsRequest, 'transactions'>, today: string): Map<number, ErrorEntry[]> {
  // Ids repeated inside the request concern the array as a whole: the standard body.
  const seen = new Set<string>()
  const duplicates: ErrorEntry[] = []
  body.transactions.forEach((t, i) => {
    if (seen.has(t.transaction_id)) {
      duplicates.push(
        problem(CODE.duplicate_transaction_ids, `transactions.${i}.transaction_id`, {
          transaction_id: t.transaction_id
        })
      )
    }
    seen.add(t.transaction_id)
  })
  if (duplicates.length > 0) throw invalidRequest(duplicates)
  const ruleErrors = ruleContext([], today)
  body.transactions.forEach((t, i) => transactionRules(t, `transactions.${i}`, ruleErrors))
  return byTransaction(ruleErrors.errors) ?? new Map<number, ErrorEntry[]>()
}

/**
 * The transactions of a request against the ENERGY ledger: added, already there, or moved into
 * the open statement; all or nothing (throws the transaction body of the lowest failing one).
 * Pure: the single endpoint and batches both use it.
 */
export function planTransactions(
  body: Pick<TransactionsRequest, 'transactions'>,
  query: TransactionsQuery,
  account: { id: string },
  ledger: EnergyLedger,
  today: string,
  problems: Map<number, ErrorEntry[]>
): TransactionsPlan {
  const checkPreviouslyAdded = query.check_previously_added !== false
  const force = query.force_add_to_current_statement !== false
  const existing = new Set(ledger.existing)
  const add = (i: number, entry: ErrorEntry) => problems.set(i, [...(problems.get(i) ?? []), entry])

  const rows: TransactionsPlan['rows'] = { transactions: [], lineItems: [], taxItems: [] }
  const results: TransactionResult[] = []
  const moved: string[] = []
  const added: Array<TransactionsRequest['transactions'][number]> = []
  body.transactions.forEach((sent, i) => {
    const data: TransactionsRequest['transactions'][number] & { original_transaction_date?: string } =
      structuredClone(sent)
    normaliseTransaction(data)
    if (existing.has(sent.transaction_id)) {
      if (checkPreviouslyAdded) results.push({ status: 'TRANSACTION_ALREADY_EXISTS', transaction_data: data })
      else {
        add(
          i,
          problem(CODE.transaction_already_exists, `transactions.${i}.transaction_id`, {
            transaction_id: sent.transaction_id
          })
        )
      }
      return
    }
    let description: string | undefined
    if (sent.transaction_date < ledger.openFrom) {
      if (!force) {
        add(
          i,
          problem(CODE.transaction_outside_open_statement_period, `transactions.${i}.transaction_date`, {
            date: ledger.openFrom
          })
        )
        return
      }
      if (ledger.openFrom > today) {
        add(
          i,
          problem(CODE.transaction_outside_open_statement_period, `transactions.${i}.transaction_date`, {
            date: `${ledger.openFrom}, after today`
          })
        )
        return
      }
      description = `Moved into the open statement: originally dated ${sent.transaction_date}.`
      data.original_transaction_date = sent.transaction_date
      data.transaction_date = ledger.openFrom
      moved.push(sent.transaction_id)
    }
    addTransaction(rows, data, ledger.id, ledger.openStatementId, 'POST_IMPORT', {
      description,
      originalTransactionDate: data.original_transaction_date
    })
    added.push(data)
    results.push({ status: 'TRANSACTION_ADDED_TO_ACCOUNT', transaction_data: data })
  })
  if (problems.size > 0) {
    const index = lowest(problems)
    throw transactionImportError(body.transactions[index], problems.get(index)!)
  }
  const delta = sumDecimals(added.map((t) => signedAmount(t.type, t.amount)))
  // One pinned note per request says which transactions were moved.
  const note: NoteInsert | undefined =
    moved.length === 0
      ? undefined
      : {
          id: newId(),
          accountId: account.id,
          bySystem: true,
          isPinned: true,
          documentLocations: [],
          noteCreatedAt: new Date(),
          body: `Transactions dated before the open statement (from ${ledger.openFrom}) were moved into it: ${moved.join(', ')}.`
        }
  const detail =
    added.length > 0
      ? {
          added: added.length,
          already_existing: results.length - added.length,
          moved: moved.length
        }
      : undefined
  return { results, rows, delta: delta.toFixed(), note, detail }
}

export function createTransactionsService(base: PostImportBase, db: Db) {
  const repo = createTransactionsRepository()
  const accounts = createAccountsRepository(db)

  return {
    /**
     * Adds transactions to the account's ENERGY ledger in request order, all or nothing.
     * `schemaErrors` are the route's schema problems: inside one transaction they get the
     * transaction body, otherwise the standard one.
     */
    async create(principal: OrganisationPrincipal, { body, schemaErrors }: AttachedInput, query: TransactionsQuery) {
      const today = utcToday()
      checkSchema<TransactionsRequest>(body, schemaErrors, today)
      const account = await base.resolve(principal, body.import_supplier, body.external_account_number)
      const problems = checkRules(body, today)
      const ids = body.transactions.map((t) => t.transaction_id)
      return base.readAndWrite(
        principal,
        account,
        (tx) => repo.energyLedger(tx, account.id, ids),
        async (tx, [ledger]) => {
          if (!ledger) throw noEnergyLedger()
          const plan = planTransactions(body, query, account, ledger, today, problems)
          // The inserts, the balance, the note and the event go in one round trip.
          const writes = accounts.transactionInserts(tx, plan.rows)
          if (plan.rows.transactions.length > 0) writes.push(base.repo.addToBalance(tx, ledger.id, plan.delta))
          if (plan.note) writes.push(repo.noteStatement(tx, plan.note))
          return { result: { results: plan.results }, detail: plan.detail, writes }
        }
      )
    },

    /** The rules of a request and its plan against a ledger known without the database (a batch's new account). */
    planForNewAccount(
      body: unknown,
      schemaErrors: ErrorEntry[],
      account: { id: string },
      ledger: EnergyLedger | undefined,
      today: string
    ): TransactionsPlan {
      checkSchema(body, schemaErrors, today)
      const problems = checkRules(body, today)
      if (!ledger) throw noEnergyLedger()
      return planTransactions(body, {}, account, ledger, today, problems)
    }
  }
}

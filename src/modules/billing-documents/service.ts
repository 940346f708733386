import { newId } from '../../ids.js'
import { CODE } from '../../../schemas/error-codes.js'
import type { BillingDocumentsRequest } from '../../../schemas/billing-documents.js'
import type { Transaction } from '../../../schemas/transactions.js'
import type { Db } from '../../db/index.js'
import { formatDecimal } from '../../decimal.js'
import { ruleContext, utcToday, type RuleContext } from '../../rules/context.js'
import { transactionRules } from '../../rules/transactions.js'
import { addTransaction, type AccountRows } from '../../accounts/plan.js'
import { createAccountsRepository } from '../../accounts/repository.js'
import { normaliseTransaction } from '../../rules/transactions.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import { type PostImportBase } from '../post-import/base.js'
import { invalidRequest } from '../../errors.js'
import { createBillingDocumentsRepository, type BillingDocumentInsert, type StoredHistory } from './repository.js'

/** A transaction of the request with the path its problems are reported at. */
export interface PlacedTransaction {
  transaction: Transaction
  path: string
}

/** Every transaction of the request in request order: each document's, then the additional ones. */
function transactionsOf(request: BillingDocumentsRequest): PlacedTransaction[] {
  const placed: PlacedTransaction[] = []
  request.historical_billing_documents.forEach((doc, i) =>
    (doc.transactions ?? []).forEach((transaction, t) =>
      placed.push({ transaction, path: `historical_billing_documents.${i}.transactions.${t}` })
    )
  )
  ;(request.additional_historical_transactions ?? []).forEach((transaction, t) =>
    placed.push({ transaction, path: `additional_historical_transactions.${t}` })
  )
  return placed
}

/** The rules that need nothing from the database, and every transaction rule. */
function checkRequest(request: BillingDocumentsRequest, placed: PlacedTransaction[], ctx: RuleContext): void {
  const identifiers = new Set<string>()
  request.historical_billing_documents.forEach((doc, i) => {
    const path = `historical_billing_documents.${i}`
    if (identifiers.has(doc.billing_document_identifier)) {
      ctx.report(CODE.duplicate_billing_document_identifiers, `${path}.billing_document_identifier`, {
        identifier: doc.billing_document_identifier
      })
    }
    identifiers.add(doc.billing_document_identifier)
    if (doc.billing_document_type !== request.billing_document_type) {
      ctx.report(CODE.billing_document_type_mismatch, `${path}.billing_document_type`, {
        document_type: doc.billing_document_type,
        request_type: request.billing_document_type
      })
    }
    if (doc.billing_document_type === 'PERIOD_BASED' && doc.bill_period_from_date > doc.bill_period_to_date) {
      ctx.report(CODE.start_date_later_than_end_date, `${path}.bill_period_to_date`, {
        end: 'bill_period_to_date',
        start: 'bill_period_from_date'
      })
    }
  })
  const ids = new Set<string>()
  for (const { transaction, path } of placed) {
    if (ids.has(transaction.transaction_id)) {
      ctx.report(CODE.duplicate_transaction_ids, `${path}.transaction_id`, {
        transaction_id: transaction.transaction_id
      })
    }
    ids.add(transaction.transaction_id)
    transactionRules(transaction, path, ctx)
  }
}

/**
 * A transaction as comparable text: every stored field, decimals in their text form (so equal values
 * compare equal however they were written), line and tax items in order.
 */
function transactionKey(t: {
  transaction_id: string
  type: string
  transaction_date: string
  amount: unknown
  reason?: string | null
  display_note?: string | null
  note?: string | null
  reference?: string | null
  payment_type?: string | null
  product_code?: string | null
  line_items?: Array<{
    rate_band: string
    start_date: string
    end_date: string
    number_of_units: unknown
    net_amount: unknown
    price_per_unit: unknown
    units?: unknown[] | null
  }>
  tax_items?: Array<{ amount: unknown; tax_type: string; value_taxed: unknown; rate: unknown; unit_type: string }>
}): string {
  return JSON.stringify([
    t.transaction_id,
    t.type,
    t.transaction_date,
    formatDecimal(t.amount),
    t.reason ?? null,
    t.display_note ?? null,
    t.note ?? null,
    t.reference ?? null,
    t.payment_type ?? null,
    t.product_code ?? null,
    (t.line_items ?? []).map((l) => [
      l.rate_band,
      l.start_date,
      l.end_date,
      formatDecimal(l.number_of_units),
      formatDecimal(l.net_amount),
      formatDecimal(l.price_per_unit),
      l.units ? l.units.map(formatDecimal) : null
    ]),
    (t.tax_items ?? []).map((x) => [
      formatDecimal(x.amount),
      x.tax_type,
      formatDecimal(x.value_taxed),
      formatDecimal(x.rate),
      x.unit_type
    ])
  ])
}

const documentKey = (
  identifier: string,
  type: string,
  issued: string,
  from: string | null,
  to: string | null,
  transactions: string[]
) => JSON.stringify([identifier, type, issued, from, to, [...transactions].sort()])

/** The request as comparable text: documents and transactions as sets (order does not matter). */
function requestKey(request: BillingDocumentsRequest): string {
  const documents = request.historical_billing_documents.map((doc) =>
    documentKey(
      doc.billing_document_identifier,
      doc.billing_document_type,
      doc.issued_date,
      doc.billing_document_type === 'PERIOD_BASED' ? doc.bill_period_from_date : null,
      doc.billing_document_type === 'PERIOD_BASED' ? doc.bill_period_to_date : null,
      (doc.transactions ?? []).map(transactionKey)
    )
  )
  const additional = (request.additional_historical_transactions ?? []).map(transactionKey)
  return JSON.stringify([documents.sort(), additional.sort()])
}

/** Items grouped by `key`, in their order, as `map` makes them. */
function groupBy<T, K, V = T>(
  items: T[],
  key: (item: T) => K,
  map: (item: T) => V = (item) => item as unknown as V
): Map<K, V[]> {
  const groups = new Map<K, V[]>()
  for (const item of items) {
    const group = groups.get(key(item))
    if (group) group.push(map(item))
    else groups.set(key(item), [map(item)])
  }
  return groups
}

/** What is stored, as the same comparable text. */
function storedKey(history: StoredHistory): string {
  const lines = groupBy(history.lineItems, (l) => l.transactionId)
  const taxes = groupBy(history.taxItems, (x) => x.transactionId)
  const keyed = groupBy(
    history.transactions,
    (t) => t.billingDocumentId,
    (t) =>
      transactionKey({
        transaction_id: t.transactionId,
        type: t.type,
        transaction_date: t.transactionDate,
        amount: t.amount,
        reason: t.reason,
        display_note: t.displayNote,
        note: t.note,
        reference: t.reference,
        payment_type: t.paymentType,
        product_code: t.productCode,
        line_items: (lines.get(t.id) ?? []).map((l) => ({
          rate_band: l.rateBand,
          start_date: l.startDate,
          end_date: l.endDate,
          number_of_units: l.numberOfUnits,
          net_amount: l.netAmount,
          price_per_unit: l.pricePerUnit,
          units: l.units
        })),
        tax_items: (taxes.get(t.id) ?? []).map((x) => ({
          amount: x.amount,
          tax_type: x.taxType,
          value_taxed: x.valueTaxed,
          rate: x.rate,
          unit_type: x.unitType
        }))
      })
  )
  const documents = history.documents.map((d) =>
    documentKey(d.identifier, d.type, d.issuedDate, d.billPeriodFrom, d.billPeriodTo, keyed.get(d.id) ?? [])
  )
  const additional = keyed.get(null) ?? []
  return JSON.stringify([documents.sort(), additional.sort()])
}

/** What a billing documents request stores. */
export interface BillingDocumentsPlan {
  documents: BillingDocumentInsert[]
  rows: Pick<AccountRows, 'transactions' | 'lineItems' | 'taxItems'>
  detail: Record<string, unknown>
}

/**
 * The documents and transactions of a request for a ledger without finalised documents, whose
 * transaction ids are `known`; throws every problem (`ctx` holds those found before).
 * Pure: the single endpoint and batches both use it.
 */
export function planBillingDocuments(
  request: BillingDocumentsRequest,
  placed: PlacedTransaction[],
  ledger: { id: string; ledgerNumber: string },
  known: Set<string>,
  ctx: RuleContext
): BillingDocumentsPlan {
  for (const { transaction, path } of placed) {
    if (known.has(transaction.transaction_id)) {
      ctx.report(CODE.transaction_already_exists, `${path}.transaction_id`, {
        transaction_id: transaction.transaction_id
      })
    }
  }
  if (ctx.errors.length > 0) throw invalidRequest(ctx.errors)
  const documents: BillingDocumentInsert[] = []
  const rows: BillingDocumentsPlan['rows'] = { transactions: [], lineItems: [], taxItems: [] }
  for (const doc of request.historical_billing_documents) {
    const documentId = newId()
    documents.push({
      id: documentId,
      ledgerId: ledger.id,
      identifier: doc.billing_document_identifier,
      type: doc.billing_document_type,
      issuedDate: doc.issued_date,
      billPeriodFrom: doc.billing_document_type === 'PERIOD_BASED' ? doc.bill_period_from_date : null,
      billPeriodTo: doc.billing_document_type === 'PERIOD_BASED' ? doc.bill_period_to_date : null,
      finalized: true
    })
    for (const t of doc.transactions ?? []) {
      addTransaction(rows, t, ledger.id, null, 'BILLING_DOCUMENT')
      rows.transactions[rows.transactions.length - 1]!.billingDocumentId = documentId
    }
  }
  // Historical: no statement, and the ledger balance is left as it is.
  for (const t of request.additional_historical_transactions ?? []) {
    addTransaction(rows, t, ledger.id, null, 'BILLING_DOCUMENT')
  }
  return {
    documents,
    rows,
    detail: {
      ledger_number: ledger.ledgerNumber,
      billing_document_type: request.billing_document_type,
      billing_documents: documents.length,
      transactions: rows.transactions.length
    }
  }
}

/** The request's transactions normalised, and the problems that need nothing from the database. */
function prepare(request: BillingDocumentsRequest): { placed: PlacedTransaction[]; ctx: RuleContext } {
  const placed = transactionsOf(request)
  for (const { transaction } of placed) normaliseTransaction(transaction)
  const ctx = ruleContext([], utcToday())
  checkRequest(request, placed, ctx)
  return { placed, ctx }
}

export function createBillingDocumentsService(base: PostImportBase, db: Db) {
  const repo = createBillingDocumentsRepository()
  const accountsRepo = createAccountsRepository(db)

  return {
    /**
     * Stores the documents, finalised, with their transactions and the additional ones, all or
     * nothing; the ledger balance does not change. A ledger takes one import: after it, only an
     * exact repeat (a retry) succeeds, and it writes nothing.
     */
    async create(principal: OrganisationPrincipal, request: BillingDocumentsRequest): Promise<void> {
      const account = await base.resolve(principal, request.import_supplier, request.external_account_number)
      const { placed, ctx } = prepare(request)

      // The checks that read the database run under the account's lock, so two requests cannot both pass.
      await base.write(principal, account, async (tx) => {
        const ledger = (await base.repo.ledgersOf(tx, account.id)).find(
          (l) => l.ledgerCode === request.ledger_code && l.ledgerNumber === request.ledger_number
        )
        if (!ledger) {
          ctx.report(CODE.ledger_not_found, 'ledger_number', {
            ledger: `${request.ledger_code} ${request.ledger_number}`
          })
          throw invalidRequest(ctx.errors)
        }
        if (await repo.hasFinalizedDocuments(tx, ledger.id)) {
          if (ctx.errors.length === 0 && requestKey(request) === storedKey(await repo.historyOf(tx, ledger.id))) {
            return { result: undefined } // a retry of the request that imported the ledger: nothing to write
          }
          ctx.report(CODE.ledger_has_finalized_billing_documents, 'ledger_number', {
            ledger_number: ledger.ledgerNumber
          })
          throw invalidRequest(ctx.errors)
        }
        const plan = planBillingDocuments(request, placed, ledger, await repo.transactionIdsOf(tx, ledger.id), ctx)
        await repo.insertDocuments(tx, plan.documents)
        await accountsRepo.insertTransactions(tx, plan.rows)
        return { result: undefined, detail: plan.detail }
      })
    },

    /** The plan for a ledger without documents whose transaction ids are `known` (a batch's new account). */
    planForNewAccount(
      request: BillingDocumentsRequest,
      ledger: { id: string; ledgerNumber: string },
      known: Set<string>
    ): BillingDocumentsPlan {
      const { placed, ctx } = prepare(request)
      return planBillingDocuments(request, placed, ledger, known, ctx)
    }
  }
}

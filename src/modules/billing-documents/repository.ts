import { and, asc, eq, inArray } from 'drizzle-orm'
import {
  billingDocuments,
  ledgerTransactions,
  transactionLineItems,
  transactionTaxItems
} from '../../../drizzle/schema/index.js'
import type { Tx } from '../../db/index.js'
import type { TableRows } from '../../db/insert.js'

export type BillingDocumentInsert = typeof billingDocuments.$inferInsert

export function createBillingDocumentsRepository() {
  /** The ids of a ledger's transactions written by this endpoint (documents' and additional ones). */
  const historicalIds = (tx: Tx, ledgerId: string) =>
    tx
      .select({ id: ledgerTransactions.id })
      .from(ledgerTransactions)
      .where(and(eq(ledgerTransactions.ledgerId, ledgerId), eq(ledgerTransactions.source, 'BILLING_DOCUMENT')))

  return {
    /** Documents to insert with an account a batch creates. */
    tableRows(rows: BillingDocumentInsert[]): TableRows {
      return { table: billingDocuments, rows }
    },

    async hasFinalizedDocuments(tx: Tx, ledgerId: string): Promise<boolean> {
      const [row] = await tx
        .select({ id: billingDocuments.id })
        .from(billingDocuments)
        .where(and(eq(billingDocuments.ledgerId, ledgerId), eq(billingDocuments.finalized, true)))
        .limit(1)
      return row !== undefined
    },

    /** Every transaction id on the ledger, whatever wrote it. */
    async transactionIdsOf(tx: Tx, ledgerId: string): Promise<Set<string>> {
      const rows = await tx
        .select({ transactionId: ledgerTransactions.transactionId })
        .from(ledgerTransactions)
        .where(eq(ledgerTransactions.ledgerId, ledgerId))
      return new Set(rows.map((r) => r.transactionId))
    },

    /** What this endpoint stored on the ledger: its documents and their transactions with line and tax items. */
    async historyOf(tx: Tx, ledgerId: string) {
      const documents = await tx
        .select({
          id: billingDocuments.id,
          identifier: billingDocuments.identifier,
          type: billingDocuments.type,
          issuedDate: billingDocuments.issuedDate,
          billPeriodFrom: billingDocuments.billPeriodFrom,
          billPeriodTo: billingDocuments.billPeriodTo
        })
        .from(billingDocuments)
        .where(eq(billingDocuments.ledgerId, ledgerId))
      const transactions = await tx
        .select()
        .from(ledgerTransactions)
        .where(and(eq(ledgerTransactions.ledgerId, ledgerId), eq(ledgerTransactions.source, 'BILLING_DOCUMENT')))
      const lineItems = await tx
        .select()
        .from(transactionLineItems)
        .where(inArray(transactionLineItems.transactionId, historicalIds(tx, ledgerId)))
        .orderBy(asc(transactionLineItems.position))
      const taxItems = await tx
        .select()
        .from(transactionTaxItems)
        .where(inArray(transactionTaxItems.transactionId, historicalIds(tx, ledgerId)))
        .orderBy(asc(transactionTaxItems.position))
      return { documents, transactions, lineItems, taxItems }
    },

    async insertDocuments(tx: Tx, rows: BillingDocumentInsert[]): Promise<void> {
      // At most 1000 documents of 9 columns: within one statement's parameter limit.
      if (rows.length > 0) await tx.insert(billingDocuments).values(rows)
    }
  }
}

export type BillingDocumentsRepository = ReturnType<typeof createBillingDocumentsRepository>
export type StoredHistory = Awaited<ReturnType<BillingDocumentsRepository['historyOf']>>

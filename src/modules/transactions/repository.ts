import { and, desc, eq, inArray } from 'drizzle-orm'
import { ledgers, ledgerTransactions, statements } from '../../../drizzle/schema/index.js'
import type { Tx } from '../../db/index.js'

export function createTransactionsRepository() {
  return {
    /** The account's ENERGY ledger and the start of its open statement. */
    async energyLedger(tx: Tx, accountId: string) {
      const [row] = await tx.select({ id: ledgers.id, openFrom: statements.periodFrom, openStatementId: statements.id })
        .from(ledgers)
        .innerJoin(statements, and(eq(statements.ledgerId, ledgers.id), eq(statements.status, 'OPEN')))
        .where(and(eq(ledgers.accountId, accountId), eq(ledgers.ledgerCode, 'ENERGY')))
        .orderBy(desc(statements.periodFrom))
        .limit(1)
      return row
    },

    /** Which of these transaction ids the ledger already holds. */
    async existingIds(tx: Tx, ledgerId: string, ids: string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set()
      const rows = await tx.select({ id: ledgerTransactions.transactionId }).from(ledgerTransactions)
        .where(and(eq(ledgerTransactions.ledgerId, ledgerId), inArray(ledgerTransactions.transactionId, ids)))
      return new Set(rows.map((r) => r.id))
    }
  }
}

import { and, desc, eq, sql } from 'drizzle-orm'
import { ledgers, statements } from '../../../drizzle/schema/index.js'
import { textList, type Tx } from '../../db/index.js'

export function createTransactionsRepository() {
  return {
    /**
     * The statement that reads the account's ENERGY ledger, the start of its open statement, and
     * which of `ids` the ledger already holds; lazy.
     */
    energyLedger(tx: Tx, accountId: string, ids: string[]) {
      return tx.select({
        id: ledgers.id,
        openFrom: statements.periodFrom,
        openStatementId: statements.id,
        existing: sql<string[]>`(select coalesce(json_agg(t.transaction_id), '[]'::json) from ledger_transactions t
          where t.ledger_id = ${ledgers.id} and t.transaction_id in ${textList(ids)})`
          .mapWith((v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v) as string[])
      })
        .from(ledgers)
        .innerJoin(statements, and(eq(statements.ledgerId, ledgers.id), eq(statements.status, 'OPEN')))
        .where(and(eq(ledgers.accountId, accountId), eq(ledgers.ledgerCode, 'ENERGY')))
        .orderBy(desc(statements.periodFrom))
        .limit(1)
    }
  }
}

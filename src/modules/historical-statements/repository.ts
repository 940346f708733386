import { asc, eq } from 'drizzle-orm'
import { historicalStatements } from '../../../drizzle/schema/index.js'
import type { Db, Tx } from '../../db/index.js'
import type { TableRows } from '../../db/insert.js'

export type HistoricalStatementInsert = typeof historicalStatements.$inferInsert

export function createHistoricalStatementsRepository() {
  return {
    /** The account's historical statements, in the fields that identify a retry. */
    async statementsOf(executor: Db | Tx, accountId: string) {
      return executor
        .select({
          statementId: historicalStatements.statementId,
          billPeriodFrom: historicalStatements.billPeriodFrom,
          billPeriodTo: historicalStatements.billPeriodTo,
          issuedDate: historicalStatements.issuedDate,
          number: historicalStatements.number,
          grossAmount: historicalStatements.grossAmount,
          statementPath: historicalStatements.statementPath
        })
        .from(historicalStatements)
        .where(eq(historicalStatements.accountId, accountId))
        .orderBy(asc(historicalStatements.statementId))
    },

    /** Rows to insert with an account a batch creates. */
    tableRows(rows: HistoricalStatementInsert[]): TableRows {
      return { table: historicalStatements, rows }
    },

    async insertStatements(tx: Tx, rows: HistoricalStatementInsert[]): Promise<void> {
      if (rows.length > 0) await tx.insert(historicalStatements).values(rows)
    }
  }
}

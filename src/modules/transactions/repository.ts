import { and, desc, eq, sql } from 'drizzle-orm'
import { ledgers, notes, statements } from '../../../drizzle/schema/index.js'
import { textList, type Tx } from '../../db/index.js'
import { insertRows, type TableRows } from '../../db/insert.js'
import type { NoteInsert } from '../notes/repository.js'

export function createTransactionsRepository() {
  return {
    /**
     * The statement that reads the account's ENERGY ledger, the start of its open statement, and
     * which of `ids` the ledger already holds; lazy.
     */
    energyLedger(tx: Tx, accountId: string, ids: string[]) {
      return tx
        .select({
          id: ledgers.id,
          openFrom: statements.periodFrom,
          openStatementId: statements.id,
          existing: sql<string[]>`(select coalesce(json_agg(t.transaction_id), '[]'::json) from ledger_transactions t
          where t.ledger_id = ${ledgers.id} and t.transaction_id in ${textList(ids)})`.mapWith(
            (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v) as string[]
          )
        })
        .from(ledgers)
        .innerJoin(statements, and(eq(statements.ledgerId, ledgers.id), eq(statements.status, 'OPEN')))
        .where(and(eq(ledgers.accountId, accountId), eq(ledgers.ledgerCode, 'ENERGY')))
        .orderBy(desc(statements.periodFrom))
        .limit(1)
    },

    /** The insert of the system note saying which transactions were moved, to be sent with others. */
    noteStatement(tx: Tx, note: NoteInsert) {
      return insertRows(tx, notes, [note])
    },

    /** The same note, to insert with an account a batch creates. */
    noteRows(note: NoteInsert): TableRows {
      return { table: notes, rows: [note] }
    }
  }
}

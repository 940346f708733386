import { eq } from 'drizzle-orm'
import { paymentInstructions } from '../../../drizzle/schema/index.js'
import type { Db, Tx } from '../../db/index.js'
import type { TableRows } from '../../db/insert.js'

export type PaymentInstructionInsert = typeof paymentInstructions.$inferInsert

export function createPaymentInstructionsRepository() {
  return {
    /** The account's instructions (outside a transaction for the early check, inside it for the final one). */
    async instructionsOf(executor: Db | Tx, accountId: string) {
      return executor
        .select({
          vendor: paymentInstructions.vendor,
          reference: paymentInstructions.reference,
          type: paymentInstructions.type,
          status: paymentInstructions.status
        })
        .from(paymentInstructions)
        .where(eq(paymentInstructions.accountId, accountId))
    },

    /** Rows to insert with an account a batch creates. */
    tableRows(rows: PaymentInstructionInsert[]): TableRows {
      return { table: paymentInstructions, rows }
    },

    async insertInstruction(tx: Tx, row: PaymentInstructionInsert): Promise<void> {
      await tx.insert(paymentInstructions).values(row)
    }
  }
}

import { eq, sql } from 'drizzle-orm'
import { accounts, ledgers } from '../../../drizzle/schema/index.js'
import type { Db, Tx } from '../../db/index.js'

/** SQL shared by the post-import endpoints (§9). */
export function createPostImportRepository(db: Db) {
  return {
    async accountOfProcess(importProcessId: number) {
      const [row] = await db.select({ id: accounts.id, serviceAccountNumber: accounts.serviceAccountNumber })
        .from(accounts).where(eq(accounts.importProcessId, importProcessId))
      return row
    },

    /** Locks the account's row: post-import writes to one account run one at a time. */
    async lockAccount(tx: Tx, accountId: string): Promise<void> {
      await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId)).for('update')
    },

    async ledgersOf(executor: Db | Tx, accountId: string) {
      return executor.select({ id: ledgers.id, ledgerCode: ledgers.ledgerCode, ledgerNumber: ledgers.ledgerNumber, balance: ledgers.balance })
        .from(ledgers).where(eq(ledgers.accountId, accountId))
    },

    /** Adds a signed amount to a ledger's balance, exactly (numeric arithmetic in the database). */
    async addToBalance(tx: Tx, ledgerId: string, delta: string): Promise<void> {
      await tx.update(ledgers).set({ balance: sql`${ledgers.balance} + ${delta}::numeric` }).where(eq(ledgers.id, ledgerId))
    }
  }
}

export type PostImportRepository = ReturnType<typeof createPostImportRepository>

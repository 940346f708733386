import { and, eq, sql } from 'drizzle-orm'
import { accounts, importProcesses, importSuppliers, ledgers } from '../../../drizzle/schema/index.js'
import type { Db, Tx } from '../../db/index.js'
import { supplierColumns } from '../../db/columns.js'

/** SQL shared by the post-import endpoints. */
export function createPostImportRepository(db: Db) {
  return {
    /**
     * The organisation's supplier with this code, its import process for `external` and the
     * account created from it, in one round trip. Undefined for an unknown or foreign supplier.
     */
    async accountOf(code: string, organisationId: string, external: string) {
      const [row] = await db
        .select({
          supplier: supplierColumns,
          processId: importProcesses.id,
          state: importProcesses.state,
          accountId: accounts.id,
          serviceAccountNumber: accounts.serviceAccountNumber
        })
        .from(importSuppliers)
        .leftJoin(
          importProcesses,
          and(eq(importProcesses.supplierId, importSuppliers.id), eq(importProcesses.externalAccountNumber, external))
        )
        .leftJoin(accounts, eq(accounts.importProcessId, importProcesses.id))
        .where(and(eq(importSuppliers.code, code), eq(importSuppliers.organisationId, organisationId)))
      return row
    },

    /** The statement that locks the account's row: post-import writes to one account run one at a time. */
    lockAccount(tx: Tx, accountId: string) {
      return tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId)).for('update')
    },

    async ledgersOf(executor: Db | Tx, accountId: string) {
      return executor
        .select({
          id: ledgers.id,
          ledgerCode: ledgers.ledgerCode,
          ledgerNumber: ledgers.ledgerNumber,
          balance: ledgers.balance
        })
        .from(ledgers)
        .where(eq(ledgers.accountId, accountId))
    },

    /** Adds a signed amount to a ledger's balance, exactly (numeric arithmetic in the database); lazy. */
    addToBalance(tx: Tx, ledgerId: string, delta: string) {
      return tx
        .update(ledgers)
        .set({ balance: sql`${ledgers.balance} + ${delta}::numeric` })
        .where(eq(ledgers.id, ledgerId))
    }
  }
}

export type PostImportRepository = ReturnType<typeof createPostImportRepository>

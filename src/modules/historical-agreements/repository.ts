import { asc, eq } from 'drizzle-orm'
import { agreements, supplyPoints } from '../../../drizzle/schema/index.js'
import type { Db, Tx } from '../../db/index.js'
import type { TableRows } from '../../db/insert.js'

export type AgreementInsert = typeof agreements.$inferInsert

export function createHistoricalAgreementsRepository() {
  return {
    async supplyPointsOf(executor: Db | Tx, accountId: string) {
      return executor
        .select({ id: supplyPoints.id, identifier: supplyPoints.identifier })
        .from(supplyPoints)
        .where(eq(supplyPoints.accountId, accountId))
    },

    /** Every agreement (current and historical) of the account's supply points, by start. */
    async agreementsOf(executor: Db | Tx, accountId: string) {
      return executor
        .select({
          supplyPointId: agreements.supplyPointId,
          tariffCode: agreements.tariffCode,
          effectiveFrom: agreements.effectiveFrom,
          effectiveTo: agreements.effectiveTo,
          historical: agreements.historical
        })
        .from(agreements)
        .innerJoin(supplyPoints, eq(supplyPoints.id, agreements.supplyPointId))
        .where(eq(supplyPoints.accountId, accountId))
        .orderBy(asc(agreements.effectiveFrom), asc(agreements.id))
    },

    /** Rows to insert with an account a batch creates. */
    tableRows(rows: AgreementInsert[]): TableRows {
      return { table: agreements, rows }
    },

    async insertAgreements(tx: Tx, rows: AgreementInsert[]): Promise<void> {
      if (rows.length > 0) await tx.insert(agreements).values(rows)
    }
  }
}

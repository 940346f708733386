import { eq, sql, type SQL } from 'drizzle-orm'
import { agreements, supplyPoints } from '../../../drizzle/schema/index.js'
import { rowsOf, type Db, type Tx } from '../../db/index.js'
import type { TableRows } from '../../db/insert.js'

export type AgreementInsert = typeof agreements.$inferInsert

export interface AgreementRow {
  supplyPointId: string
  tariffCode: string
  effectiveFrom: string
  effectiveTo: string | null
  historical: boolean
}

/**
 * Every agreement (current and historical) of the account's supply points, by start. Read per
 * supply point through the agreements' index (`offset 0` keeps PostgreSQL from turning it back into
 * a join): on tables never analysed it guessed thousands of supply points per account and scanned
 * every agreement instead (100 ms a call at 400,000 accounts, growing with the table).
 */
export function agreementsQuery(accountId: string): SQL {
  return sql`select g.supply_point_id as "supplyPointId", g.tariff_code as "tariffCode",
      g.effective_from::text as "effectiveFrom", g.effective_to::text as "effectiveTo", g.historical
    from supply_points p cross join lateral
      (select * from agreements g where g.supply_point_id = p.id offset 0) g
    where p.account_id = ${accountId}::uuid
    order by g.effective_from, g.id`
}

export function createHistoricalAgreementsRepository() {
  return {
    async supplyPointsOf(executor: Db | Tx, accountId: string) {
      return executor
        .select({ id: supplyPoints.id, identifier: supplyPoints.identifier })
        .from(supplyPoints)
        .where(eq(supplyPoints.accountId, accountId))
    },

    /** Every agreement (current and historical) of the account's supply points, by start. */
    async agreementsOf(executor: Db | Tx, accountId: string): Promise<AgreementRow[]> {
      return rowsOf<AgreementRow>(await executor.execute(agreementsQuery(accountId)))
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

import { eq, sql } from 'drizzle-orm'
import { importProcesses, importSuppliers } from '../../../drizzle/schema/index.js'
import type { Db } from '../../db/index.js'

/** The operator's `migrationProgress` counts, for every supplier at once. */
export interface SupplierCounts {
  supplier: string
  /** Ever staged (created and skipped ones included). */
  staged: number
  /** Staged, not created, not skipped (failed ones included). */
  pending: number
  created: number
  /** Staged with a latest error: the last create failed. */
  failed: number
  skipped: number
}

/** What `/metrics` reads from the database at scrape time. */
export function createMetricsRepository(db: Db) {
  return {
    /** Import processes of every supplier by state; a supplier without any gets zeros. */
    async supplierCounts(): Promise<SupplierCounts[]> {
      const p = importProcesses
      return db
        .select({
          supplier: importSuppliers.code,
          staged: sql<number>`(count(${p.id}) filter (where ${p.firstStagedAt} is not null))::int`,
          pending: sql<number>`(count(${p.id}) filter (where ${p.state} = 'STAGED'))::int`,
          created: sql<number>`(count(${p.id}) filter (where ${p.state} = 'IMPORTED'))::int`,
          failed: sql<number>`(count(${p.id}) filter (where ${p.state} = 'STAGED' and ${p.latestError} is not null))::int`,
          skipped: sql<number>`(count(${p.id}) filter (where ${p.state} = 'SKIPPED'))::int`
        })
        .from(importSuppliers)
        .leftJoin(p, eq(p.supplierId, importSuppliers.id))
        .groupBy(importSuppliers.code)
        .orderBy(importSuppliers.code)
    },

    /**
     * Creates (and dry runs) running now on any server, by supplier: the process locks granted in
     * this database (see `createRunningSql` in imports/repository.ts: key 2^40 + process id, so
     * classid 256 and objid the process id; `objsubid = 1` marks a single bigint key). Creates
     * hold it exclusively; restages hold it shared and are not counted.
     */
    async createsInFlight(): Promise<Array<{ supplier: string; creates: number }>> {
      return db
        .select({ supplier: importSuppliers.code, creates: sql<number>`count(*)::int` })
        .from(sql`pg_locks as l`)
        .innerJoin(importProcesses, sql`${importProcesses.id} = l.objid::text::bigint`)
        .innerJoin(importSuppliers, eq(importSuppliers.id, importProcesses.supplierId))
        .where(
          sql`l.locktype = 'advisory' and l.classid = 256::oid and l.objsubid = 1 and l.mode = 'ExclusiveLock' and l.granted
          and l.database = (select oid from pg_database where datname = current_database())`
        )
        .groupBy(importSuppliers.code)
    }
  }
}

export type MetricsRepository = ReturnType<typeof createMetricsRepository>

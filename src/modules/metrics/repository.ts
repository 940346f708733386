import { eq, sql } from 'drizzle-orm'
import { importProcesses, importProgressCounts, importSuppliers } from '../../../drizzle/schema/index.js'
import { foldProgressCounts, PROGRESS_FOLD_ROWS } from '../../accounts/repository.js'
import { rowsOf, type Db } from '../../db/index.js'
import { JOB_STATES, LINE_OUTCOMES, type JobState, type LineOutcome } from '../../../schemas/import-jobs.js'

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

/** Import jobs of a supplier: their lines by outcome and the jobs by state. */
export interface SupplierJobCounts {
  supplier: string
  /** Lines with each outcome over the supplier's jobs (a cancelled job's lines without a result: `not_processed`). */
  lines: Record<LineOutcome, number>
  /** Lines of started, unfinished jobs (QUEUED, RUNNING, PAUSED) that have no result yet. */
  waiting: number
  jobs: Record<JobState, number>
}

/** What `/metrics` reads from the database at scrape time. `primary`: where counts are folded when `db` is a read replica. */
export function createMetricsRepository(db: Db, primary: Db = db) {
  return {
    /**
     * Import processes of every supplier by state, from the kept counts (import_progress_counts,
     * kept by a trigger on import_processes; never a count of the processes); a supplier without
     * any gets zeros. A supplier whose kept counts have piled up is folded for the next scrape.
     */
    async supplierCounts(): Promise<SupplierCounts[]> {
      const rows = rowsOf<Record<string, string | number>>(
        await db.execute(sql`select s.id, s.code as supplier, count(c.supplier_id) as rows,
            coalesce(sum(c.staged), 0)::float8 as staged, coalesce(sum(c.pending), 0)::float8 as pending,
            coalesce(sum(c.imported), 0)::float8 as created, coalesce(sum(c.failed), 0)::float8 as failed,
            coalesce(sum(c.skipped), 0)::float8 as skipped
          from ${importSuppliers} s left join ${importProgressCounts} c on c.supplier_id = s.id
          group by s.id, s.code order by s.code`)
      )
      for (const row of rows) {
        if (Number(row.rows) > PROGRESS_FOLD_ROWS) await foldProgressCounts(primary, String(row.id))
      }
      return rows.map((row) => ({
        supplier: String(row.supplier),
        staged: Number(row.staged),
        pending: Number(row.pending),
        created: Number(row.created),
        failed: Number(row.failed),
        skipped: Number(row.skipped)
      }))
    },

    /**
     * Every supplier's import jobs, from the counts each job keeps (one row per job, never its
     * lines or results): one grouped statement; a supplier without jobs gets zeros.
     */
    async jobCounts(): Promise<SupplierJobCounts[]> {
      // Each outcome is a column of the job; a cancelled job's lines without a result are not_processed.
      const line = (outcome: LineOutcome) =>
        outcome === 'not_processed'
          ? sql`coalesce(sum(greatest(j.total_lines - j.done, 0)) filter (where j.state = 'CANCELLED'), 0)::float8`
          : sql`coalesce(sum(j.${sql.identifier(outcome)}), 0)::float8`
      const rows = rowsOf<Record<string, string | number>>(
        await db.execute(sql`select s.code as supplier,
            ${sql.join(
              LINE_OUTCOMES.map((outcome) => sql`${line(outcome)} as ${sql.identifier(`line_${outcome}`)}`),
              sql`, `
            )},
            coalesce(sum(j.total_lines - j.done) filter (where j.state in ('QUEUED', 'RUNNING', 'PAUSED')), 0)::float8
              as waiting,
            ${sql.join(
              JOB_STATES.map(
                (state) =>
                  sql`(count(j.id) filter (where j.state = ${state}))::int as ${sql.identifier(`state_${state}`)}`
              ),
              sql`, `
            )}
          from import_suppliers s left join import_jobs j on j.supplier_id = s.id
          group by s.code order by s.code`)
      )
      return rows.map((row) => ({
        supplier: String(row.supplier),
        lines: Object.fromEntries(LINE_OUTCOMES.map((o) => [o, Number(row[`line_${o}`])])) as Record<
          LineOutcome,
          number
        >,
        waiting: Number(row.waiting),
        jobs: Object.fromEntries(JOB_STATES.map((s) => [s, Number(row[`state_${s}`])])) as Record<JobState, number>
      }))
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

import { and, eq, sql, type SQL } from 'drizzle-orm'
import { importEvents, importProcesses } from '../../../drizzle/schema/index.js'
import type { ProcessState } from '../../db/columns.js'
import { rowsOf, runInOrder, type Db, type Tx } from '../../db/index.js'

/** True when a `{…, errors: [...]}` value holds an entry with a detail. */
function hasDetails(value: SQL): SQL<boolean> {
  return sql<boolean>`exists (select 1 from jsonb_array_elements(case when jsonb_typeof(${value} -> 'errors') = 'array'
    then ${value} -> 'errors' else '[]'::jsonb end) as e where e.value -> 'detail' is not null)`
}

/** The value with each of its `errors` reduced to `{code, attr}`, in order; its other keys kept. */
function withoutDetails(value: SQL): SQL {
  return sql`jsonb_set(${value}, '{errors}', (select coalesce(jsonb_agg(jsonb_build_object('code', e.value -> 'code', 'attr', e.value -> 'attr')
    order by e.ord), '[]'::jsonb) from jsonb_array_elements(${value} -> 'errors') with ordinality as e(value, ord)))`
}

/** The assignments that erase a process's staged data and the details of its latest error. */
const eraseProcess = sql`staged_data = null, staged_data_erased_at = now(),
  latest_error = case when ${hasDetails(sql`latest_error`)} then ${withoutDetails(sql`latest_error`)} else latest_error end`

/** Reduces the error entries held by the events of the processes `processes` selects. */
function reduceEvents(processes: SQL): SQL {
  return sql`update import_events set detail = ${withoutDetails(sql`detail`)}
    where import_process_id in ${processes} and ${hasDetails(sql`detail`)}`
}

export interface ErasedProcess {
  id: number
  state: ProcessState
  serviceAccountNumber: string | null
  /** False when there was no staged data to erase (erased before, or skipped without staging). */
  payloadErased: boolean
}

/** SQL of personal-data retention. */
export function createRetentionRepository(db: Db) {
  return {
    /**
     * Erases, in one short transaction, up to `limit` processes imported or skipped at or before
     * `cutoff` and not erased yet: their staged data and the details of their stored errors.
     * Rows another transaction holds are skipped (`SKIP LOCKED`): they are for a later batch or
     * another server's. The events are reduced in a second statement, whose snapshot is taken once
     * the rows are locked, so it sees every event written before. Returns how many processes and
     * payloads were erased.
     */
    async eraseBatch(cutoff: Date, limit: number): Promise<{ processes: number; payloads: number }> {
      return db.transaction(async (tx) => {
        const erased = rowsOf<{ id: number | string; had: boolean }>(
          await tx.execute(sql`with batch as (
            select id, staged_data is not null as had from import_processes
            where staged_data_erased_at is null and state <> 'STAGED'
              and coalesce(account_created_at, skipped_at) <= ${cutoff.toISOString()}::timestamptz
            order by coalesce(account_created_at, skipped_at)
            limit ${limit}::int
            for update skip locked)
          update import_processes p set ${eraseProcess}
          from batch where p.id = batch.id
          returning p.id, batch.had`)
        )
        if (erased.length === 0) return { processes: 0, payloads: 0 }
        const ids = JSON.stringify(erased.map((r) => String(r.id)))
        await tx.execute(reduceEvents(sql`(select value::bigint from jsonb_array_elements_text(${ids}::jsonb))`))
        return { processes: erased.length, payloads: erased.filter((r) => r.had === true).length }
      })
    },

    /**
     * Marks the input of up to `limit` import jobs that finished or were cancelled at or before
     * `cutoff` as erased (`input_erased_at`: from then on their failed lines answer 410); their
     * lines are deleted by `eraseJobLinesBatch`. Returns how many jobs were marked.
     */
    async markJobInputsErased(cutoff: Date, limit: number): Promise<number> {
      const rows = rowsOf(
        await db.execute(sql`update import_jobs j set input_erased_at = now()
          from (select id from import_jobs where input_erased_at is null and state in ('COMPLETED', 'CANCELLED')
              and finished_at <= ${cutoff.toISOString()}::timestamptz
            order by finished_at limit ${limit}::int for update skip locked) due
          where j.id = due.id returning j.id`)
      )
      return rows.length
    },

    /**
     * Deletes, in one short transaction, up to `limit` input lines of jobs whose input is marked
     * erased (lines another transaction holds are skipped). A line of a cancelled job that never
     * got a result is given its `not_processed` result first, so the job's results stay whole
     * once the lines are gone. Returns how many lines were deleted.
     */
    async eraseJobLinesBatch(limit: number): Promise<number> {
      const [row] = rowsOf<{ lines: number | string }>(
        await db.execute(sql`with doomed as (
            select l.upload_id, l.idx from import_jobs j
            cross join lateral (select upload_id, idx from import_job_lines where job_id = j.id
              limit ${limit}::int for update skip locked) l
            where j.input_erased_at is not null
            limit ${limit}::int),
          gone as (
            delete from import_job_lines l using doomed d where l.upload_id = d.upload_id and l.idx = d.idx
            returning l.job_id, l.upload_id, l.idx, l.external_account_number),
          kept as (
            insert into import_job_results (job_id, line, outcome, external_account_number)
            select g.job_id, p.line_offset + g.idx, 'not_processed', g.external_account_number
            from gone g join import_job_parts p on p.job_id = g.job_id and p.upload_id = g.upload_id
              join import_jobs j on j.id = g.job_id
            where j.state = 'CANCELLED' and p.line_offset is not null
            on conflict (job_id, line) do nothing)
          select count(*) as lines from gone`)
      )
      return Number(row!.lines)
    },

    /**
     * Erases one process's staged data and error details whatever its state, and records a
     * `STAGED_DATA_ERASED` event, in one transaction; undefined when there is no such process.
     * In the same transaction the pair's lines in every import job of the supplier lose their
     * text (kept as an empty line that names the number: it still gets its result, or keeps its
     * place among a cancelled job's lines); `jobLines` says how many.
     */
    async erasePair(
      supplierId: string,
      externalAccountNumber: string,
      actor: string,
      record: (tx: Tx) => Promise<void>
    ): Promise<{ process: ErasedProcess | undefined; jobLines: number }> {
      return db.transaction(async (tx) => {
        const lines = rowsOf(
          await tx.execute(sql`update import_job_lines set text = ''
            where job_id in (select id from import_jobs where supplier_id = ${supplierId}::uuid)
              and external_account_number = ${externalAccountNumber} and text <> '' returning idx`)
        )
        const jobLines = lines.length
        const [process] = await tx
          .select({
            id: importProcesses.id,
            state: importProcesses.state,
            serviceAccountNumber: importProcesses.serviceAccountNumber,
            payloadErased: sql<boolean>`${importProcesses.stagedData} is not null`
          })
          .from(importProcesses)
          .where(
            and(
              eq(importProcesses.supplierId, supplierId),
              eq(importProcesses.externalAccountNumber, externalAccountNumber)
            )
          )
          .for('update')
        if (!process) return { process: undefined, jobLines }
        await runInOrder(db, [
          tx.execute(sql`update import_processes set ${eraseProcess} where id = ${process.id}`),
          tx.execute(reduceEvents(sql`(${process.id})`)),
          tx.insert(importEvents).values({
            importProcessId: process.id,
            type: 'STAGED_DATA_ERASED',
            actor,
            detail: {
              payloadErased: process.payloadErased === true,
              ...(jobLines > 0 ? { jobLinesErased: jobLines } : {})
            }
          })
        ])
        await record(tx)
        return { process: { ...process, payloadErased: process.payloadErased === true }, jobLines }
      })
    }
  }
}

export type RetentionRepository = ReturnType<typeof createRetentionRepository>

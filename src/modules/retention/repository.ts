import { and, eq, sql, type SQL } from 'drizzle-orm'
import { importEvents, importProcesses } from '../../../drizzle/schema/index.js'
import type { ProcessState } from '../../db/columns.js'
import { rowsOf, runInOrder, type Db } from '../../db/index.js'

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
     * Erases one process's staged data and error details whatever its state, and records a
     * `STAGED_DATA_ERASED` event, in one transaction; undefined when there is no such process.
     */
    async erasePair(
      supplierId: string,
      externalAccountNumber: string,
      actor: string
    ): Promise<ErasedProcess | undefined> {
      return db.transaction(async (tx) => {
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
        if (!process) return undefined
        await runInOrder(db, [
          tx.execute(sql`update import_processes set ${eraseProcess} where id = ${process.id}`),
          tx.execute(reduceEvents(sql`(${process.id})`)),
          tx.insert(importEvents).values({
            importProcessId: process.id,
            type: 'STAGED_DATA_ERASED',
            actor,
            detail: { payloadErased: process.payloadErased === true }
          })
        ])
        return { ...process, payloadErased: process.payloadErased === true }
      })
    }
  }
}

export type RetentionRepository = ReturnType<typeof createRetentionRepository>

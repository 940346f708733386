import { sql, type SQL } from 'drizzle-orm'
import { importEvents, type importFailures } from '../../drizzle/schema/index.js'
import { insertQueries, type Query } from '../db/insert.js'
import { rowsOf, runInOrder, supplierExternals, type Db, type Tx } from '../db/index.js'
import { withoutDetails, type ErrorEntry } from '../errors.js'
import { formatDateTime } from '../format.js'

/**
 * The one home of an import process's state: stage, restage, mark imported, its events and the
 * clearing of its failure records, each written set-based (many accounts per statement) and used
 * with one account by the single endpoints, with many by batches and import jobs. Each returns the
 * statement; the caller sends it in its own transaction, alone or with others (`runInOrder`, `writes`).
 */

export type EventType = (typeof importEvents.$inferInsert)['type']

/** Who changed an import process, as the event log records it. */
export interface Actor {
  organisationId: string
  apiKeyId: string
  /** `organisation:<name>`. */
  name: string
}

type Step = (typeof importFailures.$inferSelect)['step']

/** The steps whose failure records an account's stage clears. */
const STAGE_STEPS: readonly Step[] = ['validate', 'stage']

/** Accounts for a set-based write: a list, or the list already as JSON (a caller that also keeps a copy of it). */
export type Accounts<T> = T[] | { json: string }

const jsonOf = <T>(accounts: Accounts<T>) => (Array.isArray(accounts) ? JSON.stringify(accounts) : accounts.json)

const actorColumns = (actor: Actor) => sql`${actor.name}::text, ${actor.organisationId}::uuid, ${actor.apiKeyId}::uuid`

/**
 * The `events` and `cleared` steps of a stage: an event of `type` for each process the step
 * `written` wrote, and the pair's validate and stage failure records cleared.
 */
const stagedEventsAndCleared = (
  written: 'inserted' | 'updated',
  type: 'STAGED' | 'RESTAGED',
  supplierId: string,
  actor: Actor
) =>
  sql`events as (
      insert into import_events (import_process_id, type, actor, organisation_id, api_key_id)
      select id, ${type}::import_event_type, ${actorColumns(actor)} from ${sql.identifier(written)}),
    cleared as (
      delete from import_failures f using ${sql.identifier(written)} w where f.supplier_id = ${supplierId}::uuid
        and f.external_account_number = w.external_account_number and f.step in ${stepList(STAGE_STEPS)})`

/**
 * New processes, STAGED with the data sent, each with its STAGED event and the pair's validate and
 * stage failure records cleared. An account that has a process already is left out (a concurrent
 * stage won): only the accounts staged come back, as `id`, `external` and `changed` (the data as
 * stored where it differs from the data sent, a trigger's say; else null).
 */
export function stageNew(
  supplierId: string,
  accounts: Accounts<{ external: string; data: unknown }>,
  actor: Actor
): SQL {
  return sql`with input as (
      select e.external, e.data from jsonb_to_recordset(${jsonOf(accounts)}::jsonb) as e(external text, data jsonb)),
    inserted as (
      insert into import_processes (supplier_id, external_account_number, state, staged_data, first_staged_at)
      select ${supplierId}::uuid, external, 'STAGED', data, now() from input
      order by external
      on conflict do nothing
      returning id, external_account_number, staged_data),
    ${stagedEventsAndCleared('inserted', 'STAGED', supplierId, actor)}
    select i.id, i.external_account_number as external, case when i.staged_data = n.data then null else i.staged_data end as changed
    from inserted i join input n on n.external = i.external_account_number`
}

/**
 * Processes staged before, staged again with the data sent (an earlier erasure no longer applies),
 * each with its RESTAGED event and the pair's validate and stage failure records cleared. A process
 * that is no longer STAGED is left out; the others come back as `stageNew`'s do.
 */
export function restage(supplierId: string, accounts: Accounts<{ id: number; data: unknown }>, actor: Actor): SQL {
  return sql`with input as (
      select m.id, m.data from jsonb_to_recordset(${jsonOf(accounts)}::jsonb) as m(id bigint, data jsonb)),
    updated as (
      update import_processes p set staged_data = m.data, staged_data_erased_at = null,
        first_staged_at = coalesce(p.first_staged_at, now()), updated_at = now()
      from input m
      where p.id = m.id and p.state = 'STAGED'
      returning p.id, p.external_account_number, p.staged_data),
    ${stagedEventsAndCleared('updated', 'RESTAGED', supplierId, actor)}
    select u.id, u.external_account_number as external, case when u.staged_data = m.data then null else u.staged_data end as changed
    from updated u join input m on m.id = u.id`
}

/**
 * Marks STAGED processes imported with their service account numbers (`san`); with `data`, they
 * are restaged with it in the same write (a batch's account staged before). Returns the ids marked:
 * a process no longer STAGED (skipped meanwhile) is not among them.
 */
export function markImported(marks: Array<{ id: number; san: string; data?: unknown }>): SQL {
  const restaged = marks.length > 0 && marks[0]!.data !== undefined
  return sql`update import_processes p set state = 'IMPORTED', service_account_number = m.san, account_created_at = now(),
      ${restaged ? sql`staged_data = m.data, staged_data_erased_at = null,` : sql``} latest_error = null, updated_at = now()
    from jsonb_to_recordset(${JSON.stringify(marks)}::jsonb) as m(id bigint, san text, data jsonb)
    where p.id = m.id and p.state = 'STAGED' returning p.id`
}

/**
 * New processes written once, already imported, with ids drawn before (`nextval`): a batch's new
 * accounts (staging them and then marking them would write each row twice). In external number
 * order, as every batch inserts them, so two batches do not deadlock.
 */
export function insertImported(
  supplierId: string,
  accounts: Array<{ id: number; external: string; data: unknown; san: string }>
): SQL {
  return sql`insert into import_processes (id, supplier_id, external_account_number, state, staged_data,
      first_staged_at, service_account_number, account_created_at)
    overriding system value
    select e.id, ${supplierId}::uuid, e.external, 'IMPORTED', e.data, now(), e.san, now()
    from jsonb_to_recordset(${JSON.stringify(accounts)}::jsonb) as e(id bigint, external text, data jsonb, san text)
    order by e.external`
}

/** An event of a process's log, as a row for `eventInserts`. */
export function eventRow(
  importProcessId: number,
  type: EventType,
  actor: Actor,
  detail: unknown = {}
): typeof importEvents.$inferInsert {
  return {
    importProcessId,
    type,
    actor: actor.name,
    organisationId: actor.organisationId,
    apiKeyId: actor.apiKeyId,
    detail
  }
}

/** The inserts of many events (multi-row, under the parameter limit). */
export function eventInserts(rows: Array<typeof importEvents.$inferInsert>): Query[] {
  return insertQueries(importEvents, rows)
}

/**
 * The statement that appends an event to an import process's log (imports, the post-import
 * sections); lazy, so it can be sent with others of its transaction.
 */
export function eventStatement(
  executor: Db | Tx,
  processId: number,
  type: EventType,
  actor: Actor,
  detail: unknown = {}
) {
  return executor.insert(importEvents).values(eventRow(processId, type, actor, detail))
}

/** Clears the failure records of these accounts of a supplier: of `steps`, or of every step. */
export function clearFailures(supplierId: string, externals: string[], steps?: readonly Step[]): SQL {
  return sql`delete from import_failures
    where (supplier_id, external_account_number) in ${supplierExternals(supplierId, externals)}
    ${steps ? sql`and step in ${stepList(steps)}` : sql``}`
}

function stepList(steps: readonly Step[]): SQL {
  return sql`(${sql.join(
    steps.map((step) => sql`${step}::import_step`),
    sql`, `
  )})`
}

/**
 * Records a failed create: its events and the process's latest error, in one transaction. The
 * process row is locked first: when its staged data was erased meanwhile (the erasure waits for
 * this lock, or this waits for the erasure), the entries are stored without their details.
 */
export async function recordCreateFailure(db: Db, processId: number, errors: ErrorEntry[], actor: Actor) {
  await db.transaction(async (tx) => {
    const [process] = rowsOf<{ kept: boolean }>(
      await tx.execute(
        sql`select staged_data is not null as kept from import_processes where id = ${processId} for update`
      )
    )
    const stored = process?.kept === true ? errors : withoutDetails(errors)
    await runInOrder(db, [
      tx.execute(sql`update import_processes set latest_error = ${JSON.stringify({
        at: formatDateTime(new Date()),
        errors: stored
      })}::jsonb, updated_at = now()
        where id = ${processId} and state = 'STAGED'`),
      eventStatement(tx, processId, 'CREATE_ATTEMPTED', actor),
      eventStatement(tx, processId, 'CREATE_FAILED', actor, { errors: stored })
    ])
  })
}

/**
 * Records a dry run's outcome in one statement that reads the process row `for share`: its entries
 * keep their details only while the staged data is there (see recordCreateFailure).
 */
export function recordDryRun(processId: number, wouldSucceed: boolean, errors: ErrorEntry[], actor: Actor): SQL {
  const whole = JSON.stringify({ would_succeed: wouldSucceed, errors })
  const reduced = JSON.stringify({ would_succeed: wouldSucceed, errors: withoutDetails(errors) })
  return sql`insert into import_events (import_process_id, type, actor, organisation_id, api_key_id, detail)
    select p.id, 'DRY_RUN'::import_event_type, ${actorColumns(actor)},
      case when p.staged_data is not null then ${whole}::jsonb else ${reduced}::jsonb end
    from import_processes p where p.id = ${processId} for share`
}

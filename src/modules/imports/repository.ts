import { and, asc, desc, eq, gt, inArray, sql, type SQL } from 'drizzle-orm'
import {
  importEvents,
  importFailures,
  importProcesses,
  importSuppliers,
  operationsTeams
} from '../../../drizzle/schema/index.js'
import { eventStatement, type Actor } from '../../accounts/repository.js'
import { SUPPLY_POINT_CHECKS, type SupplyPointChecks } from '../../../schemas/common.js'
import { supplierColumns, type ProcessState, type SupplierRow } from '../../db/columns.js'
import { rowsOf, runInOrder, type Db, type Tx } from '../../db/index.js'
import { PROCESS_LOCK_BASE } from '../../db/locks.js'
import { withoutDetails, type ErrorEntry, type StoredEntry } from '../../errors.js'
import { formatDateTime } from '../../format.js'

export type ProcessList = 'all' | 'pending' | 'imported'

export interface ProcessRow {
  id: number
  state: ProcessState
  serviceAccountNumber: string | null
  accountCreatedAt: Date | null
  /** Entries lose their detail once the staged data is erased. */
  latestError: { at: string; errors: StoredEntry[] } | null
  hasStagedData: boolean
}

/** One row of the import-process lists. */
export interface ListRow {
  externalAccountNumber: string
  serviceAccountNumber: string | null
  accountCreatedAt: Date | null
}

/** Rows read per query when a whole list is streamed. */
export const LIST_CHUNK_ROWS = 1000

/** The process lock's key (the locks are described in src/db/locks.ts). */
function processLockKey(id: number): string {
  return (PROCESS_LOCK_BASE + BigInt(id)).toString()
}

/** True while a create holds the lock of the process whose id is `id` (an SQL expression). */
function createRunningSql(id: SQL): SQL<boolean> {
  const key = sql`(${PROCESS_LOCK_BASE.toString()}::bigint + ${id})`
  // Advisory locks belong to one database; pg_locks lists those of every database on the server.
  return sql<boolean>`exists (select 1 from pg_locks where locktype = 'advisory' and objsubid = 1
    and database = (select oid from pg_database where datname = current_database())
    and classid = (${key} >> 32)::oid and objid = (${key} & 4294967295)::oid and mode = 'ExclusiveLock' and granted)`
}

/** A supplier of the caller and the import process of one external account number, read together. */
export interface Lookup {
  supplier: SupplierRow
  process: ProcessRow | undefined
  /** Whether a create of the process is running (only when asked for). */
  running: boolean
}

/** A row of the look-up: the prepared query's, or the raw statement's under the same names. */
interface LookupRow {
  supplier: SupplierRow
  processId: number | null
  state: ProcessState | null
  serviceAccountNumber: string | null
  accountCreatedAt: Date | null
  latestError: unknown
  hasStagedData: boolean | null
  running: boolean | null
}

/** A row of the raw statement behind `lookupClearingValidate`, as the driver returns it. */
interface ClearingRow {
  id: string
  code: string
  status: SupplierRow['status']
  document_root: string
  send_migration_emails: boolean
  max_concurrent_processing: number | null
  supply_point_checks: SupplyPointChecks
  /** A bigint, which a driver may return as text. */
  process_id: number | string | null
  state: ProcessState | null
  service_account_number: string | null
  /** Text or a Date, depending on the driver. */
  account_created_at: string | Date | null
  latest_error: unknown
  has_staged_data: boolean | null
}

/** What a create reads once it holds the process lock. */
export interface Claim {
  /** False when another create holds the process lock. */
  locked: boolean
  /** False when every concurrency slot of the supplier is taken. */
  slot: boolean
  state: ProcessState
  serviceAccountNumber: string | null
  /** Null once erased. */
  stagedData: unknown
  supplierCode: string
  supplierStatus: SupplierRow['status']
  sendMigrationEmails: boolean
  supplyPointChecks: SupplyPointChecks
  teamId: string | null
}

const processColumns = {
  id: importProcesses.id,
  state: importProcesses.state,
  serviceAccountNumber: importProcesses.serviceAccountNumber,
  accountCreatedAt: importProcesses.accountCreatedAt,
  latestError: importProcesses.latestError,
  hasStagedData: sql<boolean>`${importProcesses.stagedData} is not null`
}

export function createImportsRepository(db: Db) {
  const pair = (supplierId: string, externalAccountNumber: string) =>
    and(eq(importProcesses.supplierId, supplierId), eq(importProcesses.externalAccountNumber, externalAccountNumber))

  async function findProcess(
    supplierId: string,
    externalAccountNumber: string,
    executor: Db | Tx = db
  ): Promise<ProcessRow | undefined> {
    const [row] = await executor
      .select(processColumns)
      .from(importProcesses)
      .where(pair(supplierId, externalAccountNumber))
    return row as ProcessRow | undefined
  }

  /** A successful stage clears the pair's validate and stage failure records; lazy. */
  function clearStaged(tx: Tx, supplierId: string, externalAccountNumber: string) {
    return tx
      .delete(importFailures)
      .where(
        and(
          eq(importFailures.supplierId, supplierId),
          eq(importFailures.externalAccountNumber, externalAccountNumber),
          inArray(importFailures.step, ['validate', 'stage'])
        )
      )
  }

  /** Takes the process lock in shared mode (a restage) for the rest of the transaction; false when a create holds it. */
  async function tryProcessLockShared(tx: Tx, processId: number): Promise<boolean> {
    const [row] = await tx
      .select({ locked: sql<boolean>`pg_try_advisory_xact_lock_shared(${processLockKey(processId)}::bigint)` })
      .from(sql`(select 1) as one`)
    return row!.locked === true
  }

  /**
   * The process lock and then, only when it was taken, one of the supplier's `max` concurrency
   * slots (`max` null: no limit), in one statement; CASE keeps the order.
   */
  function lockAndSlot(tx: Tx, processId: number, supplierId: string, max: number | null) {
    const slot =
      max === null
        ? sql<boolean>`true`
        : sql<boolean>`exists (select 1 from generate_series(0, ${max - 1}::int) as s
          where case when l.locked then pg_try_advisory_xact_lock(hashtext(${supplierId}), s) else false end)`
    return tx
      .select({ locked: sql<boolean>`l.locked`, slot })
      .from(sql`(select pg_try_advisory_xact_lock(${processLockKey(processId)}::bigint) as locked) as l`)
  }

  /** Processes of the supplier ordered by external account number (code point order), optionally paged. */
  async function listProcesses(
    supplierId: string,
    list: ProcessList,
    page: { limit?: number; after?: string } = {}
  ): Promise<ListRow[]> {
    const conditions = [eq(importProcesses.supplierId, supplierId)]
    if (list !== 'all') conditions.push(eq(importProcesses.state, list === 'pending' ? 'STAGED' : 'IMPORTED'))
    if (page.after !== undefined) conditions.push(gt(importProcesses.externalAccountNumber, page.after))
    const query = db
      .select({
        externalAccountNumber: importProcesses.externalAccountNumber,
        serviceAccountNumber: importProcesses.serviceAccountNumber,
        accountCreatedAt: importProcesses.accountCreatedAt
      })
      .from(importProcesses)
      .where(and(...conditions))
      .orderBy(asc(importProcesses.externalAccountNumber))
    return page.limit !== undefined ? query.limit(page.limit) : query
  }

  /**
   * A whole list in keyset-ordered chunks (`external_account_number > last`, served by the pair and
   * state indexes): one short query per chunk, no transaction or cursor held in between, so a
   * consumer that stops pulling holds nothing. Not a snapshot: a process that changes list while
   * the chunks are read may be missed or included, but no row comes twice and the order holds.
   */
  async function* processChunks(
    supplierId: string,
    list: ProcessList,
    after?: string,
    size = LIST_CHUNK_ROWS
  ): AsyncGenerator<ListRow[], void, undefined> {
    let last = after
    for (;;) {
      const rows = await listProcesses(supplierId, list, { limit: size, after: last })
      if (rows.length > 0) yield rows
      if (rows.length < size) return
      last = rows[rows.length - 1]!.externalAccountNumber
    }
  }

  /**
   * The look-up behind validate, stage, create and the reads, prepared once: building it with
   * Drizzle's query builder on every request cost more CPU than the rest of a validate's I/O.
   */
  const lookupQuery = (withRunning: boolean) =>
    db
      .select({
        supplier: supplierColumns,
        processId: importProcesses.id,
        state: importProcesses.state,
        serviceAccountNumber: importProcesses.serviceAccountNumber,
        accountCreatedAt: importProcesses.accountCreatedAt,
        latestError: importProcesses.latestError,
        hasStagedData: sql<boolean>`${importProcesses.stagedData} is not null`,
        running: withRunning
          ? sql<boolean>`${importProcesses.id} is not null and ${createRunningSql(sql`${importProcesses.id}`)}`
          : sql<boolean>`false`
      })
      .from(importSuppliers)
      .leftJoin(
        importProcesses,
        and(
          eq(importProcesses.supplierId, importSuppliers.id),
          eq(importProcesses.externalAccountNumber, sql.placeholder('external'))
        )
      )
      .where(
        and(
          eq(importSuppliers.code, sql.placeholder('code')),
          eq(importSuppliers.organisationId, sql.placeholder('organisationId'))
        )
      )
      .prepare(withRunning ? 'lookup_running' : 'lookup')
  const lookupPlain = lookupQuery(false)
  const lookupRunning = lookupQuery(true)

  function lookupFromRow(row: LookupRow): Lookup {
    // Both are null exactly when the supplier has no process for the number (the left join).
    const process: ProcessRow | undefined =
      row.processId === null || row.state === null
        ? undefined
        : {
            id: row.processId,
            state: row.state,
            serviceAccountNumber: row.serviceAccountNumber,
            accountCreatedAt: row.accountCreatedAt,
            latestError: row.latestError as ProcessRow['latestError'],
            hasStagedData: row.hasStagedData === true
          }
    return { supplier: row.supplier, process, running: row.running === true }
  }

  return {
    findProcess,
    eventStatement,

    /**
     * The organisation's supplier with this code and its import process for `external` (when
     * given), in one round trip; `withRunning` also asks whether a create of it is running.
     * Undefined when the supplier is unknown or another organisation's.
     */
    async lookup(
      code: string,
      organisationId: string,
      external: string | undefined,
      withRunning = false
    ): Promise<Lookup | undefined> {
      const [row] = await (withRunning ? lookupRunning : lookupPlain).execute({
        code,
        organisationId,
        external: external ?? null
      })
      return row ? lookupFromRow(row) : undefined
    },

    /**
     * `lookup` for validate, which runs its rules first: when they passed (`clean`, for the
     * supplier's setting of supply point checks) and the answer will be a success (the supplier
     * Ongoing, the account neither imported nor skipped), the same statement removes the pair's
     * validate failure record, so a success costs no extra round trip and a concurrent failure
     * answered earlier is not left behind.
     */
    async lookupClearingValidate(
      code: string,
      organisationId: string,
      external: string | undefined,
      clean: Record<SupplyPointChecks, boolean>
    ): Promise<Lookup | undefined> {
      const cleanForSupplier = sql.join(
        SUPPLY_POINT_CHECKS.map(
          (checks) => sql`(found.supply_point_checks::text = ${checks}::text and ${clean[checks]}::boolean)`
        ),
        sql` or `
      )
      const result = await db.execute(sql`with found as (
          select s.id, s.code, s.status, s.document_root, s.send_migration_emails, s.max_concurrent_processing,
            s.supply_point_checks, p.id as process_id, p.state, p.service_account_number, p.account_created_at, p.latest_error,
            p.staged_data is not null as has_staged_data
          from import_suppliers s
          left join import_processes p on p.supplier_id = s.id and p.external_account_number = ${external ?? null}::text
          where s.code = ${code} and s.organisation_id = ${organisationId}::uuid),
        cleared as (
          delete from import_failures f using found
          where (${cleanForSupplier}) and f.supplier_id = found.id and f.external_account_number = ${external ?? null}::text
            and f.step = 'validate' and found.status = 'Ongoing' and (found.state is null or found.state = 'STAGED'))
        select * from found`)
      const [row] = rowsOf<ClearingRow>(result)
      if (!row) return undefined
      return lookupFromRow({
        supplier: {
          id: row.id,
          code: row.code,
          status: row.status,
          documentRoot: row.document_root,
          sendMigrationEmails: row.send_migration_emails,
          maxConcurrentProcessing: row.max_concurrent_processing,
          supplyPointChecks: row.supply_point_checks
        },
        processId: row.process_id === null ? null : Number(row.process_id),
        state: row.state,
        serviceAccountNumber: row.service_account_number,
        accountCreatedAt: row.account_created_at === null ? null : new Date(row.account_created_at),
        latestError: row.latest_error,
        hasStagedData: row.has_staged_data,
        running: false
      })
    },

    /**
     * The first statements of a create's transaction, sent together: the process lock, a
     * concurrency slot, and then the process, its supplier and the team as they are once the lock
     * is held (a create that ran meanwhile has committed by then).
     */
    async claim(
      tx: Tx,
      processId: number,
      supplierId: string,
      maxConcurrent: number | null,
      teamName: string
    ): Promise<Claim> {
      const [locks, rows] = (await runInOrder(db, [
        lockAndSlot(tx, processId, supplierId, maxConcurrent),
        tx
          .select({
            state: importProcesses.state,
            serviceAccountNumber: importProcesses.serviceAccountNumber,
            stagedData: importProcesses.stagedData,
            supplierCode: importSuppliers.code,
            supplierStatus: importSuppliers.status,
            sendMigrationEmails: importSuppliers.sendMigrationEmails,
            supplyPointChecks: importSuppliers.supplyPointChecks,
            teamId: operationsTeams.id
          })
          .from(importProcesses)
          .innerJoin(importSuppliers, eq(importSuppliers.id, importProcesses.supplierId))
          .leftJoin(operationsTeams, eq(operationsTeams.name, teamName))
          .where(eq(importProcesses.id, processId))
      ])) as [{ locked: boolean; slot: boolean }[], Omit<Claim, 'locked' | 'slot'>[]]
      return { locked: locks[0]!.locked === true, slot: locks[0]!.slot === true, ...rows[0]! }
    },

    /**
     * A first stage in one statement: the process and its STAGED event. False when the process
     * exists already (the caller then restages it through `stage`).
     */
    async stageNew(supplierId: string, externalAccountNumber: string, data: unknown, actor: Actor): Promise<boolean> {
      const result = await db.execute(sql`with inserted as (
          insert into import_processes (supplier_id, external_account_number, state, staged_data, first_staged_at)
          values (${supplierId}, ${externalAccountNumber}, 'STAGED', ${JSON.stringify(data)}::jsonb, now())
          on conflict do nothing
          returning id),
        cleared as (
          delete from import_failures where exists (select 1 from inserted) and supplier_id = ${supplierId}
            and external_account_number = ${externalAccountNumber} and step in ('validate', 'stage'))
        insert into import_events (import_process_id, type, actor, organisation_id, api_key_id)
        select id, 'STAGED'::import_event_type, ${actor.name}::text, ${actor.organisationId}::uuid, ${actor.apiKeyId}::uuid from inserted
        returning 1 as staged`)
      return rowsOf(result).length === 1
    },

    /**
     * Stores the staged data in one transaction with its event. Returns `created` or `updated`,
     * or why it was refused: the process's state changed, or a create holds the process lock.
     */
    async stage(supplierId: string, externalAccountNumber: string, data: unknown, actor: Actor) {
      return db.transaction(async (tx) => {
        const [inserted] = await tx
          .insert(importProcesses)
          .values({
            supplierId,
            externalAccountNumber,
            state: 'STAGED',
            stagedData: data,
            firstStagedAt: sql`now()`
          })
          .onConflictDoNothing()
          .returning({ id: importProcesses.id })
        if (inserted) {
          await runInOrder(db, [
            eventStatement(tx, inserted.id, 'STAGED', actor),
            clearStaged(tx, supplierId, externalAccountNumber)
          ])
          return { outcome: 'created' as const }
        }
        const process = (await findProcess(supplierId, externalAccountNumber, tx))!
        if (process.state !== 'STAGED') return { outcome: 'refused' as const, process }
        if (!(await tryProcessLockShared(tx, process.id))) return { outcome: 'in_progress' as const, process }
        const updated = await tx
          .update(importProcesses)
          .set({
            stagedData: data,
            stagedDataErasedAt: null,
            firstStagedAt: sql`coalesce(${importProcesses.firstStagedAt}, now())`,
            updatedAt: sql`now()`
          })
          .where(and(eq(importProcesses.id, process.id), eq(importProcesses.state, 'STAGED')))
          .returning({ id: importProcesses.id })
        if (updated.length === 0) {
          return { outcome: 'refused' as const, process: (await findProcess(supplierId, externalAccountNumber, tx))! }
        }
        await runInOrder(db, [
          eventStatement(tx, process.id, 'RESTAGED', actor),
          clearStaged(tx, supplierId, externalAccountNumber)
        ])
        return { outcome: 'updated' as const }
      })
    },

    /**
     * The statement that marks the process imported, to be sent with the account's inserts: it
     * returns no row when the process is no longer STAGED (skipped meanwhile).
     */
    markImported(tx: Tx, processId: number, serviceAccountNumber: string) {
      return tx
        .update(importProcesses)
        .set({
          state: 'IMPORTED',
          serviceAccountNumber,
          accountCreatedAt: sql`now()`,
          latestError: null,
          updatedAt: sql`now()`
        })
        .where(and(eq(importProcesses.id, processId), eq(importProcesses.state, 'STAGED')))
        .returning({ id: importProcesses.id })
    },

    /**
     * Records a failed create: its events and the process's latest error, in one transaction. The
     * process row is locked first: when its staged data was erased meanwhile (the erasure waits
     * for this lock, or this waits for the erasure), the entries are stored without their details.
     */
    async recordCreateFailure(processId: number, errors: ErrorEntry[], actor: Actor) {
      await db.transaction(async (tx) => {
        const [process] = await tx
          .select({ kept: sql<boolean>`${importProcesses.stagedData} is not null` })
          .from(importProcesses)
          .where(eq(importProcesses.id, processId))
          .for('update')
        const stored = process?.kept === true ? errors : withoutDetails(errors)
        await runInOrder(db, [
          tx
            .update(importProcesses)
            .set({ latestError: { at: formatDateTime(new Date()), errors: stored }, updatedAt: sql`now()` })
            .where(and(eq(importProcesses.id, processId), eq(importProcesses.state, 'STAGED'))),
          eventStatement(tx, processId, 'CREATE_ATTEMPTED', actor),
          eventStatement(tx, processId, 'CREATE_FAILED', actor, { errors: stored })
        ])
      })
    },

    /**
     * Records a dry run's outcome in one statement that reads the process row `for share`: its
     * entries keep their details only while the staged data is there (see recordCreateFailure).
     */
    async recordDryRun(processId: number, wouldSucceed: boolean, errors: ErrorEntry[], actor: Actor) {
      const whole = JSON.stringify({ would_succeed: wouldSucceed, errors })
      const reduced = JSON.stringify({ would_succeed: wouldSucceed, errors: withoutDetails(errors) })
      await db.execute(sql`insert into import_events (import_process_id, type, actor, organisation_id, api_key_id, detail)
        select p.id, 'DRY_RUN'::import_event_type, ${actor.name}::text, ${actor.organisationId}::uuid, ${actor.apiKeyId}::uuid,
          case when p.staged_data is not null then ${whole}::jsonb else ${reduced}::jsonb end
        from import_processes p where p.id = ${processId} for share`)
    },

    async latestEvent(processId: number) {
      const [row] = await db
        .select({ type: importEvents.type, at: importEvents.at })
        .from(importEvents)
        .where(eq(importEvents.importProcessId, processId))
        .orderBy(desc(importEvents.id))
        .limit(1)
      return row
    },

    listProcesses,
    processChunks
  }
}

export type ImportsRepository = ReturnType<typeof createImportsRepository>

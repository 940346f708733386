import { and, asc, desc, eq, gt, sql, type SQL } from 'drizzle-orm'
import { importEvents, importProcesses, importSuppliers, operationsTeams } from '../../../drizzle/schema/index.js'
import { SUPPLY_POINT_CHECKS, type SupplyPointChecks } from '../../../schemas/common.js'
import { supplierColumns, type ProcessState, type SupplierRow } from '../../db/columns.js'
import { rowsOf, runInOrder, type Db, type Tx } from '../../db/index.js'
import { PROCESS_LOCK_BASE } from '../../db/locks.js'
import type { ErrorEntry, StoredEntry } from '../../errors.js'
import {
  eventStatement,
  clearFailures,
  markImported,
  recordCreateFailure,
  recordDryRun,
  restage,
  stageNew,
  type Actor
} from '../../processes/repository.js'

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
      const result = await db.execute(stageNew(supplierId, [{ external: externalAccountNumber, data }], actor))
      return rowsOf(result).length === 1
    },

    /**
     * Stores the staged data in one transaction with its event. Returns `created` or `updated`,
     * or why it was refused: the process's state changed, or a create holds the process lock.
     */
    async stage(supplierId: string, externalAccountNumber: string, data: unknown, actor: Actor) {
      return db.transaction(async (tx) => {
        const account = { external: externalAccountNumber, data }
        if (rowsOf(await tx.execute(stageNew(supplierId, [account], actor))).length === 1) {
          return { outcome: 'created' as const }
        }
        const process = (await findProcess(supplierId, externalAccountNumber, tx))!
        if (process.state !== 'STAGED') return { outcome: 'refused' as const, process }
        if (!(await tryProcessLockShared(tx, process.id))) return { outcome: 'in_progress' as const, process }
        const restaged = await tx.execute(restage(supplierId, [{ id: process.id, data }], actor))
        if (rowsOf(restaged).length === 0) {
          return { outcome: 'refused' as const, process: (await findProcess(supplierId, externalAccountNumber, tx))! }
        }
        return { outcome: 'updated' as const }
      })
    },

    /**
     * A create's writes besides the account's rows, to send with them: the process marked imported
     * and, unless it is a dry run (`created` null), its CREATE_ATTEMPTED and CREATED events and the
     * account's validate, stage and create failure records cleared. `marked` reads the first
     * statement's result: false when the process was no longer STAGED (skipped meanwhile).
     */
    createWrites(
      tx: Tx,
      process: { id: number; supplierId: string; external: string; serviceAccountNumber: string },
      actor: Actor,
      created: unknown
    ) {
      return [
        tx.execute(markImported([{ id: process.id, san: process.serviceAccountNumber }])),
        ...(created === null
          ? []
          : [
              eventStatement(tx, process.id, 'CREATE_ATTEMPTED', actor),
              eventStatement(tx, process.id, 'CREATED', actor, created),
              tx.execute(clearFailures(process.supplierId, [process.external], ['validate', 'stage', 'create']))
            ])
      ]
    },

    /** Whether `createWrites`' first statement marked the process imported. */
    marked: (result: unknown) => rowsOf(result).length > 0,

    /** Records a failed create: its events and the process's latest error (see `recordCreateFailure`). */
    recordCreateFailure: (processId: number, errors: ErrorEntry[], actor: Actor) =>
      recordCreateFailure(db, processId, errors, actor),

    /** Records a dry run's outcome: its DRY_RUN event (see `recordDryRun`). */
    async recordDryRun(processId: number, wouldSucceed: boolean, errors: ErrorEntry[], actor: Actor) {
      await db.execute(recordDryRun(processId, wouldSucceed, errors, actor))
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

import { and, asc, desc, eq, gt, sql } from 'drizzle-orm'
import { importEvents, importProcesses, importSuppliers, operationsTeams } from '../../../drizzle/schema/index.js'
import type { Db, Tx } from '../../db/index.js'
import type { ErrorEntry } from '../../errors.js'
import { formatDateTime } from '../../format.js'

export type ProcessList = 'all' | 'pending' | 'imported'
export type EventType = (typeof importEvents.$inferInsert)['type']
export type ProcessState = 'STAGED' | 'SKIPPED' | 'IMPORTED'

/** Who changed an import process, as the event log records it (§10). */
export interface Actor {
  organisationId: string
  apiKeyId: string
  /** `organisation:<name>`. */
  name: string
}

export interface SupplierRow {
  id: string
  code: string
  status: 'Ongoing' | 'Paused' | 'Complete'
  documentRoot: string
  sendMigrationEmails: boolean
  maxConcurrentProcessing: number | null
}

export interface ProcessRow {
  id: number
  state: ProcessState
  serviceAccountNumber: string | null
  accountCreatedAt: Date | null
  latestError: { at: string; errors: ErrorEntry[] } | null
  hasStagedData: boolean
}

/** One row of the lists of §7. */
export interface ListRow {
  externalAccountNumber: string
  serviceAccountNumber: string | null
  accountCreatedAt: Date | null
}

/** Rows read per query when a whole list is streamed. */
export const LIST_CHUNK_ROWS = 1000

/**
 * Locks that make creation safe across server processes (§6), all released by PostgreSQL when the
 * transaction ends or its connection dies:
 * - the process lock (`pg_try_advisory_xact_lock(bigint)`), held by a create for its whole run
 *   and tried by stage: at most one create per account, and staged data cannot change under it;
 * - concurrency slots (`pg_try_advisory_xact_lock(int, int)`, keyed by the supplier and a slot
 *   number), one per create in flight, up to the supplier's `max_concurrent_processing`.
 * The status endpoint reads `pg_locks` for the process lock to report IN_PROGRESS.
 */
const PROCESS_LOCK_BASE = 1n << 40n

function processLockKey(id: number): { key: string; classid: number; objid: number } {
  const key = PROCESS_LOCK_BASE + BigInt(id)
  return { key: key.toString(), classid: Number(key >> 32n), objid: Number(key & 0xffffffffn) }
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

  async function findProcess(supplierId: string, externalAccountNumber: string, executor: Db | Tx = db): Promise<ProcessRow | undefined> {
    const [row] = await executor.select(processColumns).from(importProcesses).where(pair(supplierId, externalAccountNumber))
    return row as ProcessRow | undefined
  }

  async function insertEvent(executor: Db | Tx, processId: number, type: EventType, actor: Actor, detail: unknown = {}) {
    await executor.insert(importEvents).values({
      importProcessId: processId, type, actor: actor.name, organisationId: actor.organisationId, apiKeyId: actor.apiKeyId, detail
    })
  }

  /** Takes the process lock for the rest of the transaction; false when a create holds it. */
  async function tryProcessLock(tx: Tx, processId: number): Promise<boolean> {
    const [row] = await tx.select({ locked: sql<boolean>`pg_try_advisory_xact_lock(${processLockKey(processId).key}::bigint)` })
      .from(sql`(select 1) as one`)
    return row!.locked === true
  }

  /** Processes of the supplier ordered by external account number (code point order), optionally paged. */
  async function listProcesses(supplierId: string, list: ProcessList, page: { limit?: number; after?: string } = {}): Promise<ListRow[]> {
    const conditions = [eq(importProcesses.supplierId, supplierId)]
    if (list !== 'all') conditions.push(eq(importProcesses.state, list === 'pending' ? 'STAGED' : 'IMPORTED'))
    if (page.after !== undefined) conditions.push(gt(importProcesses.externalAccountNumber, page.after))
    const query = db.select({
      externalAccountNumber: importProcesses.externalAccountNumber,
      serviceAccountNumber: importProcesses.serviceAccountNumber,
      accountCreatedAt: importProcesses.accountCreatedAt
    }).from(importProcesses).where(and(...conditions)).orderBy(asc(importProcesses.externalAccountNumber))
    return page.limit !== undefined ? query.limit(page.limit) : query
  }

  /**
   * A whole list in keyset-ordered chunks (`external_account_number > last`, served by the pair and
   * state indexes): one short query per chunk, no transaction or cursor held in between, so a
   * consumer that stops pulling holds nothing. Not a snapshot: a process that changes list while
   * the chunks are read may be missed or included, but no row comes twice and the order holds.
   */
  async function* processChunks(supplierId: string, list: ProcessList, after?: string, size = LIST_CHUNK_ROWS): AsyncGenerator<ListRow[], void, undefined> {
    let last = after
    for (;;) {
      const rows = await listProcesses(supplierId, list, { limit: size, after: last })
      if (rows.length > 0) yield rows
      if (rows.length < size) return
      last = rows[rows.length - 1]!.externalAccountNumber
    }
  }

  return {
    findProcess,
    insertEvent,

    /** The supplier, only when it belongs to the organisation: a foreign one is as unknown. */
    async supplierOfOrganisation(code: string, organisationId: string, executor: Db | Tx = db): Promise<SupplierRow | undefined> {
      const [row] = await executor.select({
        id: importSuppliers.id,
        code: importSuppliers.code,
        status: importSuppliers.status,
        documentRoot: importSuppliers.documentRoot,
        sendMigrationEmails: importSuppliers.sendMigrationEmails,
        maxConcurrentProcessing: importSuppliers.maxConcurrentProcessing
      }).from(importSuppliers)
        .where(and(eq(importSuppliers.code, code), eq(importSuppliers.organisationId, organisationId)))
      return row
    },

    /** True while a create (or dry run) of the process is running on any server. */
    async createRunning(processId: number, executor: Db | Tx = db): Promise<boolean> {
      const { classid, objid } = processLockKey(processId)
      const [row] = await executor.select({
        // Advisory locks belong to one database; pg_locks lists those of every database on the server.
        running: sql<boolean>`exists (select 1 from pg_locks where locktype = 'advisory' and objsubid = 1
          and database = (select oid from pg_database where datname = current_database())
          and classid = ${classid}::bigint::oid and objid = ${objid}::bigint::oid and granted)`
      }).from(sql`(select 1) as one`)
      return row!.running === true
    },

    tryProcessLock,

    /** Takes one of the supplier's `max` concurrency slots for the rest of the transaction; false when all are taken. */
    async trySlot(tx: Tx, supplierId: string, max: number): Promise<boolean> {
      const rows = await tx.select({ slot: sql<number>`s` })
        .from(sql`generate_series(0, ${max - 1}::int) as s`)
        .where(sql`pg_try_advisory_xact_lock(hashtext(${supplierId}), s)`)
        .limit(1)
      return rows.length > 0
    },

    /**
     * Stores the staged data in one transaction with its event. Returns `created` or `updated`,
     * or why it was refused: the process's state changed, or a create holds the process lock.
     */
    async stage(supplierId: string, externalAccountNumber: string, data: unknown, actor: Actor) {
      return db.transaction(async (tx) => {
        const [inserted] = await tx.insert(importProcesses).values({
          supplierId, externalAccountNumber, state: 'STAGED', stagedData: data, firstStagedAt: sql`now()`
        }).onConflictDoNothing().returning({ id: importProcesses.id })
        if (inserted) {
          await insertEvent(tx, inserted.id, 'STAGED', actor)
          return { outcome: 'created' as const }
        }
        const process = (await findProcess(supplierId, externalAccountNumber, tx))!
        if (process.state !== 'STAGED') return { outcome: 'refused' as const, process }
        if (!(await tryProcessLock(tx, process.id))) return { outcome: 'in_progress' as const, process }
        const updated = await tx.update(importProcesses).set({
          stagedData: data,
          firstStagedAt: sql`coalesce(${importProcesses.firstStagedAt}, now())`,
          updatedAt: sql`now()`
        }).where(and(eq(importProcesses.id, process.id), eq(importProcesses.state, 'STAGED'))).returning({ id: importProcesses.id })
        if (updated.length === 0) return { outcome: 'refused' as const, process: (await findProcess(supplierId, externalAccountNumber, tx))! }
        await insertEvent(tx, process.id, 'RESTAGED', actor)
        return { outcome: 'updated' as const }
      })
    },

    async stagedData(tx: Tx, processId: number): Promise<unknown> {
      const [row] = await tx.select({ data: importProcesses.stagedData }).from(importProcesses).where(eq(importProcesses.id, processId))
      return row?.data
    },

    async teamByName(tx: Tx, name: string) {
      const [row] = await tx.select({ id: operationsTeams.id, name: operationsTeams.name }).from(operationsTeams).where(eq(operationsTeams.name, name))
      return row
    },

    /** Marks the process imported; false when it is no longer STAGED (skipped meanwhile). */
    async markImported(tx: Tx, processId: number, serviceAccountNumber: string): Promise<Date | undefined> {
      const [row] = await tx.update(importProcesses).set({
        state: 'IMPORTED', serviceAccountNumber, accountCreatedAt: sql`now()`, latestError: null, updatedAt: sql`now()`
      }).where(and(eq(importProcesses.id, processId), eq(importProcesses.state, 'STAGED')))
        .returning({ at: importProcesses.accountCreatedAt })
      return row?.at ?? undefined
    },

    /** Records a failed create: its events and the process's latest error, in one transaction. */
    async recordCreateFailure(processId: number, errors: ErrorEntry[], actor: Actor) {
      await db.transaction(async (tx) => {
        const [row] = await tx.update(importProcesses)
          .set({ latestError: { at: formatDateTime(new Date()), errors }, updatedAt: sql`now()` })
          .where(and(eq(importProcesses.id, processId), eq(importProcesses.state, 'STAGED')))
          .returning({ id: importProcesses.id })
        await insertEvent(tx, processId, 'CREATE_ATTEMPTED', actor)
        await insertEvent(tx, processId, 'CREATE_FAILED', actor, { errors })
        return row
      })
    },

    async latestEvent(processId: number) {
      const [row] = await db.select({ type: importEvents.type, at: importEvents.at }).from(importEvents)
        .where(eq(importEvents.importProcessId, processId)).orderBy(desc(importEvents.id)).limit(1)
      return row
    },

    listProcesses,
    processChunks
  }
}

export type ImportsRepository = ReturnType<typeof createImportsRepository>

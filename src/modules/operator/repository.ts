import { and, asc, eq, isNull, sql } from 'drizzle-orm'
import {
  apiKeys,
  importEvents,
  importFailures,
  importProcesses,
  importProgressCounts,
  importSupplierEvents,
  importSuppliers,
  operationsTeams,
  organisations
} from '../../../drizzle/schema/index.js'
import type { SupplyPointChecks } from '../../../schemas/common.js'
import { foldProgressCounts, PROGRESS_FOLD_ROWS } from '../../accounts/repository.js'
import { rowsOf, type Db, type Tx } from '../../db/index.js'

export type SupplierStatus = 'Ongoing' | 'Paused' | 'Complete'

export interface SupplierRecord {
  id: string
  code: string
  organisation: string
  status: SupplierStatus
  documentRoot: string
  sendMigrationEmails: boolean
  maxConcurrentProcessing: number | null
  supplyPointChecks: SupplyPointChecks
}

export interface SupplierChanges {
  status?: SupplierStatus
  documentRoot?: string
  sendMigrationEmails?: boolean
  maxConcurrentProcessing?: number | null
  supplyPointChecks?: SupplyPointChecks
}

const supplierColumns = {
  id: importSuppliers.id,
  code: importSuppliers.code,
  organisation: organisations.name,
  status: importSuppliers.status,
  documentRoot: importSuppliers.documentRoot,
  sendMigrationEmails: importSuppliers.sendMigrationEmails,
  maxConcurrentProcessing: importSuppliers.maxConcurrentProcessing,
  supplyPointChecks: importSuppliers.supplyPointChecks
}

/** Writes the action's audit record in the transaction of its change (run after the change). */
export type InTransaction = (tx: Tx) => Promise<void>

export interface Progress {
  staged: number
  pending: number
  imported: number
  skipped: number
  failed: number
}

/**
 * SQL of the operator surface. Unique violations surface as driver errors (`23505`). `primary`:
 * where the kept counts are folded when `db` is a read replica.
 */
export function createOperatorRepository(db: Db, primary: Db = db) {
  async function supplierByCode(code: string, executor: Db | Tx = db): Promise<SupplierRecord | undefined> {
    const [row] = await executor
      .select(supplierColumns)
      .from(importSuppliers)
      .innerJoin(organisations, eq(organisations.id, importSuppliers.organisationId))
      .where(eq(importSuppliers.code, code))
    return row
  }

  return {
    async insertOrganisation(name: string, record: InTransaction) {
      return db.transaction(async (tx) => {
        const [row] = await tx
          .insert(organisations)
          .values({ name })
          .returning({ id: organisations.id, name: organisations.name })
        await record(tx)
        return row!
      })
    },

    async organisationIdByName(name: string): Promise<string | undefined> {
      const [row] = await db.select({ id: organisations.id }).from(organisations).where(eq(organisations.name, name))
      return row?.id
    },

    async insertApiKey(organisationId: string, keyHash: string, record: (tx: Tx, id: string) => Promise<void>) {
      return db.transaction(async (tx) => {
        const [row] = await tx.insert(apiKeys).values({ organisationId, keyHash }).returning({ id: apiKeys.id })
        await record(tx, row!.id)
        return row!
      })
    },

    /** Marks the key revoked (keeping the first revocation time); undefined when there is no such key. */
    async revokeApiKey(id: string, record: InTransaction) {
      return db.transaction(async (tx) => {
        await tx
          .update(apiKeys)
          .set({ revokedAt: sql`now()` })
          .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
        const [row] = await tx
          .select({ id: apiKeys.id, organisation: organisations.name, revokedAt: apiKeys.revokedAt })
          .from(apiKeys)
          .innerJoin(organisations, eq(organisations.id, apiKeys.organisationId))
          .where(eq(apiKeys.id, id))
        if (row) await record(tx)
        return row
      })
    },

    async insertSupplier(
      values: { code: string; organisationId: string } & Required<SupplierChanges>,
      actor: string,
      record: InTransaction
    ) {
      return db.transaction(async (tx) => {
        const [row] = await tx.insert(importSuppliers).values(values).returning({ id: importSuppliers.id })
        await tx.insert(importSupplierEvents).values({ supplierId: row!.id, actor, change: { created: values } })
        await record(tx)
        return (await supplierByCode(values.code, tx))!
      })
    },

    /**
     * Applies the changes and records them as one event; undefined when the code is unknown.
     * `record` is given the supplier's values before the change.
     */
    async updateSupplier(
      code: string,
      changes: SupplierChanges,
      actor: string,
      record: (tx: Tx, before: Required<SupplierChanges>) => Promise<void>
    ) {
      return db.transaction(async (tx) => {
        const [before] = await tx
          .select({
            id: importSuppliers.id,
            status: importSuppliers.status,
            documentRoot: importSuppliers.documentRoot,
            sendMigrationEmails: importSuppliers.sendMigrationEmails,
            maxConcurrentProcessing: importSuppliers.maxConcurrentProcessing,
            supplyPointChecks: importSuppliers.supplyPointChecks
          })
          .from(importSuppliers)
          .where(eq(importSuppliers.code, code))
          .for('update')
        if (!before) return undefined
        await record(tx, before)
        if (Object.keys(changes).length > 0) {
          await tx
            .update(importSuppliers)
            .set({ ...changes, updatedAt: sql`now()` })
            .where(eq(importSuppliers.id, before.id))
          const change =
            changes.status !== undefined && changes.status !== before.status
              ? { ...changes, previousStatus: before.status }
              : changes
          await tx.insert(importSupplierEvents).values({ supplierId: before.id, actor, change })
        }
        return supplierByCode(code, tx)
      })
    },

    supplierByCode: (code: string) => supplierByCode(code),

    /** Every supplier, or one organisation's (by name). */
    async listSuppliers(organisation?: string): Promise<SupplierRecord[]> {
      return db
        .select(supplierColumns)
        .from(importSuppliers)
        .innerJoin(organisations, eq(organisations.id, importSuppliers.organisationId))
        .where(organisation === undefined ? undefined : eq(organisations.name, organisation))
        .orderBy(asc(importSuppliers.code))
    },

    async listOrganisations() {
      return db
        .select({ id: organisations.id, name: organisations.name })
        .from(organisations)
        .orderBy(asc(organisations.name))
    },

    /** API keys (never the key: it is not stored), by organisation then creation; one organisation's when named. */
    async listApiKeys(organisation?: string) {
      return db
        .select({
          id: apiKeys.id,
          organisation: organisations.name,
          createdAt: apiKeys.createdAt,
          revokedAt: apiKeys.revokedAt
        })
        .from(apiKeys)
        .innerJoin(organisations, eq(organisations.id, apiKeys.organisationId))
        .where(organisation === undefined ? undefined : eq(organisations.name, organisation))
        .orderBy(asc(organisations.name), asc(apiKeys.createdAt), asc(apiKeys.id))
    },

    async teamIdByName(name: string): Promise<string | undefined> {
      const [row] = await db
        .select({ id: operationsTeams.id })
        .from(operationsTeams)
        .where(eq(operationsTeams.name, name))
        .limit(1)
      return row?.id
    },

    async listTeams() {
      return db
        .select({ id: operationsTeams.id, name: operationsTeams.name })
        .from(operationsTeams)
        .orderBy(asc(operationsTeams.name))
    },

    async insertTeam(name: string, record: InTransaction) {
      return db.transaction(async (tx) => {
        const [row] = await tx
          .insert(operationsTeams)
          .values({ name })
          .returning({ id: operationsTeams.id, name: operationsTeams.name })
        await record(tx)
        return row!
      })
    },

    /**
     * Marks the pair skipped, creating its process when it was never staged. Returns the process,
     * or `imported` when it already has an account (refused by the caller).
     */
    async skipProcess(supplierId: string, externalAccountNumber: string, actor: string, record: InTransaction) {
      return db.transaction(async (tx) => {
        const clearFailures = () =>
          tx
            .delete(importFailures)
            .where(
              and(
                eq(importFailures.supplierId, supplierId),
                eq(importFailures.externalAccountNumber, externalAccountNumber)
              )
            )
        const [inserted] = await tx
          .insert(importProcesses)
          .values({ supplierId, externalAccountNumber, state: 'SKIPPED', skippedAt: sql`now()` })
          .onConflictDoNothing()
          .returning({ id: importProcesses.id })
        if (inserted) {
          await tx
            .insert(importEvents)
            .values({ importProcessId: inserted.id, type: 'SKIPPED', actor, detail: { previousState: null } })
          await record(tx)
          // A skipped account's failures are no longer anyone's work.
          await clearFailures()
          return { imported: false as const, serviceAccountNumber: null }
        }
        const [process] = await tx
          .select({
            id: importProcesses.id,
            state: importProcesses.state,
            serviceAccountNumber: importProcesses.serviceAccountNumber
          })
          .from(importProcesses)
          .where(
            and(
              eq(importProcesses.supplierId, supplierId),
              eq(importProcesses.externalAccountNumber, externalAccountNumber)
            )
          )
          .for('update')
        if (process!.state === 'IMPORTED') return { imported: true as const }
        if (process!.state !== 'SKIPPED') {
          // Skipping a skipped process changes nothing and records nothing.
          await tx
            .update(importProcesses)
            .set({ state: 'SKIPPED', skippedAt: sql`now()`, updatedAt: sql`now()` })
            .where(eq(importProcesses.id, process!.id))
          await tx
            .insert(importEvents)
            .values({ importProcessId: process!.id, type: 'SKIPPED', actor, detail: { previousState: process!.state } })
        }
        await clearFailures()
        await record(tx)
        return { imported: false as const, serviceAccountNumber: process!.serviceAccountNumber }
      })
    },

    async processEvents(supplierId: string, externalAccountNumber: string) {
      const [process] = await db
        .select({ id: importProcesses.id })
        .from(importProcesses)
        .where(
          and(
            eq(importProcesses.supplierId, supplierId),
            eq(importProcesses.externalAccountNumber, externalAccountNumber)
          )
        )
      if (!process) return undefined
      return db
        .select({
          type: importEvents.type,
          at: importEvents.at,
          actor: importEvents.actor,
          detail: importEvents.detail
        })
        .from(importEvents)
        .where(eq(importEvents.importProcessId, process.id))
        .orderBy(asc(importEvents.id))
    },

    /**
     * The supplier's kept counts (import_progress_counts, written by a trigger on
     * import_processes): the sum of its delta rows, instead of counting every process. When the
     * rows have piled up, they are folded into one, so the next read sums a few.
     */
    async progress(supplierId: string) {
      const [row] = rowsOf<Record<keyof Progress | 'rows', string | number>>(
        await db.execute(sql`select count(*) as rows, coalesce(sum(staged), 0) as staged,
          coalesce(sum(pending), 0) as pending, coalesce(sum(imported), 0) as imported,
          coalesce(sum(skipped), 0) as skipped, coalesce(sum(failed), 0) as failed
          from ${importProgressCounts} where supplier_id = ${supplierId}::uuid`)
      )
      if (Number(row!.rows) > PROGRESS_FOLD_ROWS) await foldProgressCounts(primary, supplierId)
      return {
        staged: Number(row!.staged),
        pending: Number(row!.pending),
        imported: Number(row!.imported),
        skipped: Number(row!.skipped),
        failed: Number(row!.failed)
      }
    }
  }
}

export type OperatorRepository = ReturnType<typeof createOperatorRepository>

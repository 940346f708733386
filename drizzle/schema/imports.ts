import { sql } from 'drizzle-orm'
import { bigint, index, jsonb, pgEnum, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { apiKeys, importSuppliers, organisations } from './tenancy.js'
import { textC } from './types.js'

export const importProcessState = pgEnum('import_process_state', ['STAGED', 'SKIPPED', 'IMPORTED'])

/** One row per (supplier, external account number): the staging-to-created state machine. */
export const importProcesses = pgTable(
  'import_processes',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    supplierId: uuid('supplier_id')
      .notNull()
      .references(() => importSuppliers.id),
    externalAccountNumber: textC('external_account_number').notNull(),
    state: importProcessState('state').notNull(),
    stagedData: jsonb('staged_data'),
    firstStagedAt: timestamp('first_staged_at', { withTimezone: true }),
    /**
     * The created account's number, copied from it. Not indexed: nothing looks a process up by it,
     * and the account's own unique index already keeps the numbers apart (a random number's index
     * costs a read and a write on a random page at every creation).
     */
    serviceAccountNumber: text('service_account_number'),
    accountCreatedAt: timestamp('account_created_at', { withTimezone: true }),
    /** When the operator skipped it; with `account_created_at`, when the retention period starts. */
    skippedAt: timestamp('skipped_at', { withTimezone: true }),
    /** When the staged data and error details were last erased (retention or an erasure request). */
    stagedDataErasedAt: timestamp('staged_data_erased_at', { withTimezone: true }),
    /** `{at, errors}` of the latest failed (non-dry-run) create, or null. */
    latestError: jsonb('latest_error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow()
  },
  (t) => [
    uniqueIndex('import_processes_pair_idx').on(t.supplierId, t.externalAccountNumber),
    index('import_processes_state_idx').on(t.supplierId, t.state, t.externalAccountNumber),
    // The retention job's queue: finished processes not yet erased, oldest first.
    index('import_processes_retention_idx')
      .on(sql`coalesce(${t.accountCreatedAt}, ${t.skippedAt})`)
      .where(sql`${t.stagedDataErasedAt} is null`)
  ]
)

/**
 * Kept counts of a supplier's import processes (what `migrationProgress` shows), as delta rows:
 * a trigger on import_processes appends one row per supplier per statement, in the statement's
 * transaction, so concurrent writers never wait on one counter row. The counts are the sums of
 * the supplier's rows; reads fold them into one row now and then (drizzle/migrations/0009).
 */
export const importProgressCounts = pgTable(
  'import_progress_counts',
  {
    /** No foreign key: its check would lock the supplier's row for every update of a process. */
    supplierId: uuid('supplier_id').notNull(),
    /** first_staged_at set. */
    staged: bigint('staged', { mode: 'number' }).notNull().default(0),
    /** state STAGED. */
    pending: bigint('pending', { mode: 'number' }).notNull().default(0),
    imported: bigint('imported', { mode: 'number' }).notNull().default(0),
    skipped: bigint('skipped', { mode: 'number' }).notNull().default(0),
    /** state STAGED with a latest_error. */
    failed: bigint('failed', { mode: 'number' }).notNull().default(0)
  },
  (t) => [index('import_progress_counts_supplier_idx').on(t.supplierId)]
)

export const importEventType = pgEnum('import_event_type', [
  'STAGED',
  'RESTAGED',
  'CREATE_ATTEMPTED',
  'CREATED',
  'DRY_RUN',
  'CREATE_FAILED',
  'SKIPPED',
  'POST_IMPORT_WRITE',
  'STAGED_DATA_ERASED'
])

/** Append-only log of every change to an import process. */
export const importEvents = pgTable(
  'import_events',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    importProcessId: bigint('import_process_id', { mode: 'number' })
      .notNull()
      .references(() => importProcesses.id),
    type: importEventType('type').notNull(),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
    organisationId: uuid('organisation_id').references(() => organisations.id),
    apiKeyId: uuid('api_key_id').references(() => apiKeys.id),
    /** `operator` or `organisation:<name>`. */
    actor: text('actor').notNull(),
    detail: jsonb('detail')
      .notNull()
      .default(sql`'{}'::jsonb`)
  },
  (t) => [index('import_events_process_idx').on(t.importProcessId, t.id)]
)

import {
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uuid
} from 'drizzle-orm/pg-core'
import { STEP_NAMES } from '../../schemas/failures.js'
import { importSuppliers } from './tenancy.js'
import { textC } from './types.js'

/** The steps of a migration, in the order lists show them (an enum sorts by this order). */
export const importStep = pgEnum('import_step', STEP_NAMES)

/**
 * The latest failure of each step of each account, replaced by the next failure and removed
 * by the step's next success: a report of what fails, never a gate. Codes and attrs only: no
 * `detail`, no input value (they can hold personal data).
 */
export const importFailures = pgTable(
  'import_failures',
  {
    supplierId: uuid('supplier_id')
      .notNull()
      .references(() => importSuppliers.id),
    externalAccountNumber: textC('external_account_number').notNull(),
    step: importStep('step').notNull(),
    failedAt: timestamp('failed_at', { withTimezone: true }).notNull(),
    /** Failures of this step since it last succeeded, from 1. */
    attempts: integer('attempts').notNull(),
    httpStatus: smallint('http_status').notNull(),
    /** The answer's top-level code. */
    code: text('code').notNull(),
    /** `[{code, attr}]`, at most 100, in the answer's order. */
    errors: jsonb('errors').notNull(),
    /** The distinct codes of `errors` (the top-level code when there are none): what summaries count. */
    codes: text('codes').array().notNull()
  },
  (t) => [
    primaryKey({ name: 'import_failures_pkey', columns: [t.supplierId, t.externalAccountNumber, t.step] }),
    index('import_failures_step_idx').on(t.supplierId, t.step, t.externalAccountNumber)
  ]
)

/** Stages, creates and recorded failures per supplier and UTC minute: the migration's timeline. */
export const migrationMinutes = pgTable(
  'migration_minutes',
  {
    supplierId: uuid('supplier_id')
      .notNull()
      .references(() => importSuppliers.id),
    minute: timestamp('minute', { withTimezone: true }).notNull(),
    staged: integer('staged').notNull().default(0),
    created: integer('created').notNull().default(0),
    failed: integer('failed').notNull().default(0)
  },
  (t) => [primaryKey({ name: 'migration_minutes_pkey', columns: [t.supplierId, t.minute] })]
)

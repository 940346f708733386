import { sql } from 'drizzle-orm'
import { bigint, boolean, integer, jsonb, pgEnum, pgTable, text, timestamp, uuid, index } from 'drizzle-orm/pg-core'
import { SUPPLY_POINT_CHECKS } from '../../schemas/common.js'

const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow()

/** Key/value settings the service keeps for itself (e.g. the generated operator key's hash). */
export const serviceSettings = pgTable('service_settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  createdAt: createdAt()
})

export const organisations = pgTable('organisations', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: text('name').notNull().unique(),
  createdAt: createdAt()
})

/** API keys are stored only as SHA-256 hashes of 256-bit random keys. */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organisationId: uuid('organisation_id')
      .notNull()
      .references(() => organisations.id),
    keyHash: text('key_hash').notNull().unique(),
    createdAt: createdAt(),
    revokedAt: timestamp('revoked_at', { withTimezone: true })
  },
  (t) => [index('api_keys_organisation_idx').on(t.organisationId)]
)

/** Single-use refresh tokens, stored hashed. `apiKeyId` is null for operator tokens. */
export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tokenHash: text('token_hash').notNull().unique(),
    apiKeyId: uuid('api_key_id').references(() => apiKeys.id),
    operator: boolean('operator').notNull().default(false),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    createdAt: createdAt()
  },
  (t) => [index('refresh_tokens_expires_idx').on(t.expiresAt)]
)

export const supplierStatus = pgEnum('import_supplier_status', ['Ongoing', 'Paused', 'Complete'])
export const supplyPointChecks = pgEnum('supply_point_checks', SUPPLY_POINT_CHECKS)

export const importSuppliers = pgTable(
  'import_suppliers',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    code: text('code').notNull().unique(),
    organisationId: uuid('organisation_id')
      .notNull()
      .references(() => organisations.id),
    status: supplierStatus('status').notNull().default('Ongoing'),
    documentRoot: text('document_root').notNull().default(''),
    sendMigrationEmails: boolean('send_migration_emails').notNull().default(false),
    maxConcurrentProcessing: integer('max_concurrent_processing'),
    /** What its accounts' supply point identifiers must be besides the schema's limits (schemas/common.ts). */
    supplyPointChecks: supplyPointChecks('supply_point_checks').notNull().default('NONE'),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow()
  },
  (t) => [index('import_suppliers_organisation_idx').on(t.organisationId)]
)

/** Every operator change to a supplier (status transitions included), with time and actor. */
export const importSupplierEvents = pgTable(
  'import_supplier_events',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    supplierId: uuid('supplier_id')
      .notNull()
      .references(() => importSuppliers.id),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
    actor: text('actor').notNull(),
    change: jsonb('change')
      .notNull()
      .default(sql`'{}'::jsonb`)
  },
  (t) => [index('import_supplier_events_supplier_idx').on(t.supplierId, t.id)]
)

export const operationsTeams = pgTable('operations_teams', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: text('name').notNull().unique(),
  createdAt: createdAt()
})

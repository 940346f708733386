import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  date,
  index,
  integer,
  jsonb,
  numeric,
  pgEnum,
  pgTable,
  text,
  timestamp,
  unique,
  uuid
} from 'drizzle-orm/pg-core'
import { importProcesses } from './imports.js'
import { importSuppliers, operationsTeams } from './tenancy.js'
import { textC } from './types.js'

/**
 * The platform side of a migrated account. Primary keys of the account's rows are UUIDs made
 * by the service, so one creation is a fixed sequence of multi-row inserts with no read-backs.
 */

const money = (name: string) => numeric(name, { precision: 20, scale: 10 })
const day = (name: string) => date(name, { mode: 'string' })
const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow()

const addressColumns = () => ({
  streetAddress: text('street_address').notNull(),
  locality: text('locality'),
  administrativeArea: text('administrative_area'),
  postalCode: text('postal_code'),
  country: text('country').notNull()
})

export const accounts = pgTable(
  'accounts',
  {
    id: uuid('id').primaryKey(),
    serviceAccountNumber: text('service_account_number').notNull().unique(),
    importProcessId: bigint('import_process_id', { mode: 'number' })
      .notNull()
      .unique()
      .references(() => importProcesses.id),
    supplierId: uuid('supplier_id')
      .notNull()
      .references(() => importSuppliers.id),
    externalAccountNumber: textC('external_account_number').notNull(),
    accountType: text('account_type').notNull(),
    useIndustryBilling: boolean('use_industry_billing'),
    billingPeriodLength: text('billing_period_length'),
    billingPeriodStartDay: integer('billing_period_start_day'),
    billingStreetAddress: text('billing_street_address').notNull(),
    billingLocality: text('billing_locality'),
    billingAdministrativeArea: text('billing_administrative_area'),
    billingPostalCode: text('billing_postal_code'),
    billingCountry: text('billing_country').notNull(),
    communicationPreference: text('communication_preference').notNull(),
    salesChannel: text('sales_channel').notNull(),
    salesSubchannel: text('sales_subchannel'),
    unknownOccupier: boolean('unknown_occupier').notNull(),
    transferBalance: money('transfer_balance').notNull(),
    operationsTeamId: uuid('operations_team_id')
      .notNull()
      .references(() => operationsTeams.id),
    createdAt: createdAt()
  },
  (t) => [index('accounts_supplier_idx').on(t.supplierId, t.externalAccountNumber)]
)

export const customers = pgTable(
  'customers',
  {
    id: uuid('id').primaryKey(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    position: integer('position').notNull(),
    title: text('title'),
    givenName: text('given_name').notNull(),
    familyName: text('family_name'),
    email: text('email'),
    /** E.164. */
    landline: text('landline'),
    portfolioRoles: text('portfolio_roles').array().notNull(),
    unableToReadMeters: boolean('unable_to_read_meters').notNull(),
    createdAt: createdAt()
  },
  (t) => [index('customers_account_idx').on(t.accountId)]
)

export const ledgers = pgTable(
  'ledgers',
  {
    id: uuid('id').primaryKey(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    ledgerCode: text('ledger_code').notNull(),
    ledgerNumber: text('ledger_number').notNull().unique(),
    /** Positive when the customer is in credit. */
    balance: money('balance').notNull(),
    createdAt: createdAt()
  },
  (t) => [unique('ledgers_account_code_key').on(t.accountId, t.ledgerCode)]
)

export const statementStatus = pgEnum('statement_status', ['CLOSED', 'OPEN'])

/** The closed imported statement and the open statement of each ledger. */
export const statements = pgTable(
  'statements',
  {
    id: uuid('id').primaryKey(),
    ledgerId: uuid('ledger_id')
      .notNull()
      .references(() => ledgers.id),
    status: statementStatus('status').notNull(),
    imported: boolean('imported').notNull().default(false),
    periodFrom: day('period_from').notNull(),
    /** Inclusive; null while open. */
    periodTo: day('period_to'),
    openingBalance: money('opening_balance').notNull(),
    closingBalance: money('closing_balance'),
    createdAt: createdAt()
  },
  (t) => [index('statements_ledger_idx').on(t.ledgerId, t.status)]
)

export const transactionSource = pgEnum('transaction_source', ['ACCOUNT_IMPORT', 'POST_IMPORT', 'BILLING_DOCUMENT'])

/** Finalised billing documents imported once per ledger; their transactions are ledger_transactions. */
export const billingDocuments = pgTable(
  'billing_documents',
  {
    id: uuid('id').primaryKey(),
    ledgerId: uuid('ledger_id')
      .notNull()
      .references(() => ledgers.id),
    identifier: text('identifier').notNull(),
    type: text('type').notNull(),
    issuedDate: day('issued_date').notNull(),
    billPeriodFrom: day('bill_period_from_date'),
    billPeriodTo: day('bill_period_to_date'),
    finalized: boolean('finalized').notNull().default(true),
    createdAt: createdAt()
  },
  (t) => [unique('billing_documents_ledger_identifier_key').on(t.ledgerId, t.identifier)]
)

export const ledgerTransactions = pgTable(
  'ledger_transactions',
  {
    id: uuid('id').primaryKey(),
    ledgerId: uuid('ledger_id')
      .notNull()
      .references(() => ledgers.id),
    statementId: uuid('statement_id').references(() => statements.id),
    source: transactionSource('source').notNull(),
    transactionId: text('transaction_id').notNull(),
    type: text('type').notNull(),
    transactionDate: day('transaction_date').notNull(),
    /** As sent: its direction comes from `type`. */
    amount: money('amount').notNull(),
    reason: text('reason'),
    displayNote: text('display_note'),
    note: text('note'),
    reference: text('reference'),
    paymentType: text('payment_type'),
    productCode: text('product_code'),
    /** Set when the service changed the transaction (e.g. moved into the open statement). */
    description: text('description'),
    originalTransactionDate: day('original_transaction_date'),
    /** The historical billing document holding it; null for additional historical transactions. */
    billingDocumentId: uuid('billing_document_id').references(() => billingDocuments.id),
    createdAt: createdAt()
  },
  (t) => [unique('ledger_transactions_ledger_transaction_key').on(t.ledgerId, t.transactionId)]
)

export const transactionLineItems = pgTable(
  'transaction_line_items',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    transactionId: uuid('transaction_id')
      .notNull()
      .references(() => ledgerTransactions.id),
    position: integer('position').notNull(),
    rateBand: text('rate_band').notNull(),
    startDate: day('start_date').notNull(),
    endDate: day('end_date').notNull(),
    numberOfUnits: numeric('number_of_units', { precision: 16, scale: 4 }).notNull(),
    netAmount: money('net_amount').notNull(),
    pricePerUnit: numeric('price_per_unit', { precision: 16, scale: 8 }).notNull(),
    units: numeric('units', { precision: 16, scale: 4 }).array()
  },
  (t) => [index('transaction_line_items_transaction_idx').on(t.transactionId)]
)

export const transactionTaxItems = pgTable(
  'transaction_tax_items',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    transactionId: uuid('transaction_id')
      .notNull()
      .references(() => ledgerTransactions.id),
    position: integer('position').notNull(),
    amount: money('amount').notNull(),
    taxType: text('tax_type').notNull(),
    valueTaxed: numeric('value_taxed', { precision: 20, scale: 5 }).notNull(),
    rate: numeric('rate', { precision: 20, scale: 5 }).notNull(),
    unitType: text('unit_type').notNull()
  },
  (t) => [index('transaction_tax_items_transaction_idx').on(t.transactionId)]
)

export const supplyAddresses = pgTable(
  'supply_addresses',
  {
    id: uuid('id').primaryKey(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    position: integer('position').notNull(),
    customerAtSupplyAddressFromDate: day('customer_at_supply_address_from_date').notNull(),
    ...addressColumns()
  },
  (t) => [index('supply_addresses_account_idx').on(t.accountId)]
)

export const supplyPoints = pgTable(
  'supply_points',
  {
    id: uuid('id').primaryKey(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    supplyAddressId: uuid('supply_address_id')
      .notNull()
      .references(() => supplyAddresses.id),
    identifier: text('identifier').notNull(),
    supplyType: text('supply_type').notNull(),
    supplyStartDate: day('supply_start_date').notNull(),
    lastBilledToDate: day('last_billed_to_date'),
    loadZone: text('load_zone'),
    createdAt: createdAt()
  },
  (t) => [unique('supply_points_account_identifier_key').on(t.accountId, t.identifier)]
)

/** Current agreements (from the account import) and historical ones. */
export const agreements = pgTable(
  'agreements',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    supplyPointId: uuid('supply_point_id')
      .notNull()
      .references(() => supplyPoints.id),
    tariffCode: text('tariff_code').notNull(),
    effectiveFrom: day('effective_from').notNull(),
    /** Exclusive; null for the open-ended last agreement. */
    effectiveTo: day('effective_to'),
    historical: boolean('historical').notNull().default(false),
    createdAt: createdAt()
  },
  (t) => [index('agreements_supply_point_idx').on(t.supplyPointId, t.effectiveFrom)]
)

export const accountMetadata = pgTable(
  'account_metadata',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    position: integer('position').notNull(),
    key: text('key').notNull(),
    value: jsonb('value').notNull()
  },
  (t) => [index('account_metadata_account_idx').on(t.accountId)]
)

export const outboxStatus = pgEnum('outbox_status', ['PENDING', 'SENT', 'FAILED'])

/** Migration e-mails, queued in the creating transaction and delivered by a worker. */
export const emailOutbox = pgTable(
  'email_outbox',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    template: text('template').notNull(),
    recipient: text('recipient').notNull(),
    status: outboxStatus('status').notNull().default('PENDING'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true })
      .notNull()
      .default(sql`now()`),
    lastError: text('last_error'),
    createdAt: createdAt(),
    sentAt: timestamp('sent_at', { withTimezone: true })
  },
  (t) => [index('email_outbox_pending_idx').on(t.status, t.nextAttemptAt)]
)

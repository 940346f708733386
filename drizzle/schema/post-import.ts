import { boolean, date, index, jsonb, numeric, pgTable, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core'
import { accounts } from './accounts.js'

/** Data added to a created account by the post-import endpoints. */

const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow()
const day = (name: string) => date(name, { mode: 'string' })

export const notes = pgTable(
  'notes',
  {
    id: uuid('id').primaryKey(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    body: text('body'),
    /** Full locations (`<bucket>/<root>/<path>`), sorted: the set identifies the note with its body. */
    documentLocations: text('document_locations').array().notNull(),
    /** As given (whole seconds), or the time of the request. */
    noteCreatedAt: timestamp('note_created_at', { withTimezone: true }).notNull(),
    isPinned: boolean('is_pinned').notNull().default(false),
    unpinAt: timestamp('unpin_at', { withTimezone: true }),
    /** Written by the service itself (e.g. the note listing transactions moved into the open statement). */
    bySystem: boolean('by_system').notNull().default(false),
    createdAt: createdAt()
  },
  (t) => [index('notes_account_idx').on(t.accountId)]
)

export const historicalStatements = pgTable(
  'historical_statements',
  {
    id: uuid('id').primaryKey(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    statementId: text('statement_id').notNull(),
    billPeriodFrom: day('bill_period_from_date').notNull(),
    billPeriodTo: day('bill_period_to_date').notNull(),
    issuedDate: day('issued_date').notNull(),
    number: text('number'),
    grossAmount: numeric('gross_amount', { precision: 20, scale: 10 }).notNull(),
    /** The normalised relative path, as echoed. */
    statementPath: text('statement_path'),
    /** The full location `<bucket>/<root>/<path>`. */
    statementLocation: text('statement_location'),
    createdAt: createdAt()
  },
  (t) => [unique('historical_statements_account_statement_key').on(t.accountId, t.statementId)]
)

export const paymentInstructions = pgTable(
  'payment_instructions',
  {
    id: uuid('id').primaryKey(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    vendor: text('vendor').notNull(),
    reference: text('reference').notNull(),
    type: text('type').notNull(),
    status: text('status').notNull(),
    /** What the vendor answered about the instruction. */
    details: jsonb('details').notNull(),
    createdAt: createdAt()
  },
  (t) => [unique('payment_instructions_account_vendor_reference_key').on(t.accountId, t.vendor, t.reference)]
)

import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/**
 * Request-rate limits every server process on the database counts against: one row per key (a
 * client address's token requests, an organisation's data-import calls) and its current window.
 */
export const rateLimitCounts = pgTable('rate_limit_counts', {
  key: text('key').primaryKey(),
  windowEndsAt: timestamp('window_ends_at', { withTimezone: true, precision: 3 }).notNull(),
  count: integer('count').notNull()
})

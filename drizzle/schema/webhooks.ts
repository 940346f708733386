import {
  bigint,
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
import { sql } from 'drizzle-orm'
import { DELIVERY_STATES, WEBHOOK_EVENT_TYPES } from '../../schemas/webhooks.js'
import { organisations } from './tenancy.js'

export const webhookEventType = pgEnum('webhook_event_type', WEBHOOK_EVENT_TYPES)
export const webhookDeliveryState = pgEnum('webhook_delivery_state', DELIVERY_STATES)

/** An organisation's webhook endpoint: where its events go, signed with `secret`. */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organisationId: uuid('organisation_id')
      .notNull()
      .references(() => organisations.id),
    url: text('url').notNull(),
    events: webhookEventType('events').array().notNull(),
    /** `whsec_` + base64 of 24 random bytes: signs every delivery (Standard Webhooks). */
    secret: text('secret').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow()
  },
  (t) => [index('webhook_endpoints_organisation_idx').on(t.organisationId)]
)

/**
 * The outbox: one row per event for an organisation with an endpoint subscribed to its type,
 * written by triggers (drizzle/migrations/0008_webhooks.sql) in the transaction of the record it
 * reports. `data` never holds personal data.
 */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    organisationId: uuid('organisation_id')
      .notNull()
      .references(() => organisations.id),
    type: webhookEventType('type').notNull(),
    data: jsonb('data').notNull(),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull().defaultNow()
  },
  (t) => [index('webhook_events_occurred_idx').on(t.occurredAt)]
)

/** An event's delivery to one endpoint: its attempts so far and when the next is due. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    eventId: bigint('event_id', { mode: 'number' })
      .notNull()
      .references(() => webhookEvents.id, { onDelete: 'cascade' }),
    endpointId: uuid('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    state: webhookDeliveryState('state').notNull().default('PENDING'),
    attempts: integer('attempts').notNull().default(0),
    /** When the next attempt is due; while an attempt runs, when its claim lapses. */
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true })
      .notNull()
      .default(sql`now()`),
    /**
     * Redeliveries asked for so far. An attempt carries the count it was claimed with; its
     * recording ends the delivery (or schedules its retry) only if no redelivery was asked for
     * since, so a redelivery asked for while an attempt is in flight or not yet recorded is sent.
     */
    redeliveries: integer('redeliveries').notNull().default(0),
    lastStatus: smallint('last_status'),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    deliveredAt: timestamp('delivered_at', { withTimezone: true })
  },
  (t) => [
    index('webhook_deliveries_due_idx')
      .on(t.endpointId, t.nextAttemptAt)
      .where(sql`${t.state} = 'PENDING'`),
    index('webhook_deliveries_endpoint_idx').on(t.endpointId, t.id),
    index('webhook_deliveries_event_idx').on(t.eventId)
  ]
)

/** Every attempt of a delivery: the status or the error, and how long it took. */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    deliveryId: bigint('delivery_id', { mode: 'number' })
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: 'cascade' }),
    attempt: integer('attempt').notNull(),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
    status: smallint('status'),
    error: text('error'),
    durationMs: integer('duration_ms').notNull()
  },
  (t) => [primaryKey({ name: 'webhook_attempts_pkey', columns: [t.deliveryId, t.attempt] })]
)

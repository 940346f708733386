/**
 * Webhooks: the events the service sends out, and the states of a delivery. The GraphQL surface
 * (schemas/graphql.ts) and the database enums are built from these lists.
 */

/** Every event type an endpoint may subscribe to. */
export const WEBHOOK_EVENT_TYPES = [
  'import_process.created',
  'import_process.create_failed',
  'import_process.dry_run',
  'import_process.skipped',
  'post_import.written',
  'post_import.failed',
  'import_job.completed',
  'import_job.cancelled'
] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]

export const DELIVERY_STATES = ['PENDING', 'DELIVERED', 'FAILED'] as const
export type DeliveryState = (typeof DELIVERY_STATES)[number]

/**
 * Seconds between one attempt and the next: the first attempt is at once, then these delays
 * (about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); after the last, the delivery is FAILED.
 */
export const RETRY_DELAYS_SECONDS = [5, 300, 1800, 7200, 18000, 36000, 36000] as const

/** An attempt succeeds with a 2xx within this time. */
export const DELIVERY_TIMEOUT_MS = 10_000

/** Endpoints an organisation may have at once. */
export const MAX_ENDPOINTS_PER_ORGANISATION = 10

/** Delivery records (and their events) are removed this many days after the event. */
export const DELIVERY_RETENTION_DAYS = 30

import { Type, type TSchema } from 'typebox'
import { ImportJob } from './import-jobs.js'

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

const supplier = Type.String({ description: 'The import supplier code.' })
const accountData = {
  import_supplier: supplier,
  external_account_number: Type.String(),
  service_account_number: Type.Union([Type.String(), Type.Null()], {
    description: 'The account made by the create; null when none was made (a dry run, a failure before it).'
  })
}
const AccountData = Type.Object(accountData, { additionalProperties: false })
const WrittenData = Type.Object(
  { ...accountData, step: Type.String({ description: 'The post-import section written, e.g. notes.' }) },
  { additionalProperties: false }
)
const FailureData = Type.Object(
  {
    ...accountData,
    step: Type.String({ description: 'create, or the post-import section that failed.' }),
    code: Type.String({ description: "The answer's top-level error code." }),
    errors: Type.Array(
      Type.Object(
        { code: Type.String(), attr: Type.Union([Type.String(), Type.Null()]) },
        { additionalProperties: false }
      ),
      { description: 'The entries of the answer (at most 100): codes and attrs, never input values.' }
    )
  },
  { additionalProperties: false }
)
const JobData = Type.Object(
  { import_supplier: supplier, job_id: Type.String(), lines: ImportJob.properties.lines },
  { additionalProperties: false }
)

const DATA: Record<WebhookEventType, TSchema> = {
  'import_process.created': AccountData,
  'import_process.create_failed': FailureData,
  'import_process.dry_run': AccountData,
  'import_process.skipped': AccountData,
  'post_import.written': WrittenData,
  'post_import.failed': FailureData,
  'import_job.completed': JobData,
  'import_job.cancelled': JobData
}

/** The body of each event type: `{type, timestamp, data}`; never personal data. */
export const WEBHOOK_BODIES = {} as Record<WebhookEventType, TSchema>
for (const type of WEBHOOK_EVENT_TYPES) {
  WEBHOOK_BODIES[type] = Type.Object(
    {
      type: Type.Literal(type),
      timestamp: Type.String({ format: 'date-time', description: 'When the event happened (UTC).' }),
      data: DATA[type]
    },
    { additionalProperties: false, description: `The body of the ${type} event.` }
  )
}

const EVENT_SUMMARIES: Record<WebhookEventType, string> = {
  'import_process.created': 'An account was created (a single create, a batch entry or an import job line).',
  'import_process.create_failed': "An account's create failed: the failure record's step, code and errors.",
  'import_process.dry_run': 'A dry-run create succeeded and was rolled back: nothing was made.',
  'import_process.skipped': 'The operator skipped an account.',
  'post_import.written': 'A post-import section was written to a created account (step: the section).',
  'post_import.failed': 'A post-import request for an account failed: its step, code and errors.',
  'import_job.completed': 'An import job gave every line its result.',
  'import_job.cancelled': 'An import job was cancelled; lines without a result are not_processed.'
}

const header = (name: string, description: string) => ({
  name,
  in: 'header',
  required: true,
  description,
  schema: { type: 'string' }
})

/**
 * The OpenAPI `webhooks` of the document: what the service posts to a registered endpoint, one
 * entry per event type, with the Standard Webhooks headers.
 */
export function webhookPathItems(): Record<string, unknown> {
  const headers = [
    header(
      'webhook-id',
      '`msg_<n>`: the same on every attempt of this event and for every endpoint. Deduplicate on it.'
    ),
    header(
      'webhook-timestamp',
      'Seconds since 1970 when this attempt was sent (a receiver refuses old ones); the signature covers it. The body has the event time.'
    ),
    header(
      'webhook-signature',
      '`v1,<base64 of HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>` keyed with the endpoint secret (the base64 after `whsec_`).'
    )
  ]
  return Object.fromEntries(
    WEBHOOK_EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          summary: EVENT_SUMMARIES[type],
          tags: ['Webhooks'],
          operationId: `webhook_${type.replace('.', '_')}`,
          // The receiver authenticates the service by the signature, not by a token.
          security: [],
          parameters: headers,
          requestBody: {
            required: true,
            content: { 'application/json': { schema: JSON.parse(JSON.stringify(WEBHOOK_BODIES[type])) as unknown } }
          },
          responses: {
            '2XX': { description: 'Received. Anything else, or no answer within 10 s, is retried on the schedule.' }
          }
        }
      }
    ])
  )
}

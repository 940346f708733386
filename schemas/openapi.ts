import { Type, type TSchema } from 'typebox'
import { ItemBasedDocument, PeriodBasedDocument } from './billing-documents.js'
import { ErrorBody, ErrorEntry } from './common.js'
import { CODE, ERROR_CODES, type CodeSpec } from './error-codes.js'
import { ERROR_EXAMPLE } from './examples.js'
import { Note } from './notes.js'
import {
  ChargeTransaction,
  CreditTransaction,
  PaymentTransaction,
  RepaymentTransaction,
  SupplyChargeTransaction
} from './transactions.js'

/**
 * The pieces of the OpenAPI document (`GET /openapi.json`) that no route schema carries: security
 * schemes, the shared error responses, and the documentation of the two routes whose schemas are
 * not ours (`POST /graphql`, owned by mercurius) or not JSON (`GET /metrics`). Documentation only:
 * nothing here validates or serialises a request.
 */

export const SECURITY_SCHEMES = {
  clientToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      "An organisation's token, from `obtainToken(input: {APIKey})` on `POST /graphql` with the " +
      "organisation's API key. Sent as `Authorization: Bearer <token>` (also accepted: `Token <token>`, " +
      '`JWT <token>` or the token alone).'
  },
  operatorToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: "The service operator's token, from `obtainToken(input: {APIKey})` with the operator API key."
  },
  metricsToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'The static `METRICS_TOKEN` of the configuration, for a Prometheus scrape job (`/metrics` only).'
  }
} as const

export type SecuritySchemeName = keyof typeof SECURITY_SCHEMES

export const TAGS = [
  { name: 'Account import', description: 'Validate, stage and create accounts.' },
  { name: 'Import state', description: 'Read the import state of accounts and suppliers.' },
  { name: 'Post-import', description: 'Add history to a created account.' },
  { name: 'Batches', description: 'Many accounts per request, each with its own result.' },
  {
    name: 'Reconciliation',
    description: "Compare the totals a source system expects with the accounts held, and read a supplier's totals."
  },
  { name: 'Failures and progress', description: 'What fails, for which accounts, and the migration minute by minute.' },
  { name: 'GraphQL', description: "Tokens, and the operator's configuration." },
  {
    name: 'Webhooks',
    description:
      'What the service posts to the endpoints an organisation registers (GraphQL createWebhookEndpoint), signed per Standard Webhooks.'
  },
  { name: 'Operations', description: 'Health, readiness, metrics and this documentation.' }
]

/** Shared schemas, referenced as `#/components/schemas/<name>`. */
export const COMPONENT_SCHEMAS = { ErrorBody: { ...ErrorBody, examples: [ERROR_EXAMPLE] }, ErrorEntry }

/**
 * The branches of the discriminated unions, shown as named components so that each union's
 * `discriminator` maps its values to them (a generated client or a fuzzer can then pick a branch).
 */
export const NAMED_BRANCHES = new Map<object, string>([
  [ChargeTransaction, 'ChargeTransaction'],
  [CreditTransaction, 'CreditTransaction'],
  [PaymentTransaction, 'PaymentTransaction'],
  [RepaymentTransaction, 'RepaymentTransaction'],
  [SupplyChargeTransaction, 'SupplyChargeTransaction'],
  [ItemBasedDocument, 'ItemBasedDocument'],
  [PeriodBasedDocument, 'PeriodBasedDocument']
])

/**
 * Rules a service checks after the schema that JSON Schema can still state: added to the schema's
 * copy in the document (route validation and its error codes are unchanged), so that a generated
 * client or an API fuzzer keeps to them instead of meeting a 400.
 */
export const DOCUMENTED_RULES = new Map<object, Record<string, unknown>>([
  [
    Note,
    {
      description:
        'A note has a `body` or `document_paths`, or both; a note with neither (an empty value counts as not ' +
        `sent) is \`${CODE.note_body_or_document_path_not_found}\` at the note.`,
      // The notes service: a body or document paths, each not an empty value (null or blank is as if not sent).
      anyOf: [
        { required: ['body'], properties: { body: { not: { $ref: '#/components/schemas/EmptyValue' } } } },
        {
          required: ['document_paths'],
          properties: { document_paths: { not: { $ref: '#/components/schemas/EmptyValue' } } }
        }
      ],
      // The notes service: `unpin_at` (a datetime, not an empty value) only on a pinned note (`unexpected_field`).
      if: { required: ['unpin_at'], properties: { unpin_at: { type: 'string', format: 'date-time' } } },
      then: { required: ['is_pinned'], properties: { is_pinned: { const: true } } }
    }
  ]
])

/** Who may call the data-import operations (every route under /v1/data-import declares it). */
export const CLIENT_TOKEN = [{ clientToken: [] }]

/** `Retry-After` of every 429 and 503 answer (src/errors.ts `errorHeaders`). */
export const RetryAfterHeader = Type.Integer({
  minimum: 1,
  description:
    'Seconds to wait before sending the request again: for a rate limit (`throttled`) until its window resets, otherwise by code: ' +
    Object.entries(ERROR_CODES as Record<string, CodeSpec>)
      .filter(([code, spec]) => spec.retryAfterSeconds !== undefined && code !== CODE.throttled)
      .map(([code, spec]) => `\`${code}\` ${spec.retryAfterSeconds} s`)
      .join(', ') +
    '.'
})

/** The headers of a request-rate limit's 429 (`throttled`; src/plugins/rate-limits.ts), as the IETF draft names them. */
export const RateLimitHeaders = {
  'RateLimit-Limit': Type.Integer({
    minimum: 0,
    description: 'Requests the limit allows per window (on `throttled` answers only).'
  }),
  'RateLimit-Remaining': Type.Integer({
    minimum: 0,
    description: 'Requests left in the current window: 0 (on `throttled` answers only).'
  }),
  'RateLimit-Reset': Type.Integer({
    minimum: 1,
    description: 'Seconds until the window resets (on `throttled` answers only).'
  })
}

/**
 * One shared response per error status, referenced as `#/components/responses/<name>`. Every
 * 4xx/5xx body is `ErrorBody`; some endpoints add fields of their own. `headers`: the response
 * headers it documents, each a schema with its description.
 */
export interface ErrorResponse {
  name: string
  description: string
  headers?: Record<string, TSchema>
}

export const ERROR_RESPONSES: Record<string, ErrorResponse> = {
  400: {
    name: 'BadRequest',
    description: 'The request is invalid: `errors` lists every problem (`attr` is the path of the input).'
  },
  401: {
    name: 'Unauthorized',
    description:
      'No token (`not_authenticated`), a bad or revoked one (`authentication_failed`), or an expired one (`token_expired`).'
  },
  403: { name: 'Forbidden', description: 'The token may not call this endpoint (`permission_denied`).' },
  404: {
    name: 'NotFound',
    description: 'Not found (`not_found`); the entry in `errors` says what, e.g. `import_process_does_not_exist`.'
  },
  405: {
    name: 'MethodNotAllowed',
    description:
      'The path does not serve this method (`method_not_allowed`); the `Allow` header lists those it serves.',
    headers: { Allow: Type.String({ description: 'The methods the path serves.' }) }
  },
  408: {
    name: 'RequestTimeout',
    description:
      'The request (headers within `HEADERS_TIMEOUT_SECONDS`, all of it within `REQUEST_TIMEOUT_SECONDS`) did not arrive in time (`request_timeout`); the connection is closed.'
  },
  413: { name: 'PayloadTooLarge', description: 'The body is larger than `BODY_LIMIT_BYTES` (`payload_too_large`).' },
  415: {
    name: 'UnsupportedMediaType',
    description:
      'A body of a media type the operation does not take (`unsupported_media_type`): `application/json`, or ' +
      'the media types its request body lists; the detail names them.'
  },
  414: {
    name: 'UriTooLong',
    description: 'A path segment is longer than 1024 characters (`invalid_request`, with `max_length`).'
  },
  429: {
    name: 'TooManyRequests',
    description:
      "A request-rate limit (`throttled`, which also carries the `RateLimit-*` headers), the supplier's concurrent creates (`too_many_accounts_processing`) or the organisation's import jobs (`too_many_jobs`); send the request again after `Retry-After` seconds.",
    headers: { 'Retry-After': RetryAfterHeader, ...RateLimitHeaders }
  },
  431: {
    name: 'RequestHeaderFieldsTooLarge',
    description:
      'The request headers are larger than the server reads (`request_header_fields_too_large`); the connection is closed.'
  },
  500: { name: 'ServerError', description: 'A server error (`server_error`); the body adds `request_id`.' },
  503: {
    name: 'ServiceUnavailable',
    description:
      'The server is stopping (`service_stopping`), or (readiness) the database does not answer (`service_unavailable`); send the request again after `Retry-After` seconds.',
    headers: { 'Retry-After': RetryAfterHeader }
  }
}

/**
 * Statuses any operation can answer, whatever its own schema says: another method on its path
 * (405), a slow or oversized request cut off by the HTTP server (408, 431), an over-long path
 * segment where the path has parameters (414), and the server stopping (503).
 */
export const EVERY_OPERATION_STATUSES = ['405', '408', '431', '500', '503']
export const PATH_PARAMETER_STATUSES = ['414']

/** The HTTP envelope of one GraphQL operation (mercurius validates it). */
export const GraphqlOperation = Type.Object(
  {
    query: Type.String({ description: 'The GraphQL document.' }),
    operationName: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    variables: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
    extensions: Type.Optional(Type.Record(Type.String(), Type.Unknown()))
  },
  {
    examples: [
      {
        query:
          'mutation ObtainToken($k: String) { obtainToken(input: {APIKey: $k}) { token expiresIn refreshToken refreshExpiresIn } }',
        operationName: 'ObtainToken',
        variables: { k: 'amk_…' }
      }
    ]
  }
)

export const GraphqlResult = Type.Object({
  data: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  errors: Type.Optional(
    Type.Array(
      Type.Object(
        {
          message: Type.String(),
          path: Type.Optional(Type.Array(Type.Union([Type.String(), Type.Integer()]))),
          extensions: Type.Optional(Type.Object({ code: Type.Optional(Type.String()) }, { additionalProperties: true }))
        },
        { additionalProperties: true }
      )
    )
  )
})

/** `POST /graphql`, described as one operation. */
export const GraphqlDocumentation = {
  summary: "GraphQL: obtainToken and the operator's surface",
  description:
    'One endpoint for every GraphQL operation. `obtainToken` needs no token and returns a JWT and a ' +
    "single-use refresh token. The operator's mutations (organisations, API keys, import suppliers, operations " +
    'teams, skipping) and queries (suppliers, events, progress) need an operator token. Field errors come back ' +
    'in `errors` with `extensions.code` (`authentication_failed`, `permission_denied`, …). An array of ' +
    'operations is run as a batch and answered with an array. The schema is in `schemas/graphql.ts`.',
  tags: ['GraphQL'],
  operationId: 'graphql',
  // obtainToken needs no token; the operator's fields need the operator's, the organisations' theirs.
  security: [{}, { operatorToken: [] }, { clientToken: [] }],
  body: Type.Union([GraphqlOperation, Type.Array(GraphqlOperation, { minItems: 1 })]),
  response: {
    200: Type.Union([GraphqlResult, Type.Array(GraphqlResult)]),
    400: Type.Union([GraphqlResult, ErrorBody], {
      description:
        'A document that does not parse or validate (GraphQL errors), or a body that is not JSON (`ErrorBody`).'
    }),
    413: ErrorBody,
    415: ErrorBody,
    429: ErrorBody
  }
}

/** `GET /metrics`: Prometheus text, operator token only. */
export const MetricsDocumentation = {
  summary: 'Prometheus metrics',
  description:
    'Request counts and durations by route and status, accounts per supplier, creates in flight, ' +
    "and the process metrics, in the Prometheus text format. Only the operator's token may read them.",
  tags: ['Operations'],
  operationId: 'metrics',
  security: [{ operatorToken: [] }, { metricsToken: [] }],
  response: {
    200: {
      description: 'Prometheus text exposition format.',
      content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: { type: 'string' } } }
    },
    401: ErrorBody,
    403: ErrorBody,
    500: ErrorBody
  }
}

/** `GET /openapi.json`: this document. */
export const OpenApiDocumentResponses = {
  200: Type.Object({ openapi: Type.String() }, { additionalProperties: true, description: 'The OpenAPI 3.1 document.' })
}

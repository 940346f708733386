import { Type, type Static } from 'typebox'
import { DELIVERY_TIMEOUT_MS } from './webhooks.js'

/**
 * The environment the service reads. Every variable here is listed in
 * `.env.example`; `src/config.ts` validates it once and turns it into a typed `Config`.
 */
export const EnvSchema = Type.Object({
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  /** A read replica of DATABASE_URL's database for the reads that may lag by a moment; needs DATABASE_URL. */
  DATABASE_READ_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  /** Unset: 10 on a PostgreSQL server, 2 on the embedded database (it runs one statement at a time). */
  DATABASE_POOL_SIZE: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  /** `false` sends no named prepared statements (PgBouncer before 1.21 in transaction pooling mode). */
  DATABASE_PREPARE: Type.Boolean({ default: true }),
  /** `false` sends no query on a connection while another is in flight, but in a transaction (PgBouncer in transaction pooling mode). */
  DATABASE_PIPELINE: Type.Boolean({ default: true }),
  DATA_DIR: Type.String({ minLength: 1, default: './data' }),
  /** Server processes sharing the port (node:cluster); more than 1 needs DATABASE_URL. */
  WORKERS: Type.Integer({ minimum: 1, maximum: 64, default: 1 }),
  /**
   * How far the V8 heap may grow past what survived the last full collection before the next one,
   * in percent (100: to twice it); 0 leaves it to V8, which lets a busy process's heap reach several
   * times its live data.
   */
  HEAP_GROWTH_PERCENT: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
  NODE_ENV: Type.Union([Type.Literal('development'), Type.Literal('production'), Type.Literal('test')], {
    default: 'development'
  }),
  TOKEN_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  TOKEN_TTL_SECONDS: Type.Integer({ minimum: 1, maximum: 86400 * 7, default: 3600 }),
  REFRESH_TOKEN_TTL_SECONDS: Type.Integer({ minimum: 60, maximum: 86400 * 90, default: 86400 * 7 }),
  OPERATOR_API_KEY: Type.Optional(Type.String({ minLength: 32 })),
  DOCUMENT_BUCKET: Type.String({ pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$', default: 'migration-documents' }),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, maximum: 1024 * 1024 * 1024, default: 10485760 }),
  /** Bytes of request bodies a process holds at once (one organisation at most half); unset: four times BODY_LIMIT_BYTES. */
  BODY_MEMORY_BYTES: Type.Optional(Type.Integer({ minimum: 2048, maximum: 16 * 1024 * 1024 * 1024 })),
  PAYMENT_VENDORS: Type.String({ default: '' }),
  PAYMENT_VENDOR_TOKENS: Type.String({ default: '' }),
  PAYMENT_VENDOR_TIMEOUT_MS: Type.Integer({ minimum: 50, maximum: 60000, default: 3000 }),
  PAYMENT_VENDOR_RETRIES: Type.Integer({ minimum: 0, maximum: 10, default: 2 }),
  PAYMENT_VENDOR_BREAKER_WINDOW_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 30 }),
  /** Slow or stalled clients: headers must arrive within this, the whole request within the next. */
  HEADERS_TIMEOUT_SECONDS: Type.Integer({ minimum: 1, maximum: 600, default: 15 }),
  REQUEST_TIMEOUT_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 120 }),
  /** An idle keep-alive connection is closed after this. */
  KEEP_ALIVE_TIMEOUT_SECONDS: Type.Integer({ minimum: 1, maximum: 600, default: 5 }),
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  EMAIL_FROM: Type.String({ minLength: 3, default: 'Account migrations <no-reply@localhost>' }),
  TOKEN_RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 1, default: 20 }),
  ORG_RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 0, default: 0 }),
  /** Addresses or CIDR ranges of proxies whose X-Forwarded-For names the client, comma-separated. */
  TRUST_PROXY: Type.Optional(Type.String()),
  /** Days the staged data and error details of an imported or skipped account are kept; 0 = erased on the next run. */
  /** Lines and bytes an import job may hold at most, and jobs an organisation may have queued, running or paused at once. */
  IMPORT_JOB_MAX_LINES: Type.Integer({ minimum: 1, maximum: 100_000_000, default: 1_000_000 }),
  IMPORT_JOB_MAX_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 1024 * 1024 * 1024 * 1024,
    default: 1024 * 1024 * 1024
  }),
  IMPORT_JOBS_PER_ORGANISATION: Type.Integer({ minimum: 1, maximum: 1000, default: 5 }),
  /** Chunks of import jobs this process runs at once; 0: it runs none (it only serves requests). */
  IMPORT_JOB_WORKERS: Type.Integer({ minimum: 0, maximum: 16, default: 1 }),
  STAGED_DATA_RETENTION_DAYS: Type.Integer({ minimum: 0, maximum: 3650, default: 30 }),
  /** Days the audit trail keeps a record. */
  AUDIT_RETENTION_DAYS: Type.Integer({ minimum: 1, maximum: 36500, default: 400 }),
  /** Webhooks may go to http:// and to loopback, private and link-local addresses (tests, private networks). */
  WEBHOOK_ALLOW_PRIVATE: Type.Union(
    [Type.Literal('0'), Type.Literal('1'), Type.Literal('false'), Type.Literal('true')],
    {
      default: '0'
    }
  ),
  /** Seconds between a delivery's attempts, comma-separated; unset: 5,300,1800,7200,18000,36000,36000. */
  WEBHOOK_RETRY_DELAYS: Type.Optional(Type.String({ pattern: '^\\d+(\\.\\d+)?(,\\d+(\\.\\d+)?){0,19}$' })),
  /** An attempt that has no 2xx answer within this fails. */
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: DELIVERY_TIMEOUT_MS }),
  /** Deliveries this process makes at once; 0: it makes none (another process delivers). */
  WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 0, maximum: 64, default: 16 }),
  /** A static token a Prometheus scrape job may send to /metrics instead of an operator token. */
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 32 })),
  /**
   * OpenTelemetry traces, with the variables as the OpenTelemetry specification defines them. Traces
   * are exported over OTLP/HTTP only when OTEL_EXPORTER_OTLP_ENDPOINT is set; unset, none are made.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$' })),
  /** The traces URL itself (used as given); needs OTEL_EXPORTER_OTLP_ENDPOINT. Unset: that endpoint + /v1/traces. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$' })),
  OTEL_EXPORTER_OTLP_PROTOCOL: Type.Optional(OtlpProtocol()),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Type.Optional(OtlpProtocol()),
  /** Headers sent with every export, `key=value,…` (values percent-encoded), e.g. a collector's credentials. */
  OTEL_EXPORTER_OTLP_HEADERS: Type.Optional(Type.String({ pattern: '^[^=,]+=[^,]*(,[^=,]+=[^,]*)*$' })),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: Type.Optional(Type.String({ pattern: '^[^=,]+=[^,]*(,[^=,]+=[^,]*)*$' })),
  /** Milliseconds an export may take before it has failed. */
  OTEL_EXPORTER_OTLP_TIMEOUT: Type.Integer({ minimum: 1, maximum: 600_000, default: 10_000 }),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: Type.Optional(Type.Integer({ minimum: 1, maximum: 600_000 })),
  /** Unset: account-migration-import-service (or the service.name of OTEL_RESOURCE_ATTRIBUTES). */
  OTEL_SERVICE_NAME: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  OTEL_RESOURCE_ATTRIBUTES: Type.Optional(Type.String({ pattern: '^[^=,]+=[^,]*(,[^=,]+=[^,]*)*$' })),
  /** `true`: no traces, whatever the endpoint. */
  OTEL_SDK_DISABLED: Type.Boolean({ default: false }),
  OTEL_TRACES_SAMPLER: Type.Union(
    [
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio'
    ].map((sampler) => Type.Literal(sampler)),
    { default: 'parentbased_always_on' }
  ),
  /** The ratio of the traceidratio samplers, from 0 to 1. */
  OTEL_TRACES_SAMPLER_ARG: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  /** The batch span processor: milliseconds between exports, spans held at most (more are dropped, and counted), spans per export, milliseconds an export may take. */
  OTEL_BSP_SCHEDULE_DELAY: Type.Integer({ minimum: 1, maximum: 600_000, default: 5000 }),
  OTEL_BSP_MAX_QUEUE_SIZE: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 2048 }),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 512 }),
  OTEL_BSP_EXPORT_TIMEOUT: Type.Integer({ minimum: 1, maximum: 600_000, default: 30_000 }),
  /** `json` (one JSON object per line, for log collectors) or `pretty` (for a person); unset: `pretty` at a terminal, else `json`. */
  LOG_FORMAT: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('pretty')])),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info' }
  )
})

export type Env = Static<typeof EnvSchema>

/** OTLP over HTTP, protobuf (the specification's default) or JSON bodies; gRPC is not supported. */
function OtlpProtocol() {
  return Type.Union([Type.Literal('http/protobuf'), Type.Literal('http/json')])
}

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
  HEAP_GROWTH_PERCENT: Type.Integer({ minimum: 0, maximum: 1000, default: 100 }),
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
  /** `json` (one JSON object per line, for log collectors) or `pretty` (for a person); unset: `pretty` at a terminal, else `json`. */
  LOG_FORMAT: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('pretty')])),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info' }
  )
})

export type Env = Static<typeof EnvSchema>

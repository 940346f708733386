import { isIP } from 'node:net'
import { Ajv, type ErrorObject } from 'ajv'
import { EnvSchema, type Env } from '../schemas/config.js'
import { RETRY_DELAYS_SECONDS } from '../schemas/webhooks.js'

export interface Config {
  host: string
  port: number
  /** PostgreSQL server; undefined = embedded PGlite in `dataDir`. */
  databaseUrl: string | undefined
  /**
   * A streaming replica of `databaseUrl`'s database: the lists, the failure summary, the timeline,
   * the dashboard's aggregates and /metrics' counts read from it (src/db/replica.ts); undefined = the primary.
   */
  databaseReadUrl: string | undefined
  databasePoolSize: number
  /**
   * Small statements are prepared on the PostgreSQL server (named, per connection). Off for a
   * pooler that hands each transaction any server connection and does not track prepared
   * statements itself (PgBouncer before 1.21, or without `max_prepared_statements`).
   */
  databasePrepare: boolean
  /**
   * Queries outside a transaction may be sent on a connection whose earlier query is not answered
   * yet. Off behind PgBouncer in transaction pooling mode: after a query's error it can lose the
   * answer of one pipelined behind it (1.18 tested), and that request waits forever.
   */
  databasePipeline: boolean
  dataDir: string
  /** Worker processes sharing the port; above 1 the started process only supervises them. */
  workers: number
  /** V8's heap growth past its live data, in percent; 0 = V8's own heuristics. */
  heapGrowthPercent: number
  production: boolean
  /** Undefined only in development: then a secret is generated and kept in `dataDir`. */
  tokenSecret: string | undefined
  tokenTtlSeconds: number
  refreshTokenTtlSeconds: number
  /** Undefined only in development: then a key is generated on first start (its hash is stored). */
  operatorApiKey: string | undefined
  documentBucket: string
  bodyLimitBytes: number
  /** Bytes of request bodies held at once by the process; one organisation holds at most half. */
  bodyMemoryBytes: number
  paymentVendors: Record<string, string>
  /** Bearer token per vendor code (a subset of `paymentVendors`); a vendor without one gets no Authorization header. */
  paymentVendorTokens: Record<string, string>
  /** Per attempt of a vendor call. */
  paymentVendorTimeoutMs: number
  /** Retries after the first attempt on a timeout, a connection failure or a 5xx. */
  paymentVendorRetries: number
  /** A vendor's circuit breaker opens when every call has failed for this long, and stays open as long. */
  paymentVendorBreakerWindowSeconds: number
  /** Headers not complete within this: the request is ended (408). */
  headersTimeoutSeconds: number
  /** Request (headers and body) not complete within this: it is ended (408). */
  requestTimeoutSeconds: number
  keepAliveTimeoutSeconds: number
  smtpUrl: string | undefined
  /** Sender of migration e-mails. */
  emailFrom: string
  tokenRateLimitPerMinute: number
  orgRateLimitPerMinute: number
  /** Proxies (addresses, CIDR ranges) whose X-Forwarded-For gives the client address; empty: none. */
  trustProxy: string[]
  /** An import job's largest number of lines and of bytes. */
  importJobMaxLines: number
  importJobMaxBytes: number
  /** Jobs an organisation may have QUEUED, RUNNING or PAUSED at once. */
  importJobsPerOrganisation: number
  /** Chunks of import jobs this process runs at once (0: none). */
  importJobWorkers: number
  /** Days after an account was imported or skipped before its staged data and error details are erased. */
  stagedDataRetentionDays: number
  /** Days the audit trail keeps a record (at least 1). */
  auditRetentionDays: number
  /** Webhooks may go to http:// and to non-public addresses. */
  webhookAllowPrivate: boolean
  /** Seconds before each retry of a delivery; after the last, it is FAILED. */
  webhookRetryDelays: number[]
  webhookTimeoutMs: number
  /** Deliveries this process makes at once (0: none). */
  webhookConcurrency: number
  /** Accepted by /metrics as `Authorization: Bearer <token>` besides operator tokens. */
  metricsToken: string | undefined
  logLevel: string
  logFormat: 'json' | 'pretty'
  /** OpenTelemetry traces: undefined (OTEL_EXPORTER_OTLP_ENDPOINT unset) = none are made or exported. */
  tracing: TracingConfig | undefined
}

/** Where and how traces are exported (the OpenTelemetry specification's variables, read once here). */
export interface TracingConfig {
  /** The OTLP/HTTP traces URL (the endpoint + `/v1/traces`, or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given). */
  url: string
  protocol: 'http/protobuf' | 'http/json'
  /** Sent with every export (a collector's credentials): never logged. */
  headers: Record<string, string>
  timeoutMs: number
  /** Resource attributes, `service.name` among them. */
  resource: Record<string, string>
  sampler: { name: string; ratio: number }
  /** The batch span processor's settings. */
  batch: { scheduleDelayMs: number; maxQueueSize: number; maxExportBatchSize: number; exportTimeoutMs: number }
}

/** The service name traces carry when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one. */
export const DEFAULT_SERVICE_NAME = 'account-migration-import-service'

/** Raised when the configuration cannot be used; its message is one line meant for the operator. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: true, removeAdditional: false, strict: true })
const validateEnv = ajv.compile<Env>(EnvSchema)

/** One setting's problem in plain words, with the value given and what it may be (never Ajv's wording). */
function settingProblem(error: ErrorObject, env: Record<string, unknown>): string {
  const name = error.instancePath.slice(1)
  const spec = (EnvSchema.properties as unknown as Record<string, Record<string, unknown>>)[name] ?? {}
  const given = `(given: ${JSON.stringify(env[name])})`
  const { minimum, maximum } = spec as { minimum?: number; maximum?: number }
  const range =
    minimum !== undefined && maximum !== undefined
      ? ` from ${minimum} to ${maximum}`
      : minimum !== undefined
        ? ` of at least ${minimum}`
        : ''
  switch (error.keyword) {
    case 'type':
      if (spec.type === 'integer') return `${name} must be a whole number${range} ${given}`
      if (spec.type === 'boolean') return `${name} must be true or false ${given}`
      return `${name} has the wrong type ${given}`
    case 'minimum':
    case 'maximum':
      return `${name} must be a whole number${range} ${given}`
    case 'minLength':
      return `${name} must be at least ${(spec as { minLength: number }).minLength} characters long`
    case 'anyOf':
    case 'enum': {
      const choices = ((spec.anyOf as Array<{ const?: unknown }> | undefined) ?? [])
        .map((choice) => choice.const)
        .filter((choice) => choice !== undefined)
      return choices.length > 0
        ? `${name} must be one of ${choices.join(', ')} ${given}`
        : `${name} is not one of the values it takes ${given}`
    }
    case 'pattern':
    case 'format':
      // Not echoed: it may hold a password.
      return `${name} is not in the form it takes`
    case 'const':
      // One choice of a list: the list's own problem (anyOf) says it once.
      return ''
    default:
      return `${name || 'the environment'} is not a value the service takes`
  }
}

/**
 * Reads the configuration from an environment record (never from `process.env` directly, so tests
 * pass their own). Empty strings count as unset. Throws `ConfigError` with a one-line reason.
 * `terminal`: standard output is a terminal (a person is reading), which makes readable log lines
 * the default.
 */
export function loadConfig(source: Record<string, string | undefined>, options: { terminal?: boolean } = {}): Config {
  const env: Record<string, unknown> = {}
  for (const key of Object.keys(EnvSchema.properties)) {
    const value = source[key]
    if (value !== undefined && value.trim() !== '') env[key] = value.trim()
  }
  if (!validateEnv(env)) {
    const problems = new Set((validateEnv.errors ?? []).map((e) => settingProblem(e, env)).filter(Boolean))
    throw new ConfigError(`invalid configuration: ${[...problems].join('; ')}`)
  }
  const production = env.NODE_ENV === 'production'
  const typed = env as Env
  if (production && typed.TOKEN_SECRET === undefined) {
    throw new ConfigError('invalid configuration: TOKEN_SECRET is required when NODE_ENV=production')
  }
  if (production && typed.OPERATOR_API_KEY === undefined) {
    throw new ConfigError('invalid configuration: OPERATOR_API_KEY is required when NODE_ENV=production')
  }
  if (typed.WORKERS > 1 && typed.DATABASE_URL === undefined) {
    throw new ConfigError(
      `invalid configuration: WORKERS=${typed.WORKERS} needs DATABASE_URL (the embedded database serves one process per DATA_DIR)`
    )
  }
  if (typed.DATABASE_READ_URL !== undefined && typed.DATABASE_URL === undefined) {
    throw new ConfigError(
      'invalid configuration: DATABASE_READ_URL needs DATABASE_URL (the embedded database has no replica)'
    )
  }
  if (typed.BODY_MEMORY_BYTES !== undefined && typed.BODY_MEMORY_BYTES < 2 * typed.BODY_LIMIT_BYTES) {
    throw new ConfigError(
      'invalid configuration: BODY_MEMORY_BYTES must be at least twice BODY_LIMIT_BYTES (one organisation may hold half of it)'
    )
  }
  if (typed.HEADERS_TIMEOUT_SECONDS > typed.REQUEST_TIMEOUT_SECONDS) {
    throw new ConfigError(
      'invalid configuration: HEADERS_TIMEOUT_SECONDS must not be longer than REQUEST_TIMEOUT_SECONDS'
    )
  }
  if (typed.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined && typed.OTEL_EXPORTER_OTLP_ENDPOINT === undefined) {
    throw new ConfigError(
      'invalid configuration: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT needs OTEL_EXPORTER_OTLP_ENDPOINT (traces are exported only when it is set)'
    )
  }
  const paymentVendors = parseVendors(typed.PAYMENT_VENDORS)
  return {
    host: typed.HOST,
    port: typed.PORT,
    databaseUrl: typed.DATABASE_URL,
    databaseReadUrl: typed.DATABASE_READ_URL,
    // On the embedded database more turns would only hold more requests' data in memory at once:
    // eight 1,000-account batches peaked at 440 MB with 10 and under 410 with 2, in the same time.
    databasePoolSize: typed.DATABASE_POOL_SIZE ?? (typed.DATABASE_URL ? 10 : 2),
    databasePrepare: typed.DATABASE_PREPARE,
    databasePipeline: typed.DATABASE_PIPELINE,
    dataDir: typed.DATA_DIR,
    workers: typed.WORKERS,
    // The embedded database's process holds PostgreSQL too: a tighter heap kept the bench's PGlite
    // rows under 400 MB (387 against 403 at 100) for the same CPU per request.
    heapGrowthPercent: typed.HEAP_GROWTH_PERCENT ?? (typed.DATABASE_URL ? 100 : 50),
    production,
    tokenSecret: typed.TOKEN_SECRET,
    tokenTtlSeconds: typed.TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: typed.REFRESH_TOKEN_TTL_SECONDS,
    operatorApiKey: typed.OPERATOR_API_KEY,
    documentBucket: typed.DOCUMENT_BUCKET,
    bodyLimitBytes: typed.BODY_LIMIT_BYTES,
    bodyMemoryBytes: typed.BODY_MEMORY_BYTES ?? 4 * typed.BODY_LIMIT_BYTES,
    paymentVendors,
    paymentVendorTokens: parseVendorTokens(typed.PAYMENT_VENDOR_TOKENS, paymentVendors),
    paymentVendorTimeoutMs: typed.PAYMENT_VENDOR_TIMEOUT_MS,
    paymentVendorRetries: typed.PAYMENT_VENDOR_RETRIES,
    paymentVendorBreakerWindowSeconds: typed.PAYMENT_VENDOR_BREAKER_WINDOW_SECONDS,
    headersTimeoutSeconds: typed.HEADERS_TIMEOUT_SECONDS,
    requestTimeoutSeconds: typed.REQUEST_TIMEOUT_SECONDS,
    keepAliveTimeoutSeconds: typed.KEEP_ALIVE_TIMEOUT_SECONDS,
    smtpUrl: typed.SMTP_URL,
    emailFrom: typed.EMAIL_FROM,
    tokenRateLimitPerMinute: typed.TOKEN_RATE_LIMIT_PER_MINUTE,
    orgRateLimitPerMinute: typed.ORG_RATE_LIMIT_PER_MINUTE,
    trustProxy: parseTrustProxy(typed.TRUST_PROXY ?? ''),
    importJobMaxLines: typed.IMPORT_JOB_MAX_LINES,
    importJobMaxBytes: typed.IMPORT_JOB_MAX_BYTES,
    importJobsPerOrganisation: typed.IMPORT_JOBS_PER_ORGANISATION,
    importJobWorkers: typed.IMPORT_JOB_WORKERS,
    stagedDataRetentionDays: typed.STAGED_DATA_RETENTION_DAYS,
    auditRetentionDays: typed.AUDIT_RETENTION_DAYS,
    webhookAllowPrivate: typed.WEBHOOK_ALLOW_PRIVATE === '1' || typed.WEBHOOK_ALLOW_PRIVATE === 'true',
    webhookRetryDelays:
      typed.WEBHOOK_RETRY_DELAYS === undefined
        ? [...RETRY_DELAYS_SECONDS]
        : typed.WEBHOOK_RETRY_DELAYS.split(',').map(Number),
    webhookTimeoutMs: typed.WEBHOOK_TIMEOUT_MS,
    webhookConcurrency: typed.WEBHOOK_CONCURRENCY,
    metricsToken: typed.METRICS_TOKEN,
    logLevel: typed.LOG_LEVEL,
    logFormat: typed.LOG_FORMAT ?? (options.terminal === true ? 'pretty' : 'json'),
    tracing: tracingOf(typed)
  }
}

/** The tracing settings, or undefined when traces are off (no endpoint, or OTEL_SDK_DISABLED=true). */
function tracingOf(env: Env): TracingConfig | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT
  if (endpoint === undefined || env.OTEL_SDK_DISABLED) return undefined
  const resource = keyValues('OTEL_RESOURCE_ATTRIBUTES', env.OTEL_RESOURCE_ATTRIBUTES)
  resource['service.name'] = env.OTEL_SERVICE_NAME ?? resource['service.name'] ?? DEFAULT_SERVICE_NAME
  const batch = {
    scheduleDelayMs: env.OTEL_BSP_SCHEDULE_DELAY,
    maxQueueSize: env.OTEL_BSP_MAX_QUEUE_SIZE,
    maxExportBatchSize: Math.min(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, env.OTEL_BSP_MAX_QUEUE_SIZE),
    exportTimeoutMs: env.OTEL_BSP_EXPORT_TIMEOUT
  }
  return {
    url: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${endpoint.replace(/\/+$/, '')}/v1/traces`,
    protocol: env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    headers: {
      ...keyValues('OTEL_EXPORTER_OTLP_HEADERS', env.OTEL_EXPORTER_OTLP_HEADERS),
      ...keyValues('OTEL_EXPORTER_OTLP_TRACES_HEADERS', env.OTEL_EXPORTER_OTLP_TRACES_HEADERS)
    },
    timeoutMs: env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? env.OTEL_EXPORTER_OTLP_TIMEOUT,
    resource,
    sampler: { name: env.OTEL_TRACES_SAMPLER, ratio: env.OTEL_TRACES_SAMPLER_ARG ?? 1 },
    batch
  }
}

/** `key=value,…` with percent-encoded values (W3C Baggage's form, as the OTEL_* lists are); never echoes a value. */
function keyValues(name: string, text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const pair of (text ?? '').split(',')) {
    if (pair.trim() === '') continue
    const at = pair.indexOf('=')
    const key = pair.slice(0, at).trim()
    try {
      out[key] = decodeURIComponent(pair.slice(at + 1).trim())
    } catch {
      throw new ConfigError(`invalid configuration: ${name} has a value for ${key} that is not percent-encoded`)
    }
  }
  return out
}

/** `STRIPE=https://…,ADYEN=https://…` → `{STRIPE: 'https://…', ADYEN: 'https://…'}`. */
/**
 * TRUST_PROXY: addresses (IPv4, IPv6) and CIDR ranges, comma-separated. The client address of a
 * request whose peer is one of them is the one its X-Forwarded-For names.
 */
function parseTrustProxy(text: string): string[] {
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  for (const entry of entries) {
    const [address = '', prefix, ...rest] = entry.split('/')
    const version = isIP(address)
    const bits = version === 4 ? 32 : 128
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits)
    if (version === 0 || !prefixOk || rest.length > 0) {
      throw new ConfigError(`invalid configuration: TRUST_PROXY entry "${entry}" is not an IP address or a CIDR range`)
    }
  }
  return entries
}

function parseVendors(text: string): Record<string, string> {
  const vendors: Record<string, string> = {}
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const at = pair.indexOf('=')
    const code = pair.slice(0, at).trim()
    const url = pair.slice(at + 1).trim()
    if (at < 1 || !/^[A-Z0-9_]{1,32}$/.test(code) || !/^https?:\/\/[^\s]+$/.test(url)) {
      throw new ConfigError(`invalid configuration: PAYMENT_VENDORS entry "${pair}" is not CODE=http(s)://url`)
    }
    if (vendors[code] !== undefined) throw new ConfigError(`invalid configuration: PAYMENT_VENDORS names ${code} twice`)
    vendors[code] = url.replace(/\/+$/, '')
  }
  return vendors
}

/** `STRIPE=sk_…,ADYEN=…` → token per vendor code; every code must be one of PAYMENT_VENDORS. Tokens never appear in messages. */
function parseVendorTokens(text: string, vendors: Record<string, string>): Record<string, string> {
  const tokens: Record<string, string> = {}
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const at = pair.indexOf('=')
    const code = at < 1 ? '' : pair.slice(0, at).trim()
    const token = pair.slice(at + 1).trim()
    if (!/^[A-Z0-9_]{1,32}$/.test(code) || !/^[\x21-\x7e]+$/.test(token)) {
      throw new ConfigError(
        'invalid configuration: PAYMENT_VENDOR_TOKENS entries must be CODE=token (printable ASCII, no spaces or commas)'
      )
    }
    if (vendors[code] === undefined) {
      throw new ConfigError(
        `invalid configuration: PAYMENT_VENDOR_TOKENS names ${code}, which is not in PAYMENT_VENDORS`
      )
    }
    if (tokens[code] !== undefined) {
      throw new ConfigError(`invalid configuration: PAYMENT_VENDOR_TOKENS names ${code} twice`)
    }
    tokens[code] = token
  }
  return tokens
}

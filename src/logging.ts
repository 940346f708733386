import { DrizzleQueryError } from 'drizzle-orm'
import { AppError } from './errors.js'
import pretty from 'pino-pretty'

/**
 * The `err` serializer of the logger: errors without the data they carry (personal data
 * never appears in logs). Drizzle's query errors put every parameter of the failing statement
 * (names, e-mails, addresses…) in their message and stack, and PostgreSQL data exceptions
 * (class 22) quote the offending value; both are removed. Only known fields are kept: a driver's
 * `detail` ("Failing row contains (…)"), `where` or `parameters` never reach the log.
 */
export function serializeError(err: unknown): SerializedError {
  return serialize(err, 0)
}

export interface SerializedError {
  type: string
  message: string
  stack: string
  [field: string]: unknown
}

function serialize(err: unknown, depth: number): SerializedError {
  if (typeof err !== 'object' || err === null) return { type: typeof err, message: '', stack: '' }
  const e = err as Record<string, unknown> & { message?: unknown; stack?: unknown; cause?: unknown }
  const original = typeof e.message === 'string' ? e.message : ''
  let message = original
  if (err instanceof DrizzleQueryError) message = `Failed query: ${err.query}`
  else if (isDataException(e)) message = original.replace(/"(?:[^"]|"")*"/g, '"[redacted]"')

  const stack =
    typeof e.stack !== 'string' ? '' : message === original ? e.stack : withoutMessage(e.stack, original, message)
  const out: SerializedError = { type: (err as object).constructor?.name ?? 'Object', message, stack }
  for (const key of SAFE_FIELDS) {
    const value = e[key]
    if (typeof value === 'string' || typeof value === 'number') out[key] = value
  }
  // PostgreSQL's field names: postgres.js says `constraint_name`, PGlite `constraint`.
  for (const [key, alias] of PG_ALIASES) {
    const value = e[key] ?? e[alias]
    if (typeof value === 'string') out[key] = value
  }
  if (err instanceof DrizzleQueryError) out.query = err.query
  // Our own 5xx entries are written by the service (e.g. a payment vendor's failure).
  if (err instanceof AppError && err.errors.length > 0) out.errors = err.errors
  if (err instanceof AggregateError && depth < 5) out.errors = err.errors.map((inner) => serialize(inner, depth + 1))
  if (e.cause !== undefined && depth < 5) out.cause = serialize(e.cause, depth + 1)
  return out
}

const SAFE_FIELDS = ['code', 'statusCode', 'severity', 'routine', 'errno', 'syscall', 'address', 'port'] as const
const PG_ALIASES = [
  ['constraint', 'constraint_name'],
  ['table', 'table_name'],
  ['column', 'column_name'],
  ['schema', 'schema_name']
] as const

/** A PostgreSQL data exception: its message may quote the value it refused. */
function isDataException(e: Record<string, unknown>): boolean {
  return typeof e.severity === 'string' && typeof e.code === 'string' && /^22[0-9A-Z]{3}$/.test(e.code)
}

/** The stack with the (multi-line) original message replaced by the safe one. */
function withoutMessage(stack: string, original: string, message: string): string {
  if (original !== '' && stack.includes(original)) return stack.replace(original, () => message)
  // A stack that does not repeat the message as is: keep only its frames.
  const frames = stack.indexOf('\n    at ')
  return frames >= 0 ? message + stack.slice(frames) : message
}

/**
 * The error code each answer carried, for its access line: a refusal (4xx) is logged as that one
 * line with its `code` and no stack, an expected event that needs no error of its own; a 5xx also
 * gets an `error` line with the stack where it is handled. GraphQL answers name the codes of their
 * errors, comma-separated.
 */
const answerCodes = new WeakMap<object, string>()

/** Notes the code a reply answers with (the errors plugin and the GraphQL error formatter). */
export function answeredWith(reply: object, code: string): void {
  answerCodes.set(reply, code)
}

/** The code a reply answered with, if it answered with an error. */
export function answerCodeOf(reply: object): string | undefined {
  return answerCodes.get(reply)
}

/**
 * Log lines for a person at a terminal (`LOG_FORMAT=pretty`): time, level and message, a
 * request's access line as `METHOD url → status (ms)` and the error code of an error answer, written to `destination` (default
 * standard output). JSON stays the default for log collectors.
 */
export function prettyLog(destination?: NodeJS.WritableStream): NodeJS.WritableStream {
  return pretty({
    colorize: destination === undefined && process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,reqId,req,res,responseTime',
    singleLine: true,
    messageFormat: (log, messageKey) => {
      const req = log.req as { method?: string; url?: string } | undefined
      const res = log.res as { statusCode?: number } | undefined
      const message = String(log[messageKey] ?? '')
      if (!req || !res) return message
      const ms = typeof log.responseTime === 'number' ? ` (${log.responseTime.toFixed(0)} ms)` : ''
      const code = typeof log.code === 'string' ? ` ${log.code}` : ''
      return `${req.method} ${req.url} → ${res.statusCode}${ms}${code}${message === 'request completed' ? '' : ` ${message}`}`
    },
    ...(destination ? { destination } : {})
  }) as unknown as NodeJS.WritableStream
}

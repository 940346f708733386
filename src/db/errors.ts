// What a database error means to the service; no driver imported, so rules and errors can use it.

/** The PostgreSQL error code (e.g. `23505`) of a driver error, wrapped by Drizzle or not. */
export function pgErrorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null
  const code = e?.cause?.code ?? e?.code
  return typeof code === 'string' ? code : undefined
}

/** The constraint a driver error names (postgres.js says `constraint_name`, PGlite `constraint`), wrapped by Drizzle or not. */
export function pgConstraint(err: unknown): string | undefined {
  const e = err as { cause?: Record<string, unknown> } & Record<string, unknown>
  const name = e?.cause?.constraint_name ?? e?.cause?.constraint ?? e?.constraint_name ?? e?.constraint
  return typeof name === 'string' ? name : undefined
}

/** The driver's own codes for a connection that is gone, or that could not be made. */
const CONNECTION_LOST = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN'
])

/**
 * SQLSTATEs of a server going away (57P01 terminated, 57P02 crashed), starting up or in recovery
 * (57P03), full (53300), or no longer the primary (25006: a write on a server demoted by a
 * failover); and class 08, connection exceptions.
 */
const SERVER_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '53300', '25006'])

/**
 * True when an error means the database cannot be used right now (unreachable, restarting,
 * failing over) rather than that the request or the service is wrong: answered 503
 * `service_unavailable` with `Retry-After`, so clients send the request again.
 */
export function databaseUnavailable(err: unknown): boolean {
  const code = pgErrorCode(err)
  if (code === undefined) return false
  return CONNECTION_LOST.has(code) || SERVER_UNAVAILABLE.has(code) || /^08[0-9A-Z]{3}$/.test(code)
}

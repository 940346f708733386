/** Pieces shared by the command-line clients for reading answers and `fetch` failures. */

export type Json = Record<string, unknown>

export { isObject } from '../objects.js'

/** True when `fetch` gave up because its time ran out (or it was aborted). */
export const isTimeout = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')

/** The error behind a `fetch` failure: undici hides the socket error in `cause`, sometimes in an AggregateError. */
export function fetchCause(err: unknown): unknown {
  const cause: unknown = err instanceof Error && err.cause !== undefined ? err.cause : err
  return cause instanceof AggregateError && cause.errors.length > 0 ? cause.errors[0] : cause
}

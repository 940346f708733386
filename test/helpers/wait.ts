import { setTimeout as sleep } from 'node:timers/promises'
import { inspect } from 'node:util'

/** How long `waitFor` keeps asking, and how often. */
export interface WaitOptions {
  /** Gives up after this many milliseconds (30 s unless told). */
  timeoutMs?: number
  /** Milliseconds between two calls of `check` (50 unless told). */
  intervalMs?: number
  /**
   * An error thrown by `check` counts as "not yet" (a server still starting, a connection still
   * refused) instead of ending the wait at once; the last one is named on timeout.
   */
  ignoreErrors?: boolean
  /** What to show on timeout instead of the last value `check` returned (the deliveries so far, say). */
  seen?: () => unknown
}

/**
 * The one way a test waits for something that happens in the background: calls `check` until it
 * returns a value other than `undefined`, `null` or `false`, and returns that value. After
 * `timeoutMs` it throws an Error naming `what` and the last value seen, so the test fails there.
 *
 *     const job = await waitFor('the job completed', async () => {
 *       const job = await read(id)
 *       return job.state === 'COMPLETED' && job
 *     }, { timeoutMs: 60_000 })
 */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  { timeoutMs = 30_000, intervalMs = 50, ignoreErrors = false, seen }: WaitOptions = {}
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined && value !== null && value !== false) return value
      last = value
    } catch (err) {
      if (!ignoreErrors) throw err
      last = err
    }
    if (Date.now() > deadline) {
      const shown = seen ? seen() : last
      const text =
        typeof shown === 'string' || shown instanceof Error
          ? String(shown)
          : inspect(shown, { depth: 4, breakLength: Infinity })
      throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}; last seen: ${text}`)
    }
    await sleep(intervalMs)
  }
}

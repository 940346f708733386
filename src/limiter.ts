/**
 * Shared capacity of a server process, shared fairly between organisations (the `key`).
 *
 * - `createLimiter(max)`: turns of work (the post-import requests a process works on at once).
 *   The last free turn is kept for a key that holds none, so one organisation with many requests
 *   never makes another wait for one of its own to end; freed turns go round the waiting keys in
 *   turn, each key's waiters in arrival order.
 * - `createByteBudget(total)`: bytes of request bodies held at once. One key holds at most half
 *   of `total`; a request whose bytes do not fit waits (before its body is read) in its key's
 *   queue, so a key that fills its half delays only itself.
 */

type Release = () => void

interface Waiter {
  amount: number
  grant: (release: Release) => void
}

/**
 * The queue and bookkeeping both kinds share: who holds how much, who waits, and the round of
 * waiting keys. `fits(key, amount)` says whether a grant may be made now.
 */
function fairQueue(fits: (held: number, total: number, amount: number) => boolean) {
  const heldBy = new Map<string, number>()
  const waiting = new Map<string, Waiter[]>()
  let total = 0
  let waiters = 0

  function take(key: string, amount: number): Release {
    heldBy.set(key, (heldBy.get(key) ?? 0) + amount)
    total += amount
    let released = false
    return function release(): void {
      if (released) return
      released = true
      const left = (heldBy.get(key) ?? 0) - amount
      if (left > 0) heldBy.set(key, left)
      else heldBy.delete(key)
      total -= amount
      handOut()
    }
  }

  /** Grants what now fits, one waiter of each key per round, the longest-waiting keys first. */
  function handOut(): void {
    let granted = true
    while (granted && waiters > 0) {
      granted = false
      for (const [key, queue] of waiting) {
        const head = queue[0]!
        if (!fits(heldBy.get(key) ?? 0, total, head.amount)) continue
        queue.shift()
        waiters--
        // The key goes to the back of the round: re-inserted, or dropped when its queue is empty.
        waiting.delete(key)
        if (queue.length > 0) waiting.set(key, queue)
        head.grant(take(key, head.amount))
        granted = true
      }
    }
  }

  return {
    get held(): number {
      return total
    },
    get waiting(): number {
      return waiters
    },
    /** Resolves once `amount` is granted to `key`, with the function that gives it back (calling it again does nothing). */
    acquire(key: string, amount: number): Promise<Release> {
      if (!waiting.has(key) && fits(heldBy.get(key) ?? 0, total, amount)) return Promise.resolve(take(key, amount))
      return new Promise<Release>((resolve) => {
        const queue = waiting.get(key) ?? []
        queue.push({ amount, grant: resolve })
        waiting.set(key, queue)
        waiters++
      })
    }
  }
}

/** At most `max` turns at once; the last free one only for a key holding none. */
export function createLimiter(max: number) {
  const queue = fairQueue(
    (held, active, amount) => active + amount <= max && (active + amount < max || held === 0 || max === 1)
  )
  return {
    get active(): number {
      return queue.held
    },
    get waiting(): number {
      return queue.waiting
    },
    acquire: (key: string): Promise<Release> => queue.acquire(key, 1)
  }
}

/** At most `total` bytes at once, one key at most half of them (and at least one of its requests). */
export function createByteBudget(total: number) {
  const perKey = Math.floor(total / 2)
  const queue = fairQueue((held, used, amount) => used + amount <= total && (held === 0 || held + amount <= perKey))
  return {
    total,
    perKey,
    get held(): number {
      return queue.held
    },
    get waiting(): number {
      return queue.waiting
    },
    acquire: (key: string, amount: number): Promise<Release> => queue.acquire(key, Math.min(amount, perKey))
  }
}

/**
 * Waits for `acquire` on behalf of an HTTP response, and gives the grant back when the response
 * closes (its answer sent, or its client gone). False when the client left while waiting: the
 * grant is then given back at once.
 */
export async function holdWhileOpen(response: NodeJS.EventEmitter, acquire: () => Promise<Release>): Promise<boolean> {
  let gone = false
  const leave = () => {
    gone = true
  }
  response.once('close', leave)
  const release = await acquire()
  response.off('close', leave)
  if (gone) release()
  else response.once('close', release)
  return !gone
}

export type Limiter = ReturnType<typeof createLimiter>
export type ByteBudget = ReturnType<typeof createByteBudget>

/**
 * At most `max` holders at once; the others wait their turn in arrival order. Used to bound the
 * post-import requests a server process works on: a waiting request has not read its body yet,
 * so memory does not grow with the number of clients sending big batches at once.
 */
export function createLimiter(max: number) {
  let active = 0
  const waiting: Array<() => void> = []
  return {
    get active(): number {
      return active
    },
    get waiting(): number {
      return waiting.length
    },
    /** Resolves once a place is free, with the function that gives it back (calling it again does nothing). */
    async acquire(): Promise<() => void> {
      if (active < max) active++
      else await new Promise<void>((resolve) => waiting.push(resolve)) // the place is handed over, `active` unchanged
      let released = false
      return function release(): void {
        if (released) return
        released = true
        const next = waiting.shift()
        if (next) next()
        else active--
      }
    }
  }
}

export type Limiter = ReturnType<typeof createLimiter>

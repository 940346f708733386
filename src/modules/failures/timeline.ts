import type { FastifyBaseLogger } from 'fastify'
import type { FailuresRepository, MinuteCounts } from './repository.js'

export type TimelineEvent = 'staged' | 'created' | 'failed'

/** The start of the UTC minute `at` falls in. */
export function minuteOf(at: Date): Date {
  return new Date(Math.floor(at.getTime() / 60_000) * 60_000)
}

/**
 * The migration's per-minute counts, gathered in memory and added to the database once a
 * second in one statement: counting costs a stage or a create nothing on its way, and many server
 * processes add up in the same rows. A process killed without closing loses at most its last
 * second of counts (the timeline is a chart; failure records and import states are exact).
 */
export function createTimeline(
  repo: FailuresRepository,
  options: { log: FastifyBaseLogger; flushMs?: number; now?: () => Date }
) {
  const now = options.now ?? (() => new Date())
  let pending = new Map<string, MinuteCounts>()
  let flushing: Promise<void> = Promise.resolve()

  async function write(): Promise<void> {
    if (pending.size === 0) return
    const batch = pending
    pending = new Map()
    try {
      await repo.addMinutes([...batch.values()])
    } catch (err) {
      options.log.error({ err }, 'timeline counts could not be written; kept for the next flush')
      for (const counts of batch.values()) add(counts.supplierId, new Date(counts.minute), counts)
    }
  }

  function add(supplierId: string, minute: Date, counts: Omit<MinuteCounts, 'supplierId' | 'minute'>): void {
    const key = `${supplierId} ${minute.getTime()}`
    const entry = pending.get(key) ?? { supplierId, minute: minute.toISOString(), staged: 0, created: 0, failed: 0 }
    entry.staged += counts.staged
    entry.created += counts.created
    entry.failed += counts.failed
    pending.set(key, entry)
  }

  /** Writes what is pending (one flush at a time); resolves when this process's counts are stored. */
  function flush(): Promise<void> {
    flushing = flushing.then(write)
    return flushing
  }

  const timer = setInterval(() => {
    void flush()
  }, options.flushMs ?? 1000)
  timer.unref()

  return {
    /** Counts one event of a supplier in the current minute. */
    count(supplierId: string, event: TimelineEvent, times = 1): void {
      if (times <= 0) return
      add(supplierId, minuteOf(now()), {
        staged: event === 'staged' ? times : 0,
        created: event === 'created' ? times : 0,
        failed: event === 'failed' ? times : 0
      })
    },
    flush,
    /** Stops the timer and writes what is pending. */
    async close(): Promise<void> {
      clearInterval(timer)
      await flush()
    },
    now
  }
}

export type Timeline = ReturnType<typeof createTimeline>

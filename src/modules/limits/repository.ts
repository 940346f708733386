import { sql } from 'drizzle-orm'
import { rowsOf, type Db } from '../../db/index.js'

export interface Count {
  /** Hits in the key's current window, this one included. */
  count: number
  /** Milliseconds until the window ends. */
  ttlMs: number
}

/** SQL of the rate limits every server process on the database shares. */
export function createLimitsRepository(db: Db) {
  return {
    /**
     * Counts one hit of `key` in one statement: a key whose window has ended starts a new one of
     * `windowMs`. Every process counting the same key sees the same count.
     */
    async hit(key: string, windowMs: number): Promise<Count> {
      const [row] = rowsOf<{ count: number; ttl_ms: number | string }>(
        await db.execute(sql`insert into rate_limit_counts as c (key, window_ends_at, count)
          values (${key}, now() + make_interval(secs => ${windowMs / 1000}), 1)
          on conflict (key) do update set
            count = case when c.window_ends_at <= now() then 1 else c.count + 1 end,
            window_ends_at = case when c.window_ends_at <= now() then excluded.window_ends_at else c.window_ends_at end
          returning count, greatest(0, ceil(extract(epoch from window_ends_at - now()) * 1000))::int as ttl_ms`)
      )
      return { count: Number(row!.count), ttlMs: Number(row!.ttl_ms) }
    },

    /** Deletes the keys whose window ended more than `graceMs` ago; returns how many. */
    async sweep(graceMs: number): Promise<number> {
      const rows = rowsOf(
        await db.execute(sql`delete from rate_limit_counts
          where window_ends_at < now() - make_interval(secs => ${graceMs / 1000}) returning 1`)
      )
      return rows.length
    }
  }
}

export type LimitsRepository = ReturnType<typeof createLimitsRepository>

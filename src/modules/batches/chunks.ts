/**
 * How many accounts a batch stages and creates in one transaction.
 *
 * PostgreSQL: 100. Other sessions do not wait for a batch's transaction, and bigger ones gain
 * little.
 *
 * PGlite: one session, so every other statement (a sign-in, a status read, the dashboard's) waits
 * for the transaction in progress. Each transaction's time holding the database is measured and
 * the next chunk is sized from the cost per account seen so far, to hold it about
 * `PGLITE_SHARED_MS` while other requests are coming in (`OthersActivity`), and about
 * `PGLITE_ALONE_MS` when the migration has the database to itself: larger transactions spread
 * each one's fixed cost (its look-ups before it, its statement's planning, the commit) over more
 * accounts (bench/README.md, PGlite responsiveness).
 */
export interface ChunkSizer {
  /** Accounts for the next transaction. */
  next(): number
  /** A transaction of `accounts` held the database `ms` milliseconds. */
  held(accounts: number, ms: number): void
}

export const POSTGRES_CHUNK_ACCOUNTS = 100
/** How long a PGlite transaction of a batch holds the database while others are using it. */
export const PGLITE_SHARED_MS = 30
/** How long it holds it when nobody else is. */
export const PGLITE_ALONE_MS = 100
const PGLITE_FIRST = 10
const PGLITE_MIN = 2
const PGLITE_MAX = 100
/** Weight of the latest transaction in the cost per account. */
const SMOOTHING = 0.3

export function chunkSizer(kind: 'postgres' | 'pglite', othersActive: () => boolean = () => false): ChunkSizer {
  if (kind === 'postgres') return { next: () => POSTGRES_CHUNK_ACCOUNTS, held: () => {} }
  let msPerAccount: number | undefined
  return {
    next() {
      if (msPerAccount === undefined) return PGLITE_FIRST
      const target = othersActive() ? PGLITE_SHARED_MS : PGLITE_ALONE_MS
      return Math.max(PGLITE_MIN, Math.min(PGLITE_MAX, Math.round(target / Math.max(msPerAccount, 0.01))))
    },
    held(accounts, ms) {
      if (accounts <= 0 || !(ms >= 0)) return
      const seen = ms / accounts
      msPerAccount = msPerAccount === undefined ? seen : msPerAccount + SMOOTHING * (seen - msPerAccount)
    }
  }
}

/** Whether requests other than the migration's own (batches, import jobs) reached the server lately. */
export interface OthersActivity {
  /** A request other than the migration's own arrived. */
  mark(): void
  /** One arrived within the last `OTHERS_WINDOW_MS`. */
  recent(): boolean
}

export const OTHERS_WINDOW_MS = 2_000

export function othersActivity(now: () => number = Date.now): OthersActivity {
  let last = -Infinity
  return {
    mark() {
      last = now()
    },
    recent: () => now() - last < OTHERS_WINDOW_MS
  }
}

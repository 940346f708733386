/**
 * How many accounts a batch stages and creates in one transaction.
 *
 * PostgreSQL: 100. Other sessions do not wait for a batch's transaction, and bigger ones gain
 * little.
 *
 * PGlite: one session, so every other statement (a sign-in, a status read, the dashboard's) waits
 * for the transaction in progress. Transactions are kept to about `PGLITE_TARGET_MS`: each one's
 * time holding the database is measured, and the next chunk is sized from the cost per account
 * seen so far. A fixed size would be too big on a slow machine and cost throughput on a fast one
 * (bench/README.md, PGlite responsiveness).
 */
export interface ChunkSizer {
  /** Accounts for the next transaction. */
  next(): number
  /** A transaction of `accounts` held the database `ms` milliseconds. */
  held(accounts: number, ms: number): void
}

export const POSTGRES_CHUNK_ACCOUNTS = 100
/** How long a PGlite transaction of a batch should hold the database. */
export const PGLITE_TARGET_MS = 25
const PGLITE_FIRST = 10
const PGLITE_MIN = 2
const PGLITE_MAX = 100
/** Weight of the latest transaction in the cost per account. */
const SMOOTHING = 0.3

export function chunkSizer(kind: 'postgres' | 'pglite'): ChunkSizer {
  if (kind === 'postgres') return { next: () => POSTGRES_CHUNK_ACCOUNTS, held: () => {} }
  let msPerAccount: number | undefined
  let size = PGLITE_FIRST
  return {
    next: () => size,
    held(accounts, ms) {
      if (accounts <= 0 || !(ms >= 0)) return
      const seen = ms / accounts
      msPerAccount = msPerAccount === undefined ? seen : msPerAccount + SMOOTHING * (seen - msPerAccount)
      size = Math.max(PGLITE_MIN, Math.min(PGLITE_MAX, Math.round(PGLITE_TARGET_MS / Math.max(msPerAccount, 0.01))))
    }
  }
}

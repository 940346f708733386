import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import * as schema from '../../drizzle/schema/index.js'
import { databaseUnavailable, pgErrorCode } from './errors.js'
import { clientFor, describeUrl, type Db, type PostgresOptions } from './index.js'

/**
 * A read replica (`DATABASE_READ_URL`) for the reads that may lag by a moment: the lists, the
 * failure summary, the timeline, the dashboard's aggregates and `/metrics`' counts. Everything
 * else (status, the account summary, every write) uses the primary.
 */
export interface Replica {
  db: Db
  /** `host:port/database`, for the log lines (no credentials). */
  description: string
  ping(timeoutMs: number): Promise<void>
  close(): Promise<void>
}

/** How long a replica that could not be reached is left alone: its reads go to the primary meanwhile. */
export const REPLICA_DOWN_MS = 5000

/** SQLSTATE of a query a hot standby cancelled for a conflict with the replay (or any serialization failure). */
const RECOVERY_CONFLICT = '40001'

/**
 * The replica's pool: a postgres.js client like the primary's (the same prepare and pipeline
 * settings), but never migrated (a replica is read-only: it gets the schema from the primary) and
 * opened lazily, so a replica that is down at start does not stop the server. The URL's
 * `target_session_attrs` is left as given. A shorter connect timeout than the primary's: a read
 * waits that long once before it goes to the primary.
 */
export function openReplica(url: string, poolSize = 10, settings: PostgresOptions = {}): Replica {
  const prepare = settings.prepare ?? true
  const client = postgres(url, {
    onnotice: () => {},
    connect_timeout: 2,
    prepare,
    max: poolSize,
    ...(settings.pipeline === false ? { max_pipeline: 0 } : {})
  })
  const db = drizzlePostgres({ client: clientFor(client, prepare), schema }) as unknown as Db
  return {
    db,
    description: `read replica at ${describeUrl(url)}`,
    async ping(timeoutMs) {
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
      })
      await Promise.race([Promise.resolve(client`select 1`), timeout]).finally(() => clearTimeout(timer))
    },
    async close() {
      await client.end({ timeout: 10 })
    }
  }
}

export interface ReadsLog {
  warn(obj: object, message: string): void
  info(obj: object, message: string): void
}

/**
 * Where the reads that may lag go: the one place that chooses between the replica and the
 * primary. Without a replica every read runs on the primary.
 */
export interface Reads {
  /**
   * Runs `read` on the replica, or on the primary when there is none or it is marked down. A
   * replica that cannot be reached is marked down for `REPLICA_DOWN_MS` and `read` runs again on
   * the primary; so does a read the replica cancelled for a conflict with its replay.
   */
  run<T>(read: (db: Db) => Promise<T>): Promise<T>
  /** A repository built once on each database; `read(fn)` runs `fn` on the one `run` chooses. */
  repository<R>(make: (db: Db) => R): { read<T>(fn: (repo: R) => Promise<T>): Promise<T> }
  /** Pings the replica (for /readyz): never throws; a replica that does not answer is marked down. */
  check(timeoutMs: number): Promise<'up' | 'down' | 'none'>
}

export function createReads(primary: Db, replica: Replica | undefined, log: ReadsLog, now = Date.now): Reads {
  let downUntil = 0
  let down = false

  function markDown(err: unknown): void {
    downUntil = now() + REPLICA_DOWN_MS
    if (down) return
    down = true
    log.warn(
      { err, replica: replica!.description },
      `${replica!.description} cannot be reached: its reads go to the primary, tried again every ${REPLICA_DOWN_MS / 1000} s`
    )
  }

  function markUp(): void {
    downUntil = 0
    if (!down) return
    down = false
    log.info({ replica: replica!.description }, `${replica!.description} answers again: reads go to it`)
  }

  function useReplica(): boolean {
    return replica !== undefined && now() >= downUntil
  }

  async function run<T>(read: (db: Db) => Promise<T>): Promise<T> {
    if (!useReplica()) return read(primary)
    try {
      const result = await read(replica!.db)
      markUp()
      return result
    } catch (err) {
      if (databaseUnavailable(err)) markDown(err)
      else if (pgErrorCode(err) !== RECOVERY_CONFLICT) throw err
      return read(primary)
    }
  }

  return {
    run,
    repository<R>(make: (db: Db) => R) {
      const onPrimary = make(primary)
      const onReplica = replica ? make(replica.db) : onPrimary
      return {
        read: <T>(fn: (repo: R) => Promise<T>) => run((db) => fn(db === primary ? onPrimary : onReplica))
      }
    },
    async check(timeoutMs) {
      if (!replica) return 'none'
      try {
        await replica.ping(timeoutMs)
        markUp()
        return 'up'
      } catch (err) {
        // A timeout is no driver error: marked down all the same, as the replica did not answer.
        markDown(err)
        return 'down'
      }
    }
  }
}

/** Reads without a replica: every one on `db` (services built without the app's reads, e.g. in tests). */
export function onPrimary(db: Db): Reads {
  return createReads(db, undefined, { warn() {}, info() {} })
}

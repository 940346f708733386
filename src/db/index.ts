import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { PGlite } from '@electric-sql/pglite'
import { sql, type SQL } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import * as schema from '../../drizzle/schema/index.js'
import { migrationsFolder } from '../paths.js'
import { driverPatchProblem } from './driver-check.js'
import { driverClient } from './traced.js'

export { databaseUnavailable, pgConstraint, pgErrorCode } from './errors.js'
import {
  commitAfterSent,
  makePgliteDatabase,
  PgliteWorkerClient,
  transactionBox,
  type TransactionBox
} from './pglite-client.js'

/** The Drizzle type both drivers satisfy: repositories are written against it and run on both. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>
/** A transaction handle; inside a transaction always use it, never the outer `Db`. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]

export interface Database {
  kind: 'pglite' | 'postgres'
  db: Db
  /** Where the data lives, for the start-up log line (no credentials). */
  description: string
  /** Resolves when the database answers a trivial query within `timeoutMs`. */
  ping(timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

/** Raised when the database cannot be opened; its message is one line meant for the operator. */
export class DatabaseStartupError extends Error {
  override name = 'DatabaseStartupError'
}

export interface PgliteOptions {
  /** A folder, or `memory://` for a throwaway in-memory database. */
  dataDir: string
  /** The bytes of a `dumpDataDir()` snapshot to start from (already migrated). */
  loadDataDir?: Uint8Array
}

/**
 * Embedded PGlite: one process per data folder, enforced by a lock file beside the data. The
 * database runs in a worker thread of its own (pglite-worker.ts), so its work never holds the
 * server's thread; Drizzle talks to it through `PgliteWorkerClient`.
 */
export async function openPglite(options: PgliteOptions): Promise<Database> {
  const inMemory = options.dataDir.startsWith('memory://')
  let releaseLock = (): void => {}
  let pgDir = options.dataDir
  if (!inMemory) {
    const root = resolve(options.dataDir)
    mkdirSync(root, { recursive: true })
    releaseLock = lockDataDir(root)
    pgDir = join(root, 'pglite')
  }
  try {
    // A new database is made in a process of its own, whose memory (initdb's, about 500 MB at its
    // peak) leaves with it.
    if (!inMemory && !existsSync(join(pgDir, 'PG_VERSION'))) await makePgliteDatabase(pgDir, migrationsFolder)
    const client = await PgliteWorkerClient.open({
      dataDir: pgDir,
      migrationsFolder,
      ...(options.loadDataDir ? { load: options.loadDataDir } : {})
    })
    // Drizzle's session calls only query, exec and transaction, which the client forwards.
    const db = drizzlePglite({ client: client as unknown as PGlite, schema }) as unknown as Db
    // A transaction's statements sent together run in the order sent, without waiting on this thread between them.
    pipelining.add(db)
    oneStatement.add(db)
    return {
      kind: 'pglite',
      db,
      description: inMemory ? 'embedded PGlite (in memory)' : `embedded PGlite in ${pgDir}`,
      async ping(timeoutMs = 2000) {
        await withTimeout(client.query('select 1'), timeoutMs)
      },
      async close() {
        try {
          await client.close()
        } finally {
          releaseLock()
        }
      }
    }
  } catch (err) {
    releaseLock()
    if (err instanceof DatabaseStartupError) throw err
    throw new DatabaseStartupError(`cannot open the embedded database in ${pgDir}: ${oneLine(err)}`)
  }
}

export interface PostgresOptions {
  /**
   * Prepare small statements (named, kept per connection; the default). `false` for PgBouncer in
   * transaction pooling mode before 1.21: there the next transaction may get another server
   * connection, where the statement does not exist.
   */
  prepare?: boolean
  /**
   * Pipeline queries outside a transaction (the default). `false` for PgBouncer in transaction
   * pooling mode: a query's error there can lose the answer of the next one pipelined behind it.
   * A transaction's own queries are pipelined either way (PgBouncer keeps its server connection).
   */
  pipeline?: boolean
}

/**
 * A PostgreSQL server through the `postgres` driver, migrated first (see `migrateServer`). Nothing
 * the service sends lasts on a server connection beyond its transaction (no session-level locks,
 * `SET`, `LISTEN` or temporary tables; prepared statements only with `prepare`), so the URL may
 * point at PgBouncer in transaction pooling mode (with `prepare: false` before PgBouncer 1.21).
 */
export async function openPostgres(url: string, poolSize = 10, settings: PostgresOptions = {}): Promise<Database> {
  const where = describeUrl(url)
  const unpatched = driverPatchProblem()
  if (unpatched) throw new DatabaseStartupError(`cannot use the PostgreSQL server at ${where}: ${unpatched}`)
  const prepare = settings.prepare ?? true
  // max_pipeline 0: pipelined only inside a transaction (our patch of the driver; see patches/README.md).
  const options = {
    onnotice: () => {},
    connect_timeout: 5,
    prepare,
    ...(settings.pipeline === false ? { max_pipeline: 0 } : {})
  }
  const migrator = postgres(url, { ...options, max: 1 })
  try {
    await migrator`select 1`
    await migrateServer(migrator)
  } catch (err) {
    throw new DatabaseStartupError(`cannot use the PostgreSQL server at ${where}: ${oneLine(err)}`)
  } finally {
    await migrator.end({ timeout: 5 })
  }
  const client = postgres(url, { ...options, max: poolSize })
  const db = drizzlePostgres({ client: clientFor(client, prepare), schema }) as unknown as Db
  pipelining.add(db)
  return {
    kind: 'postgres',
    db,
    description: `PostgreSQL server at ${where}`,
    async ping(timeoutMs = 2000) {
      await withTimeout(client`select 1`, timeoutMs)
    },
    async close() {
      await client.end({ timeout: 10 })
    }
  }
}

/**
 * Applies the migrations the database lacks, as Drizzle's migrator does (the same
 * `drizzle.__drizzle_migrations` table, hashes and order), but all in one transaction that first
 * takes a transaction-level advisory lock: servers starting at once against one database migrate
 * one after the other. A session-level lock would not do through PgBouncer in transaction pooling
 * mode: it stays on whichever server connection took it, and the unlock may run on another.
 */
async function migrateServer(client: postgres.Sql): Promise<void> {
  const migrations = readMigrationFiles({ migrationsFolder })
  await client.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(7318204511)`
    await tx`create schema if not exists drizzle`
    await tx`create table if not exists drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)`
    const [last] = await tx<
      Array<{ created_at: string | null }>
    >`select created_at from drizzle.__drizzle_migrations order by created_at desc limit 1`
    for (const migration of migrations) {
      if (last && Number(last.created_at) >= migration.folderMillis) continue
      for (const statement of migration.sql) await tx.unsafe(statement)
      await tx`insert into drizzle.__drizzle_migrations (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`
    }
  })
}

/** Statements with at most this many parameters are prepared; bigger ones (batch inserts) vary too much to keep. */
const PREPARE_MAX_PARAMETERS = 200

/** A multi-row insert of src/db/insert.ts: `insert into "t" (…) values (…), (…)`. */
const MULTI_ROW_INSERT = /^insert into "[^"]+" \([^)]*\) values \([^)]*\), \(/

/**
 * Whether a statement is prepared. postgres.js keeps a prepared statement per connection for the
 * connection's life (and the server keeps its plan), keyed by the text. A multi-row insert's text
 * changes with its number of rows and with the cells each row leaves to their default, so a long
 * migration made new ones without end: on the scale bench the server's heap grew by about 10 MB
 * per 100,000 accounts (20 connections holding the texts) and its RSS with it. They run unnamed.
 */
function prepares(query: string, parameters: number): boolean {
  return parameters <= PREPARE_MAX_PARAMETERS && !MULTI_ROW_INSERT.test(query)
}

/**
 * The postgres.js client as Drizzle should use it (traced: src/db/traced.ts). Drizzle runs every
 * statement it was not asked to name unprepared, and postgres.js then asks the server for an
 * unnamed statement's parameter types before it can send the values: two round trips per
 * statement, and nothing pipelined behind it. With `prepare`, small statements are prepared
 * instead (per connection, keyed by their text: parsed and planned once, then one round trip
 * each), in transactions and savepoints too.
 */
export function clientFor<T extends postgres.Sql | postgres.TransactionSql>(sql: T, prepare: boolean): T {
  return driverClient(sql, prepare ? prepares : unprepared)
}

function unprepared(): boolean {
  return false
}

/**
 * Databases whose transactions pipeline queries sent together: postgres.js, and PGlite in its
 * worker (a transaction's statements queue there in the order sent).
 */
const pipelining = new WeakSet<object>()

/** True when queries of one transaction can be sent together and answered in one round trip. */
export function canPipeline(db: Db): boolean {
  return pipelining.has(db)
}

/**
 * Databases where each statement has a cost of its own worth saving: PGlite parses, plans and runs
 * each in calls of its own into the database (a batch transaction of about 16 accounts: 23 ms as
 * 17 statements, 21 ms as one). `writes` in src/db/insert.ts makes their writes one statement.
 */
const oneStatement = new WeakSet<object>()

/** True when a transaction's writes are best sent as one statement (`writes`). */
export function writesAsOne(db: Db): boolean {
  return oneStatement.has(db)
}

/**
 * Runs statements of one transaction in order and returns their results. They are sent together:
 * postgres.js pipelines a transaction's queries in the order they were sent (one round trip), and
 * PGlite's worker runs them in that order without waiting for this thread between them; parents
 * are written before children.
 *
 * `thenCommit`: they are the transaction's last, and it commits whatever their answers are
 * unless one fails. In a `timedTransaction` on PGlite the commit goes right behind them
 * (`commitAfterSent`), so the transaction holds the database only while they run, not while this
 * thread gets round to their answers; elsewhere the transaction commits when its function
 * returns, as usual.
 */
export async function runInOrder(
  db: Db,
  statements: PromiseLike<unknown>[],
  options: { thenCommit?: boolean } = {}
): Promise<unknown[]> {
  if (canPipeline(db)) {
    // Each is sent now, in order (a query builder sends its query when `then` is called).
    const sent = statements.map(
      (s) =>
        new Promise((resolve, reject) => {
          s.then(resolve, reject)
        })
    )
    if (options.thenCommit) commitAfterSent()
    return Promise.all(sent)
  }
  const results: unknown[] = []
  for (const s of statements) results.push(await s)
  return results
}

/**
 * Runs `fn` in a transaction and adds to its outcome how long the transaction held the database,
 * in milliseconds: on PGlite as its worker measured it (BEGIN to COMMIT, while nothing else could
 * run there), on PostgreSQL from BEGIN to the end as this thread saw it.
 */
export async function timedTransaction<T extends object>(
  db: Db,
  fn: (tx: Tx) => Promise<T>
): Promise<T & { heldMs: number }> {
  const held: TransactionBox = {}
  let started = 0
  const outcome = await transactionBox.run(held, () =>
    db.transaction(async (tx) => {
      started = performance.now()
      return fn(tx)
    })
  )
  return { ...outcome, heldMs: held.ms ?? performance.now() - started }
}

/**
 * A list of texts as a subquery, sent as one JSON parameter instead of one per value (a batch of
 * 500 ids would be 500 parameters, and a statement too big to prepare): `column in ${textList(ids)}`.
 */
export function textList(values: string[]): SQL {
  return sql`(select jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`
}

/**
 * Pairs of one supplier and many external account numbers, for `(supplier_id, external_account_number)
 * in ${supplierExternals(id, externals)}`. Written as pairs, not as `supplier_id = $1 and
 * external_account_number in (…)`: PostgreSQL estimates a supplier whose rows arrived after the
 * last ANALYZE at one row, and then scans all of them once per number (a 100-account batch took
 * 0.7 s against 45,000 freshly staged accounts); pairs are looked up in the pair index whatever
 * the statistics say (2 ms).
 */
export function supplierExternals(supplierId: string, externals: string[]): SQL {
  return sql`(select ${supplierId}::uuid, jsonb_array_elements_text(${JSON.stringify(externals)}::jsonb))`
}

/** The rows of a raw `db.execute()` result: PGlite answers `{rows}`, postgres.js an array. */
export function rowsOf<T = Record<string, unknown>>(result: unknown): T[] {
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[]
}

export function openDatabase(config: {
  databaseUrl: string | undefined
  databasePoolSize: number
  databasePrepare: boolean
  databasePipeline: boolean
  dataDir: string
}): Promise<Database> {
  return config.databaseUrl
    ? openPostgres(config.databaseUrl, config.databasePoolSize, {
        prepare: config.databasePrepare,
        pipeline: config.databasePipeline
      })
    : openPglite({ dataDir: config.dataDir })
}

/**
 * `host:port/database`, without user or password; several hosts (`h1:5432,h2:5433`, libpq's
 * multi-host form, which the driver tries in order for a primary) are listed as given.
 */
export function describeUrl(url: string): string {
  const match = /^postgres(?:ql)?:\/\/(?:[^@/]*@)?([^/?#]+)(\/[^?#]*)?/.exec(url)
  if (!match) return 'an unparsable DATABASE_URL'
  const hosts = match[1]!.split(',').map((host) => (/:\d+$/.test(host) ? host : `${host}:5432`))
  return `${hosts.join(',')}${match[2] ?? ''}`
}

function lockDataDir(root: string): () => void {
  const lockPath = join(root, 'server.lock')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx')
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return () => rmSync(lockPath, { force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const holder = Number(readFileSync(lockPath, 'utf8').trim())
      if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) {
        throw new DatabaseStartupError(
          `the embedded database in ${root} is in use by process ${holder}; one server per DATA_DIR (use DATABASE_URL to run several)`
        )
      }
      rmSync(lockPath, { force: true }) // left behind by a process that died
    }
  }
  throw new DatabaseStartupError(`cannot lock ${lockPath}`)
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function withTimeout<T>(promise: PromiseLike<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  return Promise.race([Promise.resolve(promise), timeout]).finally(() => clearTimeout(timer))
}

function oneLine(err: unknown): string {
  const e = err as { message?: string; code?: string; cause?: { message?: string } } | null
  const message = e?.cause?.message ?? e?.message ?? String(err)
  const text = message.split('\n')[0] ?? ''
  return e?.code && !text.includes(e.code) ? `${e.code} ${text}`.trim() : text
}

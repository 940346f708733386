import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import tap from 'tap'
import { drizzle } from 'drizzle-orm/pglite'
import { migrate } from 'drizzle-orm/pglite/migrator'
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { openPglite, openPostgres, rowsOf, type Database } from '../../src/db/index.js'

export { rowsOf }
import { migrationsFolder, projectRoot } from '../../src/paths.js'

/** Set by `.ci/run` (and by hand) to run the suite against a PostgreSQL server instead of PGlite. */
export const testDatabaseUrl = process.env.TEST_DATABASE_URL || undefined

function migrationsHash(): string {
  const hash = createHash('sha256')
  for (const file of readdirSync(migrationsFolder, { recursive: true }).map(String).sort()) {
    const path = join(migrationsFolder, file)
    if (file.endsWith('.sql') || file.endsWith('.json')) hash.update(file).update(readFileSync(path))
  }
  return hash.digest('hex').slice(0, 12)
}

let snapshotBytes: Uint8Array | undefined

/**
 * A migrated PGlite snapshot, made once per migrations version and shared by test files
 * (uncompressed: it loads about a third faster). Its bytes, read once per process: each database
 * gets a copy (the database's thread reads them whole).
 */
async function pgliteSnapshot(): Promise<Uint8Array> {
  const dir = join(projectRoot, 'test', '.cache')
  const file = join(dir, `pglite-${migrationsHash()}.tar`)
  if (!existsSync(file)) {
    const client = await PGlite.create('memory://')
    await migrate(drizzle({ client }), { migrationsFolder })
    const dump = await client.dumpDataDir('none')
    await client.close()
    mkdirSync(dir, { recursive: true })
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`
    writeFileSync(tmp, Buffer.from(await dump.arrayBuffer()))
    renameSync(tmp, file) // atomic: parallel files never read half a snapshot
  }
  snapshotBytes ??= readFileSync(file)
  return snapshotBytes
}

/**
 * In-memory PGlite databases this test process has closed, kept to be emptied and handed out
 * again: starting one costs 1 to 2 s of CPU, emptying one a few milliseconds. One whose schema a
 * test changed (a trigger, a constraint, a table) is not reused.
 */
const idlePglite: Array<{ database: Database; schema: string }> = []
const IDLE_PGLITE_KEPT = 2
// PostgreSQL's timers inside an idle PGlite would keep the process alive: closed when the file's tests end.
tap.teardown(async () => {
  await Promise.all(idlePglite.splice(0).map(({ database }) => database.close()))
})

/**
 * A PGlite database as a fresh one is: every table of the service empty, identities restarted,
 * no session state. Its `close()` gives it back to the process's idle list; afterwards the
 * handle answers nothing (`ping` rejects), as a closed database would.
 */
async function leasePglite(): Promise<Database> {
  let reused: { database: Database; schema: string } | undefined
  while (!reused && idlePglite.length > 0) {
    const idle = idlePglite.pop()!
    if ((await schemaOf(idle.database)) === idle.schema) reused = idle
    else await idle.database.close()
  }
  if (reused) await emptyTables(reused.database)
  const database = reused?.database ?? (await openPglite({ dataDir: 'memory://', loadDataDir: await pgliteSnapshot() }))
  const schema = reused?.schema ?? (await schemaOf(database))
  let closed = false
  return {
    ...database,
    async ping(timeoutMs?: number) {
      if (closed) throw new Error('the database is closed')
      return database.ping(timeoutMs)
    },
    async close() {
      if (closed) return
      closed = true
      if (idlePglite.length < IDLE_PGLITE_KEPT) idlePglite.push({ database, schema })
      else await database.close()
    }
  }
}

/** Every object a test could add or change, as text: tables and their columns, constraints, indexes, triggers, functions, schemas. */
async function schemaOf(database: Database): Promise<string> {
  const [row] = rowsOf<{ schema: string }>(
    await database.db.execute(sql`
    with spaces as (select oid, nspname from pg_namespace where nspname not in ('pg_catalog', 'information_schema') and nspname not like 'pg\_toast%' and nspname not like 'pg\_temp%')
    select md5(string_agg(entry, ';' order by entry)) as schema from (
      select format('ns %s', nspname) as entry from spaces
      union all select format('rel %s %s %s', c.oid::regclass, c.relkind, c.reloptions) from pg_class c join spaces s on s.oid = c.relnamespace
      union all select format('att %s %s %s %s %s', a.attrelid::regclass, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attisdropped)
        from pg_attribute a join pg_class c on c.oid = a.attrelid join spaces s on s.oid = c.relnamespace where a.attnum > 0
      union all select format('con %s %s %s', conrelid::regclass, conname, pg_get_constraintdef(c.oid)) from pg_constraint c join spaces s on s.oid = c.connamespace
      union all select format('idx %s', pg_get_indexdef(indexrelid)) from pg_index i join pg_class c on c.oid = i.indexrelid join spaces s on s.oid = c.relnamespace
      union all select format('trg %s %s %s', tgrelid::regclass, tgname, tgenabled) from pg_trigger where not tgisinternal
      union all select format('fn %s %s', p.oid::regprocedure, md5(p.prosrc)) from pg_proc p join spaces s on s.oid = p.pronamespace
    ) entries`)
  )
  return row!.schema
}

async function emptyTables(database: Database): Promise<void> {
  const tables = rowsOf<{ name: string }>(
    await database.db.execute(sql`select tablename as name from pg_tables where schemaname = 'public'`)
  )
  if (tables.length > 0) {
    await database.db.execute(
      sql.raw(`truncate ${tables.map(({ name }) => `"${name}"`).join(', ')} restart identity cascade`)
    )
  }
  await database.db.execute(sql`discard all`)
}

export function withDatabase(url: string, name: string): string {
  const u = new URL(url)
  u.pathname = '/' + name
  return u.toString()
}

/** A migrated template database on the server, made once per run and migrations version. */
async function postgresTemplate(admin: postgres.Sql, base: string): Promise<string> {
  const template = `${base}_tmpl_${migrationsHash()}`
  await admin`select pg_advisory_lock(hashtext(${template}))`
  try {
    const [exists] = await admin`select 1 from pg_database where datname = ${template}`
    if (!exists) {
      const building = `${template}_building`
      await admin.unsafe(`drop database if exists "${building}"`)
      await admin.unsafe(`create database "${building}"`)
      const migrated = await openPostgres(withDatabase(testDatabaseUrl!, building), 1)
      await migrated.close()
      await admin.unsafe(`alter database "${building}" rename to "${template}"`)
    }
  } finally {
    await admin`select pg_advisory_unlock(hashtext(${template}))`
  }
  return template
}

/**
 * A fresh, migrated database for one test file: in-memory PGlite from a snapshot, or (with
 * TEST_DATABASE_URL) a new PostgreSQL database cloned from a migrated template. `drop` removes it.
 */
export async function freshDatabase(): Promise<{ database: Database; url?: string; drop: () => Promise<void> }> {
  if (!testDatabaseUrl) return { database: await leasePglite(), drop: async () => {} }
  const base = new URL(testDatabaseUrl).pathname.slice(1)
  const admin = postgres(testDatabaseUrl, { max: 1, onnotice: () => {} })
  try {
    const template = await postgresTemplate(admin, base)
    const name = `${base}_f_${process.pid}_${randomBytes(3).toString('hex')}`
    await admin.unsafe(`create database "${name}" template "${template}"`)
    const url = withDatabase(testDatabaseUrl, name)
    const database = await openPostgres(url, 10)
    return {
      database,
      url,
      drop: async () => {
        const dropper = postgres(testDatabaseUrl!, { max: 1, onnotice: () => {} })
        await dropper.unsafe(`drop database if exists "${name}" with (force)`)
        await dropper.end()
      }
    }
  } finally {
    await admin.end()
  }
}

/**
 * The service's reports about requests, not data a request stores: failure records and the
 * timeline are written by failed requests on purpose (test/failures.test.ts checks them row by row);
 * the kept progress counts follow import_processes (test/progress-counts.test.ts checks them).
 */
export const REPORT_TABLES = ['import_failures', 'migration_minutes', 'import_progress_counts']

/**
 * Row counts of every data table of the service (reports left out, and the tables named in
 * `leaveOut`), by table name.
 */
export async function tableCounts(database: Database, leaveOut: string[] = []): Promise<Record<string, number>> {
  const tables = rowsOf<{ name: string }>(
    await database.db.execute(sql`select table_name as name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`)
  ).filter(({ name }) => !REPORT_TABLES.includes(name) && !leaveOut.includes(name))
  const counts: Record<string, number> = {}
  for (const { name } of tables) {
    const [row] = rowsOf<{ n: number | string }>(
      await database.db.execute(sql.raw(`select count(*) as n from "${name}"`))
    )
    counts[name] = Number(row!.n)
  }
  return counts
}

/** Holds row locks from a connection of its own (`statement` runs in an open transaction) until `release()`. */
export async function holdLocks(
  t: { teardown(fn: () => unknown): void },
  url: string,
  statement: (sql: postgres.ReservedSql) => Promise<unknown>
) {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const reserved = await sql.reserve()
  await reserved`begin`
  await statement(reserved)
  let released = false
  const release = async () => {
    if (released) return
    released = true
    await reserved`rollback`
    reserved.release()
    await sql.end()
  }
  t.teardown(release)
  return release
}

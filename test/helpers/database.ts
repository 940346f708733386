import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
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

/** A migrated PGlite snapshot, made once per migrations version and shared by test files (uncompressed: it loads about a third faster). */
async function pgliteSnapshot(): Promise<Blob> {
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
  return new Blob([readFileSync(file)])
}

function withDatabase(url: string, name: string): string {
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
  if (!testDatabaseUrl) {
    const database = await openPglite({ dataDir: 'memory://', loadDataDir: await pgliteSnapshot() })
    return { database, drop: async () => {} }
  }
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
 * timeline are written by failed requests on purpose (test/failures.test.ts checks them row by row).
 */
export const REPORT_TABLES = ['import_failures', 'migration_minutes']

/** Row counts of every data table of the service (reports left out), by table name. */
export async function tableCounts(database: Database): Promise<Record<string, number>> {
  const tables = rowsOf<{ name: string }>(await database.db.execute(sql`select table_name as name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`)).filter(({ name }) => !REPORT_TABLES.includes(name))
  const counts: Record<string, number> = {}
  for (const { name } of tables) {
    const [row] = rowsOf<{ n: number | string }>(await database.db.execute(sql.raw(`select count(*) as n from "${name}"`)))
    counts[name] = Number(row!.n)
  }
  return counts
}

/** Holds row locks from a connection of its own (`statement` runs in an open transaction) until `release()`. */
export async function holdLocks(t: { teardown(fn: () => unknown): void }, url: string, statement: (sql: postgres.ReservedSql) => Promise<unknown>) {
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

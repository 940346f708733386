import { randomBytes } from 'node:crypto'
import t from 'tap'
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { openPostgres, rowsOf } from '../src/db/index.js'
import { testDatabaseUrl, withDatabase } from './helpers/database.js'

/**
 * What the migrations set on the service's database: JIT compilation off (on never-analyzed large
 * tables it compiled the account summary for 150 ms and more, to run it in under 1 ms).
 */
if (!testDatabaseUrl) {
  t.skip('database settings are PostgreSQL server settings (PGlite has no JIT): set TEST_DATABASE_URL', () => {})
} else {
  const url = testDatabaseUrl
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => admin.end())

  /** An empty database of its own (not a copy of the suite's template: its settings are not copied). */
  async function emptyDatabase(t: { teardown(fn: () => unknown): void }, owner?: string): Promise<string> {
    const name = `${new URL(url).pathname.slice(1)}_s_${process.pid}_${randomBytes(3).toString('hex')}`
    await admin.unsafe(`create database "${name}"`)
    t.teardown(() => admin.unsafe(`drop database if exists "${name}" with (force)`))
    if (owner) {
      await admin.unsafe(`grant create on database "${name}" to "${owner}"`)
      const inside = postgres(withDatabase(url, name), { max: 1, onnotice: () => {} })
      await inside.unsafe(`grant create on schema public to "${owner}"`)
      await inside.end()
    }
    return name
  }

  const jitOf = async (databaseUrl: string): Promise<string> => {
    const database = await openPostgres(databaseUrl, 2)
    try {
      return String(rowsOf<{ jit: string }>(await database.db.execute(sql`show jit`))[0]!.jit)
    } finally {
      await database.close()
    }
  }

  t.test("the service's sessions run with JIT off once it has migrated its database", async (t) => {
    const name = await emptyDatabase(t)
    const probe = postgres(withDatabase(url, name), { max: 1 })
    const [before] = await probe`show jit`
    await probe.end()
    t.equal(before?.jit, 'on', 'the server default is on')
    t.equal(await jitOf(withDatabase(url, name)), 'off')
  })

  t.test('a role that may not alter the database still migrates it; JIT is left as it was', async (t) => {
    const role = `amis_s_${randomBytes(3).toString('hex')}`
    await admin.unsafe(`create role "${role}" login`)
    t.teardown(() => admin.unsafe(`drop role if exists "${role}"`))
    const name = await emptyDatabase(t, role)
    const asRole = new URL(withDatabase(url, name))
    asRole.username = role
    t.equal(await jitOf(asRole.toString()), 'on', 'migrated and opened (openPostgres migrates first), JIT as it was')
  })
}

import { randomBytes } from 'node:crypto'
import t from 'tap'
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { openPostgres, rowsOf } from '../src/db/index.js'
import { testDatabaseUrl, withDatabase } from './helpers/database.js'

/**
 * What the migrations set on the service's database: JIT compilation off (on never-analyzed large
 * tables it compiled the account summary for 150 ms and more, to run it in under 1 ms), and a
 * fresh plan for each execution of a prepared statement (a generic plan chosen while a table was
 * empty scanned it whole once it had grown).
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

  /** The settings of the service's sessions, once it has migrated (openPostgres migrates first). */
  const settingsOf = async (databaseUrl: string) => {
    const database = await openPostgres(databaseUrl, 2)
    try {
      const show = async (name: string) =>
        String(Object.values(rowsOf(await database.db.execute(sql.raw(`show ${name}`)))[0]!)[0])
      return { jit: await show('jit'), planCacheMode: await show('plan_cache_mode') }
    } finally {
      await database.close()
    }
  }

  t.test("the service's sessions run with JIT off and custom plans once it has migrated its database", async (t) => {
    const name = await emptyDatabase(t)
    const probe = postgres(withDatabase(url, name), { max: 1 })
    const [before] = await probe`show jit`
    const [mode] = await probe`show plan_cache_mode`
    await probe.end()
    t.equal(before?.jit, 'on', 'the server default is on')
    t.equal(mode?.plan_cache_mode, 'auto', 'the server default is auto')
    t.same(await settingsOf(withDatabase(url, name)), { jit: 'off', planCacheMode: 'force_custom_plan' })
  })

  t.test(
    'a prepared statement first run on an empty table looks rows up by index once the table has grown',
    async (t) => {
      const name = await emptyDatabase(t)
      await (await openPostgres(withDatabase(url, name), 1)).close()
      // One connection, as a pooled connection of the service lives through a whole migration.
      const session = postgres(withDatabase(url, name), { max: 1, onnotice: () => {} })
      t.teardown(() => session.end())
      const [org] = await session`insert into organisations (name) values ('Plans') returning id`
      const [supplier] =
        await session`insert into import_suppliers (code, organisation_id) values ('OLD', ${org!.id}) returning id`
      // The batch's delete of its accounts' failure records, prepared as the driver prepares it.
      await session.unsafe(`prepare remove(uuid, jsonb) as delete from import_failures
      where (supplier_id, external_account_number) in (select $1::uuid, jsonb_array_elements_text($2::jsonb))`)
      const numbers = JSON.stringify(Array.from({ length: 100 }, (_, i) => `F-${i * 7 + 1}`))
      const remove = `execute remove('${supplier!.id}', '${numbers}')`
      for (let i = 0; i < 8; i++) await session.unsafe(remove)
      await session`insert into import_failures (supplier_id, external_account_number, step, failed_at, attempts, http_status, code, errors, codes)
      select ${supplier!.id}, 'F-' || g, 'validate', now(), 1, 400, 'invalid',
        '[{"code": "invalid", "attr": "customers.0.email", "detail": "Enter a valid email address."}]', '{invalid}'
      from generate_series(1, 50000) g`
      const [row] = await session.unsafe(`explain (analyze, format json) ${remove}`)
      const plan = JSON.stringify(row!['QUERY PLAN'])
      t.match(plan, /"Actual Rows":100/, 'the 100 records are deleted')
      t.notMatch(plan, /Seq Scan/, `no scan of the table (plan: ${plan.slice(0, 400)})`)
      t.match(plan, /import_failures_pkey/, 'looked up in the primary key')
    }
  )

  t.test('a role that may not alter the database still migrates it; the settings are left as they were', async (t) => {
    const role = `amis_s_${randomBytes(3).toString('hex')}`
    await admin.unsafe(`create role "${role}" login`)
    t.teardown(() => admin.unsafe(`drop role if exists "${role}"`))
    const name = await emptyDatabase(t, role)
    const asRole = new URL(withDatabase(url, name))
    asRole.username = role
    t.same(
      await settingsOf(asRole.toString()),
      { jit: 'on', planCacheMode: 'auto' },
      'migrated and opened (openPostgres migrates first), the settings as they were'
    )
  })
}

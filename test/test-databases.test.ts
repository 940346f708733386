import t from 'tap'
import { sql } from 'drizzle-orm'
import { freshDatabase, rowsOf, tableCounts } from './helpers/database.js'

// The test helper's promise: every database it hands out is as a fresh one is, even where
// (on PGlite) it is one a test closed before, emptied.
const orgs = async (database: Awaited<ReturnType<typeof freshDatabase>>['database']) =>
  rowsOf<{ name: string }>(await database.db.execute(sql`select name from organisations`)).map((r) => r.name)

t.test('a database handed out after another was closed holds nothing of it', async (t) => {
  const first = await freshDatabase()
  await first.database.db.execute(sql`insert into organisations (name) values ('Left behind')`)
  await first.database.close()
  await first.drop()
  await t.rejects(first.database.ping(500), 'the closed handle answers nothing')

  const second = await freshDatabase()
  t.teardown(async () => {
    await second.database.close()
    await second.drop()
  })
  t.same(await orgs(second.database), [])
  t.ok(
    Object.values(await tableCounts(second.database)).every((n) => n === 0),
    'every table is empty'
  )
})

t.test('a database whose schema a test changed is not handed out again', async (t) => {
  const first = await freshDatabase()
  await first.database.db.execute(sql`create function refuse_orgs() returns trigger language plpgsql as $$
    begin raise exception 'no organisations today'; end $$`)
  await first.database.db.execute(
    sql`create trigger refuse before insert on organisations for each row execute function refuse_orgs()`
  )
  await first.database.close()
  await first.drop()

  const second = await freshDatabase()
  t.teardown(async () => {
    await second.database.close()
    await second.drop()
  })
  await second.database.db.execute(sql`insert into organisations (name) values ('Welcome')`)
  t.same(await orgs(second.database), ['Welcome'], 'no trigger refuses the insert')
})

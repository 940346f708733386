import t from 'tap'
import { sql } from 'drizzle-orm'
import { pgConstraint, pgErrorCode, rowsOf, runInOrder } from '../src/db/index.js'
import { asOneStatement, writes, type Query } from '../src/db/insert.js'
import { freshDatabase, testDatabaseUrl } from './helpers/database.js'

// `writes` (src/db/index.ts): a transaction's statements that need nothing from each other, on
// PGlite as one statement (`asOneStatement`), on a server one each.

t.test('asOneStatement: one WITH query, each statement placeholders moved past the ones before', async (t) => {
  const [one, ...more] = asOneStatement([
    { sql: 'insert into a (x, y) values ($1, $2)', params: ['a1', 'a2'] },
    { sql: 'insert into b (x) values ($1), ($2), ($3)', params: ['b1', 'b2', 'b3'] },
    { sql: 'delete from c where x = $1', params: ['c1'] }
  ])
  t.same(more, [], 'one statement')
  t.equal(
    one!.sql,
    'with s0 as (insert into a (x, y) values ($1, $2)), s1 as (insert into b (x) values ($3), ($4), ($5)), ' +
      's2 as (delete from c where x = $6) select 1'
  )
  t.same(one!.params, ['a1', 'a2', 'b1', 'b2', 'b3', 'c1'])
})

t.test('asOneStatement: more statements when the parameters would pass the protocol limit', async (t) => {
  const big = (name: string): Query => ({
    sql: `insert into ${name} (x) values ${Array.from({ length: 30_000 }, (_, i) => `($${i + 1})`).join(', ')}`,
    params: Array.from({ length: 30_000 }, (_, i) => `${name}${i}`)
  })
  const out = asOneStatement([big('a'), big('b'), big('c')])
  t.equal(out.length, 2, 'a and b together (60,000), c alone')
  t.equal(out[0]!.params.length, 60_000)
  t.match(out[0]!.sql, /s1 as \(insert into b \(x\) values \(\$30001\), /)
  t.match(out[0]!.sql, /\(\$60000\)\) select 1$/)
  t.equal(out[1]!.params.length, 30_000)
  t.match(out[1]!.sql, /^with s0 as \(insert into c \(x\) values \(\$1\), /)
})

t.test('writes: parents and children in one transaction, all or nothing', async (t) => {
  const { database, drop } = await freshDatabase()
  t.teardown(drop)
  const { db } = database
  await db.execute(sql`create table writes_parent (id int primary key, name text not null)`)
  await db.execute(
    sql`create table writes_child (id int primary key, parent int not null references writes_parent (id))`
  )
  const count = async (table: string) =>
    Number(rowsOf<{ n: number }>(await db.execute(sql.raw(`select count(*)::int as n from ${table}`)))[0]!.n)

  await db.transaction(async (tx) => {
    await runInOrder(
      db,
      writes(db, tx, [
        { sql: 'insert into writes_parent (id, name) values ($1, $2), ($3, $4)', params: [1, 'one', 2, 'two'] },
        sql`insert into writes_child (id, parent) values (${10}, ${1}), (${20}, ${2})`,
        { sql: 'delete from writes_parent where id = $1 and false', params: [1] }
      ])
    )
  })
  t.equal(await count('writes_parent'), 2, 'the parents stored')
  t.equal(await count('writes_child'), 2, 'their children too: their foreign key found them')

  // A child whose parent does not exist: the error is the database's, and nothing of it stays.
  const failed = await db
    .transaction(async (tx) => {
      await runInOrder(
        db,
        writes(db, tx, [
          { sql: 'insert into writes_parent (id, name) values ($1, $2)', params: [3, 'three'] },
          { sql: 'insert into writes_child (id, parent) values ($1, $2)', params: [30, 99] }
        ])
      )
    })
    .catch((err: unknown) => err)
  t.equal(pgErrorCode(failed), '23503', 'a foreign key violation')
  t.equal(pgConstraint(failed), 'writes_child_parent_fkey')
  t.equal(await count('writes_parent'), 2, 'the parent written with it is not stored')
  t.equal(await count('writes_child'), 2)
})

t.test('writes: one statement on PGlite, one each on a server', async (t) => {
  const { database, drop } = await freshDatabase()
  t.teardown(drop)
  const { db } = database
  await db.execute(sql`create table writes_one (id int primary key)`)
  // A statement's own count of the rows its transaction wrote before it: one statement sees none of the others'.
  await db.execute(sql`create table writes_seen (seen int not null)`)
  await db.transaction(async (tx) => {
    await runInOrder(
      db,
      writes(db, tx, [
        { sql: 'insert into writes_one (id) values ($1)', params: [1] },
        { sql: 'insert into writes_seen (seen) select count(*) from writes_one', params: [] }
      ])
    )
  })
  const [{ seen }] = rowsOf<{ seen: number }>(await db.execute(sql`select seen from writes_seen`)) as [{ seen: number }]
  if (testDatabaseUrl) t.equal(Number(seen), 1, 'on a server the second statement saw the first one’s row')
  else t.equal(Number(seen), 0, 'on PGlite both ran as one statement, with one snapshot')
})

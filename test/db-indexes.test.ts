import t from 'tap'
import { sql } from 'drizzle-orm'
import { rowsOf } from '../src/db/index.js'
import { freshDatabase } from './helpers/database.js'

/**
 * Service account numbers and ledger numbers are random, so each index on them takes every new
 * account on a random page: a read from outside the buffer cache once the index outgrows it, and a
 * full-page image in the write-ahead log for each page first changed since a checkpoint. Both grow
 * with the tables (a million-account run slowed as they did). Each number is indexed once, by the
 * unique index on its own table: import processes keep a copy of the account's number, unindexed.
 */
t.test('the random numbers are indexed once each, where they must be unique', async (t) => {
  const { database, drop } = await freshDatabase()
  t.teardown(async () => {
    await database.close()
    await drop()
  })
  const indexes = rowsOf<{ table: string; index: string; unique: boolean }>(
    await database.db.execute(sql`
      select c.relname as "table", i.relname as "index", x.indisunique as "unique"
      from pg_index x
      join pg_class i on i.oid = x.indexrelid
      join pg_class c on c.oid = x.indrelid
      join pg_attribute a on a.attrelid = c.oid and a.attnum = any(x.indkey::int2[])
      where c.relnamespace = 'public'::regnamespace
        and a.attname in ('service_account_number', 'ledger_number')
      order by 1, 2`)
  )
  t.same(indexes, [
    { table: 'accounts', index: 'accounts_service_account_number_unique', unique: true },
    { table: 'ledgers', index: 'ledgers_ledger_number_unique', unique: true }
  ])
})

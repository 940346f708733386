import t from 'tap'
import { eq, getTableName, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/postgres-js'
import type { PgTable } from 'drizzle-orm/pg-core'
import * as schema from '../drizzle/schema/index.js'
import { insertRows, insertStatement } from '../src/db/insert.js'
import { checkAccountData, DEFAULT_SUPPLIER_SETTINGS } from '../src/accounts/rules.js'
import { planAccount } from '../src/accounts/plan.js'
import { exampleAccount } from './helpers/account-data.js'
import { freshDatabase, rowsOf } from './helpers/database.js'

/**
 * src/db/insert.ts writes inserts without Drizzle's builder and runs them through a Drizzle
 * internal (`session.prepareQuery`). This guard fails when either stops matching the library:
 * every planned row must give the same column values as Drizzle's own statement, and the
 * statement must run on the installed Drizzle and driver.
 */

type Row = Record<string, unknown>

/** Each row of an `insert … values (…), (…)` as column → parameter value, or `default`. */
function cells(statement: { sql: string; params: unknown[] }): Array<Record<string, unknown>> {
  const match = /^insert into "[^"]+" \(([^)]*)\) values (.*)$/.exec(statement.sql)
  if (!match) throw new Error(`not a multi-row insert: ${statement.sql}`)
  const columns = match[1]!.split(', ').map((c) => c.replace(/"/g, ''))
  return [...match[2]!.matchAll(/\(([^)]*)\)/g)].map((tuple) => {
    const values = tuple[1]!.split(', ')
    const out: Record<string, unknown> = {}
    columns.forEach((column, i) => {
      const cell = values[i]!
      out[column] = cell === 'default' ? 'default' : statement.params[Number(cell.slice(1)) - 1]
    })
    return out
  })
}

/** Absent columns are the database default, as Drizzle writes them. */
const withDefaults = (rows: Array<Record<string, unknown>>, columns: string[]) =>
  rows.map((row) => Object.fromEntries(columns.map((c) => [c, c in row ? row[c] : 'default'])))

t.test("every planned row gives the same values as Drizzle's own insert", async (t) => {
  const { data } = checkAccountData(exampleAccount(), '2026-11-24', DEFAULT_SUPPLIER_SETTINGS)
  const second = checkAccountData(
    exampleAccount({ customers: [{ given_name: 'Grace', family_name: 'Hopper' }] }),
    '2026-11-24',
    DEFAULT_SUPPLIER_SETTINGS
  ).data
  const context = {
    importProcessId: 1,
    supplierId: '00000000-0000-4000-8000-000000000001',
    operationsTeamId: '00000000-0000-4000-8000-000000000002',
    sendMigrationEmails: true
  }
  const a = planAccount(data!, context)
  const b = planAccount(second!, context)
  const builder = drizzle.mock({ schema })
  const tables: Array<[PgTable, Row[]]> = [
    [schema.accounts, [a.account, b.account]],
    [schema.customers, [...a.customers, ...b.customers]],
    [schema.ledgers, a.ledgers],
    [schema.statements, a.statements],
    [schema.ledgerTransactions, a.transactions],
    [schema.transactionLineItems, a.lineItems],
    [schema.transactionTaxItems, a.taxItems],
    [schema.supplyAddresses, a.supplyAddresses],
    [schema.supplyPoints, a.supplyPoints],
    [schema.agreements, a.agreements],
    [schema.accountMetadata, a.metadata],
    [schema.emailOutbox, a.outbox]
  ]
  for (const [table, rows] of tables) {
    const ours = insertStatement(table, rows)
    const theirs = builder
      .insert(table)
      .values(rows as never)
      .toSQL()
    const columns = Object.keys(cells(theirs)[0]!)
    t.strictSame(withDefaults(cells(ours), columns), cells(theirs), `${getTableName(table)}: ${rows.length} row(s)`)
  }
})

t.test('the statement runs through the installed Drizzle and driver', async (t) => {
  const { database, drop } = await freshDatabase()
  t.teardown(async () => {
    await database.close()
    await drop()
  })
  const id = '00000000-0000-4000-8000-00000000abcd'
  const read = await database.db.transaction(async (tx) => {
    await insertRows(tx, schema.organisations, [{ id, name: 'Insert guard' }])
    return tx.select().from(schema.organisations).where(eq(schema.organisations.id, id))
  })
  t.equal(read.length, 1)
  t.equal(read[0]!.name, 'Insert guard')
  t.type(read[0]!.createdAt, Date, 'the column left out got its database default')
})

t.test('multi-row inserts are not kept as prepared statements: the connection holds none per row count', async (t) => {
  const { database, drop } = await freshDatabase()
  t.teardown(async () => {
    await database.close()
    await drop()
  })
  // One transaction, so one connection: what it has prepared is what pg_prepared_statements shows.
  const held = await database.db.transaction(async (tx) => {
    for (let n = 1; n <= 12; n++) {
      const rows = Array.from({ length: n }, (_, i) => ({
        id: `00000000-0000-4000-8000-${String(n * 100 + i).padStart(12, '0')}`,
        name: `Prepared ${n}.${i}`
      }))
      await insertRows(tx, schema.organisations, rows)
    }
    return rowsOf<{ statement: string }>(
      await tx.execute(
        sql`select statement from pg_prepared_statements where statement like 'insert into "organisations"%'`
      )
    ).map((row) => row.statement)
  })
  t.ok(
    held.every((statement) => !statement.includes('), (')),
    `no multi-row insert prepared (${held.length} insert(s) held)`
  )
  // On PostgreSQL the one-row insert is prepared: the view does show what the connection keeps.
  if (database.kind === 'postgres') t.equal(held.length, 1, 'the one-row insert is prepared')
})

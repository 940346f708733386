import { getTableColumns, getTableName, SQL, type Column } from 'drizzle-orm'
import { PgDialect, type PgTable } from 'drizzle-orm/pg-core'
import { writesAsOne, type Db, type Tx } from './index.js'

/** Rows to insert into one table. */
export interface TableRows {
  table: PgTable
  rows: Array<Record<string, unknown>>
}

/** A table's columns by property key, with their SQL names quoted, read once per table. */
const columnsOf = new WeakMap<PgTable, { name: string; columns: [string, Column, string][] }>()

function describe(table: PgTable) {
  let described = columnsOf.get(table)
  if (!described) {
    described = {
      name: `"${getTableName(table)}"`,
      columns: Object.entries(getTableColumns(table)).map(([key, column]) => [key, column, `"${column.name}"`])
    }
    columnsOf.set(table, described)
  }
  return described
}

/**
 * One multi-row `INSERT` of rows given as Drizzle insert objects, run inside `tx` when awaited.
 * The same statement Drizzle's `tx.insert(table).values(rows)` sends (values through each column's
 * driver mapping, `default` where a value is missing), without its query builder: building that
 * cost more CPU than the database spent on a whole account's inserts. Only columns some row
 * sets are listed, so database defaults apply to the rest.
 */
export function insertRows(tx: Tx, table: PgTable, rows: Record<string, unknown>[]): PromiseLike<unknown> {
  return runQuery(tx, insertStatement(table, rows))
}

/** A statement's text, with placeholders `$1`, `$2`, … and no other `$`, and its parameters. */
export interface Query {
  sql: string
  params: unknown[]
}

/** Runs `query` inside `tx` when first awaited: lazy like a Drizzle query, so callers control the order. */
export function runQuery(tx: Tx, query: Query): PromiseLike<unknown> {
  let running: Promise<unknown> | undefined
  return {
    then(onFulfilled, onRejected) {
      running ??= tx._.session.prepareQuery(query, undefined, undefined, false).execute()
      return running!.then(onFulfilled, onRejected)
    }
  }
}

/** Parameters of one statement at most: the protocol counts them in 16 bits. */
const STATEMENT_MAX_PARAMETERS = 65_535

/**
 * Data-modifying statements of one transaction as few statements as the parameter limit allows,
 * each of them a WITH query of one (`with s0 as (…), s1 as (…) select 1`): the database parses,
 * plans and runs them in one go instead of one each. Foreign keys are checked and statement
 * triggers fire at the end of the whole, so parents and children may come in any order; none
 * may need to see another's rows, and what they return is dropped.
 */
export function asOneStatement(queries: Query[]): Query[] {
  const out: Query[] = []
  let parts: string[] = []
  let params: unknown[] = []
  const flush = () => {
    if (parts.length > 0) out.push({ sql: `with ${parts.join(', ')} select 1`, params })
    parts = []
    params = []
  }
  for (const query of queries) {
    if (params.length + query.params.length > STATEMENT_MAX_PARAMETERS) flush()
    const offset = params.length
    parts.push(
      `s${parts.length} as (${offset === 0 ? query.sql : query.sql.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + offset}`)})`
    )
    for (const param of query.params) params.push(param)
  }
  flush()
  return out
}

/** Parameters of one insert at most (a little under `STATEMENT_MAX_PARAMETERS`). */
const INSERT_MAX_PARAMETERS = 60_000

/** The multi-row inserts of `rows` into `table`, in chunks under the parameter limit. */
export function insertQueries(table: PgTable, rows: Record<string, unknown>[]): Query[] {
  const size = Math.max(1, Math.floor(INSERT_MAX_PARAMETERS / describe(table).columns.length))
  const queries: Query[] = []
  for (let i = 0; i < rows.length; i += size) queries.push(insertStatement(table, rows.slice(i, i + size)))
  return queries
}

const dialect = new PgDialect()

/**
 * Data-modifying statements of one transaction that need nothing from each other (see
 * `asOneStatement`), ready for `runInOrder`: on PGlite as one statement, elsewhere one each (a
 * server pipelines them; its planning is cheap next to its round trips).
 */
export function writes(db: Db, tx: Tx, statements: Array<SQL | Query>): PromiseLike<unknown>[] {
  const queries = statements.map((s) => (s instanceof SQL ? dialect.sqlToQuery(s) : s))
  return (writesAsOne(db) ? asOneStatement(queries) : queries).map((q) => runQuery(tx, q))
}

/** The text and parameters of `insertRows`' statement. */
export function insertStatement(table: PgTable, rows: Record<string, unknown>[]): Query {
  const { name, columns } = describe(table)
  const used = columns.filter(([key]) => rows.some((row) => row[key] !== undefined))
  const params: unknown[] = []
  const tuples: string[] = []
  for (const row of rows) {
    const cells: string[] = []
    for (const [key, column] of used) {
      const value = row[key]
      if (value === undefined) {
        cells.push('default')
      } else {
        params.push(value === null ? null : column.mapToDriverValue(value))
        cells.push(`$${params.length}`)
      }
    }
    tuples.push(`(${cells.join(', ')})`)
  }
  return {
    sql: `insert into ${name} (${used.map(([, , quoted]) => quoted).join(', ')}) values ${tuples.join(', ')}`,
    params
  }
}

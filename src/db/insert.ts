import { getTableColumns, getTableName, type Column } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import type { Tx } from './index.js'

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
  const { sql: text, params } = insertStatement(table, rows)
  let running: Promise<unknown> | undefined
  // Lazy like a Drizzle query: it runs when first awaited, so callers control the order.
  return {
    then(onFulfilled, onRejected) {
      running ??= tx._.session.prepareQuery({ sql: text, params }, undefined, undefined, false).execute()
      return running!.then(onFulfilled, onRejected)
    }
  }
}

/** The text and parameters of `insertRows`' statement. */
export function insertStatement(table: PgTable, rows: Record<string, unknown>[]): { sql: string; params: unknown[] } {
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

/**
 * Slices of accounts: the mapping's last SELECT runs once per slice of the accounts file (in its
 * row order, a repeated account number in the slice of its first row), each declared table then
 * showing only the rows of that slice's accounts. What the engine holds at once is one slice's
 * lists and entries, whatever the extract's size. The statements before the last one run once,
 * over every row (their tables are built from all of them); views, macros and the last SELECT are
 * bound again for each slice, so they read the slice.
 */
import type { DuckDBConnection } from '@duckdb/node-api'
import type { DeclaredFile } from './header.js'
import { value } from './engine.js'
import { ident } from './sql.js'

/** Accounts per slice unless the person says (`--slice`). */
export const SLICE_ACCOUNTS = 50_000

export interface Slicing {
  /** How many slices (1: the tables are left as they were loaded). */
  count: number
  /** Makes each declared table show slice `k`'s rows. */
  show(k: number): Promise<void>
  /** The SQL name of declared file `n`'s table with every row, whichever slice is shown. */
  allRows(n: number): string
  /** A condition on `column` (an account number): it is an account of slice `k`. */
  inSlice(column: string, k: number): string
}

/**
 * Numbers the accounts (`_map_slice`: key, slice) and, when there is more than one slice, puts each
 * declared table's rows in `_map_all_<n>` in slice order with their slice, the table's name
 * becoming a view of one slice.
 */
export async function sliceAccounts(c: DuckDBConnection, declared: DeclaredFile[], size: number): Promise<Slicing> {
  await c.run(
    `CREATE TABLE _map_slice AS SELECT key, ((row_number() OVER (ORDER BY first) - 1) // ${size})::INTEGER AS slice
       FROM (SELECT ${ident(declared[0]!.key)} AS key, min(source_row) AS first FROM ${ident(declared[0]!.table)} GROUP BY 1)`
  )
  const count = Math.max(1, Number(await value(c, 'SELECT coalesce(max(slice), 0) + 1 FROM _map_slice')))
  const inSlice = (column: string, k: number) =>
    count === 1 ? 'true' : `${column} IN (SELECT key FROM _map_slice WHERE slice = ${k})`
  if (count === 1) {
    return { count, show: async () => {}, allRows: (n) => ident(declared[n]!.table), inSlice }
  }
  for (const [n, d] of declared.entries()) {
    // Sorted by slice, a slice's rows are a few of the table's row groups: the others are skipped.
    await c.run(
      `CREATE TABLE _map_all_${n} AS SELECT t.*, coalesce(s.slice, -1) AS _map_slice FROM ${ident(d.table)} t
         LEFT JOIN _map_slice s ON s.key = trim(t.${ident(d.key)}) ORDER BY _map_slice, t.source_row`
    )
    await c.run(`DROP TABLE ${ident(d.table)}`)
  }
  return {
    count,
    async show(k) {
      for (const [n, d] of declared.entries()) {
        await c.run(
          `CREATE OR REPLACE VIEW ${ident(d.table)} AS SELECT * EXCLUDE (_map_slice) FROM _map_all_${n} WHERE _map_slice = ${k}`
        )
      }
    },
    allRows: (n) => `_map_all_${n}`,
    inSlice
  }
}

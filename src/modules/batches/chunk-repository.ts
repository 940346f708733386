import { sql, type SQL } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import {
  accountMetadata,
  accounts,
  agreements,
  billingDocuments,
  customers,
  emailOutbox,
  ledgers,
  ledgerTransactions,
  statements,
  supplyAddresses,
  supplyPoints,
  transactionLineItems,
  transactionTaxItems
} from '../../../drizzle/schema/index.js'
import { rowsOf, supplierExternals, type Tx } from '../../db/index.js'
import type { TableRows } from '../../db/insert.js'
import { PROCESS_LOCK_BASE } from '../../db/locks.js'
import { accountTableRows } from '../../accounts/repository.js'
import type { AccountRows } from '../../accounts/plan.js'

/** What the create chunk and the dry-run chunk share: the locks of a chunk's accounts and its rows by table. */

/**
 * The tables a batch inserts into, parents before children (a billing document before its
 * transactions); the tables of sections not named here come after them.
 */
const TABLE_ORDER: PgTable[] = [
  accounts,
  customers,
  ledgers,
  statements,
  billingDocuments,
  ledgerTransactions,
  transactionLineItems,
  transactionTaxItems,
  supplyAddresses,
  supplyPoints,
  agreements,
  accountMetadata,
  emailOutbox
]

/**
 * The rows of many accounts (and of their sections) by table, for one insert (or a few) per
 * table: parents before children, a section's own tables last.
 */
export function tablesOf(planned: Array<{ rows: AccountRows; sectionRows?: TableRows[] }>): TableRows[] {
  const tables = new Map<PgTable, Array<Record<string, unknown>>>(TABLE_ORDER.map((table) => [table, []]))
  const add = ({ table, rows }: TableRows) => {
    const list = tables.get(table)
    if (list) list.push(...rows)
    else tables.set(table, [...rows])
  }
  for (const { rows, sectionRows = [] } of planned) {
    for (const tableRows of accountTableRows(rows)) add(tableRows)
    for (const tableRows of sectionRows) add(tableRows)
  }
  return [...tables].map(([table, rows]) => ({ table, rows }))
}

/**
 * A chunk's accounts as they stand before its transaction: each external number with its process
 * (id and state) if it has one, and a new process id (`nextval`) if it has none.
 */
export function chunkStanding(supplierId: string, externals: string[]): SQL {
  return sql`select e.external, p.id, p.state,
      case when p.id is null then nextval(pg_get_serial_sequence('import_processes', 'id')) end as new_id
    from jsonb_array_elements_text(${JSON.stringify(externals)}::jsonb) as e(external)
    left join (select id, external_account_number, state from import_processes
      where (supplier_id, external_account_number) in ${supplierExternals(supplierId, externals)}) p
      on p.external_account_number = e.external`
}

/**
 * The processes of these pairs locked as a create locks them, tried in external number order (so
 * two batches do not deadlock on them), then their state once the locks are held: two statements,
 * to send together.
 */
export function lockAndRead(tx: Tx, pairs: SQL) {
  return [
    tx.execute(sql`select id, pg_try_advisory_xact_lock(${PROCESS_LOCK_BASE.toString()}::bigint + id) as locked from import_processes
      where (supplier_id, external_account_number) in ${pairs} order by external_account_number`),
    tx.execute(sql`select id, external_account_number as external, state from import_processes
      where (supplier_id, external_account_number) in ${pairs}`)
  ]
}

/** The ids of the processes whose lock `lockAndRead` got. */
export function lockedIds(locks: unknown): Set<number> {
  return new Set(
    rowsOf<{ id: number | string; locked: boolean }>(locks)
      .filter((r) => r.locked)
      .map((r) => Number(r.id))
  )
}

/** Code point order, as external account numbers are ordered everywhere (`COLLATE "C"`). */
export const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

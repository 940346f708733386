import { asc, eq, sql, type SQL } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import {
  accountMetadata,
  accounts,
  agreements,
  customers,
  emailOutbox,
  importProgressCounts,
  ledgers,
  ledgerTransactions,
  operationsTeams,
  statements,
  supplyAddresses,
  supplyPoints,
  transactionLineItems,
  transactionTaxItems
} from '../../drizzle/schema/index.js'
import { rowsOf, runInOrder, type Db, type Tx } from '../db/index.js'
import type { SupplierRow } from '../db/columns.js'
import { insertQueries, runQuery, writes, type TableRows } from '../db/insert.js'
import { BALANCE_ADDING_TYPES } from '../rules/transactions.js'
import type { AccountRows } from './plan.js'
import { ACCOUNT_COUNTS, type AccountCountName } from '../../schemas/account.js'
import { SECTIONS, type CountedRows } from '../../schemas/sections.js'

/**
 * A read of a supplier's kept progress counts (import_progress_counts) folds them once it finds
 * more rows than this: the trigger on import_processes appends one per statement.
 */
export const PROGRESS_FOLD_ROWS = 100

/**
 * Replaces the supplier's kept-count rows by their sum, in one statement. Rows appended by
 * transactions that commit meanwhile are not seen by the delete, so they stay and are counted
 * once; a fold running at the same time waits for this one's deletes and then skips those rows.
 */
export async function foldProgressCounts(db: Db, supplierId: string): Promise<void> {
  await db.execute(sql`with gone as (
      delete from ${importProgressCounts} where supplier_id = ${supplierId}::uuid returning *
    )
    insert into ${importProgressCounts} (supplier_id, staged, pending, imported, skipped, failed)
    select supplier_id, sum(staged), sum(pending), sum(imported), sum(skipped), sum(failed)
    from gone group by supplier_id`)
}

type Statement = PromiseLike<unknown>

/** The multi-row inserts of `rows` into `table`, in chunks under the parameter limit (`insertQueries`). */
export function insertsOf(tx: Tx, table: PgTable, rows: Record<string, unknown>[]): Statement[] {
  return insertQueries(table, rows).map((query) => runQuery(tx, query))
}

const transactionInserts = (
  tx: Tx,
  rows: Pick<AccountRows, 'transactions' | 'lineItems' | 'taxItems'>
): Statement[] => [
  ...insertsOf(tx, ledgerTransactions, rows.transactions),
  ...insertsOf(tx, transactionLineItems, rows.lineItems),
  ...insertsOf(tx, transactionTaxItems, rows.taxItems)
]

/** Transactions with their line and tax items, to insert with an account a batch creates. */
export const transactionTableRows = (
  rows: Pick<AccountRows, 'transactions' | 'lineItems' | 'taxItems'>
): TableRows[] => [
  { table: ledgerTransactions, rows: rows.transactions },
  { table: transactionLineItems, rows: rows.lineItems },
  { table: transactionTaxItems, rows: rows.taxItems }
]

/**
 * An account's rows by table, in an order that inserts parents before children; `accountRows`
 * for several accounts' at once (`rows` then holds the child rows of all of them).
 */
export const accountTableRows = (
  rows: AccountRows,
  accountRows: Array<AccountRows['account']> = [rows.account]
): TableRows[] => [
  { table: accounts, rows: accountRows },
  { table: customers, rows: rows.customers },
  { table: ledgers, rows: rows.ledgers },
  { table: statements, rows: rows.statements },
  ...transactionTableRows(rows),
  { table: supplyAddresses, rows: rows.supplyAddresses },
  { table: supplyPoints, rows: rows.supplyPoints },
  { table: agreements, rows: rows.agreements },
  { table: accountMetadata, rows: rows.metadata },
  { table: emailOutbox, rows: rows.outbox }
]

/** The account's own counts: what its creation holds besides the sections' (those are described in schemas/sections.ts). */
const ACCOUNT_COUNTED = [
  { name: 'customers', label: 'Customers', table: 'customers', parent: 'account' },
  { name: 'supply_points', label: 'Supply points', table: 'supply_points', parent: 'account' },
  {
    name: 'agreements',
    label: 'Agreements',
    table: 'agreements',
    parent: 'supply_point',
    filter: { column: 'historical', is: false }
  }
] as const satisfies ReadonlyArray<CountedRows & { name: AccountCountName }>

/** Every count of an account: its own, then its sections'. */
const COUNTED: readonly CountedRows[] = [...ACCOUNT_COUNTED, ...SECTIONS.map((s) => s.counted)]

export type AccountCount = AccountCountName

export const ACCOUNT_COUNT_NAMES: readonly AccountCount[] = ACCOUNT_COUNTS

const PARENTS = {
  ledger: { table: sql`ledgers`, column: sql.identifier('ledger_id') },
  supply_point: { table: sql`supply_points`, column: sql.identifier('supply_point_id') }
} as const

const described = new Map<string, CountedRows>(COUNTED.map((c) => [c.name, c]))
const countedOf = (name: AccountCount): CountedRows => described.get(name)!

/** The rows' own condition (the filter), as ` and …`. */
const condition = (c: CountedRows, alias: SQL) =>
  c.filter ? sql` and ${c.filter.is ? sql`` : sql`not `}${alias}.${sql.identifier(c.filter.column)}` : sql``

/**
 * The rows one count counts, joined to their account: `rows` (aliased `r`), `account` (the column
 * naming the account's id) and the filter.
 */
function rowsOfCount(c: CountedRows) {
  const table = sql.identifier(c.table)
  if (c.parent === 'account') return { rows: sql`${table} r`, account: sql`r.account_id`, where: condition(c, sql`r`) }
  const parent = PARENTS[c.parent]
  return {
    rows: sql`${table} r join ${parent.table} par on par.id = r.${parent.column}`,
    account: sql`par.account_id`,
    where: condition(c, sql`r`)
  }
}

/**
 * One count of the account whose id is `accountId` (an SQL expression), as a subquery. Rows found
 * through a parent (a ledger, a supply point) are counted per parent, each parent's rows looked up
 * in their index by a correlated subquery, and summed over the account's parents, whatever the
 * statistics say: written as a join, tables never analysed (every account estimated at 0.5 % of
 * the parents) made PostgreSQL hash the account's parents and scan all the transactions or
 * agreements (1.5 s per summary at 1,000,000 accounts).
 */
export function accountCount(name: AccountCount, accountId: SQL): SQL {
  const c = countedOf(name)
  const table = sql.identifier(c.table)
  if (c.parent === 'account') {
    return sql`(select count(*) from ${table} r where r.account_id = ${accountId}${condition(c, sql`r`)})`
  }
  const parent = PARENTS[c.parent]
  const perParent = sql`(select count(*) from ${table} r where r.${parent.column} = par.id${condition(c, sql`r`)})`
  return sql`(select coalesce(sum(${perParent}), 0)::bigint from ${parent.table} par where par.account_id = ${accountId})`
}

/**
 * One count for many accounts at once: `account_id, n` rows, grouped, for the accounts whose ids
 * `accountIds` selects (a subquery); accounts holding none have no row.
 */
export function countsByAccount(name: AccountCount, accountIds: SQL): SQL {
  const c = rowsOfCount(countedOf(name))
  return sql`(select ${c.account} as account_id, count(*) as n from ${c.rows}
    where ${c.account} in ${accountIds}${c.where} group by ${c.account})`
}

/** One count summed over the accounts whose ids `accountIds` selects (a subquery). */
export function countOverAccounts(name: AccountCount, accountIds: SQL): SQL {
  const c = rowsOfCount(countedOf(name))
  return sql`(select count(*) from ${c.rows} where ${c.account} in ${accountIds}${c.where})`
}

/** Every count of one account as columns of a select, as numbers. */
export function accountCountColumns(accountId: SQL): Record<AccountCount, SQL<number>> {
  const columns = {} as Record<AccountCount, SQL<number>>
  for (const name of ACCOUNT_COUNT_NAMES) columns[name] = sql<number>`${accountCount(name, accountId)}`.mapWith(Number)
  return columns
}

/**
 * A transaction's amount as it adds to its ledger's balance (`signedAmount` of
 * src/rules/transactions.ts): the amount of the types in BALANCE_ADDING_TYPES, minus it for the rest.
 */
export const signedAmountSql = (transaction: SQL) =>
  sql`case when ${transaction}.type in (${sql.join(
    BALANCE_ADDING_TYPES.map((t) => sql`${t}`),
    sql`, `
  )}) then ${transaction}.amount else -${transaction}.amount end`

/** The supplier of this code if it is the organisation's, and the id of the team of this name (for a batch or an import job). */
export async function supplierAndTeam(db: Db, code: string, organisationId: string, teamName: string) {
  const [row] = rowsOf<{ supplier: SupplierRow | string | null; team_id: string | null }>(
    await db.execute(sql`select
      (select json_build_object('id', s.id, 'code', s.code, 'status', s.status, 'documentRoot', s.document_root,
        'sendMigrationEmails', s.send_migration_emails, 'maxConcurrentProcessing', s.max_concurrent_processing,
        'supplyPointChecks', s.supply_point_checks)
        from import_suppliers s where s.code = ${code} and s.organisation_id = ${organisationId}::uuid) as supplier,
      (select t.id from operations_teams t where t.name = ${teamName}) as team_id`)
  )
  const supplier = typeof row?.supplier === 'string' ? (JSON.parse(row.supplier) as SupplierRow) : row?.supplier
  return { supplier: supplier ?? undefined, teamId: row?.team_id ?? undefined }
}

export function createAccountsRepository(db: Db) {
  /**
   * `insertAccount` for many accounts at once: `rows` holds the child rows of all of them (the
   * `account` field is ignored), one multi-row insert per table.
   */
  async function insertAccounts(
    tx: Tx,
    accountRows: Array<AccountRows['account']>,
    rows: AccountRows,
    then: Statement[] = []
  ): Promise<unknown[]> {
    const results = await runInOrder(db, [
      ...writes(
        db,
        tx,
        accountTableRows(rows, accountRows).flatMap(({ table, rows }) => insertQueries(table, rows))
      ),
      ...then
    ])
    return results.slice(results.length - then.length)
  }

  return {
    /** Writes transactions with their line and tax items (post-import writes, billing documents). */
    async insertTransactions(
      tx: Tx,
      rows: Pick<AccountRows, 'transactions' | 'lineItems' | 'taxItems'>
    ): Promise<void> {
      await runInOrder(db, transactionInserts(tx, rows))
    },

    /** The same inserts as statements, to be sent with others. */
    transactionInserts,

    /**
     * Writes every row of a planned account, parents before children, inside the caller's
     * transaction; `then` are further statements of the same transaction sent with them, whose
     * results are returned.
     */
    async insertAccount(tx: Tx, rows: AccountRows, then: Statement[] = []): Promise<unknown[]> {
      return insertAccounts(tx, [rows.account], rows, then)
    },

    insertAccounts,

    /**
     * Which of these service account and ledger numbers an account or ledger already has. The
     * numbers are drawn at random (one of about 4.3 billion), so the more accounts there are, the
     * likelier a new one is taken: at a million accounts about one batch chunk of 100 in 20 drew
     * one, and the whole chunk rolled back. A chunk looks its numbers up first (docs/scaling.md,
     * numbers drawn twice). Read inside `tx` when given (on the embedded database nothing else
     * reads while a transaction is open).
     */
    async numbersTaken(serviceAccountNumbers: string[], ledgerNumbers: string[], tx?: Tx): Promise<Set<string>> {
      if (serviceAccountNumbers.length === 0 && ledgerNumbers.length === 0) return new Set()
      const rows = rowsOf<{ n: string }>(
        await (tx ?? db).execute(sql`select service_account_number as n from accounts
          where service_account_number = any(array(select jsonb_array_elements_text(${JSON.stringify(serviceAccountNumbers)}::jsonb)))
          union all
          select ledger_number from ledgers
          where ledger_number = any(array(select jsonb_array_elements_text(${JSON.stringify(ledgerNumbers)}::jsonb)))`)
      )
      return new Set(rows.map((r) => r.n))
    },

    /** The account created for an import process, with what the account summary shows. */
    async summary(importProcessId: number) {
      const [account] = await db
        .select({
          id: accounts.id,
          serviceAccountNumber: accounts.serviceAccountNumber,
          externalAccountNumber: accounts.externalAccountNumber,
          createdAt: accounts.createdAt,
          operationsTeamName: operationsTeams.name,
          counts: accountCountColumns(sql`accounts.id`)
        })
        .from(accounts)
        .innerJoin(operationsTeams, eq(operationsTeams.id, accounts.operationsTeamId))
        .where(eq(accounts.importProcessId, importProcessId))
      if (!account) return undefined
      const ledgerRows = await db
        .select({
          id: ledgers.id,
          ledgerCode: ledgers.ledgerCode,
          ledgerNumber: ledgers.ledgerNumber,
          balance: ledgers.balance,
          // Written out in full: Drizzle leaves columns unqualified in a single-table select.
          openStatementFrom: sql<string>`(select s.period_from::text from statements s
          where s.ledger_id = ledgers.id and s.status = 'OPEN' order by s.period_from desc limit 1)`
        })
        .from(ledgers)
        .where(eq(ledgers.accountId, account.id))
        .orderBy(asc(ledgers.ledgerCode))
      return { ...account, ledgers: ledgerRows }
    }
  }
}

export type AccountsRepository = ReturnType<typeof createAccountsRepository>

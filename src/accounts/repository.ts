import { asc, count, eq, getTableColumns, inArray, sql } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import {
  accountMetadata,
  accounts,
  agreements,
  customers,
  emailOutbox,
  importEvents,
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
import { insertRows, type TableRows } from '../db/insert.js'
import type { AccountRows } from './plan.js'

/** PostgreSQL accepts at most 65535 parameters per statement: large inserts go in chunks. */
const MAX_PARAMETERS = 60_000

type Statement = PromiseLike<unknown>

export type EventType = (typeof importEvents.$inferInsert)['type']

/** Who changed an import process, as the event log records it. */
export interface Actor {
  organisationId: string
  apiKeyId: string
  /** `organisation:<name>`. */
  name: string
}

/**
 * The statement that appends an event to an import process's log (imports, the post-import
 * sections); lazy, so it can be sent with others of its transaction.
 */
export function eventStatement(
  executor: Db | Tx,
  processId: number,
  type: EventType,
  actor: Actor,
  detail: unknown = {}
) {
  return executor.insert(importEvents).values({
    importProcessId: processId,
    type,
    actor: actor.name,
    organisationId: actor.organisationId,
    apiKeyId: actor.apiKeyId,
    detail
  })
}

/** The multi-row inserts of `rows` into `table`, in chunks under the parameter limit. */
export function insertsOf(tx: Tx, table: PgTable, rows: Record<string, unknown>[]): Statement[] {
  if (rows.length === 0) return []
  const columns = Object.keys(getTableColumns(table)).length
  const size = Math.max(1, Math.floor(MAX_PARAMETERS / columns))
  const statements: Statement[] = []
  for (let i = 0; i < rows.length; i += size) statements.push(insertRows(tx, table, rows.slice(i, i + size)))
  return statements
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

/** An account's rows by table, in an order that inserts parents before children. */
export const accountTableRows = (rows: AccountRows): TableRows[] => [
  { table: accounts, rows: [rows.account] },
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
      ...insertsOf(tx, accounts, accountRows),
      ...insertsOf(tx, customers, rows.customers),
      ...insertsOf(tx, ledgers, rows.ledgers),
      ...insertsOf(tx, statements, rows.statements),
      ...transactionInserts(tx, rows),
      ...insertsOf(tx, supplyAddresses, rows.supplyAddresses),
      ...insertsOf(tx, supplyPoints, rows.supplyPoints),
      ...insertsOf(tx, agreements, rows.agreements),
      ...insertsOf(tx, accountMetadata, rows.metadata),
      ...insertsOf(tx, emailOutbox, rows.outbox),
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

    /** The account created for an import process, with what the account summary shows. */
    async summary(importProcessId: number) {
      const [account] = await db
        .select({
          id: accounts.id,
          serviceAccountNumber: accounts.serviceAccountNumber,
          externalAccountNumber: accounts.externalAccountNumber,
          createdAt: accounts.createdAt,
          operationsTeamName: operationsTeams.name,
          customers: sql<number>`(select count(*) from customers c where c.account_id = accounts.id)`.mapWith(Number),
          supplyPoints: sql<number>`(select count(*) from supply_points p where p.account_id = accounts.id)`.mapWith(
            Number
          ),
          notes:
            sql<number>`(select count(*) from notes n where n.account_id = accounts.id and not n.by_system)`.mapWith(
              Number
            ),
          historicalStatements:
            sql<number>`(select count(*) from historical_statements h where h.account_id = accounts.id)`.mapWith(
              Number
            ),
          billingDocuments: sql<number>`(select count(*) from billing_documents d join ledgers l on l.id = d.ledger_id
          where l.account_id = accounts.id)`.mapWith(Number),
          paymentInstructions:
            sql<number>`(select count(*) from payment_instructions i where i.account_id = accounts.id)`.mapWith(Number)
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
      const [agreementCounts] = await db
        .select({
          current: sql<number>`count(*) filter (where not ${agreements.historical})`.mapWith(Number),
          historical: sql<number>`count(*) filter (where ${agreements.historical})`.mapWith(Number)
        })
        .from(agreements)
        .innerJoin(supplyPoints, eq(supplyPoints.id, agreements.supplyPointId))
        .where(eq(supplyPoints.accountId, account.id))
      const ledgerIds = ledgerRows.map((l) => l.id)
      const [transactionCount] =
        ledgerIds.length === 0
          ? [{ n: 0 }]
          : await db
              .select({ n: count() })
              .from(ledgerTransactions)
              .where(inArray(ledgerTransactions.ledgerId, ledgerIds))
      return {
        ...account,
        ledgers: ledgerRows,
        agreements: agreementCounts?.current ?? 0,
        historicalAgreements: agreementCounts?.historical ?? 0,
        transactions: Number(transactionCount?.n ?? 0)
      }
    }
  }
}

export type AccountsRepository = ReturnType<typeof createAccountsRepository>

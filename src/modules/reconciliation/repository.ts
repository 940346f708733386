import { sql } from 'drizzle-orm'
import { countOverAccounts, countsByAccount, signedAmountSql, type AccountCount } from '../../accounts/repository.js'
import { rowsOf, supplierExternals, type Db } from '../../db/index.js'

/** What the service holds of one pair a reconciliation names. */
export interface HeldAccount {
  external: string
  state: 'STAGED' | 'SKIPPED' | 'IMPORTED'
  /** False for a process whose account is not created. */
  created: boolean
  /** Ledger code to its balance as exact decimal text; empty unless created. */
  balances: Record<string, string>
  counts: Record<AccountCount, number>
}

/** The counts a reconciliation compares (the names of the account summary's `counts`). */
const COMPARED: AccountCount[] = [
  'transactions',
  'notes',
  'historicalAgreements',
  'historicalStatements',
  'billingDocuments',
  'paymentInstructions'
]

interface HeldRow {
  external: string
  state: HeldAccount['state']
  created: boolean
  balances: Record<string, string> | string | null
  counts: Record<string, number | string> | string | null
}

interface TotalsRow {
  created: number | string
  skipped: number | string
  pending: number | string
  ledgers: Array<{ ledger_code: string; accounts: number; balance_sum: string }> | string
  transactions: number | string
  amount_sum: string | null
  notes: number | string | null
  historical_agreements: number | string | null
  historical_statements: number | string | null
  billing_documents: number | string | null
  payment_instructions: number | string | null
}

const json = <T>(value: T | string | null): T | null => (typeof value === 'string' ? (JSON.parse(value) as T) : value)

/** Every statement of reconciliation: reads only, each one statement for the whole request. */
export function createReconciliationRepository(db: Db) {
  return {
    /** The id of the organisation's supplier of this code. */
    async supplierId(code: string, organisationId: string): Promise<string | undefined> {
      const [row] = rowsOf<{ id: string }>(
        await db.execute(
          sql`select id from import_suppliers where code = ${code} and organisation_id = ${organisationId}::uuid`
        )
      )
      return row?.id
    },

    /**
     * The processes of these external account numbers (those that exist), each with its account's
     * ledger balances and counts when created: one statement, whatever the number of accounts.
     */
    async held(supplierId: string, externals: string[]): Promise<Map<string, HeldAccount>> {
      // Each count grouped once over the accounts found (never a subquery per account): the
      // plan stays linear whatever the tables' statistics say.
      const ids = sql`(select id from found)`
      const joins = sql.join(
        COMPARED.map(
          (name, i) =>
            sql`left join ${countsByAccount(name, ids)} c${sql.raw(String(i))} on c${sql.raw(String(i))}.account_id = f.id`
        ),
        sql` `
      )
      const countsJson = sql.join(
        COMPARED.map((name, i) => sql`${name}::text, coalesce(c${sql.raw(String(i))}.n, 0)`),
        sql`, `
      )
      const rows = rowsOf<HeldRow>(
        await db.execute(sql`with processes as materialized (
          select p.id, p.external_account_number, p.state from import_processes p
          where (p.supplier_id, p.external_account_number) in ${supplierExternals(supplierId, [...new Set(externals)])}
        ), found as materialized (
          select a.id, a.import_process_id from accounts a
          where a.import_process_id in (select id from processes where state = 'IMPORTED')
        ), balances as (
          select l.account_id, json_object_agg(l.ledger_code, l.balance::text) as balances from ledgers l
          where l.account_id in (select id from found) group by l.account_id
        )
        select p.external_account_number as external, p.state, f.id is not null as created,
          case when f.id is null then null else coalesce(b.balances, '{}'::json) end as balances,
          case when f.id is null then null else json_build_object(${countsJson}) end as counts
        from processes p
        left join found f on f.import_process_id = p.id
        left join balances b on b.account_id = f.id
        ${joins}`)
      )
      const held = new Map<string, HeldAccount>()
      for (const row of rows) {
        const counts = json(row.counts) ?? {}
        held.set(row.external, {
          external: row.external,
          state: row.state,
          created: row.created,
          balances: json(row.balances) ?? {},
          counts: Object.fromEntries(COMPARED.map((name) => [name, Number(counts[name] ?? 0)])) as Record<
            AccountCount,
            number
          >
        })
      }
      return held
    },

    /** A supplier's totals: its processes by state, and what its created accounts hold; one statement. */
    async totals(supplierId: string) {
      const accountsOf = sql`(select a.id from accounts a where a.supplier_id = ${supplierId}::uuid)`
      const sum = (name: AccountCount) => countOverAccounts(name, accountsOf)
      const [row] = rowsOf<TotalsRow>(
        await db.execute(sql`select
          (select count(*) from import_processes p where p.supplier_id = ${supplierId}::uuid and p.state = 'IMPORTED') as created,
          (select count(*) from import_processes p where p.supplier_id = ${supplierId}::uuid and p.state = 'SKIPPED') as skipped,
          (select count(*) from import_processes p where p.supplier_id = ${supplierId}::uuid and p.state = 'STAGED') as pending,
          (select coalesce(json_agg(json_build_object('ledger_code', g.ledger_code, 'accounts', g.accounts,
              'balance_sum', g.balance_sum) order by g.ledger_code), '[]'::json)
            from (select l.ledger_code, count(*) as accounts, sum(l.balance)::text as balance_sum
              from ledgers l join accounts a on a.id = l.account_id
              where a.supplier_id = ${supplierId}::uuid group by l.ledger_code) g) as ledgers,
          ${sum('transactions')} as transactions,
          (select coalesce(sum(${signedAmountSql(sql`t`)}), 0)::text from ledger_transactions t
            join ledgers l on l.id = t.ledger_id join accounts a on a.id = l.account_id
            where a.supplier_id = ${supplierId}::uuid) as amount_sum,
          ${sum('notes')} as notes,
          ${sum('historicalAgreements')} as historical_agreements,
          ${sum('historicalStatements')} as historical_statements,
          ${sum('billingDocuments')} as billing_documents,
          ${sum('paymentInstructions')} as payment_instructions`)
      )
      const n = (value: number | string | null | undefined) => Number(value ?? 0)
      return {
        created: n(row?.created),
        skipped: n(row?.skipped),
        pending: n(row?.pending),
        ledgers: (json(row?.ledgers ?? null) ?? []).map((l) => ({
          ledgerCode: l.ledger_code,
          accounts: Number(l.accounts),
          balanceSum: l.balance_sum
        })),
        transactions: n(row?.transactions),
        amountSum: row?.amount_sum ?? '0',
        notes: n(row?.notes),
        historicalAgreements: n(row?.historical_agreements),
        historicalStatements: n(row?.historical_statements),
        billingDocuments: n(row?.billing_documents),
        paymentInstructions: n(row?.payment_instructions)
      }
    }
  }
}

export type ReconciliationRepository = ReturnType<typeof createReconciliationRepository>

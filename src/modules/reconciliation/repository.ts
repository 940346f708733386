import { sql } from 'drizzle-orm'
import { RECONCILED_COUNTS, type ReconciledCount } from '../../../schemas/reconciliation.js'
import { countOverAccounts, countsByAccount, signedAmountSql } from '../../accounts/repository.js'
import { rowsOf, supplierExternals, type Db } from '../../db/index.js'

/** What the service holds of one pair a reconciliation names. */
export interface HeldAccount {
  external: string
  state: 'STAGED' | 'SKIPPED' | 'IMPORTED'
  /** False for a process whose account is not created. */
  created: boolean
  /** Ledger code to its balance as exact decimal text; empty unless created. */
  balances: Record<string, string>
  counts: Record<ReconciledCount, number>
}

interface HeldRow {
  external: string
  state: HeldAccount['state']
  /** The created account's id; null while not created. */
  account_id: string | null
  balances: Record<string, string> | string | null
}

type TotalsRow = {
  created: number | string
  skipped: number | string
  pending: number | string
  ledgers: Array<{ ledger_code: string; accounts: number; balance_sum: string }> | string
  amount_sum: string | null
} & Record<ReconciledCount, number | string | null>

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
     * ledger balances and counts when created: two statements, whatever the number of accounts.
     */
    async held(supplierId: string, externals: string[]): Promise<Map<string, HeldAccount>> {
      const rows = rowsOf<HeldRow>(
        await db.execute(sql`with processes as materialized (
          select p.id, p.external_account_number, p.state from import_processes p
          where (p.supplier_id, p.external_account_number) in ${supplierExternals(supplierId, [...new Set(externals)])}
        ), found as materialized (
          select a.id, a.import_process_id from accounts a
          where a.import_process_id in (select id from processes where state = 'IMPORTED')
        )
        select p.external_account_number as external, p.state, f.id as account_id,
          -- An account's ledgers by its index, never a grouped join the planner may rescan per account.
          case when f.id is null then null else coalesce((select json_object_agg(l.ledger_code, l.balance::text)
            from ledgers l where l.account_id = f.id), '{}'::json) end as balances
        from processes p
        left join found f on f.import_process_id = p.id`)
      )
      // The counts in a statement of their own, each grouped once over the accounts found, merged
      // here: joined to the accounts in SQL they were rescanned once per account whenever the
      // planner took the looked-up numbers for a few rows (34 s for 10,000 accounts).
      const ids = rows.flatMap((row) => (row.account_id === null ? [] : [row.account_id]))
      const counts = new Map<string, Record<string, number>>()
      if (ids.length > 0) {
        const accountIds = sql`(select (jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))::uuid)`
        const counted = rowsOf<{ account_id: string; name: ReconciledCount; n: number | string }>(
          await db.execute(
            sql.join(
              RECONCILED_COUNTS.map(
                (name) =>
                  sql`select c.account_id, ${name}::text as name, c.n from ${countsByAccount(name, accountIds)} c`
              ),
              sql` union all `
            )
          )
        )
        for (const row of counted) {
          const of = counts.get(row.account_id) ?? {}
          of[row.name] = Number(row.n)
          counts.set(row.account_id, of)
        }
      }
      const held = new Map<string, HeldAccount>()
      for (const row of rows) {
        const of = row.account_id === null ? {} : (counts.get(row.account_id) ?? {})
        held.set(row.external, {
          external: row.external,
          state: row.state,
          created: row.account_id !== null,
          balances: json(row.balances) ?? {},
          counts: Object.fromEntries(RECONCILED_COUNTS.map((name) => [name, of[name] ?? 0])) as Record<
            ReconciledCount,
            number
          >
        })
      }
      return held
    },

    /** A supplier's totals: its processes by state, and what its created accounts hold; one statement. */
    async totals(supplierId: string) {
      const accountsOf = sql`(select a.id from accounts a where a.supplier_id = ${supplierId}::uuid)`
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
          (select coalesce(sum(${signedAmountSql(sql`t`)}), 0)::text from ledger_transactions t
            join ledgers l on l.id = t.ledger_id join accounts a on a.id = l.account_id
            where a.supplier_id = ${supplierId}::uuid) as amount_sum,
          ${sql.join(
            RECONCILED_COUNTS.map((name) => sql`${countOverAccounts(name, accountsOf)} as ${sql.identifier(name)}`),
            sql`, `
          )}`)
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
        amountSum: row?.amount_sum ?? '0',
        counts: Object.fromEntries(RECONCILED_COUNTS.map((name) => [name, n(row?.[name])])) as Record<
          ReconciledCount,
          number
        >
      }
    }
  }
}

export type ReconciliationRepository = ReturnType<typeof createReconciliationRepository>

import { sql } from 'drizzle-orm'
import { importEvents } from '../../../drizzle/schema/index.js'
import { rowsOf, runInOrder, textList, type Db } from '../../db/index.js'
import { insertRows } from '../../db/insert.js'
import { createAccountsRepository } from '../accounts/repository.js'
import type { AccountRows } from '../accounts/plan.js'
import { PROCESS_LOCK_BASE, type Actor, type ProcessState, type SupplierRow } from '../imports/repository.js'

/** An account of a batch as its process stands. */
export interface BatchProcess {
  id: number
  state: ProcessState
  serviceAccountNumber: string | null
}

/** What the set-based stage and create did with each account it was given. */
export interface StageAndCreateOutcome {
  /** Created: the response the single create endpoint would have given. */
  created: Map<string, { serviceAccountNumber: string; ledgers: Array<{ ledger_code: string; ledger_number: string }> }>
  /** Left to the single-account path: another request holds the account, or created it meanwhile. */
  elsewhere: string[]
}

/** Code point order, as external account numbers are ordered everywhere (`COLLATE "C"`). */
const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * The set-based SQL of batches: many accounts per statement, one transaction per chunk. Rows are
 * planned by the same `planAccount` as a single create, events are the same events.
 */
export function createBatchesRepository(db: Db) {
  const accounts = createAccountsRepository(db)

  return {
    /** The caller's supplier with this code and the operations team of this name, in one round trip. */
    async supplierAndTeam(code: string, organisationId: string, teamName: string) {
      const [row] = rowsOf<{ supplier: SupplierRow | null; team_id: string | null }>(await db.execute(sql`select
          (select json_build_object('id', s.id, 'code', s.code, 'status', s.status, 'documentRoot', s.document_root,
            'sendMigrationEmails', s.send_migration_emails, 'maxConcurrentProcessing', s.max_concurrent_processing)
            from import_suppliers s where s.code = ${code} and s.organisation_id = ${organisationId}::uuid) as supplier,
          (select t.id from operations_teams t where t.name = ${teamName}) as team_id`))
      const supplier = typeof row?.supplier === 'string' ? JSON.parse(row.supplier) as SupplierRow : row?.supplier ?? undefined
      return { supplier, teamId: row?.team_id ?? undefined }
    },

    /** The ledgers of an account, by its service account number. */
    async ledgersOf(serviceAccountNumber: string): Promise<Array<{ ledger_code: string; ledger_number: string }>> {
      return rowsOf<{ ledger_code: string; ledger_number: string }>(await db.execute(sql`select l.ledger_code, l.ledger_number
        from ledgers l join accounts a on a.id = l.account_id where a.service_account_number = ${serviceAccountNumber}`))
    },

    /** The processes of these accounts of a supplier, by external account number. */
    async states(supplierId: string, externals: string[]): Promise<Map<string, BatchProcess>> {
      if (externals.length === 0) return new Map()
      const rows = rowsOf<{ id: number | string; external: string; state: ProcessState; service_account_number: string | null }>(await db.execute(sql`
        select id, external_account_number as external, state, service_account_number from import_processes
        where supplier_id = ${supplierId}::uuid and external_account_number in ${textList(externals)}`))
      return new Map(rows.map((r) => [r.external, { id: Number(r.id), state: r.state, serviceAccountNumber: r.service_account_number }]))
    },

    /**
     * Stages and creates accounts in one transaction, as one stage and one create of each would:
     * the process (new, or staged before and not being created), the account's rows, the state
     * change, the STAGED or RESTAGED, CREATE_ATTEMPTED and CREATED events, and the accounts' failure
     * records cleared. Each existing process is locked as a create locks it, so nothing can change
     * its staged data in between: the data validated by the caller is what is created. Accounts
     * another request holds (or creates meanwhile) are left out and named in `elsewhere`. Any
     * database error rolls everything back and is thrown: the caller then takes the accounts one
     * by one.
     */
    async stageAndCreate(
      supplierId: string,
      entries: Array<{ external: string; data: Record<string, unknown> }>,
      actor: Actor,
      plan: (processId: number, data: Record<string, unknown>) => AccountRows
    ): Promise<StageAndCreateOutcome> {
      const sorted = [...entries].sort((a, b) => byCodePoint(a.external, b.external))
      const externals = sorted.map((e) => e.external)
      return db.transaction(async (tx) => {
        // Locks first (in one order, so two batches do not deadlock on them), then the state as it is once they are held.
        const [locks, current] = await runInOrder(db, [
          tx.execute(sql`select id, pg_try_advisory_xact_lock(${PROCESS_LOCK_BASE.toString()}::bigint + id) as locked from import_processes
            where supplier_id = ${supplierId}::uuid and external_account_number in ${textList(externals)} order by external_account_number`),
          tx.execute(sql`select id, external_account_number as external, state from import_processes
            where supplier_id = ${supplierId}::uuid and external_account_number in ${textList(externals)}`)
        ])
        const locked = new Set(rowsOf<{ id: number | string; locked: boolean }>(locks).filter((r) => r.locked).map((r) => Number(r.id)))
        const existing = new Map(rowsOf<{ id: number | string; external: string; state: ProcessState }>(current).map((r) => [r.external, { id: Number(r.id), state: r.state }]))
        const elsewhere: string[] = []
        const restaged: Array<{ external: string; id: number; data: Record<string, unknown> }> = []
        const fresh: typeof sorted = []
        for (const entry of sorted) {
          const process = existing.get(entry.external)
          if (!process) fresh.push(entry)
          else if (process.state === 'STAGED' && locked.has(process.id)) restaged.push({ ...entry, id: process.id })
          else elsewhere.push(entry.external)
        }
        const inserted = fresh.length === 0
          ? []
          : rowsOf<{ id: number | string; external: string }>(await tx.execute(sql`
            insert into import_processes (supplier_id, external_account_number, state, staged_data, first_staged_at)
            select ${supplierId}::uuid, e.external, 'STAGED', e.data, now()
            from jsonb_to_recordset(${JSON.stringify(fresh)}::jsonb) as e(external text, data jsonb)
            order by e.external
            on conflict do nothing
            returning id, external_account_number as external`))
        const insertedIds = new Map(inserted.map((r) => [r.external, Number(r.id)]))
        for (const entry of fresh) if (!insertedIds.has(entry.external)) elsewhere.push(entry.external) // staged by another request meanwhile

        const creating = [
          ...fresh.filter((e) => insertedIds.has(e.external)).map((e) => ({ ...e, id: insertedIds.get(e.external)!, first: true })),
          ...restaged.map((e) => ({ ...e, first: false }))
        ]
        const created: StageAndCreateOutcome['created'] = new Map()
        if (creating.length === 0) return { created, elsewhere }

        const merged: AccountRows = {
          account: undefined as never, customers: [], ledgers: [], statements: [], transactions: [], lineItems: [], taxItems: [],
          supplyAddresses: [], supplyPoints: [], agreements: [], metadata: [], outbox: []
        }
        const accountRows: Array<AccountRows['account']> = []
        const marks: Array<{ id: number; san: string; data: Record<string, unknown> | null }> = []
        const events: Array<typeof importEvents.$inferInsert> = []
        const event = (importProcessId: number, type: (typeof importEvents.$inferInsert)['type'], detail: unknown = {}) => events.push({
          importProcessId, type, actor: actor.name, organisationId: actor.organisationId, apiKeyId: actor.apiKeyId, detail
        })
        for (const entry of creating) {
          const rows = plan(entry.id, entry.data)
          accountRows.push(rows.account)
          for (const key of Object.keys(merged) as Array<keyof AccountRows>) {
            if (key !== 'account') (merged[key] as unknown[]).push(...(rows[key] as unknown[]))
          }
          const result = { service_account_number: rows.account.serviceAccountNumber, ledgers: rows.ledgers.map((l) => ({ ledger_code: l.ledgerCode, ledger_number: l.ledgerNumber })) }
          created.set(entry.external, { serviceAccountNumber: result.service_account_number, ledgers: result.ledgers })
          marks.push({ id: entry.id, san: result.service_account_number, data: entry.first ? null : entry.data })
          event(entry.id, entry.first ? 'STAGED' : 'RESTAGED')
          event(entry.id, 'CREATE_ATTEMPTED')
          event(entry.id, 'CREATED', result)
        }
        const [marked] = await accounts.insertAccounts(tx, accountRows, merged, [
          tx.execute(sql`update import_processes p set state = 'IMPORTED', staged_data = coalesce(m.data, p.staged_data),
              service_account_number = m.san, account_created_at = now(), latest_error = null, updated_at = now()
            from jsonb_to_recordset(${JSON.stringify(marks)}::jsonb) as m(id bigint, san text, data jsonb)
            where p.id = m.id and p.state = 'STAGED' returning p.id`),
          insertRows(tx, importEvents, events),
          // Created accounts have no failures left to report, of any step.
          tx.execute(sql`delete from import_failures where supplier_id = ${supplierId}::uuid
            and external_account_number in ${textList(creating.map((e) => e.external))}`)
        ])
        if (rowsOf(marked).length !== creating.length) throw new Error('a batch account changed state while it was being created')
        return { created, elsewhere }
      })
    }
  }
}

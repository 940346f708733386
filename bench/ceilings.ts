import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { importEvents } from '../drizzle/schema/index.js'
import { AccountData } from '../schemas/account.js'
import { rowsOf, type Database } from '../src/db/index.js'
import { insertRows } from '../src/db/insert.js'
import { createAccountsRepository } from '../src/accounts/repository.js'
import { noChildRows, planAccount, type AccountRows } from '../src/accounts/plan.js'
import { normaliseAccount } from '../src/accounts/rules.js'
import { compileBody } from '../src/validation.js'
import { exampleAccount } from '../schemas/examples.js'

/**
 * The fair ceilings of account creation: the very rows one create writes (every table, the
 * process and its events included), built once and sent as they are, with no validation,
 * look-up or planning; one account per transaction (what a create could cost at best) or 200
 * (what a batch could cost at best).
 */

/** The example account as stage stores it: defaults filled, normalised. */
export function exampleData(): Record<string, unknown> {
  const data = exampleAccount()
  const validate = compileBody(AccountData)
  if (!validate(data)) throw new Error('the example account does not validate')
  return normaliseAccount(data as AccountData) as Record<string, unknown>
}

/** A planned account whose ids and numbers are made new: the same rows, other keys. */
/**
 * Numbers of preloaded accounts: counted, with a prefix the service never makes. Random 8-digit
 * numbers collide by the birthday bound (about one pair in 100,000 accounts); the service retries
 * a colliding create, a preload of many rows in one statement cannot.
 */
let preloaded = 0
const preloadNumber = (prefix: 'A' | 'L') => `${prefix}-BENCH-${process.pid.toString(36)}-${(preloaded++).toString(36)}`

function remap(template: AccountRows, external: string): AccountRows {
  const ids = new Map<string, string>()
  const fresh = (id: unknown) => {
    if (typeof id !== 'string') return id
    let next = ids.get(id)
    if (!next) ids.set(id, (next = randomUUID()))
    return next
  }
  const copy = <T extends Record<string, unknown>>(row: T, keys: string[]): T => {
    const out: Record<string, unknown> = { ...row }
    for (const key of keys) if (key in out) out[key] = fresh(out[key])
    return out as T
  }
  const idKeys = [
    'id',
    'accountId',
    'ledgerId',
    'statementId',
    'supplyAddressId',
    'supplyPointId',
    'customerId',
    'transactionId'
  ]
  return {
    account: {
      ...copy(template.account, ['id']),
      serviceAccountNumber: preloadNumber('A'),
      externalAccountNumber: external
    },
    customers: template.customers.map((r) => copy(r, idKeys)),
    ledgers: template.ledgers.map((r) => ({ ...copy(r, idKeys), ledgerNumber: preloadNumber('L') })),
    statements: template.statements.map((r) => copy(r, idKeys)),
    transactions: template.transactions.map((r) => ({
      ...copy(r, ['id', 'ledgerId', 'statementId']),
      transactionId: r.transactionId
    })),
    lineItems: template.lineItems.map((r) => ({ ...r, transactionId: fresh(r.transactionId) as string })),
    taxItems: template.taxItems.map((r) => ({ ...r, transactionId: fresh(r.transactionId) as string })),
    supplyAddresses: template.supplyAddresses.map((r) => copy(r, idKeys)),
    supplyPoints: template.supplyPoints.map((r) => copy(r, idKeys)),
    agreements: template.agreements.map((r) => ({ ...r, supplyPointId: fresh(r.supplyPointId) as string })),
    metadata: template.metadata.map((r) => copy(r, ['accountId'])),
    outbox: []
  }
}

export function accountWriter(database: Database, supplierId: string, teamId: string) {
  const data = exampleData()
  const json = JSON.stringify(data)
  const template = planAccount(data as never, {
    importProcessId: 0,
    supplierId,
    operationsTeamId: teamId,
    sendMigrationEmails: false
  })
  const accounts = createAccountsRepository(database.db)

  /** Writes `externals` as created accounts in one transaction: processes, every row, events. */
  async function write(externals: string[]): Promise<void> {
    const planned = externals.map((external) => remap(template, external))
    await database.db.transaction(async (tx) => {
      const processes = rowsOf<{ id: number | string; external: string }>(
        await tx.execute(sql`insert into import_processes
          (supplier_id, external_account_number, state, staged_data, first_staged_at, service_account_number, account_created_at)
        select ${supplierId}::uuid, e.external, 'IMPORTED', ${json}::jsonb, now(), e.san, now()
        from jsonb_to_recordset(${JSON.stringify(planned.map((p) => ({ external: p.account.externalAccountNumber, san: p.account.serviceAccountNumber })))}::jsonb) as e(external text, san text)
        returning id, external_account_number as external`)
      )
      const ids = new Map(processes.map((p) => [p.external, Number(p.id)]))
      const merged: AccountRows = {
        account: undefined as never,
        ...noChildRows()
      }
      const events: Array<typeof importEvents.$inferInsert> = []
      for (const p of planned) {
        const id = ids.get(p.account.externalAccountNumber)!
        p.account.importProcessId = id
        for (const key of Object.keys(merged) as Array<keyof AccountRows>) {
          if (key !== 'account') (merged[key] as unknown[]).push(...(p[key] as unknown[]))
        }
        events.push({ importProcessId: id, type: 'CREATE_ATTEMPTED', actor: 'bench', detail: {} })
        events.push({
          importProcessId: id,
          type: 'CREATED',
          actor: 'bench',
          detail: { service_account_number: p.account.serviceAccountNumber }
        })
      }
      await accounts.insertAccounts(
        tx,
        planned.map((p) => p.account),
        merged,
        [insertRows(tx, importEvents, events)]
      )
    })
  }
  return { write }
}

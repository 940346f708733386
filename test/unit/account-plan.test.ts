import t from 'tap'
import { checkAccountData, DEFAULT_SUPPLIER_SETTINGS } from '../../src/accounts/rules.js'
import { MIGRATION_EMAIL_TEMPLATE, planAccount } from '../../src/accounts/plan.js'
import { exampleAccount } from '../helpers/account-data.js'
import { newId } from '../../src/ids.js'

/** The rows a create writes for an account, planned without a database. */

const context = {
  importProcessId: 7,
  supplierId: 'supplier-id',
  operationsTeamId: 'team-id',
  sendMigrationEmails: true
}

function plan(changes: Record<string, unknown> = {}, ctx = context) {
  const { data, errors } = checkAccountData(exampleAccount(changes), '2026-11-24', DEFAULT_SUPPLIER_SETTINGS)
  if (!data) throw new Error(`the example account is invalid: ${JSON.stringify(errors)}`)
  return { data, rows: planAccount(data, ctx) }
}

t.test('the example account: one row per thing it holds, linked by the ids the plan made', async (t) => {
  const { data, rows } = plan()
  t.match(rows.account, { importProcessId: 7, supplierId: 'supplier-id', externalAccountNumber: 'EXT-000123' })
  t.match(rows.account.serviceAccountNumber, /^A-[0-9A-F]{8}$/)
  t.equal(rows.customers.length, data.customers?.length)
  t.equal(rows.ledgers.length, 1)
  t.match(rows.ledgers[0], { ledgerCode: 'ENERGY', balance: '6.26' })
  t.match(rows.ledgers[0]!.ledgerNumber, /^L-[0-9A-F]{8}$/)
  const ledger = data.ledgers[0]!
  t.equal(
    rows.transactions.length,
    ledger.current_statement_transactions!.length + ledger.historical_statement_transactions!.length
  )
  t.ok(
    rows.transactions.every((x) => x.ledgerId === rows.ledgers[0]!.id && x.source === 'ACCOUNT_IMPORT'),
    'every transaction on its ledger'
  )
  const statementIds = new Set(rows.statements.map((s) => s.id))
  t.ok(
    rows.transactions.every((x) => statementIds.has(x.statementId!)),
    'every transaction in a planned statement'
  )
  t.equal(rows.statements.filter((s) => s.status === 'CLOSED').length, 1, 'the last statement, closed')
  t.equal(rows.lineItems.length, 1)
  t.equal(rows.taxItems.length, 1)
  t.equal(rows.supplyPoints[0]!.supplyAddressId, rows.supplyAddresses[0]!.id)
  t.equal(rows.agreements.length, 2)
  const ids = [
    rows.account.id,
    ...rows.customers.map((c) => c.id),
    ...rows.ledgers.map((l) => l.id),
    ...rows.transactions.map((x) => x.id)
  ]
  t.equal(new Set(ids).size, ids.length, 'ids are unique')
})

t.test('migration e-mails: one per customer with an address, only when the supplier sends them', async (t) => {
  const { rows } = plan()
  t.strictSame(
    rows.outbox.map((o) => [o.template, o.recipient, o.customerId]),
    [[MIGRATION_EMAIL_TEMPLATE, 'ada.lovelace@mailbox.org', rows.customers[0]!.id]]
  )
  t.equal(plan({}, { ...context, sendMigrationEmails: false }).rows.outbox.length, 0)
})

t.test('two plans of the same account share no number', async (t) => {
  const a = plan().rows
  const b = plan().rows
  t.not(a.account.serviceAccountNumber, b.account.serviceAccountNumber)
  t.not(a.account.id, b.account.id)
})

t.test('row ids are time-ordered UUIDs (version 7), so the indexes on them grow at one end', async (t) => {
  const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
  const first = plan().rows
  const second = plan().rows
  const ids = (rows: typeof first): string[] =>
    [rows.account, ...rows.customers, ...rows.ledgers, ...rows.supplyAddresses, ...rows.supplyPoints].map(
      (row) => row.id as string
    )
  for (const id of [...ids(first), ...ids(second)]) t.match(id, V7)
  t.ok(first.account.id! < second.account.id!, 'an account planned later has a greater id')
  const many = Array.from({ length: 1000 }, () => newId())
  t.same(many, [...many].sort(), 'ids made one after another are in order, also within one millisecond')
})

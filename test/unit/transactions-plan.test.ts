import t from 'tap'
import { AppError } from '../../src/errors.js'
import { planTransactions, type EnergyLedger } from '../../src/modules/transactions/service.js'

/** Post-import transactions against a ledger, planned without a database (the endpoint and batches share it). */

const TODAY = '2026-11-24'
const account = { id: 'account-1' }
const ledger = (changes: Partial<EnergyLedger> = {}): EnergyLedger => ({
  id: 'ledger-1',
  openFrom: '2026-11-01',
  openStatementId: 'statement-open',
  existing: [],
  ...changes
})
const tx = (id: string, changes: Record<string, unknown> = {}) =>
  ({ transaction_id: id, transaction_date: '2026-11-10', amount: '10.00', type: 'CHARGE', ...changes }) as any

function plan(transactions: any[], query = {}, on = ledger()) {
  return planTransactions({ transactions }, query, account, on, TODAY, new Map())
}
function refusal(run: () => unknown) {
  try {
    run()
  } catch (err) {
    if (!(err instanceof AppError)) throw err
    return { status: err.statusCode, code: err.code, errors: err.errors.map((e) => [e.code, e.attr]), extra: err.extra }
  }
  throw new Error('not refused')
}

t.test('the balance moves by the exact signed sum: credits and payments add, charges subtract', async (t) => {
  const p = plan([
    tx('T1', { amount: '0.10', type: 'CREDIT' }),
    tx('T2', { amount: '0.20', type: 'PAYMENT' }),
    tx('T3', { amount: '0.05' }),
    tx('T4', { amount: '100', type: 'REPAYMENT' })
  ])
  t.equal(p.delta, '-99.75', 'no floating point: 0.1 + 0.2 - 0.05 - 100')
  t.equal(p.rows.transactions.length, 4)
  t.ok(
    p.rows.transactions.every(
      (r) => r.ledgerId === 'ledger-1' && r.statementId === 'statement-open' && r.source === 'POST_IMPORT'
    )
  )
  t.strictSame(
    p.results.map((r) => r.status),
    Array(4).fill('TRANSACTION_ADDED_TO_ACCOUNT')
  )
  t.match(p.detail, { added: 4, already_existing: 0, moved: 0 })
  t.equal(p.note, undefined)
})

t.test('a transaction already on the ledger: reported and skipped, or refused when the check is off', async (t) => {
  const on = ledger({ existing: ['T1'] })
  const p = plan([tx('T1'), tx('T2')], {}, on)
  t.strictSame(
    p.results.map((r) => r.status),
    ['TRANSACTION_ALREADY_EXISTS', 'TRANSACTION_ADDED_TO_ACCOUNT']
  )
  t.equal(p.delta, '-10', 'only the new one counts')
  t.match(
    refusal(() => plan([tx('T1'), tx('T2')], { check_previously_added: false }, on)),
    {
      status: 400,
      code: 'transaction_already_exists',
      errors: [['transaction_already_exists', 'transactions.0.transaction_id']]
    }
  )
})

t.test('dated before the open statement: moved into it with a pinned note, or refused without force', async (t) => {
  const p = plan([tx('OLD', { transaction_date: '2026-10-15' })])
  t.equal(p.rows.transactions[0]!.transactionDate, '2026-11-01')
  t.equal(p.rows.transactions[0]!.originalTransactionDate, '2026-10-15')
  t.match(p.note, { accountId: 'account-1', isPinned: true, bySystem: true, body: /moved into it: OLD\./ })
  t.match(p.detail, { moved: 1 })
  t.match(
    refusal(() => plan([tx('OLD', { transaction_date: '2026-10-15' })], { force_add_to_current_statement: false })),
    {
      code: 'transaction_outside_open_statement_period',
      errors: [['transaction_outside_open_statement_period', 'transactions.0.transaction_date']]
    }
  )
  t.match(
    refusal(() => plan([tx('OLD', { transaction_date: '2026-10-15' })], {}, ledger({ openFrom: '2026-12-01' }))),
    { code: 'transaction_outside_open_statement_period' },
    'an open statement that starts after today takes nothing moved'
  )
})

t.test('all or nothing: the lowest failing transaction is answered with its own data', async (t) => {
  const r = refusal(() =>
    plan([tx('T1'), tx('T2', { transaction_date: '2026-10-01' }), tx('T3', { transaction_date: '2026-09-01' })], {
      force_add_to_current_statement: false
    })
  )
  t.match(r, {
    code: 'transaction_outside_open_statement_period',
    errors: [[String, 'transactions.1.transaction_date']]
  })
  t.match(r.extra, { status: 'TRANSACTION_IMPORT_ERROR', transaction_data: { transaction_id: 'T2' } })
})

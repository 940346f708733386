import t from 'tap'
import { expectedAccount } from '../../src/cli/migrate/expected.js'
import type { Item } from '../../src/cli/migrate/input.js'
import type { Json } from '../../src/cli/http.js'

/**
 * The migration client's expected balances and counts of a line (`migrate reconcile`): what the
 * service holds after the account and its post-import sections.
 */

const tx = (id: string, type: string, amount: string | number, date = '2026-10-10', extra: Json = {}): Json => ({
  transaction_id: id,
  type,
  amount,
  transaction_date: date,
  ...extra
})

function account(ledgers: Json[] = [energy()]): Json {
  return {
    external_account_number: 'EXT-1',
    supply_addresses: [{ supply_points: [{ supply_start_date: '2024-01-01' }] }],
    ledgers
  }
}
function energy(extra: Json = {}): Json {
  return { ledger_code: 'ENERGY', ledger_balance: '-12.50', ...extra }
}
const line = (acc: Json, sections: Item['sections'] = {}): Item => ({ account: acc, sections })
const zero = {
  transactions: 0,
  notes: 0,
  historical_agreements: 0,
  historical_statements: 0,
  billing_documents: 0,
  payment_instructions: 0
}

t.test('an account alone: its ledgers at their ledger_balance, its imported transactions counted', async (t) => {
  const acc = account([
    energy({
      last_statement_closing_date: '2026-09-30',
      historical_statement_transactions: [tx('H1', 'CHARGE', '10.00', '2026-09-01')],
      current_statement_transactions: [tx('C1', 'PAYMENT', '5', '2026-10-02')]
    }),
    { ledger_code: 'DEPOSIT', ledger_balance: 50 }
  ])
  t.same(expectedAccount(line(acc)), {
    external_account_number: 'EXT-1',
    ledgers: [
      { ledger_code: 'ENERGY', balance: '-12.50' },
      { ledger_code: 'DEPOSIT', balance: '50.00' }
    ],
    counts: { ...zero, transactions: 2 }
  })
})

t.test('post-import transactions: CREDIT and PAYMENT add, CHARGE, SUPPLY_CHARGE and REPAYMENT subtract', async (t) => {
  const acc = account([energy({ current_statement_transactions: [tx('C1', 'CHARGE', '1.00')] })])
  const got = expectedAccount(
    line(acc, {
      transactions: [
        tx('P1', 'CREDIT', '10.00'),
        tx('P2', 'PAYMENT', 20),
        tx('P3', 'CHARGE', '1.25'),
        tx('P4', 'SUPPLY_CHARGE', '2.50'),
        tx('P5', 'REPAYMENT', '3.00'),
        tx('C1', 'CREDIT', '999.00') // the ledger holds it already: not added again
      ]
    })
  )
  // -12.50 + 10 + 20 - 1.25 - 2.50 - 3.00
  t.same(got?.ledgers, [{ ledger_code: 'ENERGY', balance: '10.75' }])
  t.equal(got?.counts?.transactions, 6)
  t.equal(got?.counts?.notes, 0)
})

t.test('transactions only move the ENERGY ledger', async (t) => {
  const acc = account([energy(), { ledger_code: 'DEPOSIT', ledger_balance: '100.00' }])
  const got = expectedAccount(line(acc, { transactions: [tx('P1', 'PAYMENT', '1.00')] }))
  t.same(got?.ledgers, [
    { ledger_code: 'ENERGY', balance: '-11.50' },
    { ledger_code: 'DEPOSIT', balance: '100.00' }
  ])
})

t.test(
  'a transaction dated before the open statement is moved into it; the note the service pins about it is not counted',
  async (t) => {
    const acc = account([energy({ last_statement_closing_date: '2026-09-30' })])
    const got = expectedAccount(line(acc, { transactions: [tx('P1', 'PAYMENT', '1.00', '2026-09-15')] }))
    t.same(got?.counts, { ...zero, transactions: 1 })
    t.same(got?.ledgers, [{ ledger_code: 'ENERGY', balance: '-11.50' }])
  }
)

t.test('billing documents hold transactions: counted, the balance unchanged', async (t) => {
  const acc = account([energy(), { ledger_code: 'DEPOSIT', ledger_balance: '0' }])
  const got = expectedAccount(
    line(acc, {
      historical_billing_documents: [
        {
          billing_document_type: 'ITEM_BASED',
          historical_billing_documents: [
            {
              billing_document_identifier: 'B1',
              transactions: [tx('B1-1', 'CHARGE', '40.00'), tx('B1-2', 'CHARGE', '2')]
            },
            { billing_document_identifier: 'B2' }
          ],
          additional_historical_transactions: [tx('A1', 'PAYMENT', '40.00')]
        },
        {
          ledger_code: 'DEPOSIT',
          historical_billing_documents: [
            { billing_document_identifier: 'D1', transactions: [tx('D1-1', 'CREDIT', '5')] }
          ]
        }
      ]
    })
  )
  t.same(got?.ledgers, [
    { ledger_code: 'ENERGY', balance: '-12.50' },
    { ledger_code: 'DEPOSIT', balance: '0.00' }
  ])
  t.equal(got?.counts?.billing_documents, 3)
  t.equal(got?.counts?.transactions, 4)
  // One object rather than a list: the ENERGY ledger's.
  const single = expectedAccount(
    line(account(), {
      historical_billing_documents: { historical_billing_documents: [{ billing_document_identifier: 'B1' }] }
    })
  )
  t.equal(single?.counts?.billing_documents, 1)
})

t.test('notes, statements, agreements and the payment instruction are counted as the account holds them', async (t) => {
  const got = expectedAccount(
    line(account(), {
      notes: [
        { body: 'Moved in' },
        { body: 'Moved in' }, // the account has it already
        { body: 'Called', created_at: '2026-01-01T10:00:00Z' },
        { body: 'Called', created_at: '2026-01-02T10:00:00Z' },
        { document_paths: ['b.pdf', 'a.pdf'] }
      ],
      historical_statements: [{ statement_id: 'S1' }, { statement_id: 'S2' }, { statement_id: 'S1' }],
      historical_agreements: [{ tariff_code: 'E-1' }, { tariff_code: 'E-2' }],
      payment_instruction: { vendor: 'STRIPE', reference: 'pm_1', type: 'CARD' }
    })
  )
  t.same(got?.counts, {
    ...zero,
    notes: 4,
    historical_statements: 2,
    historical_agreements: 2,
    payment_instructions: 1
  })
})

t.test('decimals are exact: 0.1 + 0.2 is 0.3', async (t) => {
  const acc = account([energy({ ledger_balance: '0.1' })])
  t.same(expectedAccount(line(acc, { transactions: [tx('P1', 'CREDIT', 0.2)] }))?.ledgers, [
    { ledger_code: 'ENERGY', balance: '0.30' }
  ])
  const got = expectedAccount(line(acc, { transactions: [tx('P1', 'CREDIT', 0.2), tx('P2', 'CHARGE', '0.001')] }))
  t.same(got?.ledgers, [{ ledger_code: 'ENERGY', balance: '0.299' }])
  const big = expectedAccount(
    line(account([energy({ ledger_balance: '999999999.99' })]), { transactions: [tx('P1', 'CREDIT', '0.01')] })
  )
  t.same(big?.ledgers, [{ ledger_code: 'ENERGY', balance: '1000000000.00' }])
})

t.test('an account that cannot be read is sent by its number only; without a number it is not sent', async (t) => {
  t.same(expectedAccount(line({ external_account_number: 'EXT-9', ledgers: [{ ledger_balance: 'abc' }] })), {
    external_account_number: 'EXT-9'
  })
  t.equal(expectedAccount(line({ ledgers: [] })), undefined)
  // What the endpoint would refuse (and with it every account of the request) is not sent.
  t.equal(expectedAccount(line({ ...account(), external_account_number: ' EXT-1' })), undefined)
  t.equal(expectedAccount(line({ ...account(), external_account_number: 'E'.repeat(129) })), undefined)
  t.same(expectedAccount(line(account([energy({ ledger_balance: '12345678901.00' })]))), {
    external_account_number: 'EXT-1'
  })
  t.same(expectedAccount(line(account([energy({ ledger_code: 'L'.repeat(65) })]))), {
    external_account_number: 'EXT-1'
  })
})

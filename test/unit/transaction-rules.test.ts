import t from 'tap'
import { entry } from '../../src/errors.js'
import { ruleContext } from '../../src/rules/context.js'
import { normaliseTransaction, signedAmount, transactionRules } from '../../src/rules/transactions.js'

/**
 * A transaction's rules (src/rules/transactions.ts), called directly: each code with its attr, and
 * the case just inside each rule. Account import, the post-import endpoints and batches share them.
 */

const TODAY = '2026-11-24'
const PATH = 'transactions.0'

const lineItem = (changes: Record<string, unknown> = {}) => ({
  rate_band: 'DAY',
  start_date: '2026-10-01',
  end_date: '2026-10-31',
  number_of_units: '100',
  price_per_unit: '0.25',
  net_amount: '25.00',
  ...changes
})
const taxItem = (changes: Record<string, unknown> = {}) => ({
  amount: '1.25',
  tax_type: 'VAT',
  value_taxed: '25.00',
  rate: '0.05',
  unit_type: 'PROPORTION',
  ...changes
})
const supplyCharge = (changes: Record<string, unknown> = {}) => ({
  transaction_id: 'S-1',
  transaction_date: '2026-11-01',
  type: 'SUPPLY_CHARGE',
  product_code: 'STANDARD',
  amount: '26.25',
  line_items: [lineItem()],
  tax_items: [taxItem()],
  ...changes
})
const charge = (changes: Record<string, unknown> = {}) => ({
  transaction_id: 'C-1',
  transaction_date: '2026-11-01',
  type: 'CHARGE',
  amount: '10.00',
  ...changes
})

/** The [code, attr] pairs the rules report for `tx`, given the schema's errors at `schemaAttrs`. */
function problems(tx: unknown, schemaAttrs: string[] = []) {
  const ctx = ruleContext(
    schemaAttrs.map((attr) => entry('invalid', attr, 'Schema problem.')),
    TODAY
  )
  transactionRules(tx, PATH, ctx)
  return ctx.errors.slice(schemaAttrs.length).map((e) => [e.code, e.attr])
}

t.test('valid transactions report nothing', async (t) => {
  t.strictSame(problems(supplyCharge()), [])
  t.strictSame(problems(charge()), [])
  t.strictSame(problems(null), [], 'not an object: the schema reports it')
})

t.test('transaction_in_future: dated after today', async (t) => {
  t.strictSame(problems(charge({ transaction_date: '2026-11-25' })), [
    ['transaction_in_future', `${PATH}.transaction_date`]
  ])
  t.strictSame(problems(charge({ transaction_date: TODAY })), [], 'today itself is allowed')
  t.strictSame(
    problems(charge({ transaction_date: '2026-11-25' }), [`${PATH}.transaction_date`]),
    [],
    'not read when the date failed its schema'
  )
})

t.test('start_date_later_than_end_date: a line item ending before it starts', async (t) => {
  const tx = supplyCharge({
    line_items: [lineItem(), lineItem({ start_date: '2026-11-01', end_date: '2026-10-31' })],
    amount: '51.25'
  })
  t.strictSame(problems(tx), [['start_date_later_than_end_date', `${PATH}.line_items.1.end_date`]])
  t.strictSame(
    problems(supplyCharge({ line_items: [lineItem({ start_date: '2026-10-31', end_date: '2026-10-31' })] })),
    [],
    'a line item of one day'
  )
})

t.test('line_item_units_must_be_two_values', async (t) => {
  t.strictSame(problems(supplyCharge({ line_items: [lineItem({ units: ['1', '2', '3'] })] })), [
    ['line_item_units_must_be_two_values', `${PATH}.line_items.0.units`]
  ])
  t.strictSame(problems(supplyCharge({ line_items: [lineItem({ units: ['1'] })] })), [
    ['line_item_units_must_be_two_values', `${PATH}.line_items.0.units`]
  ])
  t.strictSame(problems(supplyCharge({ line_items: [lineItem({ units: ['1', '2'] })] })), [], 'exactly two')
})

t.test('incorrect_line_item_net_amount: units × price per unit, within 0.01', async (t) => {
  // 100 × 0.25 = 25; the transaction's amount follows the net amount so that only this rule fails.
  t.strictSame(problems(supplyCharge({ line_items: [lineItem({ net_amount: '25.02' })], amount: '26.27' })), [
    ['incorrect_line_item_net_amount', `${PATH}.line_items.0.net_amount`]
  ])
  t.strictSame(
    problems(supplyCharge({ line_items: [lineItem({ net_amount: '24.98' })], amount: '26.23' })),
    [['incorrect_line_item_net_amount', `${PATH}.line_items.0.net_amount`]],
    'below as well as above'
  )
  t.strictSame(
    problems(supplyCharge({ line_items: [lineItem({ net_amount: '25.01' })], amount: '26.26' })),
    [],
    '0.01 off is inside'
  )
  t.strictSame(
    problems(supplyCharge({ line_items: [lineItem({ net_amount: '24.99' })], amount: '26.24' })),
    [],
    '-0.01 off is inside'
  )
})

t.test('incorrect_tax_amount: value taxed × rate for a PROPORTION, within 0.01', async (t) => {
  // 25 × 0.05 = 1.25
  t.strictSame(problems(supplyCharge({ tax_items: [taxItem({ amount: '1.27' })], amount: '26.27' })), [
    ['incorrect_tax_amount', `${PATH}.tax_items.0.amount`]
  ])
  t.strictSame(
    problems(supplyCharge({ tax_items: [taxItem({ amount: '1.26' })], amount: '26.26' })),
    [],
    '0.01 off is inside'
  )
  t.strictSame(
    problems(
      supplyCharge({ tax_items: [taxItem({ amount: '9.99', unit_type: 'CURRENCY_PER_KWH' })], amount: '34.99' })
    ),
    [],
    'not checked for CURRENCY_PER_KWH'
  )
  t.strictSame(
    problems(charge({ tax_items: [taxItem({ amount: '1.27' })] })),
    [['incorrect_tax_amount', `${PATH}.tax_items.0.amount`]],
    "a charge's tax items too"
  )
})

t.test('a supply charge amount equals its net amounts plus its tax amounts, exactly', async (t) => {
  const code = 'ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount'
  t.strictSame(
    problems(supplyCharge({ amount: '26.26' })),
    [[code, `${PATH}.amount`]],
    '0.01 off is outside: no tolerance'
  )
  t.strictSame(problems(supplyCharge({ amount: '26.24' })), [[code, `${PATH}.amount`]])
  t.strictSame(problems(supplyCharge({ amount: 26.25 })), [], 'the same value as a JSON number')
  t.strictSame(
    problems(supplyCharge({ amount: '25.00', tax_items: undefined })),
    [],
    'without tax items: the net amounts alone'
  )
  t.strictSame(problems(charge({ amount: '99.00', tax_items: [taxItem()] })), [], 'only supply charges are checked')
  t.strictSame(
    problems(supplyCharge({ amount: '26.26' }), [`${PATH}.line_items.0.net_amount`]),
    [],
    'not checked when a net amount failed its schema'
  )
  t.strictSame(
    problems(supplyCharge({ amount: '26.26' }), [`${PATH}.line_items.0.rate_band`]),
    [[code, `${PATH}.amount`]],
    'checked when only another field of an item failed'
  )
})

t.test('every problem at once, each at its own attr', async (t) => {
  const tx = supplyCharge({
    transaction_date: '2026-12-01',
    amount: '1.00',
    line_items: [lineItem({ start_date: '2026-11-02', end_date: '2026-11-01', units: ['1'], net_amount: '30.00' })],
    tax_items: [taxItem({ amount: '5.00' })]
  })
  t.strictSame(problems(tx), [
    ['transaction_in_future', `${PATH}.transaction_date`],
    ['start_date_later_than_end_date', `${PATH}.line_items.0.end_date`],
    ['line_item_units_must_be_two_values', `${PATH}.line_items.0.units`],
    ['incorrect_line_item_net_amount', `${PATH}.line_items.0.net_amount`],
    ['incorrect_tax_amount', `${PATH}.tax_items.0.amount`],
    ['ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount', `${PATH}.amount`]
  ])
})

t.test('signedAmount: credits and payments add, the rest subtract', async (t) => {
  t.equal(signedAmount('CREDIT', '1.50').toFixed(), '1.5')
  t.equal(signedAmount('PAYMENT', 2).toFixed(), '2')
  for (const type of ['CHARGE', 'SUPPLY_CHARGE', 'REPAYMENT']) {
    t.equal(signedAmount(type, '1.50').toFixed(), '-1.5', type)
  }
})

t.test('normaliseTransaction: decimals of the transaction and its items in their text form', async (t) => {
  const tx = supplyCharge({
    amount: 26.25,
    line_items: [lineItem({ number_of_units: 100, price_per_unit: '0.250', net_amount: 25, units: [1, '2.5000'] })],
    tax_items: [taxItem({ amount: 1.25, rate: '0.050' })]
  })
  normaliseTransaction(tx as Parameters<typeof normaliseTransaction>[0])
  t.strictSame(
    tx,
    supplyCharge({
      amount: '26.25',
      line_items: [
        lineItem({ number_of_units: '100.00', price_per_unit: '0.25', net_amount: '25.00', units: ['1.00', '2.50'] })
      ],
      tax_items: [taxItem({ amount: '1.25', value_taxed: '25.00', rate: '0.05' })]
    })
  )
})

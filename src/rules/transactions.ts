import { CODE } from '../../schemas/error-codes.js'
import type { Transaction } from '../../schemas/transactions.js'
import { Big, formatDecimal, normaliseDecimals, toBig, withinCent, sumDecimals } from '../decimal.js'
import { fieldOf, isObject } from '../objects.js'
import type { RuleContext } from './context.js'

/**
 * A transaction's rules and normalisation, shared by account import, the post-import endpoints
 * and batches. Its shape is schemas/transactions.ts; planning its rows, src/accounts/plan.ts.
 */

/** The transaction types whose amount adds to a balance; every other type subtracts its amount. */
export const BALANCE_ADDING_TYPES: readonly string[] = ['CREDIT', 'PAYMENT']

/** CREDIT and PAYMENT add to a balance; CHARGE, SUPPLY_CHARGE and REPAYMENT subtract. */
export function signedAmount(type: string, amount: unknown): Big {
  const value = toBig(amount)
  return BALANCE_ADDING_TYPES.includes(type) ? value : value.times(-1)
}

/**
 * The rules of one transaction at `path` (e.g. `ledgers.0.current_statement_transactions.3`). It
 * may have failed its schema, so it is read as `unknown`: a value is read only where `ctx.clean`
 * says it passed.
 */
export function transactionRules(tx: unknown, path: string, ctx: RuleContext): void {
  if (!isObject(tx)) return
  if (
    ctx.clean(`${path}.transaction_date`) &&
    typeof tx.transaction_date === 'string' &&
    tx.transaction_date > ctx.today
  ) {
    ctx.report(CODE.transaction_in_future, `${path}.transaction_date`)
  }
  const lineItems = arrayOf(tx.line_items)
  const taxItems = arrayOf(tx.tax_items)
  lineItems.forEach((item, l) => lineItemRules(item, `${path}.line_items.${l}`, ctx))
  taxItems.forEach((item, x) => taxItemRules(item, `${path}.tax_items.${x}`, ctx))

  // Reads the amounts only: a bad rate band or tax type does not hide a wrong total.
  const itemsClean = (list: string, items: unknown[], field: string) =>
    ctx.shallow(`${path}.${list}`) && items.every((_, i) => ctx.clean(`${path}.${list}.${i}.${field}`))
  if (
    tx.type === 'SUPPLY_CHARGE' &&
    ctx.clean(`${path}.type`, `${path}.amount`) &&
    itemsClean('line_items', lineItems, 'net_amount') &&
    (tx.tax_items === undefined || itemsClean('tax_items', taxItems, 'amount'))
  ) {
    const expected = sumDecimals(lineItems.map((i) => fieldOf(i, 'net_amount'))).plus(
      sumDecimals(taxItems.map((i) => fieldOf(i, 'amount')))
    )
    if (!toBig(tx.amount).eq(expected)) {
      ctx.report(
        CODE.ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount,
        `${path}.amount`,
        { expected: expected.toFixed() }
      )
    }
  }
}

function lineItemRules(item: unknown, path: string, ctx: RuleContext): void {
  if (!isObject(item)) return
  const { start_date: start, end_date: end, units } = item
  if (
    ctx.clean(`${path}.start_date`, `${path}.end_date`) &&
    typeof start === 'string' &&
    typeof end === 'string' &&
    start > end
  ) {
    ctx.report(CODE.start_date_later_than_end_date, `${path}.end_date`, { end: 'end_date', start: 'start_date' })
  }
  if (Array.isArray(units) && ctx.clean(`${path}.units`) && units.length !== 2) {
    ctx.report(CODE.line_item_units_must_be_two_values, `${path}.units`)
  }
  if (ctx.clean(`${path}.number_of_units`, `${path}.price_per_unit`, `${path}.net_amount`)) {
    const expected = toBig(item.number_of_units).times(toBig(item.price_per_unit))
    if (!withinCent(toBig(item.net_amount), expected)) {
      ctx.report(CODE.incorrect_line_item_net_amount, `${path}.net_amount`, { expected: expected.toFixed() })
    }
  }
}

function taxItemRules(item: unknown, path: string, ctx: RuleContext): void {
  if (!isObject(item)) return
  if (
    item.unit_type === 'PROPORTION' &&
    ctx.clean(`${path}.unit_type`, `${path}.amount`, `${path}.value_taxed`, `${path}.rate`)
  ) {
    const expected = toBig(item.value_taxed).times(toBig(item.rate))
    if (!withinCent(toBig(item.amount), expected)) {
      ctx.report(CODE.incorrect_tax_amount, `${path}.amount`, { expected: expected.toFixed() })
    }
  }
}

/** Decimals of a transaction (and its line and tax items) in their text form; reused by post-import writes. */
export function normaliseTransaction(tx: Transaction): void {
  normaliseDecimals(tx, 'amount')
  if ('line_items' in tx) {
    for (const item of tx.line_items) {
      normaliseDecimals(item, 'number_of_units', 'net_amount', 'price_per_unit')
      if (item.units) item.units = item.units.map(formatDecimal)
    }
  }
  if ('tax_items' in tx) for (const item of tx.tax_items ?? []) normaliseDecimals(item, 'amount', 'value_taxed', 'rate')
}

const arrayOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : [])

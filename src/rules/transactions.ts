import { Big, formatDecimal, normaliseDecimals, toBig, withinCent, sumDecimals } from '../decimal.js'
import type { RuleContext } from './context.js'

/**
 * A transaction's rules and normalisation, shared by account import, the post-import endpoints
 * and batches. Its shape is schemas/transactions.ts; planning its rows, src/modules/accounts/plan.ts.
 */

/** CREDIT and PAYMENT add to a balance; CHARGE, SUPPLY_CHARGE and REPAYMENT subtract. */
export function signedAmount(type: string, amount: unknown): Big {
  const value = toBig(amount)
  return type === 'CREDIT' || type === 'PAYMENT' ? value : value.times(-1)
}

/** The rules of one transaction at `path` (e.g. `ledgers.0.current_statement_transactions.3`). */
export function transactionRules(tx: any, path: string, ctx: RuleContext): void {
  if (tx === null || typeof tx !== 'object') return
  if (ctx.clean(`${path}.transaction_date`) && typeof tx.transaction_date === 'string' && tx.transaction_date > ctx.today) {
    ctx.report('transaction_in_future', `${path}.transaction_date`, 'The transaction is dated after today.')
  }
  const lineItems: any[] = Array.isArray(tx.line_items) ? tx.line_items : []
  const taxItems: any[] = Array.isArray(tx.tax_items) ? tx.tax_items : []
  lineItems.forEach((item, l) => lineItemRules(item, `${path}.line_items.${l}`, ctx))
  taxItems.forEach((item, x) => taxItemRules(item, `${path}.tax_items.${x}`, ctx))

  // Reads the amounts only: a bad rate band or tax type does not hide a wrong total.
  const itemsClean = (list: string, items: any[], field: string) =>
    ctx.shallow(`${path}.${list}`) && items.every((_, i) => ctx.clean(`${path}.${list}.${i}.${field}`))
  if (tx.type === 'SUPPLY_CHARGE' && ctx.clean(`${path}.type`, `${path}.amount`) && itemsClean('line_items', lineItems, 'net_amount') &&
      (tx.tax_items === undefined || itemsClean('tax_items', taxItems, 'amount'))) {
    const expected = sumDecimals(lineItems.map((i) => i.net_amount)).plus(sumDecimals(taxItems.map((i) => i.amount)))
    if (!toBig(tx.amount).eq(expected)) {
      ctx.report('ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount', `${path}.amount`,
        `The amount must equal the line items' net amounts plus the tax amounts (${expected.toFixed()}).`)
    }
  }
}

function lineItemRules(item: any, path: string, ctx: RuleContext): void {
  if (item === null || typeof item !== 'object') return
  if (ctx.clean(`${path}.start_date`, `${path}.end_date`) && item.start_date > item.end_date) {
    ctx.report('start_date_later_than_end_date', `${path}.end_date`, 'The end date is before the start date.')
  }
  if (item.units !== undefined && ctx.clean(`${path}.units`) && item.units.length !== 2) {
    ctx.report('line_item_units_must_be_two_values', `${path}.units`, 'Units must hold exactly two values.')
  }
  if (ctx.clean(`${path}.number_of_units`, `${path}.price_per_unit`, `${path}.net_amount`)) {
    const expected = toBig(item.number_of_units).times(toBig(item.price_per_unit))
    if (!withinCent(toBig(item.net_amount), expected)) {
      ctx.report('incorrect_line_item_net_amount', `${path}.net_amount`,
        `The net amount must equal number of units × price per unit (${expected.toFixed()}) within 0.01.`)
    }
  }
}

function taxItemRules(item: any, path: string, ctx: RuleContext): void {
  if (item === null || typeof item !== 'object') return
  if (item.unit_type === 'PROPORTION' && ctx.clean(`${path}.unit_type`, `${path}.amount`, `${path}.value_taxed`, `${path}.rate`)) {
    const expected = toBig(item.value_taxed).times(toBig(item.rate))
    if (!withinCent(toBig(item.amount), expected)) {
      ctx.report('incorrect_tax_amount', `${path}.amount`, `The tax amount must equal value taxed × rate (${expected.toFixed()}) within 0.01.`)
    }
  }
}

/** Decimals of a transaction (and its line and tax items) in their text form; reused by post-import writes. */
export function normaliseTransaction(tx: any): void {
  normaliseDecimals(tx, 'amount')
  for (const item of arrayOf(tx.line_items)) {
    normaliseDecimals(item, 'number_of_units', 'net_amount', 'price_per_unit')
    if (Array.isArray(item.units)) item.units = item.units.map(formatDecimal)
  }
  for (const item of arrayOf(tx.tax_items)) normaliseDecimals(item, 'amount', 'value_taxed', 'rate')
}

const arrayOf = (value: unknown): any[] => (Array.isArray(value) ? value : [])

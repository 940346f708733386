import { Type, type Static } from 'typebox'
import {
  Choice,
  DateString,
  Discriminated,
  Money,
  NumberOfUnits,
  PricePerUnit,
  Rate,
  Strict,
  Text,
  Units
} from './fields.js'

/** The five transaction types, a union selected by `type`. */

export const PAYMENT_TYPES = [
  'DD_FIRST_COLLECTION',
  'DD_REGULAR_COLLECTION',
  'DD_RE_PRESENTATION',
  'DD_FINAL_COLLECTION',
  'CREDIT_CARD',
  'DEBIT_CARD',
  'CHEQUE',
  'BACS_DEPOSIT',
  'CASH',
  'EFT'
] as const
export const REPAYMENT_TYPES = ['DIRECT_CREDIT', 'CARD_REFUND', 'BACS', 'CHEQUE'] as const
export const TAX_UNIT_TYPES = ['PROPORTION', 'CURRENCY_PER_KWH'] as const

export const LineItem = Strict({
  rate_band: Text(64),
  start_date: DateString,
  end_date: DateString,
  number_of_units: NumberOfUnits(),
  net_amount: Money(),
  price_per_unit: PricePerUnit(),
  units: Type.Optional(Type.Array(Units(), { maxItems: 100 }))
})
export type LineItem = Static<typeof LineItem>

export const TaxItem = Strict({
  amount: Money(),
  tax_type: Text(32),
  value_taxed: Rate(),
  rate: Rate(),
  unit_type: Choice(TAX_UNIT_TYPES)
})
export type TaxItem = Static<typeof TaxItem>

const common = {
  transaction_id: Text(64),
  transaction_date: DateString,
  note: Type.Optional(Text(2000))
}

export const ChargeTransaction = Strict({
  ...common,
  type: Type.Literal('CHARGE'),
  amount: Money(),
  reason: Type.Optional(Text(64)),
  display_note: Type.Optional(Text(2000)),
  tax_items: Type.Optional(Type.Array(TaxItem, { maxItems: 100 }))
})

export const CreditTransaction = Strict({
  ...common,
  type: Type.Literal('CREDIT'),
  amount: Money(),
  reason: Type.Optional(Text(64)),
  display_note: Type.Optional(Text(2000))
})

/** Money received (PAYMENT) or paid back (REPAYMENT): a positive amount with its reference and method. */
function MoneyMovement<const T extends string, const P extends readonly string[]>(type: T, paymentTypes: P) {
  return Strict({
    ...common,
    type: Type.Literal(type),
    amount: Money({ positive: true }),
    reason: Type.Optional(Text(64)),
    reference: Text(128),
    payment_type: Choice(paymentTypes)
  })
}

export const PaymentTransaction = MoneyMovement('PAYMENT', PAYMENT_TYPES)
export const RepaymentTransaction = MoneyMovement('REPAYMENT', REPAYMENT_TYPES)

export const SupplyChargeTransaction = Strict({
  ...common,
  type: Type.Literal('SUPPLY_CHARGE'),
  amount: Money(),
  display_note: Type.Optional(Text(2000)),
  product_code: Text(64),
  line_items: Type.Array(LineItem, { minItems: 1, maxItems: 100 }),
  tax_items: Type.Optional(Type.Array(TaxItem, { maxItems: 100 }))
})

export const Transaction = Discriminated([
  ChargeTransaction,
  CreditTransaction,
  PaymentTransaction,
  RepaymentTransaction,
  SupplyChargeTransaction
])
export type Transaction = Static<typeof Transaction>

export const TRANSACTION_TYPES = ['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE'] as const
export type TransactionType = (typeof TRANSACTION_TYPES)[number]

import { Type, type Static } from 'typebox'
import { StandardErrorResponses } from './common.js'
import { Choice, Money, Strict, Text, Trimmed } from './fields.js'
import { SECTION_COUNTS } from './sections.js'

/**
 * Reconciliation: the totals a source system expects of its migrated accounts, compared with what
 * the service holds (POST), and a supplier's totals (GET). Decimals are exact: a balance arrives as
 * any decimal does (a decimal string or a JSON number of at most 15 significant digits) and every
 * decimal is answered as a decimal string.
 */

/** The counts of an account that can be reconciled: its sections' counts, names of the account summary's `counts`. */
export const RECONCILED_COUNTS = SECTION_COUNTS
export type ReconciledCount = (typeof RECONCILED_COUNTS)[number]

const Count = Type.Integer({ minimum: 0 })

export const ReconciliationEntry = Strict({
  external_account_number: Trimmed(128),
  ledgers: Type.Optional(
    Type.Array(Strict({ ledger_code: Text(64), balance: Type.Optional(Money()) }), { maxItems: 100 })
  ),
  counts: Type.Optional(
    Strict(
      Object.fromEntries(RECONCILED_COUNTS.map((name) => [name, Type.Optional(Count)])) as {
        [K in ReconciledCount]: ReturnType<typeof Type.Optional<typeof Count>>
      }
    )
  )
})
export type ReconciliationEntry = Static<typeof ReconciliationEntry>

export const ReconciliationRequest = Strict({
  accounts: Type.Array(ReconciliationEntry, { minItems: 1, maxItems: 10000 })
})
export type ReconciliationRequest = Static<typeof ReconciliationRequest>

export const PROBLEMS = ['not_created', 'skipped', 'balance_differs', 'count_differs'] as const

const Value = Type.Union([Type.String(), Type.Integer(), Type.Null()])

export const ReconciliationDifference = Type.Object({
  external_account_number: Type.String(),
  problem: Choice(PROBLEMS),
  field: Type.Union([Type.String(), Type.Null()], {
    description: '`ledgers.<ledger_code>.balance` or `counts.<name>`; null for `not_created` and `skipped`.'
  }),
  expected: Value,
  actual: Value
})
export type ReconciliationDifference = Static<typeof ReconciliationDifference>

const count = Type.Integer({ minimum: 0 })

export const ReconciliationResponse = Type.Object({
  checked: count,
  matching: count,
  differences: Type.Array(ReconciliationDifference)
})
export type ReconciliationResponse = Static<typeof ReconciliationResponse>

/** A section count's total; the transactions' is a count and what they add to the balances. */
const TransactionTotals = Type.Object({
  count,
  amount_sum: Type.String({
    description: 'What the transactions add to the balances: credits and payments plus, the rest minus.'
  })
})

type SectionTotals = { [K in ReconciledCount]: K extends 'transactions' ? typeof TransactionTotals : typeof count }

export const SupplierTotals = Type.Object({
  accounts_created: count,
  accounts_skipped: count,
  accounts_pending: count,
  ledgers: Type.Array(Type.Object({ ledger_code: Type.String(), accounts: count, balance_sum: Type.String() })),
  ...(Object.fromEntries(
    RECONCILED_COUNTS.map((name) => [name, name === 'transactions' ? TransactionTotals : count])
  ) as SectionTotals)
})
export type SupplierTotals = Static<typeof SupplierTotals>

export const ReconciliationResponses = { 200: ReconciliationResponse, ...StandardErrorResponses }
export const SupplierTotalsResponses = { 200: SupplierTotals, ...StandardErrorResponses }

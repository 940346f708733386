import { Type, type Static } from 'typebox'
import { PostImportBody, StandardErrorResponses } from './post-import.js'
import { Transaction } from './transactions.js'

/** Transactions added to a created account. */
export const TransactionsRequest = PostImportBody({
  transactions: Type.Array(Transaction, { minItems: 1, maxItems: 1000 })
})
export type TransactionsRequest = Static<typeof TransactionsRequest>

/** Booleans written `true` or `false`. */
export const TransactionsQuery = Type.Object(
  {
    check_previously_added: Type.Optional(Type.Boolean({ default: true })),
    force_add_to_current_statement: Type.Optional(Type.Boolean({ default: true }))
  },
  { additionalProperties: false }
)
export type TransactionsQuery = Static<typeof TransactionsQuery>

export const TransactionResult = Type.Object({
  status: Type.Union([Type.Literal('TRANSACTION_ADDED_TO_ACCOUNT'), Type.Literal('TRANSACTION_ALREADY_EXISTS')]),
  /** The transaction as stored: decimals as strings; a moved one adds `original_transaction_date`. */
  transaction_data: Type.Record(Type.String(), Type.Unknown())
})
export type TransactionResult = Static<typeof TransactionResult>

export const TransactionsResponses = {
  201: Type.Object({ results: Type.Array(TransactionResult) }),
  ...StandardErrorResponses
}

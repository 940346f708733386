import { Type, type Static } from 'typebox'
import { Choice, DateString, Strict, Text } from './fields.js'
import { EmptyResponse, PostImportBody, StandardErrorResponses } from './post-import.js'
import { Transaction } from './transactions.js'

/** Historical billing documents. */

export const BILLING_DOCUMENT_TYPES = ['ITEM_BASED', 'PERIOD_BASED'] as const
export type BillingDocumentType = (typeof BILLING_DOCUMENT_TYPES)[number]

const documentFields = {
  billing_document_identifier: Text(64),
  issued_date: DateString,
  transactions: Type.Optional(Type.Array(Transaction, { maxItems: 1000 }))
}

/** Billed per item: no bill period (`unexpected_field`). */
export const ItemBasedDocument = Strict({
  ...documentFields,
  billing_document_type: Type.Literal('ITEM_BASED')
})

/** Billed per period: both period dates required (from ≤ to is a rule of the service). */
export const PeriodBasedDocument = Strict({
  ...documentFields,
  billing_document_type: Type.Literal('PERIOD_BASED'),
  bill_period_from_date: DateString,
  bill_period_to_date: DateString
})

/**
 * A document, its branch selected by its own `billing_document_type` (as `Discriminated` does with
 * `type`), so a missing period date or an unexpected one is reported at the field. Whether that
 * type equals the request's is a rule (`billing_document_type_mismatch`).
 */
export const BillingDocument = Type.Unsafe<Static<typeof ItemBasedDocument> | Static<typeof PeriodBasedDocument>>({
  type: 'object',
  discriminator: { propertyName: 'billing_document_type' },
  oneOf: [ItemBasedDocument, PeriodBasedDocument]
})
export type BillingDocument = Static<typeof BillingDocument>

export const BillingDocumentsRequest = PostImportBody({
  ledger_code: Text(64),
  ledger_number: Text(64),
  billing_document_type: Choice(BILLING_DOCUMENT_TYPES),
  historical_billing_documents: Type.Array(BillingDocument, { minItems: 1, maxItems: 1000 }),
  additional_historical_transactions: Type.Optional(Type.Array(Transaction, { maxItems: 10000 }))
})
export type BillingDocumentsRequest = Static<typeof BillingDocumentsRequest>

export const BillingDocumentsResponses = { 201: EmptyResponse, ...StandardErrorResponses }

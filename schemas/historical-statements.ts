import { Type, type Static } from 'typebox'
import { DateString, Money, Strict, Text } from './fields.js'
import { DocumentPath, PostImportBody, StandardErrorResponses } from './post-import.js'

/** Historical statements. */
export const HistoricalStatement = Strict({
  statement_id: Text(64),
  bill_period_from_date: DateString,
  bill_period_to_date: DateString,
  issued_date: DateString,
  number: Type.Optional(Text(64)),
  gross_amount: Type.Unsafe<string | number>({
    ...Money(),
    description:
      "The statement's total in major units (pounds, not pence: `53.24`), positive when it charged the customer."
  }),
  statement_path: Type.Optional(DocumentPath)
})
export type HistoricalStatement = Static<typeof HistoricalStatement>

export const HistoricalStatementsRequest = PostImportBody({
  statements: Type.Array(HistoricalStatement, { minItems: 1, maxItems: 1000 })
})
export type HistoricalStatementsRequest = Static<typeof HistoricalStatementsRequest>

/** A statement as stored and echoed: decimals in their text form, the path relative and normalised. */
export const HistoricalStatementResult = Type.Object({
  statement_id: Type.String(),
  bill_period_from_date: Type.String(),
  bill_period_to_date: Type.String(),
  issued_date: Type.String(),
  number: Type.Optional(Type.String()),
  gross_amount: Type.String({ description: 'The total in major units, as a decimal string.' }),
  statement_path: Type.Optional(Type.String())
})
export type HistoricalStatementResult = Static<typeof HistoricalStatementResult>

export const HistoricalStatementsResult = Type.Object({
  import_supplier: Type.String(),
  external_account_number: Type.String(),
  statements: Type.Array(HistoricalStatementResult)
})
export type HistoricalStatementsResult = Static<typeof HistoricalStatementsResult>

export const HistoricalStatementsResponses = { 201: HistoricalStatementsResult, ...StandardErrorResponses }

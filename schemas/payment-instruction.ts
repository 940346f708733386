import { Type, type Static } from 'typebox'
import { CODE, type SchemaDetailName } from './error-codes.js'
import { paymentInstructionExample } from './examples.js'
import { Choice, Text } from './fields.js'
import { WELL_FORMED_CHARACTERS } from './text.js'
import { PostImportBody, StandardErrorResponses } from './post-import.js'

/** Payment instruction. */
export const PAYMENT_INSTRUCTION_TYPES = ['CARD', 'DIRECT_DEBIT'] as const
export type PaymentInstructionType = (typeof PAYMENT_INSTRUCTION_TYPES)[number]

/**
 * A configured vendor code (`invalid_choice` otherwise, its detail naming the configured ones). The
 * codes come from the configuration, so the schema is built per app; with no vendor configured
 * every code is refused (an empty `enum` is not a valid schema).
 */
export function VendorCode(codes: readonly string[]) {
  const detail: SchemaDetailName = 'vendor_not_configured'
  return Type.Unsafe<string>(
    codes.length > 0
      ? { type: 'string', enum: [...codes], errorDetails: { enum: detail } }
      : { type: 'string', not: {}, errorCodes: { not: CODE.invalid_choice }, errorDetails: { not: detail } }
  )
}

export function PaymentInstructionRequest(vendorCodes: readonly string[]) {
  const example = paymentInstructionExample(vendorCodes)
  return PostImportBody(
    {
      vendor: VendorCode(vendorCodes),
      reference: Text(512),
      type: Choice(PAYMENT_INSTRUCTION_TYPES)
    },
    example ? { examples: [example] } : {}
  )
}
export type PaymentInstructionRequest = Static<ReturnType<typeof PaymentInstructionRequest>>

export const PaymentInstructionResult = Type.Object({
  service_account_number: Type.String(),
  reference: Type.String()
})
export type PaymentInstructionResult = Static<typeof PaymentInstructionResult>

export const PaymentInstructionResponses = { 201: PaymentInstructionResult, ...StandardErrorResponses }

/**
 * What a payment vendor answers for `GET <base>/payment-instructions/<reference>`; other fields
 * are ignored. Text must be storable; `details` is kept as sent (`{}` when absent).
 */
export const VendorAnswer = Type.Object({
  reference: Type.String(),
  type: Type.String({ pattern: `^${WELL_FORMED_CHARACTERS}$` }),
  status: Type.String({ pattern: `^${WELL_FORMED_CHARACTERS}$` }),
  details: Type.Optional(
    Type.Unsafe<Record<string, unknown>>({ type: 'object', jsonValue: { maxBytes: 1024 * 1024, maxDepth: 32 } })
  )
})
export type VendorAnswer = Static<typeof VendorAnswer>

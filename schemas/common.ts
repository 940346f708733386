import { Type, type Static } from 'typebox'

/** One problem: `attr` is the dot path of the offending input, or null for the request as a whole. */
export const ErrorEntry = Type.Object({
  detail: Type.String(),
  code: Type.String(),
  attr: Type.Union([Type.String(), Type.Null()])
})
export type ErrorEntry = Static<typeof ErrorEntry>

/** The body of every 4xx/5xx response; some endpoints add fields of their own. */
export const ErrorBody = Type.Object(
  {
    detail: Type.String(),
    code: Type.String(),
    errors: Type.Array(ErrorEntry),
    request_id: Type.Optional(Type.String())
  },
  { additionalProperties: true }
)
export type ErrorBody = Static<typeof ErrorBody>

/** What an import supplier code looks like: a code not matching it cannot exist. */
export const SUPPLIER_CODE = /^[A-Z0-9_]{1,32}$/

/**
 * What a supplier checks of its accounts' supply point identifiers: `NONE` (only the schema's
 * limits) or `GB` (an ELECTRICITY point's identifier is an MPAN core, a GAS point's an MPRN).
 */
export const SUPPLY_POINT_CHECKS = ['NONE', 'GB'] as const
export type SupplyPointChecks = (typeof SUPPLY_POINT_CHECKS)[number]

/** An import supplier code in a path; one that cannot exist is simply unknown (404). */
export const SupplierCode = Type.String({ minLength: 1, maxLength: 255 })

/** Responses every data-import route may give besides its own. */
export const StandardErrorResponses = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  413: ErrorBody,
  415: ErrorBody,
  429: ErrorBody,
  500: ErrorBody
} as const

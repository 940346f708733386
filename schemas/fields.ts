import { Type, type TSchema, type Static } from 'typebox'
import { CODE } from './error-codes.js'
import { TEXT_PATTERN, TRIMMED_PATTERN } from './text.js'

/**
 * Building blocks of the data-import schemas. Custom keywords (registered in src/validation.ts):
 * - `decimal: {integer, scale, positive?}`: an exact decimal, as a string or a JSON number;
 * - `omitEmpty: true` on an object: optional fields sent as `null` or blank are treated as omitted;
 * - `jsonValue: {maxBytes, maxDepth}`: any JSON, bounded in size and depth;
 * - `errorCodes: {keyword: code}`: the contract code a keyword's failure reports.
 */

/** A required or optional string of 1–max code points; whitespace-only is `blank`. */
export function Text(max: number, options: { min?: number; pattern?: string } = {}) {
  return Type.String({
    minLength: options.min ?? 1,
    maxLength: max,
    pattern: options.pattern ?? TEXT_PATTERN
  })
}

/** Text without leading or trailing whitespace (an identifier such as an external account number). */
export function Trimmed(max: number) {
  return Text(max, { pattern: TRIMMED_PATTERN })
}

/** One of fixed values (`invalid_choice`). */
export function Choice<const T extends readonly string[]>(values: T, options: { default?: T[number] } = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options })
}

/** A real calendar date `YYYY-MM-DD` (`invalid_date`). */
export const DateString = Type.String({
  format: 'date',
  errorCodes: { format: CODE.invalid_date, type: CODE.invalid_date }
})

/** An ISO 8601 datetime with an offset or `Z` (`invalid_datetime`). */
export const DateTimeString = Type.String({
  format: 'date-time',
  errorCodes: { format: CODE.invalid_datetime, type: CODE.invalid_datetime }
})

export interface DecimalOptions {
  integer: number
  scale: number
  /** Must be greater than zero (`min_value`). */
  positive?: boolean
  default?: string | number
}

/** An exact decimal, as a decimal string or a JSON number of at most 15 significant digits. */
export function Decimal({ default: def, ...decimal }: DecimalOptions) {
  return Type.Unsafe<string | number>({
    type: ['string', 'number'],
    decimal,
    errorCodes: { type: CODE.invalid_decimal },
    ...(def !== undefined ? { default: def } : {})
  })
}

/** The bounds of decimals, as integer digits + decimal places. */
export const Money = (options: { positive?: boolean; default?: string | number } = {}) =>
  Decimal({ integer: 10, scale: 10, ...options })
export const NumberOfUnits = () => Decimal({ integer: 12, scale: 4 })
export const PricePerUnit = () => Decimal({ integer: 8, scale: 8 })
export const Rate = () => Decimal({ integer: 15, scale: 5 })
export const Units = () => Decimal({ integer: 12, scale: 4 })

/** A strict object: unknown fields are `unexpected_field`; optional `null`/blank fields are omitted. */
export function Strict<T extends Record<string, TSchema>>(properties: T, options: Record<string, unknown> = {}) {
  return Type.Object(properties, { additionalProperties: false, omitEmpty: true, ...options })
}

/** Any JSON value, at most `maxBytes` serialised and `maxDepth` levels deep. */
export function JsonValue(maxBytes: number, maxDepth: number) {
  return Type.Unsafe<unknown>({ jsonValue: { maxBytes, maxDepth } })
}

/**
 * A union selected by the `type` field: Ajv's discriminator picks the branch, so errors point into
 * it (never at a list of alternatives).
 */
export function Discriminated<T extends TSchema[]>(branches: [...T]) {
  return Type.Unsafe<Static<T[number]>>({
    type: 'object',
    discriminator: { propertyName: 'type' },
    oneOf: branches
  })
}

import Big from 'big.js'
import { CODE } from '../schemas/error-codes.js'

/** Exact decimals: never computed in binary floating point. */
export { Big }

/** A decimal sent as a string. */
export const DECIMAL_TEXT = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/

/** Largest number of significant digits a JSON number may carry and still be exact. */
const NUMBER_DIGITS = 15

export interface DecimalBounds {
  /** Integer digits allowed. */
  integer: number
  /** Decimal places allowed. */
  scale: number
}

export type DecimalProblem = typeof CODE.invalid_decimal | typeof CODE.max_digits | typeof CODE.max_decimal_places

/**
 * The exact value of a decimal as sent, or the problem with it. A JSON number is exact when its
 * shortest round-trip text has at most 15 significant digits.
 */
export function parseDecimal(value: unknown): Big | DecimalProblem {
  if (typeof value === 'string') {
    if (!DECIMAL_TEXT.test(value)) return CODE.invalid_decimal
    return new Big(value)
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return CODE.max_digits
    const big = new Big(value)
    if (big.c.length > NUMBER_DIGITS) return CODE.max_digits
    return big
  }
  return CODE.invalid_decimal
}

/** Integer digits and decimal places of a value (trailing zeros after the point carry no value). */
function digits(big: Big): { integer: number; scale: number } {
  const significant = big.c.length
  return {
    integer: Math.max(big.e + 1, 1),
    scale: Math.max(significant - big.e - 1, 0)
  }
}

/** Every problem of a decimal against its bounds: `max_digits` and `max_decimal_places` both when both. */
export function decimalProblems(value: unknown, bounds: DecimalBounds): DecimalProblem[] {
  const parsed = parseDecimal(value)
  if (typeof parsed === 'string') return [parsed]
  const { integer, scale } = digits(parsed)
  const problems: DecimalProblem[] = []
  if (integer > bounds.integer) problems.push(CODE.max_digits)
  if (scale > bounds.scale) problems.push(CODE.max_decimal_places)
  return problems
}

/** A valid decimal's exact value; throws on an invalid one (callers validate first). */
export function toBig(value: unknown): Big {
  if (value instanceof Big) return value
  const parsed = parseDecimal(value)
  if (typeof parsed === 'string') throw new TypeError(`not a decimal: ${String(value)}`)
  return parsed
}

/** The decimal text: at least two decimal places, no trailing zeros beyond them (`10` → `10.00`, `-0.5` → `-0.50`). */
export function formatDecimal(value: unknown): string {
  const big = toBig(value)
  if (big.eq(0)) return '0.00'
  return big.toFixed(Math.max(2, digits(big).scale))
}

export function sumDecimals(values: Iterable<unknown>): Big {
  let total = new Big(0)
  for (const v of values) total = total.plus(toBig(v))
  return total
}

/** "Within 0.01": the absolute difference is at most 0.01. */
export function withinCent(a: Big, b: Big): boolean {
  return a.minus(b).abs().lte('0.01')
}

/** The decimals among `fields` of `target` in their text form, in place. */
export function normaliseDecimals(target: Record<string, unknown>, ...fields: string[]): void {
  for (const field of fields) if (target[field] !== undefined) target[field] = formatDecimal(target[field])
}

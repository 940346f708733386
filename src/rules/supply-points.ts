import { CODE } from '../../schemas/error-codes.js'
import type { SupplyPointChecks } from '../../schemas/common.js'

/**
 * Great Britain's supply point identifiers, for a supplier whose `supplyPointChecks` is `GB`:
 * an electricity meter point's MPAN core and a gas meter point's MPRN.
 */

/** The weights of an MPAN core's first 12 digits in its check digit. */
const MPAN_WEIGHTS = [3, 5, 7, 13, 17, 19, 23, 29, 31, 37, 41, 43] as const

/** The lowest distributor id (the core's first two digits): DNOs are 10–23, IDNOs 24 and above. */
const LOWEST_DISTRIBUTOR = 10

/** The check digit of an MPAN core's first 12 digits: each times its weight, summed, mod 11, mod 10. */
export function mpanCheckDigit(first12: string): number {
  if (!/^[0-9]{12}$/.test(first12)) throw new Error('an MPAN core starts with 12 digits')
  let sum = 0
  for (let i = 0; i < 12; i++) sum += Number(first12[i]) * MPAN_WEIGHTS[i]!
  return (sum % 11) % 10
}

/** A 13-digit MPAN core: a distributor id of 10 or above, and its check digit last. */
export function isMpanCore(value: string): boolean {
  return (
    /^[0-9]{13}$/.test(value) &&
    Number(value.slice(0, 2)) >= LOWEST_DISTRIBUTOR &&
    mpanCheckDigit(value.slice(0, 12)) === Number(value[12])
  )
}

/** An MPRN: 6 to 10 digits. */
export function isMprn(value: string): boolean {
  return /^[0-9]{6,10}$/.test(value)
}

/** The code of a supply point's identifier that `checks` refuses for its supply type, or undefined. */
export function supplyPointIdentifierProblem(
  checks: SupplyPointChecks,
  supplyType: string,
  identifier: string
): typeof CODE.invalid_mpan | typeof CODE.invalid_mprn | undefined {
  if (checks !== 'GB') return undefined
  if (supplyType === 'ELECTRICITY') return isMpanCore(identifier) ? undefined : CODE.invalid_mpan
  if (supplyType === 'GAS') return isMprn(identifier) ? undefined : CODE.invalid_mprn
  return undefined
}

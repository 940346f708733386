import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max'
import { CODE } from '../../schemas/error-codes.js'

/** Contact rules: e-mail addresses and phone numbers. */

/** The HTML e-mail grammar, with a dotted domain. */
const EMAIL =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+$/

const TEST_DOMAINS = ['example.com', 'example.org', 'example.net', 'test.com']
const TEST_TLDS = ['test', 'example', 'invalid', 'localhost']

export type EmailProblem = typeof CODE.invalid_email | typeof CODE.possible_test_email_address

export function emailProblem(email: string): EmailProblem | undefined {
  if (!EMAIL.test(email)) return CODE.invalid_email
  const at = email.lastIndexOf('@')
  const local = email.slice(0, at).toLowerCase()
  const domain = email.slice(at + 1).toLowerCase()
  const tld = domain.slice(domain.lastIndexOf('.') + 1)
  if (local === 'test') return CODE.possible_test_email_address
  if (TEST_TLDS.includes(tld)) return CODE.possible_test_email_address
  if (TEST_DOMAINS.some((d) => domain === d || domain.endsWith('.' + d))) return CODE.possible_test_email_address
  return undefined
}

/**
 * The number in E.164 when libphonenumber's full metadata says it is valid (any line type), with
 * the billing country as the default region; undefined otherwise.
 */
export function phoneE164(text: string, defaultCountry: string | undefined): string | undefined {
  const key = `${defaultCountry ?? ''}\u0000${text}`
  if (recent.has(key)) return recent.get(key)
  let e164: string | undefined
  try {
    const phone = parsePhoneNumberFromString(text, defaultCountry as CountryCode | undefined)
    e164 = phone && phone.isValid() ? phone.number : undefined
  } catch {
    e164 = undefined
  }
  if (recent.size >= RECENT_MAX) recent.clear()
  recent.set(key, e164)
  return e164
}

/** Parsing with full metadata is costly and the rules and normalisation ask twice: recent answers are kept. */
const RECENT_MAX = 1000
const recent = new Map<string, string | undefined>()

/** Address rules: countries that exist, and postcodes of five countries. */

/** ISO 3166-1 alpha-2: the 249 officially assigned codes. */
const COUNTRIES = new Set(
  (
    'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ ' +
    'CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR ' +
    'GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO ' +
    'JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR ' +
    'MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO ' +
    'RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV ' +
    'TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW'
  ).split(' ')
)

/** The upper-case country code when `value` names an assigned ISO 3166-1 alpha-2 country, else undefined. */
export function countryCode(value: string): string | undefined {
  const upper = value.toUpperCase()
  return COUNTRIES.has(upper) ? upper : undefined
}

interface PostcodeRule {
  pattern: RegExp
  /** The normalised form of an upper-case, valid postcode. */
  format: (upper: string) => string
}

/** Puts exactly one space before the last three characters (GB inward code, CA second half). */
const spaceBeforeLastThree = (upper: string): string => {
  const compact = upper.replace(' ', '')
  return `${compact.slice(0, -3)} ${compact.slice(-3)}`
}
const asIs = (upper: string): string => upper

const POSTCODES: Record<string, PostcodeRule> = {
  GB: { pattern: /^[A-Z]{1,2}[0-9][A-Z0-9]? ?[0-9][A-Z]{2}$/, format: spaceBeforeLastThree },
  US: { pattern: /^[0-9]{5}(-[0-9]{4})?$/, format: asIs },
  AU: { pattern: /^[0-9]{4}$/, format: asIs },
  NZ: { pattern: /^[0-9]{4}$/, format: asIs },
  CA: { pattern: /^[A-Z][0-9][A-Z] ?[0-9][A-Z][0-9]$/, format: spaceBeforeLastThree }
}

/**
 * The normalised postcode for the country, `undefined` when it is invalid there; other countries'
 * postcodes are free text and returned as sent.
 */
export function normalisePostcode(country: string, postcode: string): string | undefined {
  const rule = POSTCODES[country]
  if (!rule) return postcode
  const upper = postcode.toUpperCase()
  return rule.pattern.test(upper) ? rule.format(upper) : undefined
}

/**
 * Address identity for duplicate detection: case and whitespace do not matter, and a checked
 * postcode counts in its normalised form (`BS15TY` and `BS1 5TY` are stored the same).
 */
export function addressKey(address: Record<string, unknown>): string {
  const part = (v: unknown) => (typeof v === 'string' ? v.toLowerCase().replace(/\s+/g, ' ').trim() : '')
  const country = typeof address.country === 'string' ? countryCode(address.country) : undefined
  const postcode = address.postal_code
  const normalised =
    country && typeof postcode === 'string' ? (normalisePostcode(country, postcode) ?? postcode) : postcode
  return [address.street_address, address.locality, address.administrative_area, normalised, address.country]
    .map(part)
    .join('\u0001')
}

import ipaddr from 'ipaddr.js'

/**
 * Where a webhook may be sent: an `https://` URL without credentials whose host resolves to public
 * addresses only. With `allowPrivate` (tests, private networks) `http://` and any address are
 * accepted. Each function returns why a URL or address is refused, or undefined.
 */

/**
 * Said with each refusal the operator's setting would lift (`http://`, an address that is not
 * public), so that whoever meets one in a test or on a private network knows the way out.
 */
export const ALLOW_PRIVATE_HINT =
  'the operator may allow http:// and private addresses with WEBHOOK_ALLOW_PRIVATE=1 (for tests and private networks)'

/** A URL's problem before its host is resolved. */
export function webhookUrlProblem(text: string, allowPrivate: boolean): string | undefined {
  if (text.length > 2048) return 'The URL is longer than 2048 characters.'
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'The URL is not an absolute URL.'
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    return allowPrivate
      ? 'The URL must start with https:// or http://.'
      : url.protocol === 'http:'
        ? `The URL must start with https://; ${ALLOW_PRIVATE_HINT}.`
        : 'The URL must start with https://.'
  }
  if (url.username !== '' || url.password !== '') return 'The URL must not hold a user name or password.'
  if (url.hash !== '') return 'The URL must not hold a fragment (#…).'
  if (url.hostname === '') return 'The URL has no host.'
  const literal = ipLiteral(url.hostname)
  return literal === undefined ? undefined : addressProblem(literal, allowPrivate)
}

/** The IP address a URL's host names literally (`[::1]` included), or undefined for a name. */
export function ipLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return ipaddr.isValid(bare) ? bare : undefined
}

/**
 * Why a resolved address may not be sent to: anything but global unicast (loopback, private,
 * link-local with cloud metadata, CGNAT, unspecified, multicast, reserved, and the IPv6 forms that
 * embed an IPv4 address: mapped, 6to4, Teredo, NAT64).
 */
export function addressProblem(address: string, allowPrivate: boolean): string | undefined {
  if (allowPrivate) return undefined
  if (!ipaddr.isValid(address)) return `${address} is not an IP address.`
  // Mapped forms (::ffff:127.0.0.1) are judged as the IPv4 address they are.
  const parsed = ipaddr.process(address)
  const range = parsed.range()
  return range === 'unicast'
    ? undefined
    : `${address} is not a public address (${rangeName(range)}); ${ALLOW_PRIVATE_HINT}.`
}

const RANGE_NAMES: Record<string, string> = {
  loopback: 'loopback',
  private: 'private network',
  linkLocal: 'link-local',
  carrierGradeNat: 'carrier-grade NAT',
  unspecified: 'unspecified',
  uniqueLocal: 'unique local',
  multicast: 'multicast',
  broadcast: 'broadcast',
  reserved: 'reserved',
  rfc6052: 'NAT64',
  teredo: 'Teredo'
}
const rangeName = (range: string) => RANGE_NAMES[range] ?? range

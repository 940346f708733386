import { createSigner, createVerifier, TokenError } from 'fast-jwt'
import { authenticationFailed, tokenExpired } from '../../errors.js'
import type { Tx } from '../../db/index.js'
import type { AuthRepository, KeyRecord } from './repository.js'
import { hashSecret, newSecret, sameHash } from './secrets.js'

/** Who is calling: an organisation through one of its API keys, or the service operator. */
export type Principal =
  { kind: 'organisation'; organisationId: string; organisationName: string; apiKeyId: string } | { kind: 'operator' }

/** The audit trail's part in exchanging an API key for a token. */
export interface KeyExchangeAudit {
  /** Writes the exchange's record in the transaction of its refresh token; `principal`: whose key it was. */
  succeeded(tx: Tx, principal: Principal): Promise<void>
  /** Records the refusal of a revoked key (an unknown key's is not recorded). */
  revoked(apiKeyId: string): Promise<void>
}

export interface TokenPair {
  token: string
  expiresIn: number
  refreshToken: string
  /** Unix time (seconds) when the refresh token expires. */
  refreshExpiresIn: number
}

interface Claims {
  /** `org` or `op`. */
  role: string
  /** API key id (organisation tokens). */
  kid?: string
  /** First characters of the operator key's hash (operator tokens): a new key ends old tokens. */
  okh?: string
}

/** How long a key's revoked state may be served from memory: revocation takes effect within this. */
export const KEY_CACHE_MS = 5_000
const KEY_CACHE_MAX = 10_000

export interface AuthServiceOptions {
  tokenSecret: string
  tokenTtlSeconds: number
  refreshTokenTtlSeconds: number
  /** SHA-256 of the operator API key (configured, or generated on first start). */
  operatorKeyHash: string
}

export function createAuthService(repo: AuthRepository, options: AuthServiceOptions) {
  const now = Date.now
  const sign = createSigner({ key: options.tokenSecret, algorithm: 'HS256', expiresIn: options.tokenTtlSeconds * 1000 })
  const verify = createVerifier({ key: options.tokenSecret, algorithms: ['HS256'] })
  const operatorMark = options.operatorKeyHash.slice(0, 12)
  const keyCache = new Map<string, { record: KeyRecord | undefined; at: number }>()

  async function keyById(apiKeyId: string): Promise<KeyRecord | undefined> {
    const cached = keyCache.get(apiKeyId)
    if (cached && now() - cached.at < KEY_CACHE_MS) return cached.record
    const record = await repo.findKeyById(apiKeyId)
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear()
    keyCache.set(apiKeyId, { record, at: now() })
    return record
  }

  /** A new refresh token: the secret, its hash as stored, and when it expires (Unix seconds). */
  function newRefreshToken() {
    const token = newSecret('amr')
    const expiresAt = Math.floor(now() / 1000) + options.refreshTokenTtlSeconds
    return { token, tokenHash: hashSecret(token), expiresAt, expiresAtDate: new Date(expiresAt * 1000) }
  }

  function pair(apiKeyId: string | null, refresh: ReturnType<typeof newRefreshToken>): TokenPair {
    const claims: Claims = apiKeyId === null ? { role: 'op', okh: operatorMark } : { role: 'org', kid: apiKeyId }
    return {
      token: sign(claims),
      expiresIn: options.tokenTtlSeconds,
      refreshToken: refresh.token,
      refreshExpiresIn: refresh.expiresAt
    }
  }

  async function issue(apiKeyId: string | null, record?: (tx: Tx) => Promise<void>): Promise<TokenPair> {
    const refresh = newRefreshToken()
    await repo.insertRefreshToken(refresh.tokenHash, apiKeyId, refresh.expiresAtDate, record)
    return pair(apiKeyId, refresh)
  }

  return {
    /** `obtainToken` with an API key (an organisation's or the operator's). */
    async tokenFromApiKey(apiKey: string, audit: KeyExchangeAudit): Promise<TokenPair> {
      const keyHash = hashSecret(apiKey)
      if (sameHash(keyHash, options.operatorKeyHash)) {
        return issue(null, (tx) => audit.succeeded(tx, { kind: 'operator' }))
      }
      const refresh = newRefreshToken()
      const record = await repo.keyWithRefreshToken(
        keyHash,
        { tokenHash: refresh.tokenHash, expiresAt: refresh.expiresAtDate },
        (tx, key) =>
          audit.succeeded(tx, {
            kind: 'organisation',
            organisationId: key.organisationId,
            organisationName: key.organisationName,
            apiKeyId: key.apiKeyId
          })
      )
      if (record?.revoked === true) await audit.revoked(record.apiKeyId)
      if (!record || record.revoked) throw authenticationFailed()
      return pair(record.apiKeyId, refresh)
    },

    /** `obtainToken` with a refresh token: single use, each use returns a new one. */
    async tokenFromRefreshToken(refreshToken: string): Promise<TokenPair> {
      const used = await repo.consumeRefreshToken(hashSecret(refreshToken))
      if (!used) throw authenticationFailed()
      if (used.expiresAt.getTime() <= now()) throw tokenExpired()
      if (used.operator) return issue(null)
      if (used.apiKeyId === null) throw authenticationFailed()
      const record = await repo.findKeyById(used.apiKeyId)
      if (!record || record.revoked) throw authenticationFailed()
      return issue(record.apiKeyId)
    },

    /** Checks an access token; throws the 401 `AppError` the contract names. */
    async authenticate(token: string): Promise<Principal> {
      let claims: Claims
      try {
        claims = verify(token) as Claims
      } catch (err) {
        if (err instanceof TokenError && err.code === TokenError.codes.expired) throw tokenExpired()
        throw authenticationFailed()
      }
      if (claims.role === 'op') {
        if (claims.okh !== operatorMark) throw authenticationFailed()
        return { kind: 'operator' }
      }
      if (claims.role !== 'org' || typeof claims.kid !== 'string') throw authenticationFailed()
      const record = await keyById(claims.kid)
      if (!record || record.revoked) throw authenticationFailed()
      return {
        kind: 'organisation',
        organisationId: record.organisationId,
        organisationName: record.organisationName,
        apiKeyId: record.apiKeyId
      }
    },

    /** Called after a revocation in this process, so it takes effect here at once. */
    forgetKey(apiKeyId: string): void {
      keyCache.delete(apiKeyId)
    }
  }
}

export type AuthService = ReturnType<typeof createAuthService>

/**
 * The token in an `Authorization` header: the token alone, or after `Token`, `JWT` or `Bearer`.
 * Returns undefined for a missing or blank header.
 */
export function tokenFromHeader(header: string | undefined): string | undefined {
  if (header === undefined || header.trim() === '') return undefined
  const parts = header.trim().split(/\s+/)
  if (parts.length === 1) return parts[0]
  if (parts.length === 2 && /^(token|jwt|bearer)$/i.test(parts[0] as string)) return parts[1]
  throw authenticationFailed()
}

export type OrganisationPrincipal = Extract<Principal, { kind: 'organisation' }>

/** The caller of a data-import route, where `requireOrganisation` has already run. */
export function organisationOf(principal: Principal | undefined): OrganisationPrincipal {
  if (principal?.kind !== 'organisation') throw new Error('data-import route reached without an organisation principal')
  return principal
}

import type { MercuriusContext } from 'mercurius'
import { guarded, invalid, type GraphqlResolvers } from './guard.js'
import type { AuthService, KeyExchangeAudit } from './service.js'

/** The audit of a request's API-key exchange: its record and refusal, and the count once it is committed. */
export type KeyExchangeAuditOf = (ctx: MercuriusContext) => KeyExchangeAudit & { committed(): void }

/** `obtainToken`: a token pair for an API key (audited, by `auditOf`) or a refresh token; no token needed. */
export function authResolvers(deps: { auth: AuthService; auditOf: KeyExchangeAuditOf }): GraphqlResolvers {
  const { auth, auditOf } = deps
  return {
    Mutation: {
      obtainToken: (
        _root: unknown,
        { input }: { input: { APIKey?: string | null; refreshToken?: string | null } },
        ctx: MercuriusContext
      ) =>
        guarded(async () => {
          const hasKey = input.APIKey !== undefined && input.APIKey !== null
          const hasRefresh = input.refreshToken !== undefined && input.refreshToken !== null
          if (hasKey === hasRefresh) throw invalid('Give exactly one of APIKey and refreshToken.')
          if (!hasKey) return auth.tokenFromRefreshToken(input.refreshToken!)
          // Exchanging an API key is audited (a revoked key's refusal too); a renewal is not.
          const audit = auditOf(ctx)
          const pair = await auth.tokenFromApiKey(input.APIKey!, audit)
          audit.committed()
          return pair
        })
    }
  }
}

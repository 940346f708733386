import type { MercuriusContext } from 'mercurius'
import { CODE } from '../../../schemas/error-codes.js'
import { auditRequest } from '../audit/graphql.js'
import type { AuditLog } from '../audit/service.js'
import { guarded, invalid, type GraphqlResolvers } from './guard.js'
import type { AuthService } from './service.js'

/** `obtainToken`: a token pair for an API key (audited) or a refresh token; no token needed. */
export function authResolvers(deps: { auth: AuthService; audit: AuditLog }): GraphqlResolvers {
  const { auth, audit } = deps
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
          const pair = await auth.tokenFromApiKey(input.APIKey!, {
            succeeded: (tx, who) =>
              audit.recorder(auditRequest(ctx, who), 'obtainToken')(
                tx,
                who.kind === 'organisation' ? { type: 'api_key', id: who.apiKeyId } : null
              ),
            revoked: (id) =>
              audit.refused(auditRequest(ctx, undefined), 'obtainToken', CODE.authentication_failed, {
                type: 'api_key',
                id
              })
          })
          audit.committed('obtainToken')
          return pair
        })
    }
  }
}

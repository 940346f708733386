import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { throttled } from '../errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    limits: {
      /** Counts `fields` token requests from the caller's address; throws 429 `throttled` past the limit. */
      tokens(request: FastifyRequest, fields: number): Promise<void>
      /** Counts one data-import call for the caller's organisation; throws 429 `throttled` past the limit. */
      organisation(request: FastifyRequest): Promise<void>
    }
  }
}

function organisationKey(request: FastifyRequest): string {
  const principal = request.principal
  return principal?.kind === 'organisation' ? `org:${principal.organisationId}` : 'org:-'
}

/**
 * Rate limits on @fastify/rate-limit's in-process store: limits hold per server process.
 * A 429 carries `Retry-After` and the contract's body.
 */
export default fp(
  async function rateLimitsPlugin(app: FastifyInstance, opts: { config: Config }) {
    await app.register(rateLimit, { global: false })
    const perMinute = { timeWindow: 60_000 }
    const tokenLimiter = app.createRateLimit({
      ...perMinute,
      max: opts.config.tokenRateLimitPerMinute,
      keyGenerator: (req) => `token:${req.ip}`
    })
    const orgMax = opts.config.orgRateLimitPerMinute
    const orgLimiter =
      orgMax > 0 ? app.createRateLimit({ ...perMinute, max: orgMax, keyGenerator: organisationKey }) : undefined

    app.decorate('limits', {
      async tokens(request: FastifyRequest, fields: number) {
        for (let i = 0; i < fields; i++) {
          const result = await tokenLimiter(request)
          if (!result.isAllowed && result.isExceeded) throw throttled(result.ttlInSeconds)
        }
      },
      async organisation(request: FastifyRequest) {
        if (!orgLimiter) return
        const result = await orgLimiter(request)
        if (!result.isAllowed && result.isExceeded) throw throttled(result.ttlInSeconds)
      }
    })
  },
  { name: 'rate-limits' }
)

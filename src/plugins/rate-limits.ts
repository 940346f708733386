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

/** What a request-rate limit said of a request: @fastify/rate-limit's answer. */
interface LimitResult {
  max?: number
  remaining?: number
  ttlInSeconds?: number
}

/**
 * 429 `throttled` with the limit's headers (the names of the IETF draft's fields, as
 * @fastify/rate-limit's `enableDraftSpec` sends them): `RateLimit-Limit` (requests per window),
 * `RateLimit-Remaining` (0) and `RateLimit-Reset` (seconds until the window resets, at least 1,
 * which is also the `Retry-After`).
 */
function limitReached(result: LimitResult) {
  const reset = Math.max(1, result.ttlInSeconds ?? 0)
  return throttled(reset, {
    'ratelimit-limit': String(result.max ?? 0),
    'ratelimit-remaining': String(result.remaining ?? 0),
    'ratelimit-reset': String(reset)
  })
}

function organisationKey(request: FastifyRequest): string {
  const principal = request.principal
  return principal?.kind === 'organisation' ? `org:${principal.organisationId}` : 'org:-'
}

/**
 * Rate limits on @fastify/rate-limit's in-process store: limits hold per server process.
 * A 429 carries `Retry-After`, the `RateLimit-*` headers and the contract's body. The limits are
 * applied by hand (`createRateLimit`), so the plugin's own header options do not apply: the
 * headers are set here.
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
          if (!result.isAllowed && result.isExceeded) throw limitReached(result)
        }
      },
      async organisation(request: FastifyRequest) {
        if (!orgLimiter) return
        const result = await orgLimiter(request)
        if (!result.isAllowed && result.isExceeded) throw limitReached(result)
      }
    })
  },
  { name: 'rate-limits' }
)

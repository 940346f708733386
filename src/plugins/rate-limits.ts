import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { throttled } from '../errors.js'
import { createLimitsRepository, type LimitsRepository } from '../modules/limits/repository.js'

declare module 'fastify' {
  interface FastifyInstance {
    limits: {
      /** Counts `fields` token requests from the caller's address; throws 429 `throttled` past the limit. */
      tokens(request: FastifyRequest, fields: number): Promise<void>
      /** Counts one data-import call for the caller's organisation; throws 429 `throttled` past the limit. */
      organisation(request: FastifyRequest): Promise<void>
      /** Whether the limits are counted in the shared database (false: by this process alone, for now). */
      readonly shared: boolean
      /** Times this process began counting alone because the shared count could not be reached. */
      readonly countedAlone: number
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

type Answer = (error: Error | null, result: { current: number; ttl: number }) => void

/** How long a hit may wait for the shared count before this process counts it alone. */
export const SHARED_COUNT_TIMEOUT_MS = 1_000
/** After the shared count failed, how long this process counts alone before it tries again. */
export const COUNT_ALONE_MS = 5_000
/** Keys whose window ended this long ago are deleted (at most once per this period). */
const SWEEP_MS = 10 * 60_000

/** Fixed windows counted in this process: the embedded database's store, and the fallback. */
class LocalCounts {
  private readonly windows = new Map<string, { count: number; endsAt: number }>()

  hit(key: string, windowMs: number): { current: number; ttl: number } {
    const now = Date.now()
    let window = this.windows.get(key)
    if (!window || window.endsAt <= now) {
      // Expired keys go when the map grows, so an address that came once is not kept for ever.
      if (this.windows.size >= 10_000) for (const [k, w] of this.windows) if (w.endsAt <= now) this.windows.delete(k)
      window = { count: 0, endsAt: now + windowMs }
      this.windows.set(key, window)
    }
    window.count += 1
    return { current: window.count, ttl: window.endsAt - now }
  }
}

/**
 * The limits' state: counted in the database every server process shares, or, while that count
 * cannot be reached (an error, or no answer within SHARED_COUNT_TIMEOUT_MS), by this process
 * alone for COUNT_ALONE_MS at a time: a warning in the log, `amis_rate_limits_shared` 0 in
 * /metrics, never a 5xx. `repository` undefined: counted in this process (the embedded database,
 * one process).
 */
function createCounter(repository: LimitsRepository | undefined, log: FastifyInstance['log']) {
  const local = new LocalCounts()
  let aloneUntil = 0
  let countedAlone = 0
  let lastSweep = Date.now()

  function countAlone(error: unknown): void {
    if (aloneUntil <= Date.now()) {
      countedAlone += 1
      log.warn(
        { err: error },
        `rate limits: the shared count cannot be reached; this process counts alone for ${COUNT_ALONE_MS / 1000} s, then tries again`
      )
    }
    aloneUntil = Date.now() + COUNT_ALONE_MS
  }

  async function hit(key: string, windowMs: number): Promise<{ current: number; ttl: number }> {
    if (!repository || aloneUntil > Date.now()) return local.hit(key, windowMs)
    let timer: NodeJS.Timeout | undefined
    try {
      const counted = await Promise.race([
        repository.hit(key, windowMs),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${SHARED_COUNT_TIMEOUT_MS} ms`)),
            SHARED_COUNT_TIMEOUT_MS
          )
        })
      ])
      if (Date.now() - lastSweep > SWEEP_MS) {
        lastSweep = Date.now()
        repository
          .sweep(SWEEP_MS)
          .catch((error: unknown) => log.warn({ err: error }, 'rate limits: old counts not deleted'))
      }
      return { current: counted.count, ttl: counted.ttlMs }
    } catch (error) {
      countAlone(error)
      return local.hit(key, windowMs)
    } finally {
      clearTimeout(timer)
    }
  }

  return {
    hit,
    get shared() {
      return repository !== undefined && aloneUntil <= Date.now()
    },
    get countedAlone() {
      return countedAlone
    }
  }
}

/**
 * Rate limits through @fastify/rate-limit with a store of our own: on a PostgreSQL server every
 * server process counts against the same limit (a row per key in `rate_limit_counts`), on the
 * embedded database in memory. A limit that is off costs nothing. A 429 carries `Retry-After`, the
 * `RateLimit-*` headers and the contract's body. The limits are applied by hand
 * (`createRateLimit`), so the plugin's own header options do not apply: the headers are set here.
 */
export default fp(
  async function rateLimitsPlugin(app: FastifyInstance, opts: { config: Config }) {
    const counter = createCounter(
      app.database.kind === 'postgres' ? createLimitsRepository(app.db) : undefined,
      app.log
    )
    // @fastify/rate-limit's custom store interface: `incr` answers the key's count and window.
    class SharedStore {
      incr(key: string, answer: Answer, timeWindow: number): void {
        counter.hit(key, timeWindow).then(
          (result) => answer(null, result),
          (error: Error) => answer(error, { current: 0, ttl: 0 })
        )
      }
      child(): SharedStore {
        return this
      }
    }
    await app.register(rateLimit, { global: false, store: SharedStore })
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
      },
      get shared() {
        return counter.shared
      },
      get countedAlone() {
        return counter.countedAlone
      }
    })
  },
  { name: 'rate-limits', dependencies: ['db'] }
)

import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { AppError, notAuthenticated, permissionDenied } from '../errors.js'
import { createAuthRepository } from '../modules/auth/repository.js'
import { hashSecret, newSecret } from '../modules/auth/secrets.js'
import {
  createAuthService,
  tokenFromHeader,
  type AuthService,
  type OrganisationPrincipal,
  type Principal
} from '../modules/auth/service.js'

declare module 'fastify' {
  interface FastifyInstance {
    auth: AuthService
    /**
     * onRequest hook of data-import routes, on the headers alone: a caller without a valid
     * organisation token is refused before its body is read (the connection is then closed), and
     * holds nothing: no limiter turn, queue place, body memory or database connection. Then the
     * organisation's rate limit, then its share of the memory for bodies in flight.
     */
    requireOrganisation(request: FastifyRequest, reply: FastifyReply): Promise<void>
  }
  interface FastifyRequest {
    principal: Principal | undefined
  }
}

export interface AuthPluginOptions {
  config: Config
  /** Where a generated operator key is shown, once. */
  announce: (message: string) => void
}

const OPERATOR_KEY_SETTING = 'operator_key_hash'

/** In development without TOKEN_SECRET: a secret generated once and kept in DATA_DIR. */
function tokenSecret(config: Config): string {
  if (config.tokenSecret) return config.tokenSecret
  const dir = resolve(config.dataDir)
  const file = join(dir, 'token-secret')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  mkdirSync(dir, { recursive: true })
  const secret = randomBytes(48).toString('base64url')
  try {
    writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' })
  } catch (err) {
    // Another server sharing this DATA_DIR wrote it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readFileSync(file, 'utf8').trim()
    throw err
  }
  chmodSync(file, 0o600)
  return secret
}

/** Authentication: tokens, the operator key, and the request's principal. */
export default fp(
  async function authPlugin(app: FastifyInstance, opts: AuthPluginOptions) {
    const { config } = opts
    const repo = createAuthRepository(app.db)

    let operatorKeyHash: string
    if (config.operatorApiKey) {
      operatorKeyHash = hashSecret(config.operatorApiKey)
    } else {
      // Development: generate the operator key on first start, keep only its hash, show it once.
      const key = newSecret('amo')
      if (await repo.insertSettingOnce(OPERATOR_KEY_SETTING, hashSecret(key))) {
        opts.announce(`Operator API key (shown once, keep it safe; set OPERATOR_API_KEY to use your own): ${key}`)
      }
      operatorKeyHash = (await repo.getSetting(OPERATOR_KEY_SETTING)) as string
    }

    const auth = createAuthService(repo, {
      tokenSecret: tokenSecret(config),
      tokenTtlSeconds: config.tokenTtlSeconds,
      refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
      operatorKeyHash
    })
    app.decorate('auth', auth)
    app.decorateRequest('principal', undefined)

    async function organisationPrincipal(request: FastifyRequest): Promise<OrganisationPrincipal> {
      const token = tokenFromHeader(request.headers.authorization)
      if (token === undefined) throw notAuthenticated()
      const principal = await auth.authenticate(token)
      // Who asked, even when refused: the audit trail's actor of a refused action.
      request.principal = principal
      if (principal.kind !== 'organisation') {
        throw permissionDenied('organisation tokens', 'call data-import endpoints')
      }
      return principal
    }

    app.decorate(
      'requireOrganisation',
      async function requireOrganisation(request: FastifyRequest, reply: FastifyReply) {
        let principal: OrganisationPrincipal
        try {
          principal = await organisationPrincipal(request)
        } catch (err) {
          // The body is never read: closing the connection ends its upload.
          if (err instanceof AppError) reply.header('connection', 'close')
          throw err
        }
        request.principal = principal
        await app.limits.organisation(request)
        await app.reserveBody(request, reply, principal.organisationId)
      }
    )
  },
  { name: 'auth', dependencies: ['db', 'rate-limits', 'bodies'] }
)

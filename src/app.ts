import { randomUUID } from 'node:crypto'
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RouteOptions
} from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from './config.js'
import { openDatabase, type Database } from './db/index.js'
import { openReplica } from './db/replica.js'
import { answerCodeOf, prettyLog, serializeError } from './logging.js'
import authPlugin from './plugins/auth.js'
import bodiesPlugin from './plugins/bodies.js'
import dashboardPlugin from './plugins/dashboard.js'
import dbPlugin from './plugins/db.js'
import emailsPlugin from './plugins/emails.js'
import webhooksPlugin from './plugins/webhooks.js'
import failuresPlugin from './plugins/failures.js'
import errorsPlugin, { clientError, frameworkError } from './plugins/errors.js'
import graphqlPlugin from './plugins/graphql.js'
import methodsPlugin from './plugins/methods.js'
import metricsPlugin from './plugins/metrics.js'
import openapiPlugin from './plugins/openapi.js'
import queriesPlugin from './plugins/queries.js'
import rateLimitsPlugin from './plugins/rate-limits.js'
import auditPlugin from './plugins/audit.js'
import importJobsWorkerPlugin from './plugins/import-jobs-worker.js'
import retentionPlugin from './plugins/retention.js'
import servicesPlugin from './plugins/services.js'
import turnsPlugin from './plugins/turns.js'
import tracingPlugin from './plugins/tracing.js'
import { serializerCompiler, validatorCompiler } from './validation.js'
import { CLIENT_TOKEN } from '../schemas/openapi.js'
import healthRoutes from './modules/health/routes.js'
import importsRoutes from './modules/imports/routes.js'
import failuresRoutes from './modules/failures/routes.js'
import errorCodesRoutes from './modules/error-codes/routes.js'
import importJobsRoutes from './modules/import-jobs/routes.js'
import batchesRoutes from './modules/batches/routes.js'
import reconciliationRoutes from './modules/reconciliation/routes.js'
import { loadSections, sectionRoutes } from './modules/sections.js'

export interface BuildOptions {
  /** An already opened database (tests); by default the one `config` names is opened. */
  database?: Database
  /** Where one-time secrets (a generated operator key) are shown. Default: standard output. */
  announce?: (message: string) => void
  /** Where log lines go. Default: standard output. */
  logStream?: NodeJS.WritableStream
  /** Told of every route as it is registered (tests compare them with the OpenAPI document). */
  onRoute?: (route: RouteOptions) => void
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * Fastify's request logging with one access line per request instead of two (logging was a fifth
 * of a validate's CPU): the completion line, which here carries the request too, and the error
 * code of an error answer (`code`: a refusal is this one line, without a stack). Fastify's other
 * lines (premature closes, stream and serialiser errors, unknown routes) are kept.
 */
class AccessLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return
    const code = answerCodeOf(reply)
    const line = { req: request, res: reply, responseTime: reply.elapsedTime, ...(code ? { code } : {}) }
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, 'request completed')
  }
}

/** The only way to build the app: used by the server and by every test. */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const database = options.database ?? (await openDatabase(config))
  // Opened lazily: a replica that is down at start does not stop the server (its reads go to the primary).
  const replica = config.databaseReadUrl
    ? openReplica(config.databaseReadUrl, config.databasePoolSize, {
        prepare: config.databasePrepare,
        pipeline: config.databasePipeline
      })
    : undefined
  const stream = config.logFormat === 'pretty' ? prettyLog(options.logStream) : options.logStream
  const app = Fastify({
    logger: {
      level: config.logLevel,
      ...(stream ? { stream } : {}),
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
      // Errors are logged without the data they carry (query parameters, failing rows).
      serializers: { err: serializeError }
    },
    bodyLimit: config.bodyLimitBytes,
    // The client address (rate limits, logs) is X-Forwarded-For's only behind a trusted proxy.
    ...(config.trustProxy.length > 0 ? { trustProxy: config.trustProxy } : {}),
    // Slow or stalled clients hold nothing for long. Node checks these every
    // connectionsCheckingInterval (30 s by default): once a second keeps them close to the setting.
    requestTimeout: config.requestTimeoutSeconds * 1000,
    keepAliveTimeout: config.keepAliveTimeoutSeconds * 1000,
    http: { headersTimeout: config.headersTimeoutSeconds * 1000, connectionsCheckingInterval: 1000 },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    // A sane incoming X-Request-Id is kept (so clients can correlate); otherwise a new one.
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    requestIdHeader: false,
    // A malformed or overlong path is answered in the contract's body too.
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    logController: new AccessLog(),
    // The errors plugin answers requests that arrive while closing (503 with Retry-After).
    return503OnClosing: false
  }).withTypeProvider<TypeBoxTypeProvider>()

  try {
    app.setValidatorCompiler(validatorCompiler)
    app.setSerializerCompiler(serializerCompiler)
    const onRoute = options.onRoute
    // The hidden routes that answer 405 are not the API's: tests are told of the others.
    if (onRoute) {
      app.addHook('onRoute', (route) => {
        if (route.config?.methodNotAllowed !== true) onRoute(route)
      })
    }
    app.addHook('onRequest', async function requestIdHeader(request, reply) {
      reply.header('x-request-id', request.id)
    })
    // Bodies are JSON only (parsed by the bodies plugin): anything else is 415.
    app.removeContentTypeParser(['text/plain', 'application/json'])
    // While closing, answers in flight end their keep-alive connection, so close() does not
    // wait for idle sockets to time out.
    let closing = false
    app.addHook('preClose', async function markClosing() {
      closing = true
    })
    app.addHook('onSend', async function closeConnectionWhenClosing(_request, reply) {
      if (closing) reply.header('connection', 'close')
    })

    // First: @fastify/otel instruments the routes and hooks registered after it (nothing when traces are off).
    await app.register(tracingPlugin, { config })
    await app.register(errorsPlugin)
    await app.register(methodsPlugin)
    // Unknown query parameters are refused on every route (pages and assets aside), from its own schema.
    await app.register(queriesPlugin)
    // Before every route: the OpenAPI document is built from the routes it sees registered.
    await app.register(openapiPlugin)
    await app.register(dbPlugin, { database, ...(replica ? { replica } : {}) })
    await app.register(rateLimitsPlugin, { config })
    await app.register(auditPlugin)
    await app.register(failuresPlugin)
    await app.register(retentionPlugin, { config })
    await app.register(webhooksPlugin, { config })
    await app.register(bodiesPlugin, { config })
    await app.register(authPlugin, { config, announce: options.announce ?? ((m) => process.stdout.write(m + '\n')) })
    await app.register(turnsPlugin, { config })
    await app.register(metricsPlugin, { config })
    // The composition root: every service of the routes and of GraphQL, built once. The post-import
    // sections (one endpoint each) and batches are built from the one list of sections.
    const sections = loadSections(app.db, config)
    await app.register(servicesPlugin, { config, sections })
    await app.register(graphqlPlugin)
    await app.register(emailsPlugin, { config })
    // After the other workers: it starts after them and stops after them, as it did from its routes.
    await app.register(importJobsWorkerPlugin)
    await app.register(healthRoutes)
    // The web dashboard: a page on the GraphQL API above (before answerOtherMethods, like every route).
    await app.register(dashboardPlugin)
    await app.register(
      async function dataImport(scope) {
        scope.addHook('onRequest', scope.requireOrganisation)
        // What the hooks above enforce, declared on each route for its documentation.
        scope.addHook('onRoute', function declareSecurity(route) {
          route.schema = { ...route.schema, security: CLIENT_TOKEN }
        })
        await scope.register(importsRoutes)
        await scope.register(failuresRoutes)
        await scope.register(errorCodesRoutes)
        await scope.register(reconciliationRoutes)
        await scope.register(sectionRoutes, { sections })
        await scope.register(batchesRoutes, { sections })
        await scope.register(importJobsRoutes, { config })
      },
      { prefix: '/v1/data-import' }
    )
    // Last: every path is known now, so the methods it does not serve answer 405.
    app.answerOtherMethods()
    app.log.info({ database: database.kind }, `database: ${database.description}`)
    if (replica) app.log.info(`reads that may lag by a moment: ${replica.description}`)
    return app
  } catch (err) {
    await app.close().catch(() => {})
    await replica?.close().catch(() => {})
    await database.close().catch(() => {})
    throw err
  }
}

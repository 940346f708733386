import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { GraphQLError, GraphQLScalarType, Kind, parse, type DocumentNode, type SelectionSetNode } from 'graphql'
import mercurius, { type IResolverObject, type IResolvers, type MercuriusContext } from 'mercurius'
import { graphqlSchema } from '../../schemas/graphql.js'
import { CODE } from '../../schemas/error-codes.js'
import { AppError, fieldError, unexpected, unsupportedMediaType } from '../errors.js'
import { answeredWith } from '../logging.js'
import { openSpan, type OpenSpan } from '../tracing.js'
import { auditResolvers, createAudited, keyExchangeAudit } from '../modules/audit/graphql.js'
import { authResolvers } from '../modules/auth/graphql.js'
import { createGuard, type GraphqlResolvers } from '../modules/auth/guard.js'
import { tokenFromHeader } from '../modules/auth/service.js'
import { errorCodesResolvers } from '../modules/error-codes/graphql.js'
import { sectionsResolvers } from '../modules/post-import/graphql.js'
import { failuresResolvers } from '../modules/failures/graphql.js'
import { importJobsResolvers } from '../modules/import-jobs/graphql.js'
import { operatorResolvers } from '../modules/operator/graphql.js'
import { reconciliationResolvers } from '../modules/reconciliation/graphql.js'
import { webhooksResolvers } from '../modules/webhooks/graphql.js'
import { bodyError, sendError, toAppError } from './errors.js'
import { refuseMethod } from './methods.js'

/** The operation a single request's body names (`operationName`); undefined for a batch or none. */
function operationNameOf(body: unknown): string | undefined {
  const name = (body as { operationName?: unknown } | null | undefined)?.operationName
  return !Array.isArray(body) && typeof name === 'string' ? name : undefined
}

/** What mercurius' error formatter is given as its context: only a logger, which drops its line per error. */
const QUIET_FORMATTING = { reply: { log: { info: () => {} } } } as unknown as MercuriusContext

/** Counts `obtainToken` fields of every mutation in the document, aliased ones included. */
export function countTokenFields(document: DocumentNode): number {
  const fragments = new Map<string, SelectionSetNode>()
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def.selectionSet)
  }
  const count = (set: SelectionSetNode, seen: Set<string>): number => {
    let n = 0
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD && sel.name.value === 'obtainToken') n++
      else if (sel.kind === Kind.INLINE_FRAGMENT) n += count(sel.selectionSet, seen)
      else if (sel.kind === Kind.FRAGMENT_SPREAD && !seen.has(sel.name.value)) {
        const frag = fragments.get(sel.name.value)
        if (frag) n += count(frag, new Set([...seen, sel.name.value]))
      }
    }
    return n
  }
  let total = 0
  for (const def of document.definitions) {
    if (def.kind === Kind.OPERATION_DEFINITION && def.operation === 'mutation') {
      total += count(def.selectionSet, new Set())
    }
  }
  return total
}

/** Tokens a GraphQL document may hold: bounds the work of parsing what anyone may send. */
const MAX_TOKENS = 5000
/** A request without a valid token (obtainToken) may carry at most this many bytes. */
const ANONYMOUS_BODY_LIMIT = 65_536

/**
 * The GraphQL requests of a body: one request object or a non-empty array of them, each
 * with a `query` that is GraphQL text. Returns each request's parsed document, or why the body is
 * malformed. A request that is refused here is never executed, so nothing runs that the token
 * limit did not count (mercurius would try a `query` that is not GraphQL as a JSON document tree).
 */
export function graphqlDocuments(body: unknown): DocumentNode[] | string {
  const requests = Array.isArray(body) ? body : [body]
  if (requests.length === 0) return 'An empty batch holds no request.'
  const documents: DocumentNode[] = []
  for (const request of requests) {
    if (request === null || typeof request !== 'object' || Array.isArray(request)) {
      return 'Each request must be an object with a query.'
    }
    const query = (request as { query?: unknown }).query
    if (typeof query !== 'string') return 'query must be a string holding a GraphQL document.'
    try {
      documents.push(parse(query, { maxTokens: MAX_TOKENS }))
    } catch (err) {
      return err instanceof GraphQLError ? err.message : 'query is not a GraphQL document.'
    }
  }
  return documents
}

const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: () => {
    throw new GraphQLError('JSON literals are not accepted as input')
  }
})

/**
 * The resolvers of every module, by type, with the JSON scalar: a field that two modules both
 * resolve is a mistake, refused when the app is built.
 */
function composeResolvers(parts: GraphqlResolvers[]): IResolvers {
  const byType: Record<string, IResolverObject> = {}
  for (const part of parts) {
    for (const [type, fields] of Object.entries(part)) {
      const known = (byType[type] ??= {})
      for (const [field, resolve] of Object.entries(fields ?? {})) {
        if (field in known) throw new Error(`GraphQL field ${type}.${field} is resolved twice`)
        known[field] = resolve
      }
    }
  }
  return { JSON: JSONScalar, ...byType }
}

/** `POST /graphql` (mercurius): obtainToken and the operator surface. */
export default fp(
  async function graphqlPlugin(app: FastifyInstance) {
    const guard = createGuard(app.auth)
    const audited = createAudited(guard, app.audit)
    const { operator, importJobsReader, dashboardReconciliation } = app.services
    /** The id of the supplier with this code, the caller's (`owner`) or any for the operator; `not_found` otherwise. */
    const supplierIdOf = async (code: string, owner: string | undefined) => (await operator.supplier(code, owner)).id

    // Each module's fields beside its module; the services are the composition root's (src/plugins/services.ts).
    const resolvers = composeResolvers([
      authResolvers({ auth: app.auth, auditOf: keyExchangeAudit(app.audit) }),
      operatorResolvers({
        guard,
        audited,
        operator,
        retention: app.retention,
        failures: app.failures,
        supplierIdOf
      }),
      failuresResolvers({ guard, failures: app.failures, supplierIdOf }),
      reconciliationResolvers({ guard, reconciliation: dashboardReconciliation, supplierIdOf }),
      errorCodesResolvers({ guard }),
      sectionsResolvers({ guard }),
      importJobsResolvers({ guard, audited, jobs: importJobsReader }),
      webhooksResolvers({ guard, audited, webhooks: app.webhooks }),
      auditResolvers({ guard, audit: app.audit })
    ])

    async function hasValidToken(request: FastifyRequest): Promise<boolean> {
      try {
        const token = tokenFromHeader(request.headers.authorization)
        if (token === undefined) return false
        await app.auth.authenticate(token) // throws for a token that is not valid
        return true
      } catch {
        return false
      }
    }

    await app.register(async function graphqlScope(scope) {
      // GraphQL is POST only: mercurius's GET route (and its HEAD) answers 405.
      scope.addHook('onRoute', function postOnly(route) {
        const method = [route.method].flat()
        if (method.includes('GET') || method.includes('HEAD')) {
          route.config = { ...route.config, methodNotAllowed: true }
          route.onRequest = [refuseMethod(['POST'])]
        }
      })

      // A caller without a valid token (obtainToken) sends little: its body is capped before it is read.
      scope.addHook('onRequest', async function capAnonymousBody(request) {
        if (!(await hasValidToken(request))) app.capBody(request, ANONYMOUS_BODY_LIMIT)
      })

      // Only well-formed GraphQL requests go on; token issuing is limited per client address,
      // counting every obtainToken field of the documents that will run.
      scope.addHook('preHandler', async function checkRequests(request: FastifyRequest, reply: FastifyReply) {
        if (!/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
          sendError(reply, request, unsupportedMediaType(['application/json']))
          return reply
        }
        const documents = graphqlDocuments(request.body)
        if (typeof documents === 'string') {
          const error = fieldError(CODE.invalid, { detail: documents })
          throw new mercurius.ErrorWithProps(error.message, { code: error.code }, error.statusCode)
        }
        const fields = documents.reduce((n, document) => n + countTokenFields(document), 0)
        if (fields === 0) return
        try {
          await app.limits.tokens(request, fields)
        } catch (err) {
          if (!(err instanceof AppError)) throw err
          sendError(reply, request, err)
          return reply
        }
      })

      await scope.register(mercurius, {
        schema: graphqlSchema,
        resolvers,
        path: '/graphql',
        graphiql: false,
        allowBatchedQueries: true,
        graphql: { parseOptions: { maxTokens: MAX_TOKENS } },
        errorHandler: async (error, request, reply) => {
          // Body parse, size and type problems get the contract's body like everywhere else.
          const known = error instanceof AppError ? error : bodyError(error) ? toAppError(error, request) : undefined
          if (known) return sendError(reply, request, known)
          // Keep the error's own status (400 for invalid documents) however many errors it expands to.
          const status = typeof error.statusCode === 'number' ? error.statusCode : 500
          const { statusCode, response } = formatErrors(
            { errors: [new GraphQLError(error.message, { originalError: error })], statusCode: status } as never,
            { reply, app } as unknown as MercuriusContext
          )
          reply.code(statusCode).send(response)
        },
        errorFormatter: formatErrors
      })
      if (app.traceRoot) traceOperations(scope)
    })

    /**
     * A span per GraphQL operation, named by its type and name (`query failures`): never its
     * document or variables, which may hold keys and personal data.
     */
    function traceOperations(scope: FastifyInstance): void {
      const open = new WeakMap<object, OpenSpan[]>()
      scope.graphql.addHook('preExecution', async function operationSpan(_schema, document, context) {
        const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION)
        const chosen = operationNameOf(context.reply.request.body)
        const operation = operations.find((o) => chosen === undefined || o.name?.value === chosen) ?? operations[0]
        const type = operation?.operation ?? 'query'
        const name = operation?.name?.value
        const started = openSpan(name ? `${type} ${name}` : type, {
          'graphql.operation.type': type,
          ...(name ? { 'graphql.operation.name': name } : {})
        })
        if (started) open.set(context, [...(open.get(context) ?? []), started])
      })
      scope.graphql.addHook('onResolution', async function operationSpanEnd(execution, context) {
        const started = open.get(context)?.shift()
        const codes = (execution.errors ?? []).map((e) => e.extensions?.code).filter((c) => typeof c === 'string')
        started?.end(codes.length > 0 ? { 'amis.graphql.error_codes': [...new Set(codes as string[])] } : {})
      })
    }

    /**
     * mercurius' formatting, with unexpected errors logged (with their stack) and masked. Expected
     * ones (a refusal, a document that is not valid) are not logged on their own: their codes go on
     * the request's access line. mercurius' formatter would log each at `info` with its stack, so
     * it is given a logger that drops them.
     */
    function formatErrors(execution: Parameters<typeof mercurius.defaultErrorFormatter>[0], ctx: MercuriusContext) {
      const codes = new Set<string>()
      const errors = execution.errors.map((error) => {
        const original = error.originalError as (Error & { statusCode?: unknown; errors?: unknown }) | undefined | null
        const expected =
          original === undefined ||
          original === null ||
          original instanceof mercurius.ErrorWithProps ||
          Array.isArray(original.errors) ||
          (typeof original.statusCode === 'number' && original.statusCode < 500)
        if (expected) {
          // A document's validation errors come as one error holding them all.
          const inner: unknown = (original as { errors?: unknown } | null | undefined)?.errors
          const each = Array.isArray(inner) ? (inner as GraphQLError[]) : [error]
          for (const e of each) {
            // Every error carries a code: a document or a variable that is not valid is `invalid`.
            if (typeof e.extensions.code !== 'string') (e.extensions as Record<string, unknown>).code = CODE.invalid
            codes.add(e.extensions.code as string)
          }
          return error
        }
        // Unexpected: logged in full, answered without internals.
        ctx.reply.log.error({ err: original }, 'graphql request failed')
        const masked = unexpected(original)
        codes.add(masked.code)
        return new GraphQLError(masked.message, {
          path: error.path,
          extensions: { code: masked.code, request_id: ctx.reply.request.id }
        })
      })
      if (codes.size > 0) answeredWith(ctx.reply, [...codes].join(','))
      return mercurius.defaultErrorFormatter({ ...execution, errors }, QUIET_FORMATTING)
    }
  },
  {
    name: 'graphql',
    dependencies: [
      'tracing',
      'db',
      'auth',
      'audit',
      'bodies',
      'rate-limits',
      'errors',
      'failures',
      'retention',
      'webhooks',
      'services'
    ]
  }
)

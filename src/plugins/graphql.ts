import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { GraphQLError, GraphQLScalarType, Kind, parse, type DocumentNode, type SelectionSetNode } from 'graphql'
import mercurius, { type IResolvers, type MercuriusContext } from 'mercurius'
import type { AuditAction } from '../../schemas/audit.js'
import { graphqlSchema } from '../../schemas/graphql.js'
import { isWellFormedJson } from '../../schemas/text.js'
import { CODE, formatDetail } from '../../schemas/error-codes.js'
import { JOB_STATES, type ImportJob, type JobState } from '../../schemas/import-jobs.js'
import { errorCodeList } from '../../schemas/error-code-list.js'
import { AppError, fieldError, unexpected, unsupportedMediaType } from '../errors.js'
import { formatDateTime, formatNullableDateTime } from '../format.js'
import { answeredWith } from '../logging.js'
import { openSpan, type OpenSpan } from '../tracing.js'
import type { AuditRequest, AuditTarget, RecordChange } from '../modules/audit/service.js'
import { tokenFromHeader, type Principal } from '../modules/auth/service.js'
import type { UpdateSupplierInput } from '../modules/operator/service.js'
import type { WebhookCaller } from '../modules/webhooks/service.js'
import { bodyError, sendError, toAppError } from './errors.js'
import { refuseMethod } from './methods.js'
import { parseAfter, STEPS, type Step } from '../modules/failures/service.js'

/** The operation a single request's body names (`operationName`); undefined for a batch or none. */
function operationNameOf(body: unknown): string | undefined {
  const name = (body as { operationName?: unknown } | null | undefined)?.operationName
  return !Array.isArray(body) && typeof name === 'string' ? name : undefined
}

/** What mercurius' error formatter is given as its context: only a logger, which drops its line per error. */
const QUIET_FORMATTING = { reply: { log: { info: () => {} } } } as unknown as MercuriusContext

/** `historical_agreements` → `historicalAgreements`: GraphQL names of the REST keys. */
const camelCase = (name: string) => name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())

function graphqlError(code: string, message: string): mercurius.ErrorWithProps {
  return new mercurius.ErrorWithProps(message, { code })
}

/** An audit bound, an ISO 8601 date-time with an offset or Z. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i

function instant(value: string, name: string): Date {
  const at = new Date(value)
  if (!INSTANT.test(value) || Number.isNaN(at.getTime()) || value.startsWith('0000')) {
    throw invalid(`${name} must be a date-time with an offset or Z, e.g. 2026-11-28T09:00:00Z.`)
  }
  return at
}

/** A job id as the service makes them (a UUID). */
const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The REST job object with its keys in camelCase (its lines' too). */
function jobFields(job: ImportJob) {
  return {
    id: job.id,
    importSupplier: job.import_supplier,
    state: job.state,
    dryRun: job.dry_run,
    createdAt: job.created_at,
    startedAt: job.started_at,
    finishedAt: job.finished_at,
    notBefore: job.not_before,
    notAfter: job.not_after,
    cancelledReason: job.cancelled_reason,
    failureCodes: job.failure_codes,
    lines: Object.fromEntries(Object.entries(job.lines).map(([outcome, n]) => [camelCase(outcome), n])),
    ratePerSecond: job.rate_per_second,
    etaSeconds: job.eta_seconds
  }
}

/** A field's `invalid` error: `detail` says what is wrong with its arguments. */
const invalid = (detail: string): AppError => fieldError(CODE.invalid, { detail })

/** Runs a resolver body and turns our `AppError`s into GraphQL errors with `extensions.code`. */
async function guarded<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (err) {
    if (err instanceof AppError) throw graphqlError(err.code, err.message)
    throw err
  }
}

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

/** `POST /graphql` (mercurius): obtainToken and the operator surface. */
export default fp(
  async function graphqlPlugin(app: FastifyInstance) {
    // Built in the composition root (src/plugins/services.ts), which says which reads may lag.
    const { operator, importJobsReader: jobs, dashboardReconciliation: reconciliation } = app.services

    async function principal(ctx: MercuriusContext): Promise<Principal> {
      const token = tokenFromHeader(ctx.reply.request.headers.authorization)
      if (token === undefined) throw fieldError(CODE.not_authenticated)
      return app.auth.authenticate(token)
    }

    /** Resolver for operator-only fields. */
    function forOperator<A, T>(run: (args: A) => Promise<T>) {
      return (_root: unknown, args: A, ctx: MercuriusContext) =>
        guarded(async () => {
          if ((await principal(ctx)).kind !== 'operator') {
            throw fieldError(CODE.permission_denied, { detail: 'Only the service operator may use this field.' })
          }
          if (!isWellFormedJson(args)) throw invalid('Strings must be well-formed Unicode without U+0000.')
          return run(args)
        })
    }

    /**
     * Resolver for the fields organisations may read for their own suppliers: `owner` is the
     * organisation's name, undefined for the operator (every supplier).
     */
    function forOwnerOrOperator<A, T>(run: (args: A, owner: string | undefined) => Promise<T>) {
      return (_root: unknown, args: A, ctx: MercuriusContext) =>
        guarded(async () => {
          const caller = await principal(ctx)
          if (!isWellFormedJson(args)) throw invalid('Strings must be well-formed Unicode without U+0000.')
          return run(args, caller.kind === 'organisation' ? caller.organisationName : undefined)
        })
    }

    /** Resolver for the import job fields: an organisation's own jobs (its id), every job for the operator (null). */
    function forJobs<A, T>(run: (args: A, organisationId: string | null) => Promise<T>) {
      return (_root: unknown, args: A, ctx: MercuriusContext) =>
        guarded(async () => {
          const caller = await principal(ctx)
          if (!isWellFormedJson(args)) throw invalid('Strings must be well-formed Unicode without U+0000.')
          return run(args, caller.kind === 'organisation' ? caller.organisationId : null)
        })
    }
    /** Resolver for the webhook fields: an organisation's own endpoints, every one for the operator. */
    function forWebhooks<A, T>(run: (args: A, caller: WebhookCaller) => Promise<T>) {
      return (_root: unknown, args: A, ctx: MercuriusContext) =>
        guarded(async () => {
          const who = await principal(ctx)
          if (!isWellFormedJson(args)) throw invalid('Strings must be well-formed Unicode without U+0000.')
          return run(args, webhookCaller(who))
        })
    }
    const { webhooks, audit } = app

    /** Who asks, from where, in which request: what every audit record of this request says. */
    const auditRequest = (ctx: MercuriusContext, caller: Principal | undefined): AuditRequest => ({
      principal: caller,
      ip: ctx.reply.request.ip,
      requestId: String(ctx.reply.request.id)
    })

    /**
     * Resolver for an audited mutation: `run` gets the writer of the action's record, to call in
     * the transaction of its change, and the caller; a refusal is recorded on its own with its
     * code and the target `targetOf` names (kept only when it exists and is the caller's to see).
     * `who`: the operator only (the default), or anyone with a valid token.
     */
    function audited<A, T>(
      action: AuditAction,
      targetOf: (args: A) => AuditTarget | null,
      run: (args: A, record: RecordChange, caller: Principal) => Promise<T>,
      who: 'operator' | 'anyone' = 'operator'
    ) {
      return (_root: unknown, args: A, ctx: MercuriusContext) =>
        guarded(async () => {
          let caller: Principal | undefined
          try {
            caller = await principal(ctx)
            if (who === 'operator' && caller.kind !== 'operator') {
              throw fieldError(CODE.permission_denied, { detail: 'Only the service operator may use this field.' })
            }
            if (!isWellFormedJson(args)) throw invalid('Strings must be well-formed Unicode without U+0000.')
            const result = await run(args, audit.recorder(auditRequest(ctx, caller), action), caller)
            audit.committed(action)
            return result
          } catch (err) {
            if (err instanceof AppError) {
              const target = isWellFormedJson(args) ? targetOf(args) : null
              await audit.refused(auditRequest(ctx, caller), action, err.code, target)
            }
            throw err
          }
        })
    }
    /** The webhook service's view of a caller: an organisation's own endpoints, every one for the operator. */
    const webhookCaller = (who: Principal): WebhookCaller =>
      who.kind === 'organisation'
        ? { organisationId: who.organisationId, organisationName: who.organisationName }
        : { organisationId: undefined, organisationName: undefined }
    type Input<T> = { input: T }
    const processTarget = ({ input }: Input<{ importSupplierCode: string; externalAccountNumber: string }>) => ({
      type: 'import_process' as const,
      id: `${input.importSupplierCode}/${input.externalAccountNumber}`
    })

    const jobNotFound = (id: string) => fieldError(CODE.not_found, { detail: `Import job ${id} does not exist.` })

    const { failures } = app
    const codes = errorCodeList()
    const supplierIdOf = async (code: string, owner: string | undefined) => (await operator.supplier(code, owner)).id

    const resolvers: IResolvers = {
      JSON: JSONScalar,
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
            if (!hasKey) return app.auth.tokenFromRefreshToken(input.refreshToken!)
            // Exchanging an API key is audited (a revoked key's refusal too); a renewal is not.
            const pair = await app.auth.tokenFromApiKey(input.APIKey!, {
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
          }),
        createOrganisation: audited(
          'createOrganisation',
          ({ input }: Input<{ name: string }>) => ({ type: 'organisation', id: input.name.trim() }),
          ({ input }, record) => operator.createOrganisation(input.name, record)
        ),
        createApiKey: audited(
          'createApiKey',
          () => null,
          ({ input }: Input<{ organisation: string }>, record) => operator.createApiKey(input.organisation, record)
        ),
        revokeApiKey: audited(
          'revokeApiKey',
          ({ input }: Input<{ id: string }>) => ({ type: 'api_key', id: input.id }),
          async ({ input }, record) => {
            const key = await operator.revokeApiKey(input.id, record)
            return { ...key, revokedAt: formatNullableDateTime(key.revokedAt) }
          }
        ),
        createImportSupplier: audited(
          'createImportSupplier',
          ({ input }: Input<Parameters<typeof operator.createImportSupplier>[0]>) => ({
            type: 'import_supplier',
            id: input.code
          }),
          ({ input }, record) => operator.createImportSupplier(input, record)
        ),
        updateImportSupplier: audited(
          'updateImportSupplier',
          ({ input }: Input<UpdateSupplierInput>) => ({ type: 'import_supplier', id: input.code }),
          ({ input }, record) => operator.updateImportSupplier(input, record)
        ),
        createOperationsTeam: audited(
          'createOperationsTeam',
          ({ input }: Input<{ name: string }>) => ({ type: 'operations_team', id: input.name.trim() }),
          ({ input }, record) => operator.createOperationsTeam(input.name, record)
        ),
        skipImportProcess: audited('skipImportProcess', processTarget, ({ input }, record) =>
          operator.skipImportProcess(input.importSupplierCode, input.externalAccountNumber, record)
        ),
        eraseStagedData: audited('eraseStagedData', processTarget, async ({ input }, record) =>
          app.retention.eraseStagedData(
            await operator.supplier(input.importSupplierCode),
            input.externalAccountNumber,
            record
          )
        ),
        cancelImportJob: audited(
          'cancelImportJob',
          ({ input }: Input<{ id: string }>) => ({ type: 'import_job', id: input.id }),
          async ({ input }, record, caller) => {
            const done = await jobs.cancel(
              caller.kind === 'organisation' ? caller.organisationId : null,
              input.id,
              record
            )
            if ('job' in done) return jobFields(done.job)
            if (done.refused === 'missing') throw jobNotFound(input.id)
            throw invalid(formatDetail(CODE.import_job_not_cancellable, { state: done.state }))
          },
          'anyone'
        ),
        createWebhookEndpoint: audited(
          'createWebhookEndpoint',
          () => null,
          ({ input }: Input<{ organisation: string; url: string; events: string[] }>, record, caller) =>
            webhooks.create(webhookCaller(caller), input, record),
          'anyone'
        ),
        deleteWebhookEndpoint: audited(
          'deleteWebhookEndpoint',
          ({ input }: Input<{ id: string }>) => ({ type: 'webhook_endpoint', id: input.id }),
          ({ input }, record, caller) => webhooks.remove(webhookCaller(caller), input.id, record),
          'anyone'
        ),
        redeliverWebhook: audited(
          'redeliverWebhook',
          ({ input }: Input<{ deliveryId: string }>) => ({ type: 'webhook_delivery', id: input.deliveryId }),
          ({ input }, record, caller) => webhooks.redeliver(webhookCaller(caller), input.deliveryId, record),
          'anyone'
        )
      },
      WebhookDelivery: {
        attemptLog: (delivery: { id: string }) => webhooks.attempts(delivery.id)
      },
      // The job was the caller's to read: its lines are too.
      ImportJob: {
        notJsonLines: (job: ReturnType<typeof jobFields>, args: { first?: number | null }) =>
          guarded(async () => {
            const first = args.first ?? 20
            if (!Number.isInteger(first) || first < 1 || first > 100) throw invalid('first must be 1–100.')
            return jobs.notJsonLines({ id: job.id, failure_codes: job.failureCodes }, first)
          })
      },
      Query: {
        importSuppliers: forOwnerOrOperator((_args: unknown, owner) => operator.listImportSuppliers(owner)),
        organisations: forOperator(() => operator.listOrganisations()),
        apiKeys: forOperator(async (args: { organisation?: string | null }) => {
          const keys = await operator.listApiKeys(args.organisation ?? undefined)
          return keys.map((k) => ({
            ...k,
            createdAt: formatDateTime(k.createdAt),
            revokedAt: formatNullableDateTime(k.revokedAt)
          }))
        }),
        operationsTeams: forOperator(() => operator.listOperationsTeams()),
        operationsTeamExists: forOwnerOrOperator((args: { name: string }) => operator.operationsTeamExists(args.name)),
        importProcessEvents: forOwnerOrOperator(
          async (args: { importSupplierCode: string; externalAccountNumber: string }, owner) => {
            const events = await operator.importProcessEvents(
              args.importSupplierCode,
              args.externalAccountNumber,
              owner
            )
            return events.map((e) => ({ ...e, at: formatDateTime(e.at) }))
          }
        ),
        migrationProgress: forOwnerOrOperator(async (args: { importSupplierCode: string }, owner) => {
          const supplierId = await supplierIdOf(args.importSupplierCode, owner)
          const [progress, failing] = await Promise.all([
            operator.migrationProgress(args.importSupplierCode, owner),
            failures.failingAccounts(supplierId)
          ])
          return { ...progress, failing }
        }),
        migrationFailureSummary: forOwnerOrOperator(async (args: { importSupplierCode: string }, owner) => {
          const summary = await failures.summary(await supplierIdOf(args.importSupplierCode, owner))
          return {
            failingAccounts: summary.failing_accounts,
            byStep: Object.fromEntries(Object.entries(summary.by_step).map(([step, n]) => [camelCase(step), n])),
            byCode: summary.by_code
          }
        }),
        reconciliation: forOwnerOrOperator(async (args: { importSupplierCode: string }, owner) => {
          const totals = await reconciliation.totalsOf(await supplierIdOf(args.importSupplierCode, owner))
          return {
            accountsCreated: totals.accounts_created,
            accountsSkipped: totals.accounts_skipped,
            accountsPending: totals.accounts_pending,
            ledgers: totals.ledgers.map((l) => ({
              ledgerCode: l.ledger_code,
              accounts: l.accounts,
              balanceSum: l.balance_sum
            })),
            transactions: { count: totals.transactions.count, amountSum: totals.transactions.amount_sum },
            notes: totals.notes,
            historicalAgreements: totals.historical_agreements,
            historicalStatements: totals.historical_statements,
            billingDocuments: totals.billing_documents,
            paymentInstructions: totals.payment_instructions
          }
        }),
        migrationFailures: forOwnerOrOperator(
          async (
            args: {
              importSupplierCode: string
              step?: string | null
              code?: string | null
              first?: number | null
              after?: string | null
              externalAccountNumber?: string | null
            },
            owner
          ) => {
            const first = args.first ?? 100
            if (!Number.isInteger(first) || first < 1 || first > 10_000) throw invalid('first must be 1–10000.')
            if (args.step != null && !STEPS.includes(args.step as Step)) {
              throw invalid(`step must be one of ${STEPS.join(', ')}.`)
            }
            const items = await failures.list(await supplierIdOf(args.importSupplierCode, owner), {
              ...(args.step != null ? { step: args.step as Step } : {}),
              ...(args.code != null ? { code: args.code } : {}),
              ...(args.after != null ? { after: parseAfter(args.after) } : {}),
              ...(args.externalAccountNumber != null ? { external: args.externalAccountNumber } : {}),
              limit: first
            })
            return items.map((f) => ({
              externalAccountNumber: f.external_account_number,
              step: f.step,
              failedAt: f.failed_at,
              attempts: f.attempts,
              httpStatus: f.http_status,
              code: f.code,
              errors: f.errors
            }))
          }
        ),
        migrationTimeline: forOwnerOrOperator(
          async (args: { importSupplierCode: string; minutes?: number | null }, owner) => {
            const minutes = args.minutes ?? 60
            if (!Number.isInteger(minutes) || minutes < 1 || minutes > 10_080) throw invalid('minutes must be 1–10080.')
            return failures.readTimeline(await supplierIdOf(args.importSupplierCode, owner), minutes)
          }
        ),
        // Fixed texts, the same for every caller: the operator's dashboard shows the meanings too.
        errorCodes: forOwnerOrOperator(async () => codes),
        importJobs: forJobs(
          async (
            args: {
              importSupplierCode?: string | null
              state?: string | null
              first?: number | null
              after?: string | null
            },
            organisationId
          ) => {
            const first = args.first ?? 100
            if (!Number.isInteger(first) || first < 1 || first > 10_000) throw invalid('first must be 1–10000.')
            if (args.state != null && !JOB_STATES.includes(args.state as JobState)) {
              throw invalid(`state must be one of ${JOB_STATES.join(', ')}.`)
            }
            if (args.after != null && !JOB_ID.test(args.after)) throw invalid('after must be the id of a job.')
            const list = await jobs.list(organisationId, {
              ...(args.importSupplierCode != null ? { supplierCode: args.importSupplierCode } : {}),
              ...(args.state != null ? { state: args.state as JobState } : {}),
              ...(args.after != null ? { after: args.after } : {}),
              limit: first
            })
            if (list === undefined) {
              throw fieldError(CODE.not_found, { detail: `Import supplier ${args.importSupplierCode} does not exist.` })
            }
            return list.map(jobFields)
          }
        ),
        importJob: forJobs(async (args: { id: string }, organisationId) => {
          const job = await jobs.get(organisationId, args.id)
          return job === undefined ? null : jobFields(job)
        }),
        webhookEndpoints: forWebhooks((args: { organisation?: string | null }, caller) =>
          webhooks.list(caller, args.organisation ?? undefined)
        ),
        auditEvents: (
          _root: unknown,
          args: {
            organisation?: string | null
            action?: string | null
            since?: string | null
            until?: string | null
            first?: number | null
            after?: string | null
          },
          ctx: MercuriusContext
        ) =>
          guarded(async () => {
            const caller = await principal(ctx)
            if (!isWellFormedJson(args)) throw invalid('Strings must be well-formed Unicode without U+0000.')
            const first = args.first ?? 100
            if (!Number.isInteger(first) || first < 1 || first > 1000) throw invalid('first must be 1–1000.')
            if (args.after != null && !/^[1-9][0-9]{0,14}$/.test(args.after)) {
              throw invalid('after must be the id of an audit event.')
            }
            const unknown = () =>
              fieldError(CODE.not_found, { detail: `Organisation ${args.organisation} does not exist.` })
            let organisationId: string | undefined
            if (caller.kind === 'organisation') {
              // An organisation reads what concerns it; another's name is as if it did not exist.
              if (args.organisation != null && args.organisation !== caller.organisationName) throw unknown()
              organisationId = caller.organisationId
            } else if (args.organisation != null) {
              organisationId = await audit.organisationIdByName(args.organisation)
              if (organisationId === undefined) throw unknown()
            }
            return audit.list(
              {
                ...(organisationId !== undefined ? { organisationId } : {}),
                ...(args.action != null ? { action: args.action } : {}),
                ...(args.since != null ? { since: instant(args.since, 'since') } : {}),
                ...(args.until != null ? { until: instant(args.until, 'until') } : {}),
                ...(args.after != null ? { before: Number(args.after) } : {}),
                limit: first
              },
              caller.kind === 'operator'
            )
          }),
        webhookDeliveries: forWebhooks(
          (args: { endpointId: string; state?: string | null; first?: number | null; after?: string | null }, caller) =>
            webhooks.deliveries(caller, {
              endpointId: args.endpointId,
              ...(args.state != null ? { state: args.state } : {}),
              ...(args.first != null ? { first: args.first } : {}),
              ...(args.after != null ? { after: args.after } : {})
            })
        )
      }
    }

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

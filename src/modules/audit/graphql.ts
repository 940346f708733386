import type { MercuriusContext } from 'mercurius'
import type { AuditAction } from '../../../schemas/audit.js'
import { CODE } from '../../../schemas/error-codes.js'
import { isWellFormedJson } from '../../../schemas/text.js'
import { AppError, fieldError } from '../../errors.js'
import { guarded, invalid, type GraphqlResolvers, type Guard, type Who } from '../auth/guard.js'
import type { KeyExchangeAudit, Principal } from '../auth/service.js'
import type { AuditLog, AuditRequest, AuditTarget, RecordChange } from './service.js'

/** An audit bound, an ISO 8601 date-time with an offset or Z. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i

function instant(value: string, name: string): Date {
  const at = new Date(value)
  if (!INSTANT.test(value) || Number.isNaN(at.getTime()) || value.startsWith('0000')) {
    throw invalid(`${name} must be a date-time with an offset or Z, e.g. 2026-11-28T09:00:00Z.`)
  }
  return at
}

/** Who asks, from where, in which request: what every audit record of a GraphQL request says. */
export const auditRequest = (ctx: MercuriusContext, caller: Principal | undefined): AuditRequest => ({
  principal: caller,
  ip: ctx.reply.request.ip,
  requestId: String(ctx.reply.request.id)
})

/**
 * Resolvers for audited mutations, behind the guard: `run` gets the writer of the action's record,
 * to call in the transaction of its change, and the caller; a refusal is recorded on its own with
 * its code and the target `targetOf` names (kept only when it exists and is the caller's to see).
 * `who`: the operator only (the default), or anyone with a valid token.
 */
export function createAudited(guard: Guard, audit: AuditLog) {
  return function audited<A, T>(
    action: AuditAction,
    targetOf: (args: A) => AuditTarget | null,
    run: (args: A, record: RecordChange, caller: Principal) => Promise<T>,
    who: Who = 'operator'
  ) {
    return (_root: unknown, args: A, ctx: MercuriusContext) =>
      guarded(async () => {
        let caller: Principal | undefined
        try {
          caller = await guard.callerOf(ctx)
          guard.admit(caller, args, who)
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
}

export type Audited = ReturnType<typeof createAudited>

/** The audit of obtainToken's API-key exchange, for a request (the auth module's resolver takes it). */
export function keyExchangeAudit(audit: AuditLog) {
  return (ctx: MercuriusContext): KeyExchangeAudit & { committed(): void } => ({
    succeeded: (tx, who) =>
      audit.recorder(auditRequest(ctx, who), 'obtainToken')(
        tx,
        who.kind === 'organisation' ? { type: 'api_key', id: who.apiKeyId } : null
      ),
    revoked: (id) =>
      audit.refused(auditRequest(ctx, undefined), 'obtainToken', CODE.authentication_failed, {
        type: 'api_key',
        id
      }),
    committed: () => audit.committed('obtainToken')
  })
}

/** `auditEvents`: an organisation reads what concerns it, the operator everything. */
export function auditResolvers(deps: { guard: Guard; audit: AuditLog }): GraphqlResolvers {
  const { guard, audit } = deps
  return {
    Query: {
      auditEvents: guard.resolver(
        'anyone',
        async (
          args: {
            organisation?: string | null
            action?: string | null
            since?: string | null
            until?: string | null
            first?: number | null
            after?: string | null
          },
          caller
        ) => {
          const first = args.first ?? 100
          if (!Number.isInteger(first) || first < 1 || first > 1000) throw invalid('first must be 1–1000.')
          if (args.after != null && !/^[1-9][0-9]{0,14}$/.test(args.after)) {
            throw invalid('after must be the id of an audit event.')
          }
          const unknown = () => fieldError(CODE.not_found, { what: `Organisation ${args.organisation}` })
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
        }
      )
    }
  }
}

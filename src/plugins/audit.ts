import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { createAuditRepository } from '../modules/audit/repository.js'
import { createAuditLog, type AuditLog, type AuditRequest, type AuditTarget } from '../modules/audit/service.js'
import type { AuditAction } from '../../schemas/audit.js'
import { answerCodeOf } from '../logging.js'
import { sentError } from './errors.js'

type WrittenListener = (action: string, outcome: 'succeeded' | 'refused') => void

/** An onSend hook that records a REST action's refusal. */
type RefusalHook = (request: FastifyRequest, reply: FastifyReply, payload: unknown) => Promise<unknown>

declare module 'fastify' {
  interface FastifyInstance {
    audit: AuditLog & {
      onWritten(listener: WrittenListener): void
      /** Who asks, from where, in which request, for the records of a REST request. */
      requestOf(request: FastifyRequest): AuditRequest
      /**
       * The onSend hook of an audited REST route: a refusal (a 4xx answer) is recorded as `action`
       * with the code of its answer (the first entry's, else the top-level one) and the target
       * `targetOf` names (kept only when it exists and is the caller's to see).
       */
      refusals(action: AuditAction, targetOf: (request: FastifyRequest) => AuditTarget | null): RefusalHook
    }
  }
}

/** The audit trail: who did what, written with each administrative action. */
export default fp(
  async function auditPlugin(app: FastifyInstance) {
    const listeners: WrittenListener[] = []
    const log = createAuditLog(app.db, createAuditRepository(app.db), (action, outcome) => {
      for (const listener of listeners) listener(action, outcome)
    })
    const requestOf = (request: FastifyRequest): AuditRequest => ({
      principal: request.principal,
      ip: request.ip,
      requestId: String(request.id)
    })
    app.decorate('audit', {
      ...log,
      onWritten: (listener: WrittenListener) => {
        listeners.push(listener)
      },
      requestOf,
      refusals(action: AuditAction, targetOf: (request: FastifyRequest) => AuditTarget | null): RefusalHook {
        return async function recordRefusal(request, reply, payload) {
          // A 5xx is the service's failure, not a refusal of the caller's action.
          if (reply.statusCode < 400 || reply.statusCode >= 500) return payload
          const error = sentError(reply)
          const code = error?.errors[0]?.code ?? error?.code ?? answerCodeOf(reply) ?? String(reply.statusCode)
          try {
            await log.refused(requestOf(request), action, code, targetOf(request))
          } catch (err) {
            // The refusal is answered whatever happens to its record.
            request.log.error({ err, action }, 'audit record of a refusal not written')
          }
          return payload
        }
      }
    })
  },
  { name: 'audit', dependencies: ['db', 'errors'] }
)

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { CODE } from '../../schemas/error-codes.js'
import type { FailureStep } from '../modules/failures/route-config.js'
import { createFailuresService, type FailuresService } from '../modules/failures/service.js'
import { toAppError } from './errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    failures: FailuresService
  }
  interface FastifyContextConfig {
    failureStep?: FailureStep
  }
}

function field(body: unknown, name: string): unknown {
  return body !== null && typeof body === 'object' && !Array.isArray(body)
    ? (body as Record<string, unknown>)[name]
    : undefined
}

/**
 * Failure records for the routes that declare a `failureStep`: the one place a step's
 * answer becomes a record. Runs before the answer is sent, so records follow the order of answers.
 */
export default fp(
  async function failuresPlugin(app: FastifyInstance) {
    const failures = createFailuresService(app.db, { log: app.log, reads: app.reads })
    app.decorate('failures', failures)
    app.addHook('onClose', async function writeTimeline() {
      await failures.close()
    })

    app.addHook(
      'onError',
      async function recordFailure(request: FastifyRequest, _reply: FastifyReply, error: FastifyError) {
        const config = request.routeOptions.config?.failureStep
        const principal = request.principal
        if (!config || principal?.kind !== 'organisation') return
        const known = toAppError(error, request)
        await failures.settle(
          {
            step: config.step,
            supplierCode: field(request.body, config.supplierField),
            externalAccountNumber: field(request.body, 'external_account_number'),
            organisationId: principal.organisationId,
            status: known?.statusCode ?? 500,
            code: known?.code ?? CODE.server_error,
            errors: known?.errors ?? []
          },
          request.log
        )
      }
    )

    app.addHook('onSend', async function clearFailure(request: FastifyRequest, reply: FastifyReply) {
      const config = request.routeOptions.config?.failureStep
      const principal = request.principal
      if (!config?.clearOnSuccess || principal?.kind !== 'organisation' || reply.statusCode >= 300) return
      await failures.cleared(
        {
          step: config.step,
          supplierCode: field(request.body, config.supplierField),
          externalAccountNumber: field(request.body, 'external_account_number'),
          organisationId: principal.organisationId
        },
        request.log
      )
    })
  },
  { name: 'failures', dependencies: ['db', 'errors'] }
)

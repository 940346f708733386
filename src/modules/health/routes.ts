import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CODE, ERROR_CODES } from '../../../schemas/error-codes.js'
import { HealthResponses, ReadyResponses } from '../../../schemas/health.js'
import { answer, errorHeaders } from '../../errors.js'

/** `GET /healthz` (the process is alive) and `GET /readyz` (the primary database answers); no token. */
const healthRoutes: FastifyPluginAsyncTypebox = async function healthRoutes(app) {
  const tags = ['Operations']
  app.get(
    '/healthz',
    {
      schema: { tags, summary: 'Liveness: the process answers', operationId: 'healthz', response: HealthResponses },
      logLevel: 'warn'
    },
    async function live() {
      return { status: 'ok' as const }
    }
  )

  app.get(
    '/readyz',
    {
      schema: {
        tags,
        summary: 'Readiness: the database answers within 2 s',
        operationId: 'readyz',
        response: ReadyResponses
      },
      logLevel: 'warn'
    },
    async function ready(request, reply) {
      try {
        await app.database.ping(2000)
        // The read replica is not needed for readiness (its reads go to the primary while it is
        // down): checked on the side, and logged once when it goes down and once when it is back.
        void app.reads.check(2000)
        return { status: 'ok' as const, database: app.database.kind }
      } catch (err) {
        request.log.warn({ err }, 'database not ready')
        const error = answer(CODE.service_unavailable)
        const { message: detail, code, errors } = error
        return reply
          .code(ERROR_CODES.service_unavailable.status)
          .headers(errorHeaders(error))
          .send({ detail, code, errors })
      }
    }
  )
}

export default healthRoutes

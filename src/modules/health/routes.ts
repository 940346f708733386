import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { HealthResponses, ReadyResponses } from '../../../schemas/health.js'

/** `GET /healthz` (the process is alive) and `GET /readyz` (the database answers); no token. */
const healthRoutes: FastifyPluginAsyncTypebox = async function healthRoutes(app) {
  const tags = ['Operations']
  app.get('/healthz', {
    schema: { tags, summary: 'Liveness: the process answers', operationId: 'healthz', response: HealthResponses },
    logLevel: 'warn'
  }, async function live() {
    return { status: 'ok' as const }
  })

  app.get('/readyz', {
    schema: { tags, summary: 'Readiness: the database answers within 2 s', operationId: 'readyz', response: ReadyResponses },
    logLevel: 'warn'
  }, async function ready(request, reply) {
    try {
      await app.database.ping(2000)
      return { status: 'ok' as const, database: app.database.kind }
    } catch (err) {
      request.log.warn({ err }, 'database not ready')
      return reply.code(503).send({ detail: 'The database is not answering.', code: 'service_unavailable', errors: [] })
    }
  })
}

export default healthRoutes

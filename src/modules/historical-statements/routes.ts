import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { HistoricalStatementsRequest, HistoricalStatementsResponses } from '../../../schemas/historical-statements.js'
import { organisationOf } from '../auth/service.js'
import type { PostImportRouteOptions } from '../post-import/services.js'
import { postImportStep } from '../../plugins/failures.js'

const historicalStatementsRoutes: FastifyPluginAsyncTypebox<PostImportRouteOptions> = async function historicalStatementsRoutes(app, opts) {
  const service = opts.services.historicalStatements
  app.post('/historical-statements/create/', {
    config: postImportStep('historical_statements'),
    schema: {
      tags: ['Post-import'],
      summary: 'Add historical statements',
      description: 'Past statements; answered with the statements normalised (decimals as strings, relative paths).',
      body: HistoricalStatementsRequest,
      response: HistoricalStatementsResponses
    }
  }, async function createHistoricalStatements(request, reply) {
    return reply.code(201).send(await service.create(organisationOf(request.principal), request.body))
  })
}

export default historicalStatementsRoutes

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { HistoricalAgreementsRequest, HistoricalAgreementsResponses } from '../../../schemas/historical-agreements.js'
import { organisationOf } from '../auth/service.js'
import type { PostImportRouteOptions } from '../post-import/services.js'
import { postImportStep } from '../../plugins/failures.js'

const historicalAgreementsRoutes: FastifyPluginAsyncTypebox<PostImportRouteOptions> = async function historicalAgreementsRoutes(app, opts) {
  const service = opts.services.historicalAgreements
  app.post('/historical-agreements/create/', {
    config: postImportStep('historical_agreements'),
    schema: {
      tags: ['Post-import'],
      summary: 'Add historical agreements',
      description: 'Past agreements of the account\'s supply points, ending on or before their first current agreement.',
      body: HistoricalAgreementsRequest,
      response: HistoricalAgreementsResponses
    }
  }, async function createHistoricalAgreements(request, reply) {
    await service.create(organisationOf(request.principal), request.body)
    return reply.code(201).send()
  })
}

export default historicalAgreementsRoutes

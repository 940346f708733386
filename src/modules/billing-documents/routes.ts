import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BillingDocumentsRequest, BillingDocumentsResponses } from '../../../schemas/billing-documents.js'
import { organisationOf } from '../auth/service.js'
import type { PostImportRouteOptions } from '../post-import/services.js'
import { postImportStep } from '../../plugins/failures.js'

const billingDocumentsRoutes: FastifyPluginAsyncTypebox<PostImportRouteOptions> = async function billingDocumentsRoutes(app, opts) {
  const service = opts.services.historicalBillingDocuments
  app.post('/historical-billing-documents/create/', {
    config: postImportStep('historical_billing_documents'),
    schema: {
      tags: ['Post-import'],
      summary: 'Add historical billing documents',
      description: 'Finalised past bills with their transactions, once per ledger; the balance does not change.',
      body: BillingDocumentsRequest,
      response: BillingDocumentsResponses
    }
  }, async function createBillingDocuments(request, reply) {
    await service.create(organisationOf(request.principal), request.body)
    // 201 with an empty body: `undefined` skips serialisation (`null` would send the text "null").
    return reply.code(201).send()
  })
}

export default billingDocumentsRoutes

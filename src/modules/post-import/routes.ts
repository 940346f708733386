import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Config } from '../../config.js'
import billingDocumentsRoutes from '../billing-documents/routes.js'
import historicalAgreementsRoutes from '../historical-agreements/routes.js'
import historicalStatementsRoutes from '../historical-statements/routes.js'
import notesRoutes from '../notes/routes.js'
import paymentInstructionRoutes from '../payment-instructions/routes.js'
import transactionsRoutes from '../transactions/routes.js'
import batchesRoutes from '../batches/routes.js'
import { createPostImportServices, type PostImportRouteOptions } from './services.js'

/**
 * The post-import endpoints, under /v1/data-import. Those of the batch kind take a turn of work
 * (`takeTurn`) once their body has arrived; the payment instruction does not: it waits on the
 * vendor holding no connection, and its body is small.
 */
const postImportRoutes: FastifyPluginAsyncTypebox<{ config: Config }> = async function postImportRoutes(app, opts) {
  const options: PostImportRouteOptions = { services: createPostImportServices(app.db, opts.config), config: opts.config }
  await app.register(paymentInstructionRoutes, options)
  await app.register(async function batches(scope) {
    scope.addHook('preValidation', scope.takeTurn)
    await scope.register(notesRoutes, options)
    await scope.register(billingDocumentsRoutes, options)
    await scope.register(historicalStatementsRoutes, options)
    await scope.register(historicalAgreementsRoutes, options)
    await scope.register(transactionsRoutes, options)
    await scope.register(batchesRoutes, options)
  })
}

export default postImportRoutes

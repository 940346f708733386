import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Config } from '../../config.js'
import billingDocumentsRoutes from '../billing-documents/routes.js'
import historicalAgreementsRoutes from '../historical-agreements/routes.js'
import historicalStatementsRoutes from '../historical-statements/routes.js'
import notesRoutes from '../notes/routes.js'
import paymentInstructionRoutes from '../payment-instructions/routes.js'
import transactionsRoutes from '../transactions/routes.js'
import { createPostImportBase, type PostImportBase } from './service.js'

export interface PostImportRouteOptions {
  base: PostImportBase
  config: Config
}

/** The post-import endpoints of §9, under /v1/data-import. */
const postImportRoutes: FastifyPluginAsyncTypebox<{ config: Config }> = async function postImportRoutes(app, opts) {
  const options: PostImportRouteOptions = { base: createPostImportBase(app.db), config: opts.config }
  await app.register(notesRoutes, options)
  await app.register(paymentInstructionRoutes, options)
  await app.register(billingDocumentsRoutes, options)
  await app.register(historicalStatementsRoutes, options)
  await app.register(historicalAgreementsRoutes, options)
  await app.register(transactionsRoutes, options)
}

export default postImportRoutes

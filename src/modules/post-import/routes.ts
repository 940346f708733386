import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Config } from '../../config.js'
import billingDocumentsRoutes from '../billing-documents/routes.js'
import historicalAgreementsRoutes from '../historical-agreements/routes.js'
import historicalStatementsRoutes from '../historical-statements/routes.js'
import notesRoutes from '../notes/routes.js'
import paymentInstructionRoutes from '../payment-instructions/routes.js'
import transactionsRoutes from '../transactions/routes.js'
import batchesRoutes from '../batches/routes.js'
import type { Limiter } from '../../limiter.js'
import { organisationOf } from '../auth/service.js'
import { createPostImportServices, type PostImportRouteOptions } from './services.js'

/**
 * The post-import endpoints, under /v1/data-import. `limiter` bounds how many requests of the
 * batch endpoints this process works on at once, shared fairly between organisations; a request
 * takes its turn once its body has arrived and passed its schema, so a slow or stalled upload
 * holds none. The payment instruction is not limited: it waits on the vendor holding no
 * connection, and its body is small.
 */
const postImportRoutes: FastifyPluginAsyncTypebox<{ config: Config; limiter: Limiter }> = async function postImportRoutes(app, opts) {
  const options: PostImportRouteOptions = { services: createPostImportServices(app.db, opts.config), config: opts.config }
  await app.register(paymentInstructionRoutes, options)
  await app.register(async function batches(scope) {
    const { limiter } = opts
    const turns = new WeakMap<object, () => void>()
    scope.addHook('preHandler', async function takeTurn(request, reply) {
      let gone = false
      const leave = () => { gone = true }
      reply.raw.once('close', leave)
      const release = await limiter.acquire(organisationOf(request.principal).organisationId)
      reply.raw.off('close', leave)
      // Given back when the answer is sent, or when the connection closes first.
      turns.set(request, release)
      reply.raw.once('close', release)
      if (gone) {
        // The client left while waiting: give the turn on at once and go no further.
        release()
        reply.hijack()
      }
    })
    scope.addHook('onResponse', async function giveTurnBack(request) {
      turns.get(request)?.()
    })
    await scope.register(notesRoutes, options)
    await scope.register(billingDocumentsRoutes, options)
    await scope.register(historicalStatementsRoutes, options)
    await scope.register(historicalAgreementsRoutes, options)
    await scope.register(transactionsRoutes, options)
    await scope.register(batchesRoutes, options)
  })
}

export default postImportRoutes

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PaymentInstructionRequest, PaymentInstructionResponses } from '../../../schemas/payment-instruction.js'
import { organisationOf } from '../auth/service.js'
import type { PostImportRouteOptions } from '../post-import/services.js'
import { postImportStep } from '../../plugins/failures.js'

const paymentInstructionRoutes: FastifyPluginAsyncTypebox<PostImportRouteOptions> = async function paymentInstructionRoutes(app, opts) {
  const { config } = opts
  const service = opts.services.paymentInstruction
  const schema = {
    tags: ['Post-import'],
    summary: 'Add a payment instruction',
    description: 'Checked with the vendor named in `PAYMENT_VENDORS`; a 400 adds `error_detail`, `import_supplier`, ' +
      '`external_account_number` and `reference`.',
    body: PaymentInstructionRequest(Object.keys(config.paymentVendors)),
    response: PaymentInstructionResponses
  }
  app.post('/payment-instruction/create/', { schema, config: postImportStep('payment_instruction') }, async function createPaymentInstruction(request, reply) {
    return reply.code(201).send(await service.create(organisationOf(request.principal), request.body, request.log))
  })
}

export default paymentInstructionRoutes

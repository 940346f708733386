import { PaymentInstructionRequest, PaymentInstructionResponses } from '../../../schemas/payment-instruction.js'
import { defineSection } from '../post-import/section.js'
import { createPaymentInstructionsRepository } from './repository.js'
import { createPaymentInstructionsService } from './service.js'
import { createVendorClient } from './vendor-client.js'

export default defineSection<PaymentInstructionRequest>({
  build({ base, db, config }) {
    // One client per app: the single endpoint and batches share its circuit breakers.
    const vendors = createVendorClient({
      vendors: config.paymentVendors,
      tokens: config.paymentVendorTokens,
      timeoutMs: config.paymentVendorTimeoutMs,
      retries: config.paymentVendorRetries,
      breakerWindowMs: config.paymentVendorBreakerWindowSeconds * 1000
    })
    const service = createPaymentInstructionsService(base, db, vendors)
    const repo = createPaymentInstructionsRepository()
    return {
      route: {
        summary: 'Add a payment instruction',
        description:
          'Checked with the vendor named in `PAYMENT_VENDORS`; a 400 adds `error_detail`, `import_supplier`, ' +
          '`external_account_number` and `reference`.',
        body: PaymentInstructionRequest(Object.keys(config.paymentVendors)),
        response: PaymentInstructionResponses,
        // It waits on the vendor holding no connection, and its body is small.
        takesTurn: false
      },
      write: (principal, { body }, { log }) => service.create(principal, body, log),
      async planNew({ body }, account, log) {
        const plan = await service.planForNewAccount(body, account, log)
        return { rows: [repo.tableRows([plan.row])], detail: plan.detail }
      }
    }
  }
})

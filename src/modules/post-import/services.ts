import type { Config } from '../../config.js'
import type { Db } from '../../db/index.js'
import { createBillingDocumentsService } from '../billing-documents/service.js'
import { createHistoricalAgreementsService } from '../historical-agreements/service.js'
import { createHistoricalStatementsService } from '../historical-statements/service.js'
import { createNotesService } from '../notes/service.js'
import { createPaymentInstructionsService } from '../payment-instructions/service.js'
import { createVendorClient } from '../payment-instructions/vendor-client.js'
import { createTransactionsService } from '../transactions/service.js'
import { createPostImportBase } from './service.js'

/**
 * The services of the post-import endpoints, made once per app and shared by their routes and by
 * batches, so both follow the same rules (and share the payment vendors' circuit breakers).
 */
export function createPostImportServices(db: Db, config: Config) {
  const base = createPostImportBase(db)
  const vendors = createVendorClient({
    vendors: config.paymentVendors,
    tokens: config.paymentVendorTokens,
    timeoutMs: config.paymentVendorTimeoutMs,
    retries: config.paymentVendorRetries,
    breakerWindowMs: config.paymentVendorBreakerWindowSeconds * 1000
  })
  return {
    base,
    notes: createNotesService(base, config.documentBucket),
    transactions: createTransactionsService(base, db),
    historicalAgreements: createHistoricalAgreementsService(base),
    historicalStatements: createHistoricalStatementsService(base, config.documentBucket),
    historicalBillingDocuments: createBillingDocumentsService(base, db),
    paymentInstruction: createPaymentInstructionsService(base, db, vendors)
  }
}

export type PostImportServices = ReturnType<typeof createPostImportServices>

/** What each post-import route file is given by the post-import routes. */
export interface PostImportRouteOptions {
  services: PostImportServices
  config: Config
}

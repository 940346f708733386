import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { TransactionsQuery, TransactionsRequest, TransactionsResponses } from '../../../schemas/transaction-import.js'
import { attachedInput } from '../../errors.js'
import { organisationOf } from '../auth/service.js'
import type { PostImportRouteOptions } from '../post-import/services.js'
import { postImportStep } from '../../plugins/failures.js'

/**
 * Schema problems inside one transaction get the transaction error body, so this route validates
 * with `attachValidation` and lets the service shape the answer.
 */
const transactionsRoutes: FastifyPluginAsyncTypebox<PostImportRouteOptions> = async function transactionsRoutes(app, opts) {
  const service = opts.services.transactions
  app.post('/transactions/create/', {
    config: postImportStep('transactions'),
    attachValidation: true,
    schema: {
      tags: ['Post-import'],
      summary: 'Add transactions',
      description: 'Transactions on the ENERGY ledger; one result per transaction. A problem inside a transaction ' +
        'gives 400 with `status: TRANSACTION_IMPORT_ERROR`, `error_detail`, `transaction_data` and `attr`.',
      body: TransactionsRequest,
      querystring: TransactionsQuery,
      response: TransactionsResponses
    }
  }, async function createTransactions(request, reply) {
    const result = await service.create(organisationOf(request.principal), attachedInput(request), request.query)
    return reply.code(201).send(result)
  })
}

export default transactionsRoutes

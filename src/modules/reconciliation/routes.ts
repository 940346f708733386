import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { SupplierParams } from '../../../schemas/imports.js'
import {
  ReconciliationRequest,
  ReconciliationResponses,
  SupplierTotalsResponses
} from '../../../schemas/reconciliation.js'
import { organisationOf } from '../auth/service.js'

/** Reconciliation of a supplier's migrated accounts, under /v1/data-import; own suppliers only, reads only. */
const reconciliationRoutes: FastifyPluginAsyncTypebox = async function reconciliationRoutes(app) {
  const service = app.services.reconciliation

  app.post(
    '/reconciliation/:supplier/',
    {
      schema: {
        tags: ['Reconciliation'],
        summary: 'Compare expected totals with the accounts held',
        description:
          'Up to 10,000 entries `{external_account_number, ledgers?: [{ledger_code, balance?}], counts?}`, each ' +
          'the ledger balances and counts the source system expects of an account. 200 answers how many entries were ' +
          'checked and matched, and one difference per field that differs, in request order: `not_created` (never ' +
          'staged, or staged and not created), `skipped`, `balance_differs` (`field` `ledgers.<ledger_code>.balance`; ' +
          '`actual` null for a ledger the account lacks) or `count_differs` (`field` `counts.<name>`). Balances ' +
          'compare as exact decimals; counts are those of the account summary. Nothing is written.',
        params: SupplierParams,
        body: ReconciliationRequest,
        response: ReconciliationResponses
      }
    },
    async function reconcile(request) {
      return service.reconcile(organisationOf(request.principal).organisationId, request.params.supplier, request.body)
    }
  )

  app.get(
    '/reconciliation/:supplier/',
    {
      schema: {
        tags: ['Reconciliation'],
        summary: "A supplier's totals",
        description:
          'Its import processes created, skipped and pending; over its created accounts, each ledger code with its ' +
          'number of accounts and the sum of their balances, the number of transactions and what they add to the ' +
          'balances, and the counts of notes, historical agreements and statements, billing documents and payment ' +
          'instructions. Decimals are exact, as strings.',
        params: SupplierParams,
        response: SupplierTotalsResponses
      }
    },
    async function supplierTotals(request) {
      return service.totals(organisationOf(request.principal).organisationId, request.params.supplier)
    }
  )
}

export default reconciliationRoutes

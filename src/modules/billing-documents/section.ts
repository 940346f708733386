import { BillingDocumentsRequest, BillingDocumentsResponses } from '../../../schemas/billing-documents.js'
import { CODE } from '../../../schemas/error-codes.js'
import { invalidRequest, problem } from '../../errors.js'
import { transactionTableRows } from '../../accounts/repository.js'

import { defineSection } from '../post-import/section.js'
import { createBillingDocumentsRepository } from './repository.js'
import { createBillingDocumentsService } from './service.js'

export default defineSection<BillingDocumentsRequest>({
  build({ base, db }) {
    const service = createBillingDocumentsService(base, db)
    const repo = createBillingDocumentsRepository()
    return {
      route: {
        operationId: 'createBillingDocuments',
        summary: 'Add historical billing documents',
        description: 'Finalised past bills with their transactions, once per ledger; the balance does not change.',
        body: BillingDocumentsRequest,
        response: BillingDocumentsResponses,
        takesTurn: true
      },
      write: (principal, { body }) => service.create(principal, body),
      planNew({ body }, account) {
        const ledger = account.rows.ledgers.find(
          (l) => l.ledgerCode === body.ledger_code && l.ledgerNumber === body.ledger_number
        )
        const known = ledger && account.transactionIds.get(ledger.id!)
        if (!ledger || !known) {
          throw invalidRequest([
            problem(CODE.ledger_not_found, 'ledger_number', { ledger: `${body.ledger_code} ${body.ledger_number}` })
          ])
        }
        const plan = service.planForNewAccount(body, { id: ledger.id!, ledgerNumber: ledger.ledgerNumber }, known)
        for (const t of plan.rows.transactions) known.add(t.transactionId)
        return { rows: [repo.tableRows(plan.documents), ...transactionTableRows(plan.rows)], detail: plan.detail }
      }
    }
  }
})

import { BillingDocumentsRequest, BillingDocumentsResponses } from '../../../schemas/billing-documents.js'
import { entry } from '../../errors.js'
import { transactionTableRows } from '../accounts/repository.js'
import { invalidRequest } from '../post-import/base.js'
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
        const ledger = account.rows.ledgers.find((l) => l.ledgerCode === body.ledger_code && l.ledgerNumber === body.ledger_number)
        const known = ledger && account.transactionIds.get(ledger.id!)
        if (!ledger || !known) {
          throw invalidRequest([entry('ledger_not_found', 'ledger_number', `The account has no ${body.ledger_code} ledger ${body.ledger_number}.`)])
        }
        const plan = service.planForNewAccount(body, { id: ledger.id!, ledgerNumber: ledger.ledgerNumber }, known)
        for (const t of plan.rows.transactions) known.add(t.transactionId)
        return { rows: [repo.tableRows(plan.documents), ...transactionTableRows(plan.rows)], detail: plan.detail }
      }
    }
  }
})

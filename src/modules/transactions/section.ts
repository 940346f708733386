import { TransactionsQuery, TransactionsRequest, TransactionsResponses } from '../../../schemas/transaction-import.js'
import { formatDecimal, toBig } from '../../decimal.js'
import { transactionTableRows } from '../../accounts/repository.js'
import { defineSection } from '../post-import/section.js'
import { createTransactionsRepository } from './repository.js'
import { createTransactionsService } from './service.js'

/** Its service shapes its schema problems (a problem inside one transaction has the transaction body), so its body is `unknown` here. */
export default defineSection<unknown>({
  build({ base, db }) {
    const service = createTransactionsService(base, db)
    const repo = createTransactionsRepository()
    return {
      route: {
        summary: 'Add transactions',
        description:
          'Transactions on the ENERGY ledger; one result per transaction. A problem inside a transaction ' +
          'gives 400 with `status: TRANSACTION_IMPORT_ERROR`, `error_detail`, `transaction_data` and `attr`.',
        body: TransactionsRequest,
        querystring: TransactionsQuery,
        response: TransactionsResponses,
        ownsSchemaErrors: true,
        takesTurn: true
      },
      write: (principal, input, { query }) => service.create(principal, input, query),
      planNew({ body, schemaErrors }, account) {
        const energy = account.rows.ledgers.find((l) => l.ledgerCode === 'ENERGY')
        const open = energy && account.rows.statements.find((st) => st.ledgerId === energy.id && st.status === 'OPEN')
        const ids = energy && account.transactionIds.get(energy.id!)
        const ledger =
          energy && open && ids
            ? { id: energy.id!, openFrom: open.periodFrom, openStatementId: open.id!, existing: [...ids] }
            : undefined
        const plan = service.planForNewAccount(body, schemaErrors, account, ledger, account.today)
        if (energy && ids && plan.rows.transactions.length > 0) {
          energy.balance = formatDecimal(toBig(energy.balance).plus(plan.delta))
          for (const t of plan.rows.transactions) ids.add(t.transactionId)
        }
        return {
          rows: [...transactionTableRows(plan.rows), ...(plan.note ? [repo.noteRows(plan.note)] : [])],
          detail: plan.detail
        }
      }
    }
  }
})

import { RECONCILED_COUNTS } from '../../../schemas/reconciliation.js'
import { camelCase, ownerOf, type GraphqlResolvers, type Guard } from '../auth/guard.js'
import type { ReconciliationService } from './service.js'

/** `reconciliation`: a supplier's totals, for the dashboard (`reconciliation` here reads them where they may lag). */
export function reconciliationResolvers(deps: {
  guard: Guard
  reconciliation: ReconciliationService
  supplierIdOf: (code: string, owner: string | undefined) => Promise<string>
}): GraphqlResolvers {
  const { guard, reconciliation, supplierIdOf } = deps
  return {
    Query: {
      reconciliation: guard.resolver('anyone', async (args: { importSupplierCode: string }, caller) => {
        const totals = await reconciliation.totalsOf(await supplierIdOf(args.importSupplierCode, ownerOf(caller)))
        return {
          accountsCreated: totals.accounts_created,
          accountsSkipped: totals.accounts_skipped,
          accountsPending: totals.accounts_pending,
          ledgers: totals.ledgers.map((l) => ({
            ledgerCode: l.ledger_code,
            accounts: l.accounts,
            balanceSum: l.balance_sum
          })),
          ...Object.fromEntries(
            RECONCILED_COUNTS.map((name) => {
              const total = totals[name]
              return [
                camelCase(name),
                typeof total === 'number' ? total : { count: total.count, amountSum: total.amount_sum }
              ]
            })
          )
        }
      })
    }
  }
}

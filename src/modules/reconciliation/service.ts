import { SUPPLIER_CODE } from '../../../schemas/common.js'
import { CODE } from '../../../schemas/error-codes.js'
import {
  RECONCILED_COUNTS,
  type ReconciledCount,
  type ReconciliationDifference,
  type ReconciliationRequest,
  type ReconciliationResponse,
  type SupplierTotals
} from '../../../schemas/reconciliation.js'
import type { Db } from '../../db/index.js'
import { onPrimary, type Reads } from '../../db/replica.js'
import { formatDecimal, toBig } from '../../decimal.js'
import { notFound } from '../../errors.js'
import { createReconciliationRepository } from './repository.js'

/** An unknown or foreign supplier, answered as the other supplier-scoped reads answer it. */
const supplierNotFound = () => notFound(CODE.import_process_does_not_exist)

/** Reconciliation: expected totals against what is held, and a supplier's totals; reads only. */
export function createReconciliationService(db: Db, reads: Reads = onPrimary(db)) {
  const repo = createReconciliationRepository(db)
  // A supplier's totals are the dashboard's: on the read replica when it is given one.
  const totalsRepo = reads.repository(createReconciliationRepository)

  async function supplierOf(organisationId: string, code: string): Promise<string> {
    // A code that cannot be a supplier's is simply unknown (never a query with text PostgreSQL refuses).
    const id = SUPPLIER_CODE.test(code) ? await repo.supplierId(code, organisationId) : undefined
    if (id === undefined) throw supplierNotFound()
    return id
  }

  return {
    /**
     * One difference per field that differs, in request order. A pair never staged, or staged and
     * not created, is `not_created`; a skipped one `skipped`. A ledger the request names that the
     * account lacks differs with `actual` null; a ledger it does not name is not compared.
     */
    async reconcile(
      organisationId: string,
      code: string,
      body: ReconciliationRequest
    ): Promise<ReconciliationResponse> {
      const supplierId = await supplierOf(organisationId, code)
      const held = await repo.held(
        supplierId,
        body.accounts.map((a) => a.external_account_number)
      )
      const differences: ReconciliationDifference[] = []
      let matching = 0
      for (const entry of body.accounts) {
        const external = entry.external_account_number
        const account = held.get(external)
        const found: ReconciliationDifference[] = []
        if (!account || !account.created) {
          const problem = account?.state === 'SKIPPED' ? 'skipped' : 'not_created'
          found.push({ external_account_number: external, problem, field: null, expected: null, actual: null })
        } else {
          for (const ledger of entry.ledgers ?? []) {
            if (ledger.balance === undefined) continue
            const actual = account.balances[ledger.ledger_code]
            // Exact: a JSON number's value is its shortest text (validated to 15 significant digits), never a float.
            if (actual === undefined || !toBig(ledger.balance).eq(toBig(actual))) {
              found.push({
                external_account_number: external,
                problem: 'balance_differs',
                field: `ledgers.${ledger.ledger_code}.balance`,
                expected: formatDecimal(ledger.balance),
                actual: actual === undefined ? null : formatDecimal(actual)
              })
            }
          }
          // In the request's order of its counts (the schema admits only reconciled counts).
          for (const [name, expected] of Object.entries(entry.counts ?? {}) as Array<[ReconciledCount, number]>) {
            if (expected === undefined) continue
            const actual = account.counts[name]
            if (expected !== actual) {
              found.push({
                external_account_number: external,
                problem: 'count_differs',
                field: `counts.${name}`,
                expected,
                actual
              })
            }
          }
        }
        if (found.length === 0) matching++
        differences.push(...found)
      }
      return { checked: body.accounts.length, matching, differences }
    },

    /** A supplier's totals, for an organisation's own supplier of this code (404 otherwise). */
    async totals(organisationId: string, code: string): Promise<SupplierTotals> {
      return totalsOf(await supplierOf(organisationId, code))
    },

    /** A supplier's totals by its id, found by the caller (the operator's GraphQL query). */
    totalsOf
  }

  /** A supplier's totals: its processes by state, and what its created accounts hold. */
  async function totalsOf(supplierId: string): Promise<SupplierTotals> {
    const totals = await totalsRepo.read((r) => r.totals(supplierId))
    return {
      accounts_created: totals.created,
      accounts_skipped: totals.skipped,
      accounts_pending: totals.pending,
      ledgers: totals.ledgers.map((l) => ({
        ledger_code: l.ledgerCode,
        accounts: l.accounts,
        balance_sum: formatDecimal(l.balanceSum)
      })),
      ...(Object.fromEntries(
        RECONCILED_COUNTS.map((name) => [
          name,
          name === 'transactions'
            ? { count: totals.counts[name], amount_sum: formatDecimal(totals.amountSum) }
            : totals.counts[name]
        ])
      ) as Omit<SupplierTotals, 'accounts_created' | 'accounts_skipped' | 'accounts_pending' | 'ledgers'>)
    }
  }
}

export type ReconciliationService = ReturnType<typeof createReconciliationService>

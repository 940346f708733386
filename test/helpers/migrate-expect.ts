import type tap from 'tap'
import { Big } from '../../src/decimal.js'
import { signedAmount } from '../../src/rules/transactions.js'
import type { ImportClient } from './accounts.js'

type Asserts = Pick<typeof tap, 'equal' | 'same'>

/** What the account summary must show after an input line was migrated with its post-import data. */
export function expectedSummary(line: any): { counts: Record<string, number>; energyBalance: string } {
  const account = line.account
  const energy = account.ledgers.find((l: any) => l.ledger_code === 'ENERGY')
  const imported = account.ledgers.reduce(
    (n: number, l: any) =>
      n + (l.current_statement_transactions?.length ?? 0) + (l.historical_statement_transactions?.length ?? 0),
    0
  )
  const billing = line.historical_billing_documents
  const billingTransactions = billing
    ? billing.historical_billing_documents.reduce((n: number, d: any) => n + (d.transactions?.length ?? 0), 0) +
      (billing.additional_historical_transactions?.length ?? 0)
    : 0
  const added: any[] = line.transactions ?? []
  const balance = added.reduce(
    (sum: Big, tx: any) => sum.plus(signedAmount(tx.type, tx.amount)),
    new Big(String(energy.ledger_balance))
  )
  return {
    counts: {
      customers: account.customers?.length ?? 0,
      supply_points: account.supply_addresses.reduce((n: number, a: any) => n + a.supply_points.length, 0),
      agreements: account.supply_addresses.reduce(
        (n: number, a: any) => n + a.supply_points.reduce((m: number, p: any) => m + p.agreements.length, 0),
        0
      ),
      historical_agreements: line.historical_agreements?.length ?? 0,
      notes: line.notes?.length ?? 0,
      transactions: imported + added.length + billingTransactions,
      historical_statements: line.historical_statements?.length ?? 0,
      billing_documents: billing?.historical_billing_documents.length ?? 0,
      payment_instructions: line.payment_instruction ? 1 : 0
    },
    energyBalance: balance.toFixed(2)
  }
}

/**
 * Checks every line's account on the service: COMPLETED, and its summary as expected (nothing
 * twice). `clientFor` gives a client per account (a fresh token when tokens are short-lived).
 */
export async function checkMigrated(
  t: Asserts,
  clientFor: () => ImportClient | Promise<ImportClient>,
  lines: any[]
): Promise<void> {
  for (const line of lines) {
    const client = await clientFor()
    const external = line.account.external_account_number
    const status = (await client.status(external)).json()
    t.equal(status.status, 'COMPLETED', `${external} COMPLETED`)
    const summary = (await client.summary(external)).json()
    const expected = expectedSummary(line)
    t.same(summary.counts, expected.counts, `${external}: counts`)
    t.equal(
      summary.ledgers.find((l: any) => l.ledger_code === 'ENERGY').balance,
      expected.energyBalance,
      `${external}: balance`
    )
    t.equal(summary.service_account_number, status.service_account_number)
  }
}

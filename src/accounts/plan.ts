import { randomBytes } from 'node:crypto'
import { newId } from '../ids.js'
import type {
  accountMetadata,
  accounts,
  agreements,
  customers,
  emailOutbox,
  ledgers,
  ledgerTransactions,
  statements,
  supplyAddresses,
  supplyPoints,
  transactionLineItems,
  transactionTaxItems
} from '../../drizzle/schema/index.js'
import type { AccountData } from '../../schemas/account.js'
import type { LineItem, TaxItem, Transaction } from '../../schemas/transactions.js'
import { sumDecimals, toBig, formatDecimal } from '../decimal.js'
import { signedAmount } from '../rules/transactions.js'

/**
 * Turns validated, normalised account data into the rows creation inserts. Pure: the ids and
 * numbers are made here, so the repository only writes.
 */

type Insert<T extends { $inferInsert: unknown }> = T['$inferInsert']

export interface AccountRows {
  account: Insert<typeof accounts>
  customers: Insert<typeof customers>[]
  ledgers: Insert<typeof ledgers>[]
  statements: Insert<typeof statements>[]
  transactions: Insert<typeof ledgerTransactions>[]
  lineItems: Insert<typeof transactionLineItems>[]
  taxItems: Insert<typeof transactionTaxItems>[]
  supplyAddresses: Insert<typeof supplyAddresses>[]
  supplyPoints: Insert<typeof supplyPoints>[]
  agreements: Insert<typeof agreements>[]
  metadata: Insert<typeof accountMetadata>[]
  outbox: Insert<typeof emailOutbox>[]
}

export interface PlanContext {
  importProcessId: number
  supplierId: string
  operationsTeamId: string
  sendMigrationEmails: boolean
}

/** `<prefix>-` and 8 random upper-case hex digits (`A-1F2E3D4C`, `L-0A1B2C3D`). */
export function newNumber(prefix: 'A' | 'L'): string {
  return `${prefix}-${randomBytes(4).toString('hex').toUpperCase()}`
}

/** The template of the migration e-mail queued for each customer with an address. */
export const MIGRATION_EMAIL_TEMPLATE = 'account_migrated'

const dayAfter = (date: string): string => {
  const d = new Date(`${date}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + 1)
  return d.toISOString().slice(0, 10)
}
const earliest = (dates: string[]): string | undefined =>
  dates.length === 0 ? undefined : dates.reduce((a, b) => (b < a ? b : a))

/** An account's child rows, none yet. */
export const noChildRows = (): Omit<AccountRows, 'account'> => ({
  customers: [],
  ledgers: [],
  statements: [],
  transactions: [],
  lineItems: [],
  taxItems: [],
  supplyAddresses: [],
  supplyPoints: [],
  agreements: [],
  metadata: [],
  outbox: []
})

export function planAccount(data: AccountData, ctx: PlanContext): AccountRows {
  const accountId = newId()
  const rows: AccountRows = {
    account: {
      id: accountId,
      serviceAccountNumber: newNumber('A'),
      importProcessId: ctx.importProcessId,
      supplierId: ctx.supplierId,
      externalAccountNumber: data.external_account_number,
      accountType: data.account_type,
      useIndustryBilling: data.account_billing_options?.use_industry_billing ?? null,
      billingPeriodLength: data.account_billing_options?.period_length ?? null,
      billingPeriodStartDay: data.account_billing_options?.period_start_day ?? null,
      billingStreetAddress: data.billing_address.street_address,
      billingLocality: data.billing_address.locality ?? null,
      billingAdministrativeArea: data.billing_address.administrative_area ?? null,
      billingPostalCode: data.billing_address.postal_code ?? null,
      billingCountry: data.billing_address.country,
      communicationPreference: data.communication_preference ?? 'ONLINE',
      salesChannel: data.sales_channel ?? 'DIRECT',
      salesSubchannel: data.sales_subchannel ?? null,
      unknownOccupier: data.unknown_occupier ?? false,
      transferBalance: String(data.transfer_balance),
      operationsTeamId: ctx.operationsTeamId
    },
    ...noChildRows()
  }

  ;(data.customers ?? []).forEach((c, position) => {
    const id = newId()
    rows.customers.push({
      id,
      accountId,
      position,
      title: c.title ?? null,
      givenName: c.given_name,
      familyName: c.family_name ?? null,
      email: c.email ?? null,
      landline: c.landline ?? null,
      portfolioRoles: c.portfolio_roles ?? ['ADMIN'],
      unableToReadMeters: c.unable_to_read_meters ?? false
    })
    if (ctx.sendMigrationEmails && c.email) {
      rows.outbox.push({ accountId, customerId: id, template: MIGRATION_EMAIL_TEMPLATE, recipient: c.email })
    }
  })

  const supplyStarts: string[] = []
  data.supply_addresses.forEach((sa, position) => {
    const supplyAddressId = newId()
    rows.supplyAddresses.push({
      id: supplyAddressId,
      accountId,
      position,
      customerAtSupplyAddressFromDate: sa.customer_at_supply_address_from_date,
      streetAddress: sa.supply_address.street_address,
      locality: sa.supply_address.locality ?? null,
      administrativeArea: sa.supply_address.administrative_area ?? null,
      postalCode: sa.supply_address.postal_code ?? null,
      country: sa.supply_address.country
    })
    for (const sp of sa.supply_points) {
      const supplyPointId = newId()
      supplyStarts.push(sp.supply_start_date)
      rows.supplyPoints.push({
        id: supplyPointId,
        accountId,
        supplyAddressId,
        identifier: sp.identifier,
        supplyType: sp.supply_type,
        supplyStartDate: sp.supply_start_date,
        lastBilledToDate: sp.last_billed_to_date ?? null,
        loadZone: sp.load_zone ?? null
      })
      // Sorted by start, each agreement runs until the next one starts; the last is open-ended.
      const sorted = [...sp.agreements].sort((a, b) => (a.effective_from < b.effective_from ? -1 : 1))
      sorted.forEach((k, i) =>
        rows.agreements.push({
          supplyPointId,
          tariffCode: k.tariff_code,
          effectiveFrom: k.effective_from,
          effectiveTo: sorted[i + 1]?.effective_from ?? null
        })
      )
    }
  })
  const earliestSupplyStart = earliest(supplyStarts)

  for (const ledger of data.ledgers) {
    const ledgerId = newId()
    rows.ledgers.push({
      id: ledgerId,
      accountId,
      ledgerCode: ledger.ledger_code,
      ledgerNumber: newNumber('L'),
      balance: String(ledger.ledger_balance)
    })
    const lastBalance = toBig(ledger.last_statement_balance ?? 0)
    const historical = ledger.historical_statement_transactions ?? []
    const current = ledger.current_statement_transactions ?? []
    const closing = ledger.last_statement_closing_date
    if (closing !== undefined) {
      // The closed imported statement opens at last_statement_balance − Σ historical (signed).
      const closedId = newId()
      const historicalSum = sumDecimals(historical.map((t) => signedAmount(t.type, t.amount)))
      rows.statements.push({
        id: closedId,
        ledgerId,
        status: 'CLOSED',
        imported: true,
        periodFrom: earliest(historical.map((t) => t.transaction_date)) ?? closing,
        periodTo: closing,
        openingBalance: formatDecimal(lastBalance.minus(historicalSum)),
        closingBalance: formatDecimal(lastBalance)
      })
      for (const t of historical) addTransaction(rows, t, ledgerId, closedId, 'ACCOUNT_IMPORT')
    }
    const openFrom =
      closing !== undefined
        ? dayAfter(closing)
        : earliest(
            [earliestSupplyStart, earliest(current.map((t) => t.transaction_date))].filter(
              (d): d is string => d !== undefined
            )
          )!
    const openId = newId()
    rows.statements.push({
      id: openId,
      ledgerId,
      status: 'OPEN',
      periodFrom: openFrom,
      openingBalance: formatDecimal(lastBalance)
    })
    for (const t of current) addTransaction(rows, t, ledgerId, openId, 'ACCOUNT_IMPORT')
  }

  ;(data.metadata ?? []).forEach((m, position) =>
    rows.metadata.push({ accountId, position, key: m.key, value: m.value })
  )
  return rows
}

/** A transaction of any type, read field by field: a field its type lacks reads as undefined. */
type AnyTransaction = Transaction & {
  reason?: string
  display_note?: string
  reference?: string
  payment_type?: string
  product_code?: string
  line_items?: LineItem[]
  tax_items?: TaxItem[]
}

/** The rows of one transaction with its line and tax items. */
export function addTransaction(
  rows: Pick<AccountRows, 'transactions' | 'lineItems' | 'taxItems'>,
  t: AnyTransaction,
  ledgerId: string,
  statementId: string | null,
  source: 'ACCOUNT_IMPORT' | 'POST_IMPORT' | 'BILLING_DOCUMENT',
  extra: { description?: string; originalTransactionDate?: string } = {}
): string {
  const id = newId()
  rows.transactions.push({
    id,
    ledgerId,
    statementId,
    source,
    transactionId: t.transaction_id,
    type: t.type,
    transactionDate: t.transaction_date,
    amount: String(t.amount),
    reason: t.reason ?? null,
    displayNote: t.display_note ?? null,
    note: t.note ?? null,
    reference: t.reference ?? null,
    paymentType: t.payment_type ?? null,
    productCode: t.product_code ?? null,
    description: extra.description ?? null,
    originalTransactionDate: extra.originalTransactionDate ?? null
  })
  ;(t.line_items ?? []).forEach((l, position) =>
    rows.lineItems.push({
      transactionId: id,
      position,
      rateBand: l.rate_band,
      startDate: l.start_date,
      endDate: l.end_date,
      numberOfUnits: String(l.number_of_units),
      netAmount: String(l.net_amount),
      pricePerUnit: String(l.price_per_unit),
      units: l.units ? l.units.map(String) : null
    })
  )
  ;(t.tax_items ?? []).forEach((x, position) =>
    rows.taxItems.push({
      transactionId: id,
      position,
      amount: String(x.amount),
      taxType: x.tax_type,
      valueTaxed: String(x.value_taxed),
      rate: String(x.rate),
      unitType: x.unit_type
    })
  )
  return id
}

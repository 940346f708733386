import { AccountData, LEDGER_CODES, type Address } from '../../schemas/account.js'
import type { SupplyPointChecks } from '../../schemas/common.js'
import { CODE } from '../../schemas/error-codes.js'
import { formatDecimal, sumDecimals, toBig, normaliseDecimals, type Big } from '../decimal.js'
import { compareAttr, entriesFromAjv, sortEntries, type ErrorEntry } from '../errors.js'
import { addressKey, countryCode, normalisePostcode } from '../rules/address.js'
import { emailProblem, phoneE164 } from '../rules/contact.js'
import { ruleContext, type RuleContext } from '../rules/context.js'
import { supplyPointIdentifierProblem } from '../rules/supply-points.js'
import { normaliseTransaction, signedAmount, transactionRules } from '../rules/transactions.js'
import { fieldOf, isObject } from '../objects.js'
import { compileBody } from '../validation.js'

const validateAccountData = compileBody(AccountData)

/** Schema problems of account data. Ajv fills defaults and drops empty values in place. */
export function accountSchemaErrors(data: unknown): ErrorEntry[] {
  return validateAccountData(data) ? [] : entriesFromAjv(validateAccountData.errors ?? [])
}

/** What of its supplier an account's data is checked against: the supplier's settings, as it is at the check. */
export interface SupplierSettings {
  supplyPointChecks: SupplyPointChecks
}

/**
 * Every check of account data that needs no database: the schema, then the business rules on the
 * fields that passed it (as of `today`), those of its supplier's settings included. Every problem,
 * sorted; or, with none, the normalised account.
 */
export function checkAccountData(
  data: unknown,
  today: string,
  supplier: SupplierSettings,
  schemaErrors = accountSchemaErrors(data)
): { errors: ErrorEntry[]; data?: AccountData } {
  const ctx = ruleContext(schemaErrors, today)
  accountRules(data, ctx)
  supplierRules(data, ctx, supplier)
  return ctx.errors.length > 0
    ? { errors: sortEntries(ctx.errors) }
    : { errors: [], data: normaliseAccount(data as AccountData) }
}

/**
 * The business rules of account data that went through the schema. Values are read only
 * where `ctx.clean` says their schema checks passed, so the data is `unknown` here and each
 * value is narrowed where it is read.
 */
export function accountRules(data: unknown, ctx: RuleContext): void {
  if (!isObject(data)) return
  billingOptionRules(data, ctx)
  const billingCountry = addressRules(data.billing_address, 'billing_address', ctx)
  customerRules(data, billingCountry, ctx)
  supplyAddressRules(data, ctx)
  ledgerRules(data, ctx)
  laterDuplicates(
    ctx,
    arrayOf(data.metadata).map((m, i) => [`metadata.${i}.key`, fieldOf(m, 'key')]),
    (attr) => ctx.report(CODE.metadata_has_duplicate_keys, attr)
  )
}

/**
 * The rules of account data that depend on its supplier's settings (the rest are `accountRules`):
 * with `supplyPointChecks` GB, each supply point's identifier is an MPAN core (ELECTRICITY) or an
 * MPRN (GAS), reported at `supply_addresses.A.supply_points.P.identifier`.
 */
export function supplierRules(data: unknown, ctx: RuleContext, supplier: SupplierSettings): void {
  if (!isObject(data) || supplier.supplyPointChecks === 'NONE') return
  arrayOf(data.supply_addresses).forEach((address, a) => {
    arrayOf(fieldOf(address, 'supply_points')).forEach((point, p) => {
      const path = `supply_addresses.${a}.supply_points.${p}`
      const identifier = fieldOf(point, 'identifier')
      const supplyType = fieldOf(point, 'supply_type')
      if (typeof identifier !== 'string' || typeof supplyType !== 'string') return
      if (!ctx.clean(`${path}.identifier`, `${path}.supply_type`)) return
      const code = supplyPointIdentifierProblem(supplier.supplyPointChecks, supplyType, identifier)
      if (code !== undefined) ctx.report(code, `${path}.identifier`, { identifier })
    })
  })
}

/** The settings of a new supplier, and those an account is judged by when its supplier is unknown. */
export const DEFAULT_SUPPLIER_SETTINGS: SupplierSettings = { supplyPointChecks: 'NONE' }

/**
 * For each setting a supplier can have, whether `data` passes every rule: nothing reported in
 * `ctx` so far (`accountRules` ran) and nothing `supplierRules` would report. For a caller that
 * judges the data before it has read its supplier (validate, whose one look-up clears the failure
 * record of a success).
 */
export function passesForEachSetting(data: unknown, ctx: RuleContext): Record<SupplyPointChecks, boolean> {
  const passes = (supplyPointChecks: SupplyPointChecks): boolean => {
    let found = ctx.errors.length > 0
    supplierRules(
      data,
      {
        ...ctx,
        report: () => {
          found = true
        }
      },
      { supplyPointChecks }
    )
    return !found
  }
  return { NONE: passes('NONE'), GB: passes('GB') }
}

const arrayOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : [])

/** Reports, through `report`, every later occurrence of a value already seen (values read only where clean). */
function laterDuplicates(
  ctx: RuleContext,
  items: Array<[attr: string, value: unknown]>,
  report: (attr: string, value: unknown) => void
): void {
  const seen = new Set<unknown>()
  for (const [attr, value] of items) {
    if (value === undefined || !ctx.clean(attr)) continue
    if (seen.has(value)) report(attr, value)
    seen.add(value)
  }
}

function billingOptionRules(data: Record<string, unknown>, ctx: RuleContext): void {
  const options = data.account_billing_options
  if (!isObject(options) || !ctx.clean('account_billing_options.use_industry_billing')) return
  for (const field of ['period_length', 'period_start_day']) {
    const attr = `account_billing_options.${field}`
    if (options.use_industry_billing === false && options[field] === undefined && ctx.clean(attr)) {
      ctx.report(CODE.account_billing_options_period_data_required, attr)
    }
    if (options.use_industry_billing === true && options[field] !== undefined) {
      ctx.report(CODE.account_billing_options_industry_billing_with_period_data, attr)
    }
  }
}

/** Country and postcode of an address; returns its country code when valid. */
function addressRules(address: unknown, path: string, ctx: RuleContext): string | undefined {
  if (!isObject(address) || !ctx.clean(`${path}.country`)) return undefined
  const { country: sent, postal_code: postcode } = address
  if (typeof sent !== 'string') return undefined
  const country = countryCode(sent)
  if (!country) {
    ctx.report(CODE.invalid_country, `${path}.country`, { country: sent })
    return undefined
  }
  if (
    typeof postcode === 'string' &&
    ctx.clean(`${path}.postal_code`) &&
    normalisePostcode(country, postcode) === undefined
  ) {
    ctx.report(CODE.invalid_postcode, `${path}.postal_code`, { postcode, country })
  }
  return country
}

function customerRules(data: Record<string, unknown>, billingCountry: string | undefined, ctx: RuleContext): void {
  const customers = arrayOf(data.customers)
  const occupierKnown = ctx.clean('unknown_occupier')
  const unknownOccupier = data.unknown_occupier === true
  // These read the list's length and (for the roles) each customer's roles, nothing else of them.
  if (occupierKnown && ctx.shallow('customers')) {
    if (!unknownOccupier && customers.length === 0) {
      ctx.report(CODE.min_items, 'customers', {
        detail: 'At least one customer is required unless the occupier is unknown.'
      })
    }
    if (unknownOccupier && customers.length > 0) {
      ctx.report(CODE.customer_with_unknown_occupier, 'customers')
    }
    const rolesClean = customers.every((_, c) => ctx.clean(`customers.${c}.portfolio_roles`))
    if (
      !unknownOccupier &&
      customers.length > 0 &&
      rolesClean &&
      !customers.some((c) => arrayOf(fieldOf(c, 'portfolio_roles')).includes('ADMIN'))
    ) {
      ctx.report(CODE.required_user_role, 'customers')
    }
  }
  const domestic =
    ctx.clean('account_type') && typeof data.account_type === 'string' && data.account_type.startsWith('DOMESTIC')
  customers.forEach((customer, c) => {
    if (!isObject(customer)) return
    const path = `customers.${c}`
    const { email, landline } = customer
    if (domestic && customer.family_name === undefined && ctx.clean(`${path}.family_name`)) {
      ctx.report(CODE.customer_family_name_required, `${path}.family_name`)
    }
    if (typeof email === 'string' && ctx.clean(`${path}.email`)) {
      const problem = emailProblem(email)
      if (problem !== undefined) ctx.report(problem, `${path}.email`)
    }
    // The billing country is the default region: an unknown or invalid country skips this rule.
    if (
      typeof landline === 'string' &&
      ctx.clean(`${path}.landline`) &&
      ctx.clean('billing_address.country') &&
      (billingCountry !== undefined || landline.startsWith('+')) &&
      phoneE164(landline, billingCountry) === undefined
    ) {
      ctx.report(CODE.invalid_phone_number, `${path}.landline`, { phone: landline })
    }
  })
}

function supplyAddressRules(data: Record<string, unknown>, ctx: RuleContext): void {
  const addresses = arrayOf(data.supply_addresses)
  if (
    ctx.clean('unknown_occupier') &&
    ctx.shallow('supply_addresses') &&
    data.unknown_occupier === true &&
    addresses.length > 1
  ) {
    ctx.report(CODE.occupier_account_with_multiple_supply_addresses, 'supply_addresses')
  }
  const identifiers: Array<[string, unknown]> = []
  const addressKeys: Array<[string, unknown]> = []
  addresses.forEach((address, a) => {
    if (!isObject(address)) return
    const path = `supply_addresses.${a}`
    addressRules(address.supply_address, `${path}.supply_address`, ctx)
    if (isObject(address.supply_address)) {
      addressKeys.push([`${path}.supply_address`, addressKey(address.supply_address)])
    }
    arrayOf(address.supply_points).forEach((point, p) => {
      if (!isObject(point)) return
      const pointPath = `${path}.supply_points.${p}`
      identifiers.push([`${pointPath}.identifier`, point.identifier])
      supplyPointRules(point, pointPath, ctx)
    })
  })
  laterDuplicates(ctx, addressKeys, (attr) => ctx.report(CODE.duplicate_supply_addresses_found, attr))
  laterDuplicates(ctx, identifiers, (attr) => ctx.report(CODE.duplicate_supply_point_identifiers, attr))
}

function supplyPointRules(point: Record<string, unknown>, path: string, ctx: RuleContext): void {
  const { supply_start_date: sentStart, last_billed_to_date: lastBilled } = point
  const start = ctx.clean(`${path}.supply_start_date`) && typeof sentStart === 'string' ? sentStart : undefined
  if (typeof lastBilled === 'string' && ctx.clean(`${path}.last_billed_to_date`)) {
    if (start !== undefined && lastBilled < start) {
      ctx.report(CODE.start_date_later_than_end_date, `${path}.last_billed_to_date`, {
        end: 'last_billed_to_date',
        start: 'supply_start_date'
      })
    }
    if (lastBilled > ctx.today) {
      ctx.report(CODE.date_in_future, `${path}.last_billed_to_date`, { field: 'last_billed_to_date' })
    }
  }
  const dates = new Set<string>()
  arrayOf(point.agreements).forEach((agreement, k) => {
    const attr = `${path}.agreements.${k}.effective_from`
    const from = fieldOf(agreement, 'effective_from')
    if (typeof from !== 'string' || !ctx.clean(attr)) return
    if (start !== undefined && from < start) {
      ctx.report(CODE.agreement_start_date_before_supply_start_date, attr)
    }
    if (dates.has(from)) {
      ctx.report(CODE.gaps_or_overlaps_in_agreement_dates, attr)
    }
    dates.add(from)
  })
}

const TRANSACTION_LISTS = ['current_statement_transactions', 'historical_statement_transactions'] as const

function ledgerRules(data: Record<string, unknown>, ctx: RuleContext): void {
  const ledgers = arrayOf(data.ledgers)
  const codes: Array<[string, unknown]> = []
  const transactionIds: Array<[string, unknown]> = []
  ledgers.forEach((ledger, n) => {
    if (!isObject(ledger)) return
    const path = `ledgers.${n}`
    if (ctx.clean(`${path}.ledger_code`)) {
      codes.push([`${path}.ledger_code`, ledger.ledger_code])
      if (!(LEDGER_CODES as readonly unknown[]).includes(ledger.ledger_code)) {
        ctx.report(CODE.ledger_code_does_not_exist, `${path}.ledger_code`, { ledger_code: String(ledger.ledger_code) })
      }
    }
    for (const list of TRANSACTION_LISTS) {
      arrayOf(ledger[list]).forEach((tx, t) => {
        const txPath = `${path}.${list}.${t}`
        transactionRules(tx, txPath, ctx)
        if (isObject(tx)) transactionIds.push([`${txPath}.transaction_id`, tx.transaction_id])
      })
    }
    singleLedgerRules(ledger, path, ctx)
  })
  laterDuplicates(ctx, codes, (attr) => ctx.report(CODE.duplicate_ledger_entries_found, attr))
  // "Later" is by attr order, so the result does not depend on the order of keys in the payload.
  transactionIds.sort((a, b) => compareAttr(a[0], b[0]))
  laterDuplicates(ctx, transactionIds, (attr, id) =>
    ctx.report(CODE.duplicate_transaction_ids, attr, { transaction_id: String(id) })
  )

  // Reads the ledger codes only: a problem elsewhere in a ledger does not hide it.
  const codesClean = ctx.shallow('ledgers') && ledgers.every((_, n) => ctx.clean(`ledgers.${n}.ledger_code`))
  if (ledgers.length > 0 && codesClean && !ledgers.some((l) => fieldOf(l, 'ledger_code') === 'ENERGY')) {
    ctx.report(CODE.energy_ledger_required, 'ledgers')
  }
  const balancesClean =
    ctx.clean('transfer_balance') &&
    ctx.shallow('ledgers') &&
    ledgers.every((_, n) => ctx.clean(`ledgers.${n}.ledger_balance`))
  if (ledgers.length > 0 && balancesClean) {
    const total = sumDecimals(ledgers.map((l) => fieldOf(l, 'ledger_balance')))
    if (!total.eq(toBig(data.transfer_balance))) {
      ctx.report(CODE.ledger_balances_not_equal_to_transfer_balance, 'transfer_balance', {
        total: formatDecimal(total)
      })
    }
  }
}

function singleLedgerRules(ledger: Record<string, unknown>, path: string, ctx: RuleContext): void {
  const closingAttr = `${path}.last_statement_closing_date`
  const closingClean = ctx.clean(closingAttr)
  const sentClosing = ledger.last_statement_closing_date
  const closing = closingClean && typeof sentClosing === 'string' ? sentClosing : undefined
  if (closing !== undefined && closing >= ctx.today) {
    ctx.report(CODE.date_in_future, closingAttr, { field: 'last_statement_closing_date' })
  }
  const historical = arrayOf(ledger.historical_statement_transactions)
  const current = arrayOf(ledger.current_statement_transactions)
  const openingClean = ctx.clean(`${path}.last_statement_balance`)
  if (closingClean && closing === undefined && ctx.shallow(`${path}.historical_statement_transactions`)) {
    const nonZeroOpening =
      openingClean && ledger.last_statement_balance !== undefined && !toBig(ledger.last_statement_balance).eq(0)
    if (historical.length > 0 || nonZeroOpening) {
      ctx.report(CODE.historical_statement_transactions_require_last_statement_closing_date, closingAttr)
    }
  }
  if (closing !== undefined) {
    historical.forEach((tx, t) => {
      const attr = `${path}.historical_statement_transactions.${t}.transaction_date`
      const date = fieldOf(tx, 'transaction_date')
      if (typeof date === 'string' && ctx.clean(attr) && date > closing) {
        ctx.report(CODE.historical_statement_transaction_after_last_statement_closing_date, attr)
      }
    })
    current.forEach((tx, t) => {
      const attr = `${path}.current_statement_transactions.${t}.transaction_date`
      const date = fieldOf(tx, 'transaction_date')
      if (typeof date === 'string' && ctx.clean(attr) && date <= closing) {
        ctx.report(CODE.current_statement_transaction_before_last_statement_closing_date, attr)
      }
    })
  }
  const amountsClean = current.every((_, t) =>
    ctx.clean(`${path}.current_statement_transactions.${t}.amount`, `${path}.current_statement_transactions.${t}.type`)
  )
  if (
    openingClean &&
    amountsClean &&
    ctx.clean(`${path}.ledger_balance`) &&
    ctx.shallow(`${path}.current_statement_transactions`)
  ) {
    const opening = toBig(ledger.last_statement_balance ?? 0)
    const expected = current.reduce(
      (sum: Big, tx) => sum.plus(signedAmount(String(fieldOf(tx, 'type')), fieldOf(tx, 'amount'))),
      opening
    )
    if (!expected.eq(toBig(ledger.ledger_balance))) {
      ctx.report(CODE.balance_mismatch_on_ledger_balance, `${path}.ledger_balance`, {
        expected: formatDecimal(expected)
      })
    }
  }
}

/**
 * The normalised account: decimals in their text form, landlines in E.164, countries and the five
 * checked postcodes normalised, in place. Runs on data that passed every check; defaults are
 * already filled.
 */
export function normaliseAccount(data: AccountData): AccountData {
  normaliseDecimals(data, 'transfer_balance')
  const billingCountry = normaliseAddress(data.billing_address)
  for (const customer of data.customers ?? []) {
    if (customer.landline !== undefined) customer.landline = phoneE164(customer.landline, billingCountry)
  }
  for (const address of data.supply_addresses) normaliseAddress(address.supply_address)
  for (const ledger of data.ledgers) {
    normaliseDecimals(ledger, 'last_statement_balance', 'ledger_balance')
    for (const list of TRANSACTION_LISTS) (ledger[list] ?? []).forEach(normaliseTransaction)
  }
  return data
}

function normaliseAddress(address: Address): string | undefined {
  const country = countryCode(address.country)!
  address.country = country
  if (address.postal_code !== undefined) address.postal_code = normalisePostcode(country, address.postal_code)
  return country
}

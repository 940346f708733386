import { CODE } from '../../../schemas/error-codes.js'
import { mpanCheckDigit } from '../../rules/supply-points.js'
import type { Json } from '../http.js'
import { Random, seedTag } from './random.js'

/**
 * Synthetic accounts for trials and load runs: valid by every account and transaction rule (balances
 * reconcile exactly: money is counted in pence), in varied shapes, some with post-import data,
 * and a chosen share deliberately invalid. The same options give the same lines.
 */

export interface GenerateOptions {
  count: number
  seed: string
  /** Share (0–1) of accounts made invalid on purpose, spread evenly. */
  invalidShare: number
  /** Share (0–1) of accounts that carry post-import data. */
  postImportShare: number
  supplier: string
  /** A payment vendor code: when given, some accounts carry a CARD payment instruction `pi_<external>`. */
  paymentVendor?: string
  /** The day the data is made for (`YYYY-MM-DD`): nothing is dated after it. */
  today: string
  /**
   * ELECTRICITY identifiers are MPAN cores (a distributor id 10–23, the check digit last), as a
   * supplier with GB supply point checks requires; GAS identifiers are MPRNs either way.
   */
  gbIdentifiers?: boolean
}

export interface GeneratedLine {
  /** The input line: `{account, ...post-import sections}`. */
  line: Json
  /** For a deliberately invalid account, the error code validate is expected to report. */
  invalid?: string
}

// ---------------------------------------------------------------------------------------------
// Dates and money

const DAY = 86_400_000

function addDays(date: string, days: number): string {
  return new Date(Date.parse(date + 'T00:00:00Z') + days * DAY).toISOString().slice(0, 10)
}

function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(to + 'T00:00:00Z') - Date.parse(from + 'T00:00:00Z')) / DAY)
}

/** The last day of the month before `date`'s month. */
function endOfPreviousMonth(date: string): string {
  return addDays(date.slice(0, 8) + '01', -1)
}

/** Pence as decimal text: 5324 → "53.24", -5 → "-0.05". */
function money(pence: number): string {
  const abs = Math.abs(pence)
  return `${pence < 0 ? '-' : ''}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`
}

/** Ten-thousandths as decimal text: 2450 → "0.2450". */
function tenThousandths(value: number): string {
  return `${Math.floor(value / 10000)}.${String(value % 10000).padStart(4, '0')}`
}

/** Money as the wire carries it: mostly decimal strings, sometimes JSON numbers (exact at this size). */
function amount(rng: Random, pence: number): string | number {
  return rng.chance(0.3) ? Number(money(pence)) : money(pence)
}

// ---------------------------------------------------------------------------------------------
// People and places

const GIVEN = [
  'Ada',
  'Alan',
  'Grace',
  'Tim',
  'Mary',
  'Charles',
  'Rosalind',
  'Isambard',
  'Dorothy',
  'Florence',
  'Karen',
  'Sophie',
  'Rahul',
  'Amara',
  'Wei',
  'Niamh',
  'Oluwaseun',
  'Zofia',
  'Mateo',
  'Aisha'
]
const FAMILY = [
  'Lovelace',
  'Turing',
  'Hopper',
  'Berners-Lee',
  'Somerville',
  'Babbage',
  'Franklin',
  'Brunel',
  'Hodgkin',
  'Nightingale',
  'Jones',
  'Wilson',
  'Patel',
  'Okafor',
  'Chen',
  'Murphy',
  'Adeyemi',
  'Nowak',
  'Garcia',
  'Khan'
]
const TITLES = ['Mr', 'Mrs', 'Ms', 'Miss', 'Mx', 'Dr', 'Prof']
const MAIL_DOMAINS = ['mailbox.org', 'posteo.net', 'fastmail.com', 'outlook.com']
/** Ofcom's drama ranges: numbers that are valid but never in use. */
const PHONE_PREFIXES = [
  '0117 496 0',
  '0113 496 0',
  '0114 496 0',
  '0116 496 0',
  '0118 496 0',
  '0121 496 0',
  '0131 496 0',
  '0141 496 0',
  '0151 496 0',
  '0161 496 0',
  '020 7946 0'
]
const STREETS = [
  'Harbour Row',
  'Station Road',
  'Mill Lane',
  'Church Street',
  'Victoria Terrace',
  'Park Avenue',
  'Queen Street',
  'Orchard Close',
  'Canal Walk',
  'Chapel Hill'
]
const TOWNS: Array<[string, string]> = [
  ['Bristol', 'BS'],
  ['Leeds', 'LS'],
  ['Manchester', 'M'],
  ['Birmingham', 'B'],
  ['Glasgow', 'G'],
  ['Edinburgh', 'EH'],
  ['Cardiff', 'CF'],
  ['Sheffield', 'S'],
  ['Nottingham', 'NG'],
  ['Liverpool', 'L']
]
const INWARD_LETTERS = 'ABDEFGHJLNPQRSTUWXYZ'
const PAYMENT_TYPES = [
  'DD_REGULAR_COLLECTION',
  'DD_FIRST_COLLECTION',
  'DEBIT_CARD',
  'CREDIT_CARD',
  'BACS_DEPOSIT',
  'CHEQUE'
]
const REPAYMENT_TYPES = ['DIRECT_CREDIT', 'CARD_REFUND', 'BACS']
const SALES_CHANNELS = ['DIRECT', 'ACQUISITION', 'BROKER', 'EVENTS', 'PRICE_COMPARISON', 'REFERRAL', 'TELESALES']

function address(rng: Random): Json {
  const [town, area] = rng.pick(TOWNS)
  const line = `${rng.int(1, 220)} ${rng.pick(STREETS)}`
  const postcode = `${area}${rng.int(1, 20)} ${rng.int(0, 9)}${rng.pick([...INWARD_LETTERS])}${rng.pick([...INWARD_LETTERS])}`
  return {
    street_address: rng.chance(0.2) ? `${line}\nFlat ${rng.int(1, 9)}` : line,
    locality: town,
    ...(rng.chance(0.3) ? { administrative_area: '' } : {}),
    postal_code: rng.chance(0.1) ? postcode.replace(' ', '').toLowerCase() : postcode,
    country: 'GB'
  }
}

function customer(rng: Random, roles: string[] | undefined): Json {
  const given = rng.pick(GIVEN)
  const family = rng.pick(FAMILY)
  return {
    ...(rng.chance(0.7) ? { title: rng.pick(TITLES) } : {}),
    given_name: given,
    family_name: family,
    ...(rng.chance(0.85)
      ? {
          email: `${given}.${family}${rng.int(1, 999)}@${rng.pick(MAIL_DOMAINS)}`
            .toLowerCase()
            .replace(/[^a-z0-9.@-]/g, '')
        }
      : {}),
    ...(rng.chance(0.7) ? { landline: rng.pick(PHONE_PREFIXES) + String(rng.int(0, 999)).padStart(3, '0') } : {}),
    ...(roles ? { portfolio_roles: roles } : {}),
    ...(rng.chance(0.2) ? { unable_to_read_meters: rng.chance(0.3) } : {})
  }
}

// ---------------------------------------------------------------------------------------------
// Transactions (amounts kept in pence beside the wire form, to reconcile exactly)

interface Money {
  tx: Json
  /** Effect on the balance in pence: CREDIT and PAYMENT add, the others subtract. */
  signed: number
}

function supplyCharge(rng: Random, id: string, date: string): Money {
  const units = rng.int(50, 900)
  const pricePerUnit = rng.int(1500, 3500) // £0.15–£0.35 in ten-thousandths of a pound
  const netPence = Math.round((units * pricePerUnit) / 100)
  const lineItems: Json[] = [
    {
      rate_band: 'CONSUMPTION_STANDARD',
      start_date: addDays(date, -29),
      end_date: date,
      number_of_units: units,
      net_amount: money(netPence),
      price_per_unit: tenThousandths(pricePerUnit),
      ...(rng.chance(0.5) ? { units: [rng.int(1000, 40000), rng.int(40001, 90000)] } : {})
    }
  ]
  let net = netPence
  if (rng.chance(0.5)) {
    const days = 30
    const dailyPence = rng.int(25, 65)
    lineItems.push({
      rate_band: 'STANDING_CHARGE',
      start_date: addDays(date, -29),
      end_date: date,
      number_of_units: days,
      net_amount: money(days * dailyPence),
      price_per_unit: money(dailyPence)
    })
    net += days * dailyPence
  }
  const taxPence = Math.round((net * 5) / 100)
  const tx: Json = {
    transaction_id: id,
    transaction_date: date,
    amount: amount(rng, net + taxPence),
    type: 'SUPPLY_CHARGE',
    ...(rng.chance(0.5) ? { display_note: 'Electricity used this month' } : {}),
    product_code: rng.pick(['E-1R-FIX-24-04-01', 'E-1R-VAR-22-10-01', 'G-1R-FIX-24-04-01']),
    line_items: lineItems,
    tax_items: [
      { amount: money(taxPence), tax_type: 'VAT', value_taxed: money(net), rate: '0.05', unit_type: 'PROPORTION' }
    ]
  }
  return { tx, signed: -(net + taxPence) }
}

/** One transaction of a random type; `supply` allows SUPPLY_CHARGE. */
function transaction(rng: Random, id: string, date: string, supply: boolean): Money {
  const kind = rng.pick(
    supply
      ? ['SUPPLY_CHARGE', 'SUPPLY_CHARGE', 'PAYMENT', 'PAYMENT', 'CHARGE', 'CREDIT', 'REPAYMENT']
      : ['PAYMENT', 'CHARGE', 'CREDIT', 'PAYMENT']
  )
  const pence = rng.int(100, 25000)
  switch (kind) {
    case 'SUPPLY_CHARGE':
      return supplyCharge(rng, id, date)
    case 'PAYMENT':
      return {
        tx: {
          transaction_id: id,
          transaction_date: date,
          amount: amount(rng, pence),
          type: 'PAYMENT',
          reason: 'ACCOUNT_CHARGE_PAYMENT',
          payment_type: rng.pick(PAYMENT_TYPES),
          reference: `PAY-${id}`
        },
        signed: pence
      }
    case 'REPAYMENT':
      return {
        tx: {
          transaction_id: id,
          transaction_date: date,
          amount: amount(rng, pence),
          type: 'REPAYMENT',
          reason: 'FULL_CREDIT_REFUND',
          payment_type: rng.pick(REPAYMENT_TYPES),
          reference: `REF-${id}`
        },
        signed: -pence
      }
    case 'CREDIT': {
      const reversal = rng.chance(0.1)
      return {
        tx: {
          transaction_id: id,
          transaction_date: date,
          amount: amount(rng, reversal ? -pence : pence),
          type: 'CREDIT',
          reason: 'GENERAL_CREDIT',
          ...(rng.chance(0.5) ? { display_note: 'Goodwill credit' } : {})
        },
        signed: reversal ? -pence : pence
      }
    }
    default: {
      const reversal = rng.chance(0.1)
      return {
        tx: {
          transaction_id: id,
          transaction_date: date,
          amount: amount(rng, reversal ? -pence : pence),
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
          ...(rng.chance(0.3) ? { note: 'imported from legacy billing' } : {})
        },
        signed: reversal ? pence : -pence
      }
    }
  }
}

/** A date in [from, to] (both inclusive; `to` wins when the range is empty). */
function dateIn(rng: Random, from: string, to: string): string {
  const span = daysBetween(from, to)
  return span <= 0 ? to : addDays(from, rng.int(0, span))
}

// ---------------------------------------------------------------------------------------------
// Supply point identifiers

/**
 * An ELECTRICITY identifier from 12 random digits, unique in its account by the supply address's
 * index `a`: the digits and the index, or (GB) an MPAN core made of them: a DNO's distributor id
 * (10–23), nine of the digits, the index and the check digit.
 */
function electricityIdentifier(drawn: string, a: number, gb: boolean): string {
  if (!gb) return drawn + String(a)
  const first12 = String(10 + (Number(drawn.slice(0, 2)) % 14)) + drawn.slice(2, 11) + String(a)
  return first12 + String(mpanCheckDigit(first12))
}

// ---------------------------------------------------------------------------------------------
// Accounts

/** The faults an invalid account gets (one each), with the code validate must report. */
const FAULTS = [
  CODE.balance_mismatch_on_ledger_balance,
  CODE.ledger_balances_not_equal_to_transfer_balance,
  CODE.invalid_postcode,
  CODE.invalid_phone_number,
  CODE.customer_family_name_required,
  CODE.transaction_in_future,
  CODE.possible_test_email_address,
  CODE.unexpected_field,
  CODE.required_user_role,
  CODE.invalid_date
] as const
type Fault = (typeof FAULTS)[number]

interface Built {
  account: Json
  sections: Json
}

function buildAccount(rng: Random, external: string, options: GenerateOptions, fault: Fault | undefined): Built {
  const today = options.today
  const kind = rng.next()
  const accountType =
    fault === CODE.customer_family_name_required
      ? 'DOMESTIC'
      : kind < 0.7
        ? 'DOMESTIC'
        : kind < 0.85
          ? 'BUSINESS'
          : kind < 0.9
            ? 'DOMESTIC_OCCUPIER'
            : kind < 0.95
              ? 'DOMESTIC_VACANT'
              : 'BUSINESS_OCCUPIER'
  const unknownOccupier = fault === undefined && rng.chance(0.03)
  const billing = address(rng)

  // Customers: 1–2, the first an ADMIN (roles omitted = the default ADMIN).
  const customers: Json[] = []
  if (!unknownOccupier) {
    const roles =
      fault === CODE.required_user_role ? ['BILL_PAYER'] : rng.pick([undefined, ['ADMIN'], ['ADMIN', 'BILL_PAYER']])
    customers.push(customer(rng, roles))
    if (rng.chance(0.35)) customers.push(customer(rng, rng.pick([['BILL_PAYER'], ['OCCUPIER'], ['READ_ONLY']])))
  }

  // Supply: 1–2 addresses (one with an unknown occupier), 1–2 points each, 1–3 agreements each.
  const supplyAddresses: Json[] = []
  const firstPoints: Array<{ identifier: string; start: string }> = []
  const addressCount = unknownOccupier ? 1 : rng.chance(0.15) ? 2 : 1
  for (let a = 0; a < addressCount; a++) {
    const supplyStart = addDays(today, -rng.int(400, 3000))
    const points: Json[] = []
    const pointCount = rng.chance(0.3) ? 2 : 1
    for (let p = 0; p < pointCount; p++) {
      const gas = p === 1
      const start = addDays(supplyStart, rng.int(0, 30))
      const agreements: Json[] = []
      let from = start
      const agreementCount = rng.int(1, 3)
      for (let k = 0; k < agreementCount && from < today; k++) {
        agreements.push({
          effective_from: from,
          tariff_code: `${gas ? 'G' : 'E'}-1R-${rng.pick(['VAR', 'FIX'])}-${from.slice(2, 4)}-${from.slice(5, 7)}-${from.slice(8, 10)}`
        })
        from = addDays(from, rng.int(200, 700))
      }
      // A GAS identifier of 10 digits is an MPRN as it is.
      const identifier = gas ? rng.digits(10) : electricityIdentifier(rng.digits(12), a, options.gbIdentifiers === true)
      if (p === 0) firstPoints.push({ identifier, start })
      points.push({
        identifier,
        supply_type: gas ? 'GAS' : 'ELECTRICITY',
        supply_start_date: fault === CODE.invalid_date && a === 0 && p === 0 ? `${start.slice(0, 4)}-02-30` : start,
        ...(rng.chance(0.6) ? { last_billed_to_date: endOfPreviousMonth(today) } : {}),
        ...(rng.chance(0.4) ? { load_zone: rng.pick(['LZ_NORTH', 'LZ_SOUTH', 'LZ_WEST']) } : {}),
        agreements
      })
    }
    supplyAddresses.push({
      customer_at_supply_address_from_date: supplyStart,
      supply_address: a === 0 && rng.chance(0.7) ? { ...billing } : address(rng),
      supply_points: points
    })
  }
  // Two random addresses could coincide: make the second one's street unmistakably its own.
  if (supplyAddresses.length === 2) {
    const second = supplyAddresses[1]!.supply_address as Json
    second.street_address = `Unit ${rng.int(1, 40)}, ${second.street_address}`
  }

  // The ENERGY ledger: an optional closed statement, then current transactions that reconcile.
  const withClosing = rng.chance(0.9)
  const closing = endOfPreviousMonth(today)
  const openFrom = withClosing ? addDays(closing, 1) : addDays(today, -60)
  const lastBalance = withClosing ? rng.int(-30000, 15000) : 0
  const historical: Json[] = []
  if (withClosing) {
    const count = rng.int(0, 3)
    for (let t = 0; t < count; t++) {
      historical.push(transaction(rng, `${external}-H${t + 1}`, dateIn(rng, addDays(closing, -90), closing), false).tx)
    }
  }
  const current: Json[] = []
  let balance = lastBalance
  const currentCount = rng.int(1, 5)
  for (let t = 0; t < currentCount; t++) {
    const made = transaction(rng, `${external}-C${t + 1}`, dateIn(rng, openFrom, today), true)
    current.push(made.tx)
    balance += made.signed
  }
  current.sort((x, y) => String(x.transaction_date).localeCompare(String(y.transaction_date)))
  if (fault === CODE.transaction_in_future) current[current.length - 1]!.transaction_date = addDays(today, 3)
  const energy: Json = {
    ledger_code: 'ENERGY',
    ...(withClosing ? { last_statement_balance: amount(rng, lastBalance), last_statement_closing_date: closing } : {}),
    ledger_balance: amount(rng, balance + (fault === CODE.balance_mismatch_on_ledger_balance ? 100 : 0)),
    ...(historical.length > 0 ? { historical_statement_transactions: historical } : {}),
    current_statement_transactions: current
  }
  const ledgers: Json[] = [energy]
  let transfer = balance + (fault === CODE.balance_mismatch_on_ledger_balance ? 100 : 0)
  if (rng.chance(0.15)) {
    const deposit = rng.int(5000, 30000)
    ledgers.push({
      ledger_code: 'DEPOSIT',
      last_statement_balance: money(deposit),
      last_statement_closing_date: closing,
      ledger_balance: money(deposit)
    })
    transfer += deposit
  }
  if (fault === CODE.ledger_balances_not_equal_to_transfer_balance) transfer += 1

  const billingOptions = rng.next()
  const account: Json = {
    external_account_number: external,
    import_supplier: options.supplier,
    account_type: accountType,
    ...(billingOptions < 0.4
      ? {}
      : billingOptions < 0.8
        ? { account_billing_options: { use_industry_billing: true } }
        : {
            account_billing_options: {
              use_industry_billing: false,
              period_length: rng.pick(['MONTHLY', 'QUARTERLY']),
              period_start_day: rng.int(1, 28)
            }
          }),
    billing_address: billing,
    ...(rng.chance(0.7) ? { communication_preference: rng.pick(['ONLINE', 'PRINT']) } : {}),
    ...(customers.length > 0 ? { customers } : {}),
    ledgers,
    ...(rng.chance(0.5)
      ? { metadata: [{ key: 'legacy_crm_id', value: { crm: `X-${rng.int(1000, 999999)}`, segment: rng.int(1, 9) } }] }
      : {}),
    ...(rng.chance(0.6) ? { sales_channel: rng.pick(SALES_CHANNELS) } : {}),
    ...(rng.chance(0.5) ? { sales_subchannel: 'MIGRATION' } : {}),
    supply_addresses: supplyAddresses,
    transfer_balance: money(transfer),
    ...(unknownOccupier ? { unknown_occupier: true } : rng.chance(0.3) ? { unknown_occupier: false } : {})
  }
  applyFault(account, fault, billing, customers)

  const sections = rng.chance(options.postImportShare)
    ? postImport(rng, external, options, {
        closing: withClosing ? closing : undefined,
        openFrom,
        firstPoint: firstPoints[0]!
      })
    : {}
  return { account, sections }
}

/** The changes that make an account fail validate with the fault's code (balances are handled where they are made). */
function applyFault(account: Json, fault: Fault | undefined, billing: Json, customers: Json[]): void {
  switch (fault) {
    case CODE.invalid_postcode:
      billing.postal_code = 'ZZZ 999'
      break
    case CODE.invalid_phone_number:
      customers[0]!.landline = '0117 000'
      break
    case CODE.customer_family_name_required:
      delete customers[0]!.family_name
      break
    case CODE.possible_test_email_address:
      customers[0]!.email = `${String(customers[0]!.given_name).toLowerCase()}@example.com`
      break
    case CODE.unexpected_field:
      account.legacy_reference = 'LEG-1'
      break
  }
}

/** Post-import data that fits the account: dates, supply points, ledger. */
function postImport(
  rng: Random,
  external: string,
  options: GenerateOptions,
  facts: { closing?: string; openFrom: string; firstPoint: { identifier: string; start: string } }
): Json {
  const today = options.today
  const sections: Json = {}
  const notes: Json[] = [{ body: `Migrated from the legacy CRM (record ${external}).` }]
  if (rng.chance(0.5)) notes.push({ body: 'Customer asked to be contacted by e-mail only.', is_pinned: true })
  if (rng.chance(0.4)) {
    notes.push({
      document_paths: [{ document_path: `letters/${external}/welcome.pdf` }],
      created_at: `${addDays(today, -rng.int(1, 30))}T09:00:00Z`
    })
  }
  sections.notes = notes
  if (rng.chance(0.8)) {
    const transactions: Json[] = []
    const count = rng.int(1, 4)
    for (let t = 0; t < count; t++) {
      // Mostly in the open statement; now and then an older one (the service moves it in).
      const date =
        rng.chance(0.15) && facts.closing ? addDays(facts.closing, -rng.int(1, 20)) : dateIn(rng, facts.openFrom, today)
      transactions.push(transaction(rng, `${external}-W${t + 1}`, date, false).tx)
    }
    sections.transactions = transactions
  }
  if (rng.chance(0.5)) {
    const to = facts.firstPoint.start
    sections.historical_agreements = [
      {
        supply_point_identifier: facts.firstPoint.identifier,
        tariff_code: 'E-1R-OLD-' + to.slice(2, 4),
        effective_from: addDays(to, -rng.int(365, 1460)),
        effective_to: to
      }
    ]
  }
  if (rng.chance(0.4)) {
    const type = rng.pick(['ITEM_BASED', 'PERIOD_BASED'])
    const documents: Json[] = []
    const count = rng.int(1, 2)
    for (let d = 0; d < count; d++) {
      const to = endOfPreviousMonth(addDays(today, -(400 + 31 * d)))
      const from = to.slice(0, 8) + '01'
      const pence = rng.int(2000, 20000)
      documents.push({
        billing_document_identifier: `${external}-BILL-${d + 1}`,
        billing_document_type: type,
        issued_date: addDays(to, 3),
        ...(type === 'PERIOD_BASED' ? { bill_period_from_date: from, bill_period_to_date: to } : {}),
        transactions: [
          {
            transaction_id: `${external}-B${d + 1}`,
            transaction_date: to,
            amount: money(pence),
            type: 'CHARGE',
            reason: 'IMPORTED_CHARGE'
          }
        ]
      })
    }
    sections.historical_billing_documents = {
      ledger_code: 'ENERGY',
      billing_document_type: type,
      historical_billing_documents: documents,
      ...(rng.chance(0.5)
        ? {
            additional_historical_transactions: [
              {
                transaction_id: `${external}-BP1`,
                transaction_date: addDays(today, -380),
                amount: money(rng.int(1000, 9000)),
                type: 'PAYMENT',
                reference: `DD-${external}`,
                payment_type: 'DD_REGULAR_COLLECTION'
              }
            ]
          }
        : {})
    }
  }
  if (rng.chance(0.5)) {
    const statements: Json[] = []
    const count = rng.int(1, 3)
    for (let s = 0; s < count; s++) {
      const to = endOfPreviousMonth(addDays(today, -(62 + 31 * s)))
      statements.push({
        statement_id: `${external}-ST-${to.slice(0, 7)}`,
        bill_period_from_date: to.slice(0, 8) + '01',
        bill_period_to_date: to,
        issued_date: addDays(to, 3),
        ...(rng.chance(0.7) ? { number: `INV-${rng.int(100000, 999999)}` } : {}),
        gross_amount: amount(rng, rng.int(1500, 30000)),
        ...(rng.chance(0.8) ? { statement_path: `/statements/${external}/${to.slice(0, 7)}.pdf` } : {})
      })
    }
    sections.historical_statements = statements
  }
  if (options.paymentVendor && rng.chance(0.5)) {
    sections.payment_instruction = {
      vendor: options.paymentVendor,
      reference: `pi_${external.toLowerCase()}`,
      type: 'CARD'
    }
  }
  return sections
}

/** The external account number of the `index`-th (0-based) account of a seed. */
export function externalNumber(seed: string, index: number): string {
  return `SYN${seedTag(seed)}-${String(index + 1).padStart(7, '0')}`
}

/**
 * `count` accounts, one at a time (memory does not grow with `count`). Invalid ones are spread
 * evenly: exactly the floor or ceiling of `count × invalidShare` of them.
 */
export function* generateAccounts(options: GenerateOptions): Generator<GeneratedLine> {
  const phase = new Random(`${options.seed}:phase`).next()
  for (let i = 0; i < options.count; i++) {
    const rng = new Random(`${options.seed}:${i}`)
    const invalid = Math.floor((i + 1 + phase) * options.invalidShare) > Math.floor((i + phase) * options.invalidShare)
    const fault = invalid ? rng.pick(FAULTS) : undefined
    const external = externalNumber(options.seed, i)
    const { account, sections } = buildAccount(rng, external, options, fault)
    yield { line: { account, ...sections }, ...(fault ? { invalid: fault } : {}) }
  }
}

import { Type, type Static, type TInteger } from 'typebox'
import { Choice, DateString, JsonValue, Money, Strict, Text, Trimmed } from './fields.js'
import { SECTION_COUNTS } from './sections.js'
import { Transaction } from './transactions.js'

/** The account import data (validate and stage), and the create request. */

export const ACCOUNT_TYPES = [
  'DOMESTIC',
  'BUSINESS',
  'DOMESTIC_OCCUPIER',
  'BUSINESS_OCCUPIER',
  'DOMESTIC_VACANT',
  'BUSINESS_VACANT'
] as const
export const SALES_CHANNELS = [
  'DIRECT',
  'ACQUISITION',
  'BROKER',
  'EVENTS',
  'FIELD_SALES',
  'PARTNERSHIPS',
  'PRICE_COMPARISON',
  'REFERRAL',
  'TELESALES'
] as const
export const PORTFOLIO_ROLES = ['ADMIN', 'BILL_PAYER', 'OCCUPIER', 'READ_ONLY'] as const
export const TITLES = [
  'Dr',
  'Fr',
  'Lady',
  'Miss',
  'Mr',
  'Mrs',
  'Ms',
  'Mx',
  'Prof',
  'Rabbi',
  'Rev',
  'Sir',
  'Sr'
] as const
export const LEDGER_CODES = ['ENERGY', 'DEPOSIT'] as const
export const SUPPLY_TYPES = ['ELECTRICITY', 'GAS'] as const

/** Largest number of metadata entries per account (the contract sets no bound; every array has one). */
export const MAX_METADATA_ENTRIES = 100

export const Address = Strict({
  street_address: Text(512),
  locality: Type.Optional(Text(512)),
  administrative_area: Type.Optional(Text(512)),
  postal_code: Type.Optional(Text(16)),
  country: Text(64)
})
export type Address = Static<typeof Address>

export const BillingOptions = Strict({
  use_industry_billing: Type.Boolean(),
  period_length: Type.Optional(Choice(['MONTHLY', 'QUARTERLY'] as const)),
  period_start_day: Type.Optional(Type.Integer({ minimum: 1, maximum: 28 }))
})

export const Customer = Strict({
  title: Type.Optional(Choice(TITLES)),
  given_name: Text(255),
  family_name: Type.Optional(Text(255)),
  email: Type.Optional(Text(254)),
  landline: Type.Optional(Text(64)),
  portfolio_roles: Type.Optional(
    Type.Array(Choice(PORTFOLIO_ROLES), { minItems: 1, maxItems: 4, uniqueItems: true, default: ['ADMIN'] })
  ),
  unable_to_read_meters: Type.Optional(Type.Boolean({ default: false }))
})
export type Customer = Static<typeof Customer>

export const Ledger = Strict({
  ledger_code: Text(64),
  last_statement_balance: Type.Optional(Money({ default: 0 })),
  last_statement_closing_date: Type.Optional(DateString),
  ledger_balance: Money(),
  current_statement_transactions: Type.Optional(Type.Array(Transaction, { maxItems: 10000 })),
  historical_statement_transactions: Type.Optional(Type.Array(Transaction, { maxItems: 10000 }))
})
export type Ledger = Static<typeof Ledger>

export const Agreement = Strict({
  effective_from: DateString,
  tariff_code: Text(64)
})

export const SupplyPoint = Strict({
  identifier: Text(64),
  supply_type: Choice(SUPPLY_TYPES),
  supply_start_date: DateString,
  last_billed_to_date: Type.Optional(DateString),
  load_zone: Type.Optional(Text(32)),
  agreements: Type.Array(Agreement, { minItems: 1, maxItems: 20 })
})
export type SupplyPoint = Static<typeof SupplyPoint>

export const SupplyAddress = Strict({
  customer_at_supply_address_from_date: DateString,
  supply_address: Address,
  supply_points: Type.Array(SupplyPoint, { minItems: 1, maxItems: 20 })
})
export type SupplyAddress = Static<typeof SupplyAddress>

export const MetadataEntry = Strict({
  key: Text(1024),
  value: JsonValue(16 * 1024, 32)
})

export const AccountData = Strict({
  external_account_number: Trimmed(128),
  import_supplier: Text(255),
  account_type: Choice(ACCOUNT_TYPES),
  account_billing_options: Type.Optional(BillingOptions),
  billing_address: Address,
  communication_preference: Type.Optional(Choice(['ONLINE', 'PRINT'] as const, { default: 'ONLINE' })),
  customers: Type.Optional(Type.Array(Customer, { maxItems: 20, default: [] })),
  ledgers: Type.Array(Ledger, { minItems: 1, maxItems: 2 }),
  metadata: Type.Optional(Type.Array(MetadataEntry, { maxItems: MAX_METADATA_ENTRIES })),
  sales_channel: Type.Optional(Choice(SALES_CHANNELS, { default: 'DIRECT' })),
  sales_subchannel: Type.Optional(Text(128)),
  supply_addresses: Type.Array(SupplyAddress, { minItems: 1, maxItems: 50 }),
  transfer_balance: Money(),
  unknown_occupier: Type.Optional(Type.Boolean({ default: false }))
})
export type AccountData = Static<typeof AccountData>

/** What stage answers (201 first time, 200 after). */
export const StageResponse = Type.Object({
  import_supplier: Type.String(),
  external_account_number: Type.String()
})

export const CreateRequest = Strict({
  external_account_number: Trimmed(128),
  import_supplier_code: Text(255),
  operations_team_name: Text(255),
  dry_run: Type.Optional(Type.Boolean({ default: false }))
})
export type CreateRequest = Static<typeof CreateRequest>

export const CreateResponse = Type.Object({
  service_account_number: Type.String(),
  ledgers: Type.Array(Type.Object({ ledger_code: Type.String(), ledger_number: Type.String() }))
})
export type CreateResponse = Static<typeof CreateResponse>

export const AccountParams = Type.Object(
  {
    supplier: Type.String({ minLength: 1, maxLength: 255 }),
    external: Type.String({ minLength: 1, maxLength: 1024 })
  },
  { additionalProperties: false }
)
export type AccountParams = Static<typeof AccountParams>

export const LatestError = Type.Union([
  Type.Null(),
  Type.Object({
    at: Type.String(),
    errors: Type.Array(
      Type.Object({ detail: Type.String(), code: Type.String(), attr: Type.Union([Type.String(), Type.Null()]) })
    )
  })
])

export const TransferStatus = Type.Object({
  status: Choice(['UNKNOWN', 'IN_PROGRESS', 'COMPLETED'] as const),
  service_account_number: Type.String(),
  latest_error: LatestError
})
export type TransferStatus = Static<typeof TransferStatus>

/** The account summary's counts: what the account's creation holds, then each section's (schemas/sections.ts). */
export const ACCOUNT_COUNTS = ['customers', 'supply_points', 'agreements', ...SECTION_COUNTS] as const
export type AccountCountName = (typeof ACCOUNT_COUNTS)[number]

export const AccountSummary = Type.Object({
  service_account_number: Type.String(),
  external_account_number: Type.String(),
  import_supplier: Type.String(),
  account_created_at: Type.String(),
  operations_team_name: Type.String(),
  ledgers: Type.Array(
    Type.Object({
      ledger_code: Type.String(),
      ledger_number: Type.String(),
      balance: Type.String(),
      open_statement_from_date: Type.String()
    })
  ),
  counts: Type.Object(
    Object.fromEntries(ACCOUNT_COUNTS.map((name) => [name, Type.Integer()])) as Record<AccountCountName, TInteger>
  ),
  latest_event: Type.Union([Type.Null(), Type.Object({ type: Type.String(), at: Type.String() })]),
  latest_error: LatestError
})
export type AccountSummary = Static<typeof AccountSummary>

import fc from 'fast-check'
import { Big } from '../../src/decimal.js'
import { AccountData, PORTFOLIO_ROLES } from '../../schemas/account.js'
import { isWellFormed, TRIMMED_PATTERN } from '../../schemas/text.js'

/**
 * fast-check arbitraries for account data, derived from the TypeBox schemas: `fromSchema`
 * walks any of them (strings, enums, decimals, dates, arrays, optional fields, the transaction
 * union); `validAccount` builds accounts that also satisfy the business rules; `mutation` breaks
 * one field of a valid account and says which attr the service must report.
 */

export type Schema = Record<string, any>
export type Account = Record<string, any>

/** How many items a generated array holds at most (the schema's own bound when smaller). */
const ARRAY_CAP = 3

/** Code points that stress text handling while staying well-formed: combining marks, emoji, RTL, odd spaces. */
const EDGE_CHARS = [
  '\u0301',
  '\u0336',
  '\u{1F600}',
  '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}',
  '\u{1F1EC}\u{1F1E7}',
  '\u05D0',
  '\u0627',
  '\u202E',
  '\u200F',
  '\u200B',
  '\uFEFF',
  '\u00A0',
  '\u3000',
  '\n',
  '\t',
  '\uFFFF',
  '\u{10FFFF}',
  '\u00DF',
  '\u0130',
  '.',
  '"',
  '\\'
]

const unit = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.constantFrom(...EDGE_CHARS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) }
)

const codePoints = (s: string): string[] => Array.from(s)

/** Well-formed, NUL-free text of 1–max code points with something that is not whitespace (`Text`). */
export function text(max: number, { trimmed = false } = {}): fc.Arbitrary<string> {
  const short = fc.array(unit, { minLength: 1, maxLength: Math.min(max, 12) }).map((parts) => parts.join(''))
  const full = fc.array(unit, { minLength: max, maxLength: max }).map((parts) => parts.join(''))
  return fc.oneof({ weight: 9, arbitrary: short }, { weight: 1, arbitrary: full }).map((raw) => {
    let s = codePoints(Array.from(raw, (c) => (isWellFormed(c) ? c : 'z')).join(''))
      .slice(0, max)
      .join('')
    if (trimmed) s = s.replace(/^\s+|\s+$/g, '')
    return s.trim() === '' ? 'x' : s
  })
}

/** `YYYY-MM-DD` of a Date (UTC). */
export const isoDate = (d: Date): string => d.toISOString().slice(0, 10)

/** The date `days` after `date` (negative: before). */
export function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + days)
  return isoDate(d)
}

export const today = (): string => isoDate(new Date())

/** A real calendar date, mostly 1900–2099, sometimes anywhere in years 0001–9999 (all that `format: date` and PostgreSQL share). */
export const dateArb = fc
  .oneof(
    {
      weight: 4,
      arbitrary: fc.date({
        min: new Date('1900-01-01T00:00:00Z'),
        max: new Date('2099-12-31T00:00:00Z'),
        noInvalidDate: true
      })
    },
    {
      weight: 1,
      arbitrary: fc.date({
        min: new Date('0001-01-01T00:00:00Z'),
        max: new Date('9999-12-31T00:00:00Z'),
        noInvalidDate: true
      })
    }
  )
  .map(isoDate)

/** A date `from`–`to` days before today. */
const pastDate = (from: number, to: number) => fc.integer({ min: from, max: to }).map((d) => addDays(today(), -d))

/** Significant digits of a value as big.js holds it. */
const significant = (b: Big): number => b.c.length

/**
 * A decimal as it may be sent: canonical text, text with trailing zeros, or a JSON number
 * when that is exact (at most 15 significant digits).
 */
export function sendDecimal(value: Big): fc.Arbitrary<string | number> {
  const textForm = value.toFixed()
  const forms: Array<fc.Arbitrary<string | number>> = [
    fc.constant(textForm),
    fc.integer({ min: 1, max: 3 }).map((n) => (textForm.includes('.') ? textForm : textForm + '.') + '0'.repeat(n))
  ]
  const asNumber = Number(textForm)
  if (significant(value) <= 15 && Number.isFinite(asNumber) && new Big(asNumber).eq(value)) {
    forms.push(fc.constant(asNumber))
  }
  return fc.oneof(...forms)
}

/** An exact value with at most `integer` integer digits and `scale` decimal places. */
export function bigArb(integer: number, scale: number, { positive = false, small = false } = {}): fc.Arbitrary<Big> {
  const intDigits = small ? Math.min(integer, 4) : integer
  return fc
    .tuple(
      fc.integer({ min: 0, max: intDigits }),
      fc.integer({ min: 0, max: small ? Math.min(scale, 2) : scale }),
      fc.boolean()
    )
    .chain(([i, s, negative]) =>
      fc.bigInt({ min: 0n, max: 10n ** BigInt(i + s) - 1n }).map((n) => {
        let value = new Big(n.toString()).div(new Big(10).pow(s))
        if (positive) return value.eq(0) ? new Big(1) : value
        if (negative) value = value.times(-1)
        return value
      })
    )
}

/** Any value a `decimal` schema accepts. */
const decimalArb = (bounds: { integer: number; scale: number; positive?: boolean }) =>
  bigArb(bounds.integer, bounds.scale, { positive: bounds.positive === true }).chain(sendDecimal)

/** The branch of a discriminated union that a value selects (by its `type`). */
export function branchFor(schema: Schema, value: unknown): Schema | undefined {
  const tag = (value as Account | null)?.type
  return (schema.oneOf as Schema[]).find((b) => b.properties?.type?.const === tag)
}

/** An arbitrary of values valid against one of the account schemas (business rules aside). */
export function fromSchema(schema: Schema): fc.Arbitrary<unknown> {
  if (schema.decimal) return decimalArb(schema.decimal)
  if (schema.jsonValue) return jsonValueArb
  if (schema.oneOf) return fc.oneof(...(schema.oneOf as Schema[]).map(fromSchema))
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (schema.enum) return fc.constantFrom(...(schema.enum as string[]))
  switch (schema.type) {
    case 'string':
      if (schema.format === 'date') return dateArb
      return text(schema.maxLength ?? 64, { trimmed: schema.pattern === TRIMMED_PATTERN })
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6 })
    case 'boolean':
      return fc.boolean()
    case 'array': {
      const item = fromSchema(schema.items)
      const options = {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? ARRAY_CAP, Math.max(ARRAY_CAP, schema.minItems ?? 0))
      }
      return schema.uniqueItems ? fc.uniqueArray(item, options) : fc.array(item, options)
    }
    case 'object': {
      const required = new Set<string>(schema.required ?? [])
      const entries = Object.entries(schema.properties as Record<string, Schema>)
      return fc.record(Object.fromEntries(entries.map(([k, s]) => [k, fromSchema(s)])), {
        requiredKeys: entries.map(([k]) => k).filter((k) => required.has(k))
      })
    }
  }
  throw new Error(`no arbitrary for schema ${JSON.stringify(schema).slice(0, 200)}`)
}

/** The sub-schema at an attr path of account data (transactions by their `type` in `value`). */
export function schemaAt(path: string, value: Account, root: Schema = AccountData as Schema): Schema {
  let schema = root
  let node: any = value
  for (const part of path.split('.')) {
    if (schema.oneOf) schema = branchFor(schema, node)!
    schema = schema.type === 'array' ? schema.items : schema.properties[part]
    node = node?.[part]
  }
  return schema.oneOf ? branchFor(schema, node)! : schema
}

/** Metadata values: any JSON but null (well-formed text; no keys that the JSON parser refuses as prototype poisoning). */
const jsonValueArb = fc.jsonValue({ maxDepth: 3 }).filter((v) => {
  if (v === null) return false // a required value sent as null is `null`
  const json = JSON.stringify(v)
  return !json.includes('"__proto__"') && !json.includes('"constructor"') && !/\\u0000|\\ud[89a-f]/i.test(json)
})

const leaf = (path: string) => fromSchema(schemaAt(path, exampleShape))
/** Just enough of an account for `schemaAt` to find leaf schemas outside transactions. */
const exampleShape: Account = {}

// ---------------------------------------------------------------- valid accounts

/** A valid address in a country whose postcode rule it follows (country in any case). */
const addressArb = fc
  .record({
    street_address: leaf('billing_address.street_address'),
    locality: fc.option(leaf('billing_address.locality'), { nil: undefined }),
    administrative_area: fc.option(leaf('billing_address.administrative_area'), { nil: undefined }),
    place: fc.oneof(
      fc.stringMatching(/^[A-Z]{1,2}[0-9][A-Z0-9]? ?[0-9][A-Z]{2}$/).map((p) => ['GB', p]),
      fc.stringMatching(/^[0-9]{5}(-[0-9]{4})?$/).map((p) => ['US', p]),
      fc.stringMatching(/^[A-Z][0-9][A-Z] ?[0-9][A-Z][0-9]$/).map((p) => ['CA', p]),
      fc.stringMatching(/^[0-9]{4}$/).map((p) => ['AU', p]),
      fc.stringMatching(/^[0-9]{4}$/).map((p) => ['NZ', p]),
      fc.tuple(
        fc.constantFrom('FR', 'DE', 'JP', 'IE'),
        fc.option(leaf('billing_address.postal_code'), { nil: undefined })
      )
    ),
    lower: fc.boolean()
  })
  .map(({ place: [country, postal], lower, ...rest }) =>
    strip({
      ...rest,
      country: lower ? country!.toLowerCase() : country,
      // Lower case only for the checked (ASCII) postcodes: free text may grow when lowered ('İ').
      postal_code:
        typeof postal !== 'string' ? undefined : lower && /^[ -~]*$/.test(postal) ? postal.toLowerCase() : postal
    })
  )

/** Drops `undefined` fields (absent optional fields). */
function strip<T extends Account>(value: T): T {
  for (const key of Object.keys(value)) if (value[key] === undefined) delete value[key]
  return value
}

const emailArb = fc
  .tuple(
    fc.stringMatching(/^[a-z0-9][a-z0-9._+-]{0,20}$/),
    fc.stringMatching(/^[a-z0-9]{1,10}$/),
    fc.constantFrom('org', 'com', 'net', 'io', 'co.uk')
  )
  .filter(([local]) => local.toLowerCase() !== 'test')
  .map(([local, domain, tld]) => `${local}@m${domain}.${tld}`)

function customerArb(domestic: boolean, admin: boolean, country: string) {
  const roles = fc
    .subarray([...PORTFOLIO_ROLES], { minLength: 1 })
    .map((r) => (admin && !r.includes('ADMIN') ? ['ADMIN', ...r] : r))
  return fc
    .record({
      title: fc.option(leaf('customers.0.title'), { nil: undefined }),
      given_name: leaf('customers.0.given_name'),
      family_name: domestic
        ? leaf('customers.0.family_name')
        : fc.option(leaf('customers.0.family_name'), { nil: undefined }),
      email: fc.option(emailArb, { nil: undefined }),
      landline: fc.option(
        country === 'GB'
          ? fc.constantFrom('0117 496 0123', '+441174960123', '020 7946 0018')
          : fc.constantFrom('+441174960123', '+12025550123'),
        { nil: undefined }
      ),
      portfolio_roles: admin ? fc.option(roles, { nil: undefined }) : fc.option(roles, { nil: undefined }),
      unable_to_read_meters: fc.option(fc.boolean(), { nil: undefined })
    })
    .map(strip)
}

type Kind = 'CHARGE' | 'CREDIT' | 'PAYMENT' | 'REPAYMENT' | 'SUPPLY_CHARGE'
const KINDS: Kind[] = ['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE']
const txLeaf = (type: Kind, field: string) =>
  fromSchema(
    schemaAt(`ledgers.0.current_statement_transactions.0.${field}`, {
      ledgers: [{ current_statement_transactions: [{ type }] }]
    })
  )

/** A line item whose net amount is units × price rounded to the cent (within 0.01). */
const lineItemArb = fc
  .record({
    rate_band: text(64),
    start: fc.integer({ min: 0, max: 60 }),
    length: fc.integer({ min: 0, max: 60 }),
    units: bigArb(6, 2, { small: true }),
    price: bigArb(3, 4, { small: true }),
    unitValues: fc.option(fc.tuple(bigArb(12, 4), bigArb(12, 4)), { nil: undefined })
  })
  .chain(({ rate_band, start, length, units, price, unitValues }) =>
    fc
      .record({
        number_of_units: sendDecimal(units),
        price_per_unit: sendDecimal(price),
        net_amount: sendDecimal(units.times(price).round(2)),
        units: unitValues ? fc.tuple(sendDecimal(unitValues[0]), sendDecimal(unitValues[1])) : fc.constant(undefined)
      })
      .map((d) => ({
        net: units.times(price).round(2),
        item: (date: string) =>
          strip({
            rate_band,
            start_date: addDays(date, -start - length),
            end_date: addDays(date, -start),
            ...d
          })
      }))
  )

/** A tax item: by proportion (amount = value taxed × rate, to the cent) or per kWh. */
const taxItemArb = fc
  .record({
    tax_type: text(32),
    proportion: fc.boolean(),
    valueTaxed: bigArb(6, 2, { small: true }),
    rate: bigArb(1, 4, { small: true }),
    free: bigArb(4, 2, { small: true })
  })
  .chain(({ tax_type, proportion, valueTaxed, rate, free }) => {
    const amount = proportion ? valueTaxed.times(rate).round(2) : free
    return fc
      .record({ amount: sendDecimal(amount), value_taxed: sendDecimal(valueTaxed), rate: sendDecimal(rate) })
      .map((d) => ({ amount, item: { ...d, tax_type, unit_type: proportion ? 'PROPORTION' : 'CURRENCY_PER_KWH' } }))
  })

/** A transaction of any type dated `date`, with its signed effect on the balance. */
function transactionArb(id: string, date: string): fc.Arbitrary<{ tx: Account; signed: Big }> {
  return fc.constantFrom(...KINDS).chain((type): fc.Arbitrary<{ tx: Account; signed: Big }> => {
    const optional = (field: string) => fc.option(txLeaf(type, field), { nil: undefined })
    const common = {
      transaction_id: fc.constant(id),
      transaction_date: fc.constant(date),
      type: fc.constant(type),
      note: optional('note')
    }
    if (type === 'SUPPLY_CHARGE') {
      return fc
        .record({
          ...common,
          display_note: optional('display_note'),
          product_code: txLeaf(type, 'product_code'),
          lines: fc.array(lineItemArb, { minLength: 1, maxLength: 3 }),
          taxes: fc.option(fc.array(taxItemArb, { maxLength: 2 }), { nil: undefined })
        })
        .chain(({ lines, taxes, ...rest }) => {
          const amount = lines
            .reduce((s, l) => s.plus(l.net), new Big(0))
            .plus((taxes ?? []).reduce((s, x) => s.plus(x.amount), new Big(0)))
          return sendDecimal(amount).map((sent) => ({
            tx: strip({
              ...rest,
              amount: sent,
              line_items: lines.map((l) => l.item(date)),
              tax_items: taxes?.map((x) => x.item)
            }),
            signed: amount.times(-1)
          }))
        })
    }
    const movement = type === 'PAYMENT' || type === 'REPAYMENT'
    return fc
      .record({
        ...common,
        reason: optional('reason'),
        ...(type === 'CHARGE' || type === 'CREDIT' ? { display_note: optional('display_note') } : {}),
        ...(movement ? { reference: txLeaf(type, 'reference'), payment_type: txLeaf(type, 'payment_type') } : {}),
        value: bigArb(6, 4, { positive: movement, small: true })
      })
      .chain(({ value, ...rest }) =>
        sendDecimal(value).map((sent) => ({
          tx: strip({ ...rest, amount: sent }),
          signed: type === 'CREDIT' || type === 'PAYMENT' ? value : value.times(-1)
        }))
      )
  })
}

/** Transactions with ids unique in the account (`prefix` per list) on the given dates. */
function transactionsArb(prefix: string, dates: fc.Arbitrary<string>, max: number) {
  return fc
    .array(fc.tuple(text(50), dates), { maxLength: max })
    .chain((items) =>
      items.length === 0
        ? fc.constant([] as Array<{ tx: Account; signed: Big }>)
        : fc.tuple(...items.map(([id, date], i) => transactionArb(`${prefix}${i}:${id}`, date)))
    )
}

/** A ledger whose balance reconciles: last statement balance + Σ signed current transactions. */
function ledgerArb(code: string, n: number) {
  return fc
    .record({
      closingDaysAgo: fc.option(fc.integer({ min: 3, max: 400 }), { nil: undefined }),
      opening: bigArb(7, 4, { small: true }),
      zeroForm: fc.constantFrom('absent', '0', 0, '0.00', '-0')
    })
    .chain(({ closingDaysAgo, opening, zeroForm }) => {
      const closing = closingDaysAgo === undefined ? undefined : addDays(today(), -closingDaysAgo)
      const currentDates =
        closingDaysAgo === undefined
          ? pastDate(1, 3000)
          : fc.integer({ min: 1, max: closingDaysAgo - 1 }).map((d) => addDays(today(), -d))
      const historicalDates =
        closingDaysAgo === undefined
          ? fc.constant('')
          : fc.integer({ min: closingDaysAgo, max: closingDaysAgo + 400 }).map((d) => addDays(today(), -d))
      return fc
        .record({
          openingSent: closing ? sendDecimal(opening) : fc.constant(zeroForm === 'absent' ? undefined : zeroForm),
          current: fc.option(transactionsArb(`L${n}C`, currentDates, 4), { nil: undefined }),
          historical: closing
            ? fc.option(transactionsArb(`L${n}H`, historicalDates, 3), { nil: undefined })
            : fc.constant(undefined)
        })
        .chain(({ openingSent, current, historical }) => {
          const start = closing ? opening : new Big(0)
          const balance = (current ?? []).reduce((s, t) => s.plus(t.signed), start)
          return sendDecimal(balance).map((ledger_balance) => ({
            balance,
            ledger: strip({
              ledger_code: code,
              last_statement_balance: openingSent,
              last_statement_closing_date: closing,
              ledger_balance,
              current_statement_transactions: current?.map((t) => t.tx),
              historical_statement_transactions: historical?.map((t) => t.tx)
            })
          }))
        })
    })
}

/** A supply address (distinct from the others by its street's `a` prefix) with uniquely named points. */
function supplyAddressArb(a: number) {
  const point = (p: number) =>
    fc
      .record({
        id: text(50),
        supply_type: leaf('supply_addresses.0.supply_points.0.supply_type'),
        startDaysAgo: fc.integer({ min: 30, max: 5000 }),
        billed: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
        load_zone: fc.option(leaf('supply_addresses.0.supply_points.0.load_zone'), { nil: undefined }),
        agreements: fc.uniqueArray(
          fc.tuple(
            fc.integer({ min: 0, max: 29 }),
            leaf('supply_addresses.0.supply_points.0.agreements.0.tariff_code')
          ),
          { minLength: 1, maxLength: 3, selector: ([d]) => d }
        )
      })
      .map(({ id, startDaysAgo, billed, agreements, ...rest }) => {
        const start = addDays(today(), -startDaysAgo)
        return strip({
          identifier: `${a}.${p}:${id}`,
          ...rest,
          supply_start_date: start,
          last_billed_to_date:
            billed === undefined ? undefined : addDays(start, Math.floor(billed * (startDaysAgo - 1))),
          agreements: agreements.map(([d, tariff_code]) => ({ effective_from: addDays(start, d), tariff_code }))
        })
      })
  return fc.record({
    customer_at_supply_address_from_date: dateArb,
    supply_address: addressArb.map((address) => ({
      ...address,
      street_address: codePoints(`${a} ${address.street_address}`).slice(0, 512).join('')
    })),
    supply_points: fc
      .integer({ min: 1, max: 2 })
      .chain((count) => fc.tuple(...Array.from({ length: count }, (_, p) => point(p))))
  })
}

/**
 * A valid account: schema-derived leaves (names, addresses, notes, enums) in a structure that
 * satisfies the account rules, its balances computed exactly. `external` names it (stage keeps state).
 */
export function validAccount(
  external: fc.Arbitrary<string> = leaf('external_account_number') as fc.Arbitrary<string>
): fc.Arbitrary<Account> {
  return fc
    .record({
      external_account_number: external,
      account_type: leaf('account_type') as fc.Arbitrary<string>,
      billing: fc.option(
        fc.oneof(
          fc.constant({ use_industry_billing: true }),
          fc.record({
            use_industry_billing: fc.constant(false),
            period_length: leaf('account_billing_options.period_length'),
            period_start_day: leaf('account_billing_options.period_start_day')
          })
        ),
        { nil: undefined }
      ),
      billing_address: addressArb,
      communication_preference: fc.option(leaf('communication_preference'), { nil: undefined }),
      sales_channel: fc.option(leaf('sales_channel'), { nil: undefined }),
      sales_subchannel: fc.option(leaf('sales_subchannel'), { nil: undefined }),
      unknown_occupier: fc.option(fc.boolean(), { nil: undefined }),
      customerCount: fc.integer({ min: 1, max: 3 }),
      addressCount: fc.integer({ min: 1, max: 3 }),
      deposit: fc.boolean(),
      metadata: fc.option(fc.array(fc.tuple(text(40), jsonValueArb), { maxLength: 3 }), { nil: undefined })
    })
    .chain(({ billing, customerCount, addressCount, deposit, metadata, ...account }) => {
      const unknown = account.unknown_occupier === true
      const domestic = account.account_type.startsWith('DOMESTIC')
      const country = String(account.billing_address.country).toUpperCase()
      return fc
        .record({
          customers: unknown
            ? fc.constantFrom(undefined, [])
            : fc.tuple(...Array.from({ length: customerCount }, (_, c) => customerArb(domestic, c === 0, country))),
          supply_addresses: fc.tuple(
            ...Array.from({ length: unknown ? 1 : addressCount }, (_, a) => supplyAddressArb(a))
          ),
          ledgers: deposit
            ? fc.tuple(ledgerArb('ENERGY', 0), ledgerArb('DEPOSIT', 1))
            : fc.tuple(ledgerArb('ENERGY', 0)),
          order: fc.boolean()
        })
        .chain(({ ledgers, order, ...rest }) => {
          const total = ledgers.reduce((s, l) => s.plus(l.balance), new Big(0))
          return sendDecimal(total).map((transfer_balance) =>
            strip({
              ...account,
              import_supplier: 'ACME_ENERGY',
              account_billing_options: billing,
              ...rest,
              ledgers: (order ? ledgers : [...ledgers].reverse()).map((l) => l.ledger),
              metadata: metadata?.map(([key, value], m) => ({ key: `${m}:${key}`, value })),
              transfer_balance
            })
          )
        })
    })
}

import { exampleAccount as exampleAccountData } from '../../schemas/examples.js'

/** Account data for tests: the example account and ways to change it. No app, no database. */

/** A fresh copy of the example account (its balances reconcile), with fields replaced. */
export function exampleAccount(changes: Record<string, unknown> = {}): Record<string, any> {
  return { ...exampleAccountData(), ...changes }
}

/** A date `days` from today (UTC), as `YYYY-MM-DD`. */
export function daysFromToday(days: number): string {
  const d = new Date()
  d.setUTCDate(d.getUTCDate() + days)
  return d.toISOString().slice(0, 10)
}

export type Account = Record<string, any>
export type Expected = Array<[string, string | null]>

export const CUR = 'ledgers.0.current_statement_transactions'
export const HIST = 'ledgers.0.historical_statement_transactions'
export const SP = 'supply_addresses.0.supply_points.0'
/** A past date after the example ledger's last statement (2026-09-30): good for current transactions. */
export const DAY = '2026-10-15'
export const EMOJI = '\u{1F600}'

/** Path segments of an attr; indexes become numbers. */
function segments(path: string): Array<string | number> {
  return path.split('.').map((s) => (/^\d+$/.test(s) ? Number(s) : s))
}

function parentOf(target: Account, path: string): [any, string | number] {
  const parts = segments(path)
  let node: any = target
  for (const part of parts.slice(0, -1)) node = node[part]
  return [node, parts[parts.length - 1]!]
}

/** Sets the value at an attr path (in place) and returns the account. */
export function set(target: Account, path: string, value: unknown): Account {
  const [node, key] = parentOf(target, path)
  node[key] = value
  return target
}

/** Removes the field at an attr path (in place) and returns the account. */
export function unset(target: Account, path: string): Account {
  const [node, key] = parentOf(target, path)
  delete node[key]
  return target
}

export function get(target: Account, path: string): any {
  const [node, key] = parentOf(target, path)
  return node[key]
}

/** The example account, changed in place by `edit`. */
export function account(edit: (a: Account) => void = () => {}): Account {
  const a = exampleAccount()
  edit(a)
  return a
}

/** The example account with its ledgers replaced; `transfer` is their total. */
export function withLedgers(ledgers: Account[], transfer: unknown, edit: (a: Account) => void = () => {}): Account {
  return account((a) => {
    a.ledgers = ledgers
    a.transfer_balance = transfer
    edit(a)
  })
}

/** An ENERGY ledger without transactions or a last statement. */
export const bareLedger = (changes: Account = {}): Account => ({
  ledger_code: 'ENERGY',
  ledger_balance: '0.00',
  ...changes
})

/** A ledger without transactions whose balance is its last statement's. */
export const settledLedger = (ledger_code: string, balance: unknown): Account => ({
  ledger_code,
  last_statement_balance: balance,
  last_statement_closing_date: '2026-09-30',
  ledger_balance: balance
})

export const base = (id: string, type: string, amount: unknown, extra: Account) => ({
  transaction_id: id,
  transaction_date: DAY,
  amount,
  type,
  ...extra
})
export const tx = {
  charge: (id: string, amount: unknown, extra: Account = {}) => base(id, 'CHARGE', amount, extra),
  credit: (id: string, amount: unknown, extra: Account = {}) => base(id, 'CREDIT', amount, extra),
  payment: (id: string, amount: unknown, extra: Account = {}) =>
    base(id, 'PAYMENT', amount, { reference: `REF-${id}`, payment_type: 'CASH', ...extra }),
  repayment: (id: string, amount: unknown, extra: Account = {}) =>
    base(id, 'REPAYMENT', amount, { reference: `REF-${id}`, payment_type: 'BACS', ...extra })
}

/** A second supply address, different from the example's, with its own supply point. */
export const otherSupplyAddress = (identifier = 'SP-2', address: Account = {}): Account => ({
  customer_at_supply_address_from_date: '2022-01-01',
  supply_address: {
    street_address: '1 Quay Street',
    locality: 'Bristol',
    postal_code: 'BS1 4DJ',
    country: 'GB',
    ...address
  },
  supply_points: [
    {
      identifier,
      supply_type: 'GAS',
      supply_start_date: '2022-01-01',
      agreements: [{ effective_from: '2022-01-01', tariff_code: 'G-1R-VAR-22-01-01' }]
    }
  ]
})

export const customer = (changes: Account = {}): Account => ({ given_name: 'Grace', family_name: 'Hopper', ...changes })

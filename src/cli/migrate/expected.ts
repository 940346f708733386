/**
 * What the service holds for an account of the client's file once the account and its post-import
 * sections went through: each ledger's balance and the counts the reconciliation endpoint compares.
 * Pure, and built on the service's own rules: a ledger opens at its `ledger_balance`
 * (src/accounts/plan.ts); transactions added after import change the ENERGY ledger's balance by
 * their signed sum (`signedAmount`, src/rules/transactions.ts) and a transaction id the ledger
 * already holds is not added again (src/modules/transactions/service.ts); historical billing
 * documents leave the balance as it is but their transactions are the ledger's
 * (src/modules/billing-documents/service.ts); a note the account already has, and a historical
 * statement or agreement identical to one it has, are not written again. The counts are those of
 * the account summary (ACCOUNT_COUNTS of src/accounts/repository.ts): notes people wrote, not the
 * service's own.
 */
import { TEXT_PATTERN, TRIMMED_PATTERN } from '../../../schemas/text.js'
import { RECONCILED_COUNTS, type ReconciledCount } from '../../../schemas/reconciliation.js'
import { decimalProblems, formatDecimal, sumDecimals, toBig, type Big } from '../../decimal.js'
import { isObject } from '../../objects.js'
import { signedAmount } from '../../rules/transactions.js'
import type { Item } from './input.js'

/** The counts the endpoint compares, by name. */
type CountName = ReconciledCount

/** One entry of a reconciliation request. */
export interface ExpectedAccount {
  external_account_number: string
  ledgers?: Array<{ ledger_code: string; balance: string }>
  counts?: Record<CountName, number>
}

const listOf = (value: unknown): Record<string, unknown>[] =>
  Array.isArray(value) ? value.filter((v): v is Record<string, unknown> => isObject(v)) : []

/** Whole seconds, as the notes endpoint compares a note's time. */
const toSecond = (value: unknown): number | undefined =>
  typeof value === 'string' ? Math.floor(new Date(value).getTime() / 1000) : undefined

interface LedgerState {
  code: string
  balance: Big
  /** Transaction ids the ledger holds. */
  ids: Set<string>
}

/** What the endpoint takes (an entry it would refuse would refuse the whole request). */
const NUMBER = new RegExp(TRIMMED_PATTERN, 'u')
const CODE_TEXT = new RegExp(TEXT_PATTERN, 'u')
const BALANCE_BOUNDS = { integer: 10, scale: 10 }
const MAX_LEDGERS = 100
const sendable = (l: { ledger_code: string; balance: string }) =>
  l.ledger_code.length <= 64 && CODE_TEXT.test(l.ledger_code) && decimalProblems(l.balance, BALANCE_BOUNDS).length === 0

/**
 * The expected balances and counts of one line's account; only its external account number when
 * the account cannot be read (an invalid account: the service will say it was not created);
 * undefined when it has no external account number the service could hold.
 */
export function expectedAccount(item: Item): ExpectedAccount | undefined {
  const account = item.account
  const external = account.external_account_number
  if (typeof external !== 'string' || external.length > 128 || !NUMBER.test(external)) return undefined
  try {
    const expected = expectedOf(item)
    if (expected.ledgers.length > MAX_LEDGERS || !expected.ledgers.every(sendable)) throw new RangeError('ledgers')
    return { external_account_number: external, ...expected }
  } catch {
    return { external_account_number: external }
  }
}

function expectedOf(item: Item): Required<Omit<ExpectedAccount, 'external_account_number'>> {
  const account = item.account
  const counts = Object.fromEntries(RECONCILED_COUNTS.map((name) => [name, 0])) as Record<CountName, number>

  // The account as created: each ledger at its ledger_balance, with its imported transactions.
  const ledgers: LedgerState[] = listOf(account.ledgers).map((l) => {
    const imported = [...listOf(l.historical_statement_transactions), ...listOf(l.current_statement_transactions)]
    counts.transactions += imported.length
    return {
      code: String(l.ledger_code),
      balance: toBig(l.ledger_balance),
      ids: new Set(imported.map((t) => String(t.transaction_id)))
    }
  })
  const energy = ledgers.find((l) => l.code === 'ENERGY')
  const s = item.sections

  // Notes: one the account already has (same body and documents, same time when given) is not written.
  const notes: Array<{ key: string; at: number | undefined }> = []
  for (const note of listOf(s.notes)) {
    const paths = Array.isArray(note.document_paths) ? note.document_paths.map(String).sort() : []
    const key = JSON.stringify([note.body ?? null, paths])
    const at = toSecond(note.created_at)
    if (notes.some((k) => k.key === key && (at === undefined || k.at === at))) continue
    notes.push({ key, at: at ?? Number.NaN })
  }
  counts.notes += notes.length

  // Transactions on the ENERGY ledger: new ids only, the balance moves by their signed sum (one
  // dated before the open statement is moved into it: still the ledger's). The note the service
  // pins about such a move is its own, which the counts leave out.
  const added = listOf(s.transactions).filter((t) => {
    if (!energy) return false
    const id = String(t.transaction_id)
    if (energy.ids.has(id)) return false
    energy.ids.add(id)
    return true
  })
  if (energy && added.length > 0) {
    energy.balance = energy.balance.plus(sumDecimals(added.map((t) => signedAmount(String(t.type), t.amount))))
    counts.transactions += added.length
  }

  // Historical agreements: an identical one in the same request is refused, so each is one row.
  counts.historical_agreements += listOf(s.historical_agreements).length

  // Billing documents, per ledger (default ENERGY): the documents and their transactions, and the
  // additional historical transactions; the balance is left as it is.
  const perLedger = s.historical_billing_documents
  for (const request of Array.isArray(perLedger) ? listOf(perLedger) : listOf([perLedger])) {
    const code = request.ledger_code ?? 'ENERGY'
    if (!ledgers.some((l) => l.code === code)) continue
    const documents = listOf(request.historical_billing_documents)
    counts.billing_documents += documents.length
    counts.transactions +=
      documents.reduce((n, d) => n + listOf(d.transactions).length, 0) +
      listOf(request.additional_historical_transactions).length
  }

  // Historical statements: a statement id given twice is one statement (or a refused request).
  counts.historical_statements += new Set(listOf(s.historical_statements).map((st) => String(st.statement_id))).size

  if (isObject(s.payment_instruction)) counts.payment_instructions = 1

  return {
    ledgers: ledgers.map((l) => ({ ledger_code: l.code, balance: formatDecimal(l.balance) })),
    counts
  }
}

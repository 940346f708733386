/**
 * A mapping's fields against the batch entry's schema (the service's own TypeBox schemas): a
 * field the entry does not have, at any depth, is named before a line is written or sent.
 * Checked once on DuckDB's merged structure of every entry (`json_group_structure`), not line by line.
 */
import { Type } from 'typebox'
import { AccountData } from '../../../../schemas/account.js'
import { BillingDocumentsRequest } from '../../../../schemas/billing-documents.js'
import { HistoricalAgreementsRequest } from '../../../../schemas/historical-agreements.js'
import { HistoricalStatementsRequest } from '../../../../schemas/historical-statements.js'
import { NotesRequest } from '../../../../schemas/notes.js'
import { PaymentInstructionRequest } from '../../../../schemas/payment-instruction.js'
import { accountRef } from '../../../../schemas/post-import.js'
import type { SectionName } from '../../../../schemas/sections.js'
import { TransactionsRequest } from '../../../../schemas/transaction-import.js'
import { MapError } from './errors.js'

type Schema = Record<string, unknown>

const { ledger_number: _number, ...billingFields } = BillingDocumentsRequest.properties
const billingRequest = Type.Object(billingFields, { additionalProperties: false })
for (const name of Object.keys(accountRef)) delete (billingRequest.properties as Record<string, unknown>)[name]

/** What an entry holds under each section's name (schemas/sections.ts says the form). */
const SECTION_VALUES: Record<SectionName, object> = {
  notes: NotesRequest.properties.notes,
  transactions: TransactionsRequest.properties.transactions,
  historical_agreements: HistoricalAgreementsRequest.properties.agreements,
  historical_billing_documents: { anyOf: [billingRequest, Type.Array(billingRequest)] },
  historical_statements: HistoricalStatementsRequest.properties.statements,
  payment_instruction: PaymentInstructionRequest([])
}

export const ENTRY_SCHEMA: object = {
  type: 'object',
  additionalProperties: false,
  properties: { account: AccountData, ...SECTION_VALUES }
}

const variants = (s: Schema): Schema[] => [
  s,
  ...(['anyOf', 'oneOf', 'allOf'] as const).flatMap((k) =>
    Array.isArray(s[k]) ? (s[k] as Schema[]).flatMap(variants) : []
  )
]

/** The fields an object may have, each with its schemas; null when any field goes (free JSON). */
function fieldsOf(schemas: Schema[]): Map<string, Schema[]> | null {
  const fields = new Map<string, Schema[]>()
  let closed = false
  for (const v of schemas.flatMap(variants)) {
    if (v.properties && typeof v.properties === 'object') {
      closed = true
      for (const [k, s] of Object.entries(v.properties as Record<string, Schema>)) {
        fields.set(k, [...(fields.get(k) ?? []), s])
      }
    }
  }
  return closed ? fields : null
}

const itemsOf = (schemas: Schema[]): Schema[] =>
  schemas.flatMap(variants).flatMap((v) => (v.items && typeof v.items === 'object' ? [v.items as Schema] : []))

/** Field paths of `structure` (DuckDB's json_structure form) that the schemas do not have. */
export function unknownFields(
  structure: unknown,
  schemas: Schema[],
  path = ''
): Array<{ path: string; known: string[] }> {
  if (Array.isArray(structure)) {
    const items = itemsOf(schemas)
    return items.length === 0 || structure.length === 0 ? [] : unknownFields(structure[0], items, `${path}[]`)
  }
  if (structure === null || typeof structure !== 'object') return []
  const fields = fieldsOf(schemas)
  if (fields === null) return []
  const found: Array<{ path: string; known: string[] }> = []
  for (const [key, inner] of Object.entries(structure)) {
    const at = path === '' ? key : `${path}.${key}`
    const schemasOfKey = fields.get(key)
    if (!schemasOfKey) found.push({ path: at, known: [...fields.keys()] })
    else found.push(...unknownFields(inner, schemasOfKey, at))
  }
  return found
}

/** Throws, naming every field of the entries that a batch entry does not have. */
export function checkEntryFields(structure: unknown, label: string): void {
  const found = unknownFields(structure, [ENTRY_SCHEMA as Schema])
  if (found.length === 0) return
  const lines = found.map(
    (f) =>
      `  ${f.path}: not a field of ${f.path.includes('.') ? f.path.slice(0, f.path.lastIndexOf('.')) : 'a batch entry'} (it has ${f.known.join(', ')})`
  )
  throw new MapError(
    `${label} gives ${found.length === 1 ? 'a field' : `${found.length} fields`} a batch entry does not have (nothing was written):\n${lines.join('\n')}`
  )
}

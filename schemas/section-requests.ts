import type { TObject } from 'typebox'
import { BillingDocumentsRequest } from './billing-documents.js'
import { HistoricalAgreementsRequest } from './historical-agreements.js'
import { HistoricalStatementsRequest } from './historical-statements.js'
import { NotesRequest } from './notes.js'
import { PaymentInstructionRequest } from './payment-instruction.js'
import { SECTIONS, type SectionName } from './sections.js'
import { TransactionsRequest } from './transaction-import.js'

/**
 * Each section's request schema by its name: what a client may read of a section's requests
 * without the service (its list limit, the fields of a batch entry). The payment instruction's is
 * built for no vendor: its shape, not the configured vendors.
 */
export const SECTION_REQUESTS = {
  notes: NotesRequest,
  transactions: TransactionsRequest,
  historical_agreements: HistoricalAgreementsRequest,
  historical_billing_documents: BillingDocumentsRequest,
  historical_statements: HistoricalStatementsRequest,
  payment_instruction: PaymentInstructionRequest([])
} as const satisfies Record<SectionName, TObject>

/** The most items one request of a list section takes (its list's `maxItems`), by section name. */
export const LIST_LIMITS: ReadonlyMap<SectionName, number> = new Map(
  SECTIONS.flatMap((s) => {
    if (!('list' in s.entry)) return []
    const list = (SECTION_REQUESTS[s.name].properties as Record<string, { maxItems?: number }>)[s.entry.list]
    return list?.maxItems === undefined ? [] : [[s.name, list.maxItems] as const]
  })
)

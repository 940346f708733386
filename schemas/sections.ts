/**
 * The post-import sections: THE list. Everything that enumerates sections is built from it: the
 * routes, the migration steps (failure records, the failure list's order), batch entries, and
 * the migration client. A section's behaviour lives in `src/modules/<folder>/section.ts`
 * (loaded by `loadSections` in src/modules/sections.ts); its request schema in `schemas/`.
 * To add a section, add a line here and follow CONTRIBUTING.md. This file imports nothing: the
 * schemas and the error catalogue build on it.
 */

/** How a batch entry (and a line of the client's file) holds a section's data. */
export type EntryForm =
  /** A list: the request's list under `key` (`{"notes": [...]}` → `{..., "notes": [...]}`). */
  | { readonly list: string }
  /** One object: its fields are the request's fields. */
  | { readonly object: true }
  /** One request per ledger: an object, or a list of objects each with its own `ledger_code`. */
  | { readonly perLedger: true }

/**
 * The rows a count counts, described (SQL is written from it in src/accounts/repository.ts): in
 * `table`, rows whose `parent` (the account itself, or one of its ledgers or supply points) is the
 * account's, where the boolean `filter.column` is `filter.is` when a filter is given.
 */
export interface CountedRows {
  /** The count's name: the account summary's `counts.<name>`, reconciliation's, the supplier totals'. */
  readonly name: string
  /** What people call what is counted (the reconciliation card, the admin client's totals). */
  readonly label: string
  readonly table: string
  readonly parent: 'account' | 'ledger' | 'supply_point'
  readonly filter?: { readonly column: string; readonly is: boolean }
}

export interface SectionListing {
  /** The step name: failure records, batch results, the key of a batch entry. */
  readonly name: string
  /** Its folder under src/modules (holding section.ts). */
  readonly folder: string
  /** Its endpoint under /v1/data-import. */
  readonly path: string
  readonly entry: EntryForm
  /** What people call it: the dashboard's labels, the client's messages. */
  readonly label: string
  /** What an account holds of it, as the account summary, reconciliation and the supplier totals count it. */
  readonly counted: CountedRows
  /**
   * A realistic request without the account reference, for the API page, written here (else
   * schemas/examples.ts has it).
   */
  readonly example?: Record<string, unknown>
}

/** In the order they run after an account is created (and failure lists show them). */
export const SECTIONS = [
  {
    name: 'notes',
    folder: 'notes',
    path: '/notes/create/',
    entry: { list: 'notes' },
    label: 'Notes',
    // Notes people wrote: the service's own notes (by_system) are not counted.
    counted: {
      name: 'notes',
      label: 'Notes',
      table: 'notes',
      parent: 'account',
      filter: { column: 'by_system', is: false }
    }
  },
  {
    name: 'transactions',
    folder: 'transactions',
    path: '/transactions/create/',
    entry: { list: 'transactions' },
    label: 'Transactions',
    // Every transaction on the account's ledgers: imported, added later, and those of billing documents.
    counted: { name: 'transactions', label: 'Transactions', table: 'ledger_transactions', parent: 'ledger' }
  },
  {
    name: 'historical_agreements',
    folder: 'historical-agreements',
    path: '/historical-agreements/create/',
    entry: { list: 'agreements' },
    label: 'Historical agreements',
    counted: {
      name: 'historical_agreements',
      label: 'Historical agreements',
      table: 'agreements',
      parent: 'supply_point',
      filter: { column: 'historical', is: true }
    }
  },
  {
    name: 'historical_billing_documents',
    folder: 'billing-documents',
    path: '/historical-billing-documents/create/',
    entry: { perLedger: true },
    label: 'Historical billing documents',
    counted: { name: 'billing_documents', label: 'Billing documents', table: 'billing_documents', parent: 'ledger' }
  },
  {
    name: 'historical_statements',
    folder: 'historical-statements',
    path: '/historical-statements/create/',
    entry: { list: 'statements' },
    label: 'Historical statements',
    counted: {
      name: 'historical_statements',
      label: 'Historical statements',
      table: 'historical_statements',
      parent: 'account'
    }
  },
  {
    name: 'payment_instruction',
    folder: 'payment-instructions',
    path: '/payment-instruction/create/',
    entry: { object: true },
    label: 'Payment instruction',
    counted: {
      name: 'payment_instructions',
      label: 'Payment instructions',
      table: 'payment_instructions',
      parent: 'account'
    }
  }
] as const satisfies readonly SectionListing[]

export type SectionName = (typeof SECTIONS)[number]['name']
type NamesOf<T> = { readonly [K in keyof T]: T[K] extends { name: infer N } ? N : never }
/** The section names, in list order (a tuple type, so that database enums and choices can be built from it). */
export const SECTION_NAMES = SECTIONS.map((s) => s.name) as unknown as NamesOf<typeof SECTIONS>

type CountsOf<T> = { readonly [K in keyof T]: T[K] extends { counted: { name: infer N } } ? N : never }
/** The sections' counts, in list order: what reconciliation compares and the supplier totals sum. */
export const SECTION_COUNTS = SECTIONS.map((s) => s.counted.name) as unknown as CountsOf<typeof SECTIONS>
export type SectionCount = (typeof SECTION_COUNTS)[number]

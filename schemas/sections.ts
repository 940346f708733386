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

export interface SectionListing {
  /** The step name: failure records, batch results, the key of a batch entry. */
  readonly name: string
  /** Its folder under src/modules (holding section.ts). */
  readonly folder: string
  /** Its endpoint under /v1/data-import. */
  readonly path: string
  readonly entry: EntryForm
  /**
   * A realistic request without the account reference, for the API page, written here (else
   * schemas/examples.ts has it).
   */
  readonly example?: Record<string, unknown>
}

/** In the order they run after an account is created (and failure lists show them). */
export const SECTIONS = [
  { name: 'notes', folder: 'notes', path: '/notes/create/', entry: { list: 'notes' } },
  { name: 'transactions', folder: 'transactions', path: '/transactions/create/', entry: { list: 'transactions' } },
  {
    name: 'historical_agreements',
    folder: 'historical-agreements',
    path: '/historical-agreements/create/',
    entry: { list: 'agreements' }
  },
  {
    name: 'historical_billing_documents',
    folder: 'billing-documents',
    path: '/historical-billing-documents/create/',
    entry: { perLedger: true }
  },
  {
    name: 'historical_statements',
    folder: 'historical-statements',
    path: '/historical-statements/create/',
    entry: { list: 'statements' }
  },
  {
    name: 'payment_instruction',
    folder: 'payment-instructions',
    path: '/payment-instruction/create/',
    entry: { object: true }
  }
] as const satisfies readonly SectionListing[]

export type SectionName = (typeof SECTIONS)[number]['name']
type NamesOf<T> = { readonly [K in keyof T]: T[K] extends { name: infer N } ? N : never }
/** The section names, in list order (a tuple type, so that database enums and choices can be built from it). */
export const SECTION_NAMES = SECTIONS.map((s) => s.name) as unknown as NamesOf<typeof SECTIONS>

import { SECTIONS } from '../../schemas/sections.js'
import billingDocuments from './billing-documents/section.js'
import historicalAgreements from './historical-agreements/section.js'
import historicalStatements from './historical-statements/section.js'
import notes from './notes/section.js'
import paymentInstructions from './payment-instructions/section.js'
import transactions from './transactions/section.js'
import type { SectionModule } from './post-import/section.js'

/**
 * Every section's code by its folder, imported statically so that the compiler and the
 * dependency rules follow it: a section listed in schemas/sections.ts and missing here is a type
 * error, and so is one here that is not listed.
 */
export const SECTION_MODULES = {
  notes,
  transactions,
  'historical-agreements': historicalAgreements,
  'billing-documents': billingDocuments,
  'historical-statements': historicalStatements,
  'payment-instructions': paymentInstructions
} as const satisfies Record<(typeof SECTIONS)[number]['folder'], SectionModule>

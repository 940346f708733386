import type { Step } from './service.js'

/**
 * The migration step a route answers for: its 400 and 500 answers are recorded as the account's
 * failure of that step (by the failures plugin, which reads it from the route's config).
 * `supplierField` names the body field holding the supplier code; `clearOnSuccess` clears the
 * step's record after a 2xx (routes whose service does not clear it within its own writes).
 */
export interface FailureStep {
  step: Step
  supplierField: 'import_supplier' | 'import_supplier_code'
  clearOnSuccess?: boolean
}

/** The route config of a post-import endpoint: its step, cleared after a 2xx. */
export const postImportStep = (step: Step) => ({
  failureStep: { step, supplierField: 'import_supplier' as const, clearOnSuccess: true }
})

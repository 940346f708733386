import type { SupplyPointChecks } from '../../schemas/common.js'
import { importSuppliers } from '../../drizzle/schema/index.js'

/** Row types and column lists that several modules' repositories read: one definition each. */

export type ProcessState = 'STAGED' | 'SKIPPED' | 'IMPORTED'

export interface SupplierRow {
  id: string
  code: string
  status: 'Ongoing' | 'Paused' | 'Complete'
  documentRoot: string
  sendMigrationEmails: boolean
  maxConcurrentProcessing: number | null
  supplyPointChecks: SupplyPointChecks
}

/** The columns of a `SupplierRow`. */
export const supplierColumns = {
  id: importSuppliers.id,
  code: importSuppliers.code,
  status: importSuppliers.status,
  documentRoot: importSuppliers.documentRoot,
  sendMigrationEmails: importSuppliers.sendMigrationEmails,
  maxConcurrentProcessing: importSuppliers.maxConcurrentProcessing,
  supplyPointChecks: importSuppliers.supplyPointChecks
}

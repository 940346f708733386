import { and, asc, eq } from 'drizzle-orm'
import { importProcesses, importSuppliers } from '../../../drizzle/schema/index.js'
import type { Db } from '../../db/index.js'

export type ProcessList = 'all' | 'pending' | 'imported'

export function createImportsRepository(db: Db) {
  return {
    /** The supplier, only when it belongs to the organisation: a foreign one is as unknown. */
    async supplierOfOrganisation(code: string, organisationId: string) {
      const [row] = await db.select({ id: importSuppliers.id, code: importSuppliers.code, status: importSuppliers.status })
        .from(importSuppliers)
        .where(and(eq(importSuppliers.code, code), eq(importSuppliers.organisationId, organisationId)))
      return row
    },

    /** Processes of the supplier ordered by external account number (code point order). */
    async listProcesses(supplierId: string, list: ProcessList) {
      const where = list === 'all'
        ? eq(importProcesses.supplierId, supplierId)
        : and(eq(importProcesses.supplierId, supplierId), eq(importProcesses.state, list === 'pending' ? 'STAGED' : 'IMPORTED'))
      return db.select({
        externalAccountNumber: importProcesses.externalAccountNumber,
        serviceAccountNumber: importProcesses.serviceAccountNumber,
        accountCreatedAt: importProcesses.accountCreatedAt
      }).from(importProcesses).where(where).orderBy(asc(importProcesses.externalAccountNumber))
    }
  }
}

export type ImportsRepository = ReturnType<typeof createImportsRepository>

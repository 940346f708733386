import { notFound } from '../../errors.js'
import { formatNullableDateTime } from '../../format.js'
import { SUPPLIER_CODE } from '../../../schemas/common.js'
import type { ImportProcessListItem } from '../../../schemas/imports.js'
import type { ImportsRepository, ProcessList } from './repository.js'

export function createImportsService(repo: ImportsRepository) {
  return {
    /** A list of §7; 404 for an unknown or foreign supplier. */
    async listProcesses(organisationId: string, supplierCode: string, list: ProcessList): Promise<ImportProcessListItem[]> {
      const supplier = SUPPLIER_CODE.test(supplierCode) ? await repo.supplierOfOrganisation(supplierCode, organisationId) : undefined
      if (!supplier) throw notFound('import_supplier_does_not_exist', `Import supplier ${supplierCode} does not exist.`)
      const rows = await repo.listProcesses(supplier.id, list)
      return rows.map((row) => ({
        external_account_number: row.externalAccountNumber,
        service_account_number: row.serviceAccountNumber,
        account_created_at: formatNullableDateTime(row.accountCreatedAt)
      }))
    }
  }
}

import { SUPPLIER_CODE } from '../../../schemas/common.js'
import type { Db, Tx } from '../../db/index.js'
import { AppError, entry, notFound, sortEntries, type ErrorEntry } from '../../errors.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import { createImportsRepository, type SupplierRow } from '../imports/repository.js'
import { createPostImportRepository } from './repository.js'

/** A created account that post-import data is written to. */
export interface ImportedAccount {
  id: string
  serviceAccountNumber: string
  importProcessId: number
  supplier: SupplierRow
}

/** 400 `invalid_request` listing every rule problem (§2), sorted. */
export function invalidRequest(errors: ErrorEntry[], extra: Record<string, unknown> = {}): AppError {
  return new AppError(400, 'invalid_request', 'Invalid request.', sortEntries(errors), extra)
}

/**
 * What every post-import endpoint shares: finding the account in the §2 order, and writing in one
 * transaction that holds the account's row lock and appends a `POST_IMPORT_WRITE` event.
 */
export function createPostImportBase(db: Db) {
  const imports = createImportsRepository(db)
  const repo = createPostImportRepository(db)

  return {
    repo,

    /**
     * After the schema checks: 404 for a pair never staged or an unknown or foreign supplier, 404 for
     * an account staged but not created, 400 when the supplier's migration is not Ongoing.
     */
    async resolve(principal: OrganisationPrincipal, supplierCode: string, external: string): Promise<ImportedAccount> {
      const supplier = SUPPLIER_CODE.test(supplierCode) ? await imports.supplierOfOrganisation(supplierCode, principal.organisationId) : undefined
      const process = supplier ? await imports.findProcess(supplier.id, external) : undefined
      if (!process) throw notFound('import_process_does_not_exist', 'No import process exists for this import supplier and external account number.')
      const account = process.state === 'IMPORTED' ? await repo.accountOfProcess(process.id) : undefined
      if (!account) throw notFound('account_not_found', 'No account has been created for this import process.')
      if (supplier!.status !== 'Ongoing') {
        throw invalidRequest([entry('import_supplier_migration_not_ongoing', 'import_supplier', `The migration of import supplier ${supplier!.code} is ${supplier!.status}.`)])
      }
      return { ...account, importProcessId: process.id, supplier: supplier! }
    },

    /**
     * Runs `work` in one transaction holding the account's lock. When it returns a `detail`, a
     * `POST_IMPORT_WRITE` event records it in the same transaction; any throw rolls everything back.
     */
    async write<T>(
      principal: OrganisationPrincipal,
      account: ImportedAccount,
      work: (tx: Tx) => Promise<{ result: T; detail?: Record<string, unknown> }>
    ): Promise<T> {
      return db.transaction(async (tx) => {
        await repo.lockAccount(tx, account.id)
        const { result, detail } = await work(tx)
        if (detail) {
          await imports.insertEvent(tx, account.importProcessId, 'POST_IMPORT_WRITE', {
            organisationId: principal.organisationId, apiKeyId: principal.apiKeyId, name: `organisation:${principal.organisationName}`
          }, detail)
        }
        return result
      })
    }
  }
}

export type PostImportBase = ReturnType<typeof createPostImportBase>

import { SUPPLIER_CODE } from '../../../schemas/common.js'
import { runInOrder, type Db, type Tx } from '../../db/index.js'
import { CODE } from '../../../schemas/error-codes.js'
import { invalidRequest, notFound } from '../../errors.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import { supplierProblem } from '../../accounts/precheck.js'
import { eventStatement } from '../../processes/repository.js'
import type { SupplierRow } from '../../db/columns.js'
import { createPostImportRepository } from './repository.js'

/** A created account that post-import data is written to. */
export interface ImportedAccount {
  id: string
  serviceAccountNumber: string
  importProcessId: number
  supplier: SupplierRow
}

/**
 * What every post-import endpoint shares: finding the account in the order, and writing in one
 * transaction that holds the account's row lock and appends a `POST_IMPORT_WRITE` event.
 */
export function createPostImportBase(db: Db, endpoint: string) {
  const repo = createPostImportRepository(db)

  async function readAndWrite<T, R>(
    principal: OrganisationPrincipal,
    account: ImportedAccount,
    read: ((tx: Tx) => PromiseLike<R>) | undefined,
    work: (tx: Tx, read: R) => Promise<Work<T>>
  ): Promise<T> {
    return db.transaction(async (tx) => {
      const [, first] = await runInOrder(db, [repo.lockAccount(tx, account.id), ...(read ? [read(tx)] : [])])
      const { result, detail, writes = [] } = await work(tx, first as R)
      const event = detail
        ? [
            eventStatement(
              tx,
              account.importProcessId,
              'POST_IMPORT_WRITE',
              {
                organisationId: principal.organisationId,
                apiKeyId: principal.apiKeyId,
                name: `organisation:${principal.organisationName}`
              },
              { endpoint, ...detail }
            )
          ]
        : []
      await runInOrder(db, [...writes, ...event])
      return result
    })
  }

  return {
    repo,

    /**
     * After the schema checks: 404 for a pair never staged or an unknown or foreign supplier, 404 for
     * an account staged but not created, 400 when the supplier's migration is not Ongoing.
     */
    async resolve(principal: OrganisationPrincipal, supplierCode: string, external: string): Promise<ImportedAccount> {
      const found = SUPPLIER_CODE.test(supplierCode)
        ? await repo.accountOf(supplierCode, principal.organisationId, external)
        : undefined
      if (!found || found.processId === null) {
        throw notFound(CODE.import_process_does_not_exist)
      }
      if (found.state !== 'IMPORTED' || found.accountId === null) throw notFound(CODE.account_not_found)
      const { supplier } = found
      const problem = supplierProblem(supplier, supplierCode, 'import_supplier')
      if (problem) throw invalidRequest([problem])
      return {
        id: found.accountId,
        serviceAccountNumber: found.serviceAccountNumber!,
        importProcessId: found.processId,
        supplier
      }
    },

    /**
     * Runs `work` in one transaction holding the account's lock. When it returns a `detail`, a
     * `POST_IMPORT_WRITE` event records it in the same transaction; any throw rolls everything back.
     * The `writes` that `work` may return are sent together with the event, in one round trip.
     */
    async write<T>(
      principal: OrganisationPrincipal,
      account: ImportedAccount,
      work: (tx: Tx) => Promise<Work<T>>
    ): Promise<T> {
      return readAndWrite(principal, account, undefined, work)
    },

    /** `write`, where `read` (a statement) is sent together with the lock and its result handed to `work`. */
    readAndWrite
  }
}

/** What a post-import write did: its answer, the event's detail (none: nothing new), statements to send. */
interface Work<T> {
  result: T
  detail?: Record<string, unknown>
  writes?: PromiseLike<unknown>[]
}

export type PostImportBase = ReturnType<typeof createPostImportBase>

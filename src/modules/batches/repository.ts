import { sql } from 'drizzle-orm'
import { rowsOf, supplierExternals, type Db } from '../../db/index.js'
import type { ProcessState } from '../../db/columns.js'
import { supplierAndTeam } from '../../accounts/repository.js'
import { createStageAndCreate } from './create-repository.js'
import { createStageAndDryRun } from './dry-run-repository.js'

export type { PlannedAccount, StageAndCreateOutcome } from './create-repository.js'
export type { DryRunClaim, DryRunOutcome, DryRunVerdict } from './dry-run-repository.js'
export { chunkStanding } from './chunk-repository.js'

/** An account of a batch as its process stands. */
export interface BatchProcess {
  id: number
  state: ProcessState
  serviceAccountNumber: string | null
}

/**
 * The SQL of batches: the reads of a batch, and its chunks set-based, many accounts per statement
 * and one transaction per chunk (create-repository.ts, dry-run-repository.ts). Rows are planned by
 * the same `planAccount` as a single create; the process writes are those of every path
 * (src/processes/repository.ts).
 */
export function createBatchesRepository(db: Db) {
  return {
    /** The caller's supplier with this code and the operations team of this name, in one round trip. */
    supplierAndTeam: (code: string, organisationId: string, teamName: string) =>
      supplierAndTeam(db, code, organisationId, teamName),

    /** The ledgers of an account, by its service account number. */
    async ledgersOf(serviceAccountNumber: string): Promise<Array<{ ledger_code: string; ledger_number: string }>> {
      return rowsOf<{ ledger_code: string; ledger_number: string }>(
        await db.execute(sql`select l.ledger_code, l.ledger_number
        from ledgers l join accounts a on a.id = l.account_id where a.service_account_number = ${serviceAccountNumber}`)
      )
    },

    /** The processes of these accounts of a supplier, by external account number. */
    async states(supplierId: string, externals: string[]): Promise<Map<string, BatchProcess>> {
      if (externals.length === 0) return new Map()
      const rows = rowsOf<{
        id: number | string
        external: string
        state: ProcessState
        service_account_number: string | null
      }>(
        await db.execute(sql`
        select id, external_account_number as external, state, service_account_number from import_processes
        where (supplier_id, external_account_number) in ${supplierExternals(supplierId, externals)}`)
      )
      return new Map(
        rows.map((r) => [
          r.external,
          { id: Number(r.id), state: r.state, serviceAccountNumber: r.service_account_number }
        ])
      )
    },

    stageAndCreate: createStageAndCreate(db),
    stageAndDryRun: createStageAndDryRun(db)
  }
}

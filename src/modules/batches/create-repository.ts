import type { importEvents } from '../../../drizzle/schema/index.js'
import {
  pgConstraint,
  pgErrorCode,
  rowsOf,
  runInOrder,
  supplierExternals,
  timedTransaction,
  type Db
} from '../../db/index.js'
import { insertQueries, writes, type TableRows } from '../../db/insert.js'
import type { ProcessState } from '../../db/columns.js'
import { createAccountsRepository } from '../../accounts/repository.js'
import type { AccountRows } from '../../accounts/plan.js'
import type { AccountData } from '../../../schemas/account.js'
import {
  clearFailures,
  eventInserts,
  eventRow,
  insertImported,
  markImported,
  type Actor
} from '../../processes/repository.js'
import { byCodePoint, chunkStanding, lockAndRead, lockedIds, tablesOf } from './chunk-repository.js'

/** An account of a batch, validated and planned: what one transaction will write for it. */
export interface PlannedAccount {
  external: string
  /** The normalised data, staged as stage stores it. */
  data: AccountData
  /** Its rows, as `planAccount` made them (the process id is filled in once known). */
  rows: AccountRows
  /** The rows of its post-import sections, planned by the sections. */
  sectionRows: TableRows[]
  /** The details of its POST_IMPORT_WRITE events, one per section that writes. */
  postImportEvents: Array<Record<string, unknown>>
}

type Created = { serviceAccountNumber: string; ledgers: Array<{ ledger_code: string; ledger_number: string }> }

/** What the set-based stage and create did with each account it was given. */
export interface StageAndCreateOutcome {
  /** Created: the response the single create endpoint would have given. */
  created: Map<string, Created>
  /**
   * Left to the single-account path: another request holds the account, or created it meanwhile,
   * or a number drawn for it (the account's or a ledger's) is already taken.
   */
  elsewhere: string[]
  /** How long the transaction held the database, in milliseconds. */
  heldMs: number
}

/** The unique index of a process's supplier and external account number. */
const PROCESS_PAIR_INDEX = 'import_processes_pair_idx'
/** Attempts of a batch's chunk that met other requests' accounts before its accounts go one by one. */
const CHUNK_ATTEMPTS = 3

/** Accounts of a chunk staged before that another request holds, or that are no longer staged. */
class Contested extends Error {
  constructor(readonly externals: string[]) {
    super(`accounts held by another request: ${externals.join(', ')}`)
  }
}

type Creating = PlannedAccount & { id: number; first: boolean }

/** A chunk's writes, built before its transaction begins. */
interface ChunkWrites {
  created: Map<string, Created>
  /** New processes, written once, already imported. */
  fresh: Array<{ id: number; external: string; data: AccountData; san: string }>
  /** Processes staged before: marked imported, restaged with the data sent. */
  marks: Array<{ id: number; san: string; data: AccountData }>
  tables: TableRows[]
  events: Array<typeof importEvents.$inferInsert>
}

/** Each account's rows, process write and events (STAGED or RESTAGED, CREATE_ATTEMPTED, CREATED, POST_IMPORT_WRITE). */
function chunkWrites(creating: Creating[], actor: Actor): ChunkWrites {
  const out: ChunkWrites = { created: new Map(), fresh: [], marks: [], tables: [], events: [] }
  for (const entry of creating) {
    const { rows } = entry
    rows.account.importProcessId = entry.id
    const san = rows.account.serviceAccountNumber
    const result = {
      service_account_number: san,
      ledgers: rows.ledgers.map((l) => ({ ledger_code: l.ledgerCode, ledger_number: l.ledgerNumber }))
    }
    out.created.set(entry.external, { serviceAccountNumber: san, ledgers: result.ledgers })
    if (entry.first) out.fresh.push({ id: entry.id, external: entry.external, data: entry.data, san })
    else out.marks.push({ id: entry.id, san, data: entry.data })
    out.events.push(
      eventRow(entry.id, entry.first ? 'STAGED' : 'RESTAGED', actor),
      eventRow(entry.id, 'CREATE_ATTEMPTED', actor),
      eventRow(entry.id, 'CREATED', actor, result),
      ...entry.postImportEvents.map((detail) => eventRow(entry.id, 'POST_IMPORT_WRITE', actor, detail))
    )
  }
  out.tables = tablesOf(creating)
  return out
}

/**
 * The set-based stage and create of a batch's chunk (see `stageAndCreate`): many accounts per
 * statement, one transaction.
 */
export function createStageAndCreate(db: Db) {
  const accountsRepo = createAccountsRepository(db)

  /** The accounts that can go set-based (new, or STAGED with numbers free), with their process ids; the others elsewhere. */
  async function sortOut(supplierId: string, sorted: PlannedAccount[]) {
    const [standingRows, taken] = await Promise.all([
      db.execute(
        chunkStanding(
          supplierId,
          sorted.map((e) => e.external)
        )
      ),
      accountsRepo.numbersTaken(
        sorted.map((e) => e.rows.account.serviceAccountNumber),
        sorted.flatMap((e) => e.rows.ledgers.map((l) => l.ledgerNumber))
      )
    ])
    type Standing = {
      external: string
      id: number | string | null
      state: ProcessState | null
      new_id: number | string | null
    }
    const standing = new Map(rowsOf<Standing>(standingRows).map((r) => [r.external, r]))
    const elsewhere: string[] = []
    const creating: Creating[] = []
    for (const entry of sorted) {
      const found = standing.get(entry.external)!
      const { rows } = entry
      // A number drawn for it is taken: the single path draws again.
      if (taken.has(rows.account.serviceAccountNumber) || rows.ledgers.some((l) => taken.has(l.ledgerNumber))) {
        elsewhere.push(entry.external)
      } else if (found.id === null) creating.push({ ...entry, id: Number(found.new_id), first: true })
      else if (found.state === 'STAGED') creating.push({ ...entry, id: Number(found.id), first: false })
      else elsewhere.push(entry.external) // imported, or being created
    }
    return { creating, elsewhere }
  }

  /**
   * One attempt on accounts sorted by external number. The processes as they stand, and ids for
   * the new ones, are read before the transaction, so every statement is built before it begins
   * and it holds the database only for its own work (the embedded database serves nobody else
   * meanwhile): one round trip, or two when some accounts were staged before (their locks
   * first). Throws `Contested` when one of those is held by another request or no longer staged,
   * and a unique violation of the processes' pair index when another request staged a new one
   * meanwhile; either rolls it all back.
   */
  async function once(supplierId: string, sorted: PlannedAccount[], actor: Actor): Promise<StageAndCreateOutcome> {
    if (sorted.length === 0) return { created: new Map(), elsewhere: [], heldMs: 0 }
    const { creating, elsewhere } = await sortOut(supplierId, sorted)
    if (creating.length === 0) return { created: new Map(), elsewhere, heldMs: 0 }
    const { created, fresh, marks, tables, events } = chunkWrites(creating, actor)

    return timedTransaction(db, async (tx) => {
      if (marks.length > 0) {
        // Processes staged before: their locks first, then their state (`lockAndRead`).
        const restaged = creating.filter((c) => !c.first).map((c) => c.external)
        const [locks, current] = await runInOrder(db, lockAndRead(tx, supplierExternals(supplierId, restaged)))
        const locked = lockedIds(locks)
        const contested = rowsOf<{ id: number | string; external: string; state: ProcessState }>(current)
          .filter((r) => r.state !== 'STAGED' || !locked.has(Number(r.id)))
          .map((r) => r.external)
        if (contested.length > 0) throw new Contested(contested)
      }
      // Everything else in one round trip: parents before children (a billing document before its
      // transactions). With no process staged before, nothing is left to check: an insert without
      // ON CONFLICT writes every row or fails, so the commit goes with the statements.
      const [marked] = await runInOrder(
        db,
        [
          // A restage stages anew, as stage does: an earlier erasure no longer applies.
          marks.length === 0 ? Promise.resolve([]) : tx.execute(markImported(marks)),
          ...writes(db, tx, [
            ...(fresh.length === 0 ? [] : [insertImported(supplierId, fresh)]),
            ...tables.flatMap(({ table, rows }) => insertQueries(table, rows)),
            ...eventInserts(events),
            // Created accounts have no failures left to report, of any step.
            clearFailures(supplierId, [...created.keys()])
          ])
        ],
        { thenCommit: marks.length === 0 }
      )
      if (rowsOf(marked).length !== marks.length) {
        throw new Error('a batch account changed state while it was being created')
      }
      return { created, elsewhere }
    })
  }

  /**
   * Stages and creates accounts in one transaction, as one stage and one create of each would,
   * with the post-import rows planned for them: the process (new, or staged before and not being
   * created), the account's rows and its sections' rows, the state change, the events (STAGED or
   * RESTAGED, CREATE_ATTEMPTED, CREATED, a POST_IMPORT_WRITE per section) and the accounts'
   * failure records cleared. Each existing process is locked as a create locks it, so nothing
   * can change its staged data in between: the data the caller validated is what is created.
   * Accounts another request holds, has created, or stages meanwhile, and those with a number
   * already taken (`numbersTaken`), are left out and named in `elsewhere`. Any other database
   * error rolls everything back and is thrown: the caller then takes the accounts one by one.
   */
  return async function stageAndCreate(
    supplierId: string,
    planned: PlannedAccount[],
    actor: Actor
  ): Promise<StageAndCreateOutcome> {
    let left = [...planned].sort((a, b) => byCodePoint(a.external, b.external))
    const elsewhere: string[] = []
    for (let attempt = 1; ; attempt++) {
      try {
        const outcome = await once(supplierId, left, actor)
        return { ...outcome, elsewhere: [...elsewhere, ...outcome.elsewhere] }
      } catch (err) {
        if (attempt >= CHUNK_ATTEMPTS) throw err
        if (err instanceof Contested) {
          // Held by another request, or no longer staged: the others go ahead without them.
          elsewhere.push(...err.externals)
          left = left.filter((e) => !err.externals.includes(e.external))
        } else if (!(pgErrorCode(err) === '23505' && pgConstraint(err) === PROCESS_PAIR_INDEX)) throw err
        // else another request staged one of the new accounts meanwhile: read them again.
      }
    }
  }
}

import { sql } from 'drizzle-orm'
import type { importEvents } from '../../../drizzle/schema/index.js'
import { rowsOf, runInOrder, supplierExternals, timedTransaction, type Db, type Tx } from '../../db/index.js'
import { insertQueries, writes } from '../../db/insert.js'
import type { ProcessState } from '../../db/columns.js'
import type { ErrorEntry } from '../../errors.js'
import type { SupplyPointChecks } from '../../../schemas/common.js'
import type { AccountData } from '../../../schemas/account.js'
import { createAccountsRepository, type AccountsRepository } from '../../accounts/repository.js'
import { newNumber, type AccountRows } from '../../accounts/plan.js'
import {
  clearFailures,
  eventInserts,
  eventRow,
  markImported,
  restage,
  stageNew,
  type Actor
} from '../../processes/repository.js'
import { byCodePoint, lockAndRead, lockedIds, tablesOf } from './chunk-repository.js'

/** What a create reads once it holds an account of a dry run: the supplier and the team as they are then. */
export interface DryRunClaim {
  supplierCode: string
  sendMigrationEmails: boolean
  supplyPointChecks: SupplyPointChecks
  /** Null when the batch's team no longer exists. */
  teamId: string | null
}

/**
 * The create's verdict on an account's staged data as stored: its rows (planned with import
 * process id 0: the caller's is filled in), or the create's errors (sorted).
 */
export type DryRunVerdict = { rows: AccountRows } | { errors: ErrorEntry[] }

/** What the set-based dry run did with each account it was given. */
export interface DryRunOutcome {
  /** Staged, and created in the rolled-back part: the dry run succeeded. */
  wouldCreate: string[]
  /** Staged, and refused by the create's checks, with their errors. */
  refused: Map<string, ErrorEntry[]>
  /** Left to the single-account path: another request holds the account, it is not STAGED, or the supplier is not Ongoing. */
  elsewhere: string[]
  /** How long the transaction held the database, in milliseconds. */
  heldMs: number
}

type Judge = (staged: unknown, claim: DryRunClaim) => DryRunVerdict
type Sent = { external: string; data: AccountData }
type Staged = { id: number; external: string; verdict: DryRunVerdict }

/** Thrown inside the savepoint of a dry run's creates to roll them back. */
class DryRunRolledBack extends Error {}

/** The chunk's accounts locked (in one order) and read once locked, with the supplier and team as a create reads them. */
async function lockChunk(db: Db, tx: Tx, supplierId: string, sorted: Sent[], teamName: string) {
  const pairs = supplierExternals(
    supplierId,
    sorted.map((e) => e.external)
  )
  const [locks, current, claimed] = await runInOrder(db, [
    ...lockAndRead(tx, pairs),
    tx.execute(sql`select s.code, s.status, s.send_migration_emails, s.supply_point_checks, (select t.id from operations_teams t where t.name = ${teamName}) as team_id
      from import_suppliers s where s.id = ${supplierId}::uuid`)
  ])
  const supplier = rowsOf<{
    code: string
    status: string
    send_migration_emails: boolean
    supply_point_checks: SupplyPointChecks
    team_id: string | null
  }>(claimed)[0]
  const claim: DryRunClaim | undefined =
    supplier?.status === 'Ongoing'
      ? {
          supplierCode: supplier.code,
          sendMigrationEmails: supplier.send_migration_emails,
          supplyPointChecks: supplier.supply_point_checks,
          teamId: supplier.team_id
        }
      : undefined
  const locked = lockedIds(locks)
  const existing = new Map(
    rowsOf<{ id: number | string; external: string; state: ProcessState }>(current).map((r) => [
      r.external,
      { id: Number(r.id), state: r.state }
    ])
  )
  // New accounts are staged; STAGED ones whose lock was got are restaged; the others go elsewhere.
  const fresh: Sent[] = []
  const restaged: Array<{ id: number; external: string; data: AccountData }> = []
  const elsewhere: string[] = []
  for (const entry of sorted) {
    const process = existing.get(entry.external)
    if (!process) fresh.push(entry)
    else if (process.state === 'STAGED' && locked.has(process.id)) restaged.push({ id: process.id, ...entry })
    else elsewhere.push(entry.external)
  }
  return { claim, fresh, restaged, elsewhere }
}

/**
 * The stage, as stage writes it, with the create's verdict on each account staged: judged on the
 * data sent while the database stages it, and again on the data as stored where it differs (a
 * trigger, say).
 */
async function stageAndJudge(
  db: Db,
  tx: Tx,
  supplierId: string,
  chunk: { fresh: Sent[]; restaged: Array<{ id: number; external: string; data: AccountData }> },
  actor: Actor,
  judge: (staged: unknown) => DryRunVerdict
): Promise<Staged[]> {
  // The data sent, as JSON once: a copy of it, as it comes back from the database, is what is judged.
  const freshJson = JSON.stringify(chunk.fresh)
  const restagedJson = JSON.stringify(chunk.restaged)
  const staging = runInOrder(db, [
    ...(chunk.fresh.length > 0 ? [tx.execute(stageNew(supplierId, { json: freshJson }, actor))] : []),
    ...(chunk.restaged.length > 0 ? [tx.execute(restage(supplierId, { json: restagedJson }, actor))] : [])
  ])
  staging.catch(() => {}) // awaited below; a failure is thrown there
  await new Promise<void>((resolve) => setImmediate(resolve))
  const sent = [...(JSON.parse(freshJson) as Sent[]), ...(JSON.parse(restagedJson) as Sent[])]
  const verdicts = new Map(sent.map((e) => [e.external, judge(e.data)]))
  return (await staging)
    .flatMap((r) => rowsOf<{ id: number | string; external: string; changed: unknown }>(r))
    .map((r) => {
      const changed = typeof r.changed === 'string' ? (JSON.parse(r.changed) as unknown) : r.changed
      return {
        id: Number(r.id),
        external: r.external,
        verdict: changed === null ? verdicts.get(r.external)! : judge(changed)
      }
    })
}

/**
 * The creates of the accounts that would be created, written in a savepoint that is rolled back:
 * the account's rows and the process marked imported. A number drawn that is taken would roll the
 * chunk back; nobody sees a dry run's numbers, so it is drawn again.
 */
async function createRolledBack(
  db: Db,
  accountsRepo: AccountsRepository,
  tx: Tx,
  creating: Array<{ id: number; rows: AccountRows }>
) {
  const taken = await accountsRepo.numbersTaken(
    creating.map((c) => c.rows.account.serviceAccountNumber),
    creating.flatMap((c) => c.rows.ledgers.map((l) => l.ledgerNumber)),
    tx
  )
  for (const { rows } of creating) {
    if (taken.has(rows.account.serviceAccountNumber)) rows.account.serviceAccountNumber = newNumber('A')
    for (const ledger of rows.ledgers) if (taken.has(ledger.ledgerNumber)) ledger.ledgerNumber = newNumber('L')
  }
  try {
    await tx.transaction(async (savepoint) => {
      const marks = creating.map((c) => ({ id: c.id, san: c.rows.account.serviceAccountNumber }))
      const results = await runInOrder(db, [
        ...writes(
          db,
          savepoint,
          tablesOf(creating).flatMap(({ table, rows }) => insertQueries(table, rows))
        ),
        savepoint.execute(markImported(marks))
      ])
      if (rowsOf(results[results.length - 1]).length !== creating.length) {
        throw new Error('a batch account changed state while it was being dry-run created')
      }
      throw new DryRunRolledBack()
    })
  } catch (err) {
    if (!(err instanceof DryRunRolledBack)) throw err
  }
}

/**
 * A dry run of accounts in one transaction, as one stage and one dry-run create of each would
 * leave it: the stage is kept (the process new or restaged, its STAGED or RESTAGED event, its
 * validate and stage failure records cleared); the create runs on the staged data as stored,
 * judged by `judge` as a create judges it (today's rules, the team), and its writes (the
 * account's rows, the process marked imported) are made in a savepoint that is rolled back; then
 * each account's DRY_RUN event is written, and the create failure records of those that would be
 * created are cleared. Existing processes are locked as a create locks them (so IN_PROGRESS
 * shows, and nothing changes their staged data in between); an account another request holds,
 * one that is not STAGED, or every account when the supplier is no longer Ongoing, is left out
 * and named in `elsewhere`. Any database error rolls everything back and is thrown: the caller
 * then takes the accounts one by one.
 */
export function createStageAndDryRun(db: Db) {
  const accountsRepo = createAccountsRepository(db)
  return async function stageAndDryRun(
    supplierId: string,
    entries: Sent[],
    actor: Actor,
    teamName: string,
    judge: Judge
  ): Promise<DryRunOutcome> {
    const sorted = [...entries].sort((a, b) => byCodePoint(a.external, b.external))
    return timedTransaction(db, async (tx) => {
      const { claim, ...chunk } = await lockChunk(db, tx, supplierId, sorted, teamName)
      const outcome: Omit<DryRunOutcome, 'heldMs'> = { wouldCreate: [], refused: new Map(), elsewhere: chunk.elsewhere }
      if (!claim) {
        outcome.elsewhere = sorted.map((e) => e.external) // a stage would refuse each: the single path says how
        return outcome
      }
      const staged = await stageAndJudge(db, tx, supplierId, chunk, actor, (data) => judge(data, claim))
      const done = new Set([...staged.map((r) => r.external), ...outcome.elsewhere])
      for (const entry of sorted) {
        if (!done.has(entry.external)) outcome.elsewhere.push(entry.external) // staged, or changed, by another request meanwhile
      }
      if (staged.length === 0) return outcome

      const creating: Array<{ id: number; rows: AccountRows }> = []
      const events: Array<typeof importEvents.$inferInsert> = []
      for (const { id, external, verdict } of staged) {
        if ('errors' in verdict) outcome.refused.set(external, verdict.errors)
        else {
          verdict.rows.account.importProcessId = id
          creating.push({ id, rows: verdict.rows })
          outcome.wouldCreate.push(external)
        }
        const detail =
          'errors' in verdict ? { would_succeed: false, errors: verdict.errors } : { would_succeed: true, errors: [] }
        events.push(eventRow(id, 'DRY_RUN', actor, detail))
      }
      if (creating.length > 0) await createRolledBack(db, accountsRepo, tx, creating)

      // After the rollback: each account's DRY_RUN event; a dry run that would succeed clears the pair's create record too.
      await runInOrder(db, [
        ...writes(db, tx, [
          ...eventInserts(events),
          ...(outcome.wouldCreate.length === 0 ? [] : [clearFailures(supplierId, outcome.wouldCreate, ['create'])])
        ])
      ])
      return outcome
    })
  }
}

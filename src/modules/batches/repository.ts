import { sql, type SQL } from 'drizzle-orm'
import {
  accountMetadata,
  accounts,
  agreements,
  billingDocuments,
  customers,
  emailOutbox,
  importEvents,
  ledgers,
  ledgerTransactions,
  statements,
  supplyAddresses,
  supplyPoints,
  transactionLineItems,
  transactionTaxItems
} from '../../../drizzle/schema/index.js'
import {
  pgConstraint,
  pgErrorCode,
  rowsOf,
  runInOrder,
  supplierExternals,
  timedTransaction,
  type Db,
  type Tx
} from '../../db/index.js'
import type { ErrorEntry } from '../../errors.js'
import type { SupplyPointChecks } from '../../../schemas/common.js'
import { insertQueries, writes, type TableRows } from '../../db/insert.js'
import type { ProcessState } from '../../db/columns.js'
import { PROCESS_LOCK_BASE } from '../../db/locks.js'
import {
  accountTableRows,
  createAccountsRepository,
  insertsOf,
  supplierAndTeam,
  type Actor
} from '../../accounts/repository.js'
import type { PgTable } from 'drizzle-orm/pg-core'
import { newNumber, noChildRows, type AccountRows } from '../../accounts/plan.js'
import type { AccountData } from '../../../schemas/account.js'

/** An account of a batch as its process stands. */
export interface BatchProcess {
  id: number
  state: ProcessState
  serviceAccountNumber: string | null
}

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

/** What the set-based stage and create did with each account it was given. */
export interface StageAndCreateOutcome {
  /** Created: the response the single create endpoint would have given. */
  created: Map<string, { serviceAccountNumber: string; ledgers: Array<{ ledger_code: string; ledger_number: string }> }>
  /**
   * Left to the single-account path: another request holds the account, or created it meanwhile,
   * or a number drawn for it (the account's or a ledger's) is already taken.
   */
  elsewhere: string[]
  /** How long the transaction held the database, in milliseconds. */
  heldMs: number
}

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

/**
 * The tables a batch inserts into, parents before children (a billing document before its
 * transactions); the tables of sections not named here come after them.
 */
const TABLE_ORDER: PgTable[] = [
  accounts,
  customers,
  ledgers,
  statements,
  billingDocuments,
  ledgerTransactions,
  transactionLineItems,
  transactionTaxItems,
  supplyAddresses,
  supplyPoints,
  agreements,
  accountMetadata,
  emailOutbox
]

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

/**
 * A chunk's accounts as they stand before its transaction: each external number with its process
 * (id and state) if it has one, and a new process id (`nextval`) if it has none.
 */
export function chunkStanding(supplierId: string, externals: string[]): SQL {
  return sql`select e.external, p.id, p.state,
      case when p.id is null then nextval(pg_get_serial_sequence('import_processes', 'id')) end as new_id
    from jsonb_array_elements_text(${JSON.stringify(externals)}::jsonb) as e(external)
    left join (select id, external_account_number, state from import_processes
      where (supplier_id, external_account_number) in ${supplierExternals(supplierId, externals)}) p
      on p.external_account_number = e.external`
}

/**
 * The processes of these pairs locked as a create locks them, tried in external number order (so
 * two batches do not deadlock on them), then their state once the locks are held: two statements,
 * to send together.
 */
function lockAndRead(tx: Tx, pairs: SQL) {
  return [
    tx.execute(sql`select id, pg_try_advisory_xact_lock(${PROCESS_LOCK_BASE.toString()}::bigint + id) as locked from import_processes
      where (supplier_id, external_account_number) in ${pairs} order by external_account_number`),
    tx.execute(sql`select id, external_account_number as external, state from import_processes
      where (supplier_id, external_account_number) in ${pairs}`)
  ]
}

/** The ids of the processes whose lock `lockAndRead` got. */
function lockedIds(locks: unknown): Set<number> {
  return new Set(
    rowsOf<{ id: number | string; locked: boolean }>(locks)
      .filter((r) => r.locked)
      .map((r) => Number(r.id))
  )
}

/** Thrown inside the savepoint of a dry run's creates to roll them back. */
class DryRunRolledBack extends Error {}

/** Code point order, as external account numbers are ordered everywhere (`COLLATE "C"`). */
const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * The set-based SQL of batches: many accounts per statement, one transaction per chunk. Rows are
 * planned by the same `planAccount` as a single create, events are the same events.
 */
export function createBatchesRepository(db: Db) {
  const accountsRepo = createAccountsRepository(db)

  /**
   * One attempt of `stageAndCreate` on accounts sorted by external number. The processes as they
   * stand, and ids for the new ones, are read before the transaction, so every statement is built
   * before it begins and it holds the database only for its own work (the embedded database serves
   * nobody else meanwhile): one round trip, or two when some accounts were staged before (their
   * locks first). Throws `Contested` when one of those is held by another request or no longer
   * staged, and a unique violation of the processes' pair index when another request staged a new
   * one meanwhile; either rolls it all back.
   */
  async function stageAndCreateOnce(
    supplierId: string,
    sorted: PlannedAccount[],
    actor: Actor
  ): Promise<StageAndCreateOutcome> {
    const created: StageAndCreateOutcome['created'] = new Map()
    if (sorted.length === 0) return { created, elsewhere: [], heldMs: 0 }
    const externals = sorted.map((e) => e.external)
    const [standingRows, taken] = await Promise.all([
      db.execute(chunkStanding(supplierId, externals)),
      accountsRepo.numbersTaken(
        sorted.map((e) => e.rows.account.serviceAccountNumber),
        sorted.flatMap((e) => e.rows.ledgers.map((l) => l.ledgerNumber))
      )
    ])
    const standing = new Map(
      rowsOf<{
        external: string
        id: number | string | null
        state: ProcessState | null
        new_id: number | string | null
      }>(standingRows).map((r) => [r.external, r])
    )
    const elsewhere: string[] = []
    const creating: Array<PlannedAccount & { id: number; first: boolean }> = []
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
    if (creating.length === 0) return { created, elsewhere, heldMs: 0 }

    // One insert (or a few) per table for all the accounts: parents before children, a section's own tables last.
    const tables = new Map<PgTable, Array<Record<string, unknown>>>(TABLE_ORDER.map((table) => [table, []]))
    const add = ({ table, rows }: TableRows) => {
      const list = tables.get(table)
      if (list) list.push(...rows)
      else tables.set(table, [...rows])
    }
    /** New processes, written once, already imported (staging them and then marking them would write each row twice). */
    const fresh: Array<{ id: number; external: string; data: AccountData; san: string }> = []
    /** Processes staged before: marked imported, restaged with the data sent. */
    const marks: Array<{ id: number; san: string; data: AccountData }> = []
    const restaged: string[] = []
    const events: Array<typeof importEvents.$inferInsert> = []
    const event = (importProcessId: number, type: (typeof importEvents.$inferInsert)['type'], detail: unknown = {}) =>
      events.push({
        importProcessId,
        type,
        actor: actor.name,
        organisationId: actor.organisationId,
        apiKeyId: actor.apiKeyId,
        detail
      })
    for (const entry of creating) {
      const { rows } = entry
      rows.account.importProcessId = entry.id
      for (const tableRows of accountTableRows(rows)) add(tableRows)
      for (const tableRows of entry.sectionRows) add(tableRows)
      const result = {
        service_account_number: rows.account.serviceAccountNumber,
        ledgers: rows.ledgers.map((l) => ({ ledger_code: l.ledgerCode, ledger_number: l.ledgerNumber }))
      }
      created.set(entry.external, { serviceAccountNumber: result.service_account_number, ledgers: result.ledgers })
      if (entry.first) {
        fresh.push({ id: entry.id, external: entry.external, data: entry.data, san: result.service_account_number })
      } else {
        marks.push({ id: entry.id, san: result.service_account_number, data: entry.data })
        restaged.push(entry.external)
      }
      event(entry.id, entry.first ? 'STAGED' : 'RESTAGED')
      event(entry.id, 'CREATE_ATTEMPTED')
      event(entry.id, 'CREATED', result)
      for (const detail of entry.postImportEvents) event(entry.id, 'POST_IMPORT_WRITE', detail)
    }

    return timedTransaction(db, async (tx) => {
      if (marks.length > 0) {
        // Processes staged before: their locks first, then their state (`lockAndRead`).
        const pairs = supplierExternals(supplierId, restaged)
        const [locks, current] = await runInOrder(db, lockAndRead(tx, pairs))
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
          marks.length === 0
            ? Promise.resolve([])
            : tx.execute(sql`update import_processes p set state = 'IMPORTED', staged_data = m.data,
            staged_data_erased_at = null, service_account_number = m.san, account_created_at = now(),
            latest_error = null, updated_at = now()
          from jsonb_to_recordset(${JSON.stringify(marks)}::jsonb) as m(id bigint, san text, data jsonb)
          where p.id = m.id and p.state = 'STAGED' returning p.id`),
          ...writes(db, tx, [
            // In external number order, as every batch inserts them, so two batches do not deadlock.
            ...(fresh.length === 0
              ? []
              : [
                  sql`insert into import_processes (id, supplier_id, external_account_number, state, staged_data,
                    first_staged_at, service_account_number, account_created_at)
                  overriding system value
                  select e.id, ${supplierId}::uuid, e.external, 'IMPORTED', e.data, now(), e.san, now()
                  from jsonb_to_recordset(${JSON.stringify(fresh)}::jsonb) as e(id bigint, external text, data jsonb, san text)
                  order by e.external`
                ]),
            ...[...tables].flatMap(([table, rows]) => insertQueries(table, rows)),
            ...insertQueries(importEvents, events),
            // Created accounts have no failures left to report, of any step.
            sql`delete from import_failures
            where (supplier_id, external_account_number) in ${supplierExternals(supplierId, [...created.keys()])}`
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
    async stageAndCreate(supplierId: string, planned: PlannedAccount[], actor: Actor): Promise<StageAndCreateOutcome> {
      let left = [...planned].sort((a, b) => byCodePoint(a.external, b.external))
      const elsewhere: string[] = []
      for (let attempt = 1; ; attempt++) {
        try {
          const outcome = await stageAndCreateOnce(supplierId, left, actor)
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
    },

    /**
     * A dry run of accounts in one transaction, as one stage and one dry-run create of each
     * would leave it: the stage is kept (the process new or restaged, its STAGED or RESTAGED
     * event, its validate and stage failure records cleared); the create runs on the staged data
     * as stored, judged by `judge` as a create judges it (today's rules, the team: judged on the
     * data sent while the database stages it, and again where the data stored differs), and its
     * writes (the account's rows, the process marked imported) are made in a savepoint that is
     * rolled back; then each account's DRY_RUN event is written, and the create failure records
     * of those that would be created are cleared. Existing processes are locked as a create
     * locks them (so IN_PROGRESS shows, and nothing changes their staged data in between); an
     * account another request holds, one that is not STAGED, or every account when the supplier
     * is no longer Ongoing, is left out and named in `elsewhere`. Any database error rolls
     * everything back and is thrown: the caller then takes the accounts one by one.
     */
    async stageAndDryRun(
      supplierId: string,
      entries: Array<{ external: string; data: AccountData }>,
      actor: Actor,
      teamName: string,
      judge: (staged: unknown, claim: DryRunClaim) => DryRunVerdict
    ): Promise<DryRunOutcome> {
      const sorted = [...entries].sort((a, b) => byCodePoint(a.external, b.external))
      const pairs = supplierExternals(
        supplierId,
        sorted.map((e) => e.external)
      )
      return timedTransaction(db, async (tx) => {
        // Locks first (in one order), then the state once they are held, and the supplier and team as a create reads them.
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
        const outcome: Omit<DryRunOutcome, 'heldMs'> = { wouldCreate: [], refused: new Map(), elsewhere: [] }
        if (supplier?.status !== 'Ongoing') {
          outcome.elsewhere.push(...sorted.map((e) => e.external)) // a stage would refuse each: the single path says how
          return outcome
        }
        const claim: DryRunClaim = {
          supplierCode: supplier.code,
          sendMigrationEmails: supplier.send_migration_emails,
          supplyPointChecks: supplier.supply_point_checks,
          teamId: supplier.team_id
        }
        const locked = lockedIds(locks)
        const existing = new Map(
          rowsOf<{ id: number | string; external: string; state: ProcessState }>(current).map((r) => [
            r.external,
            { id: Number(r.id), state: r.state }
          ])
        )
        const fresh: typeof sorted = []
        const restaged: Array<{ id: number; data: Record<string, unknown> }> = []
        const restagedExternal = new Map<number, string>()
        for (const entry of sorted) {
          const process = existing.get(entry.external)
          if (!process) fresh.push(entry)
          else if (process.state === 'STAGED' && locked.has(process.id)) {
            restaged.push({ id: process.id, data: entry.data })
            restagedExternal.set(process.id, entry.external)
          } else outcome.elsewhere.push(entry.external)
        }

        // The stage, as stage writes it: the process with its event, the pair's validate and stage records cleared. The data as
        // stored comes back only where it differs from the data sent (a trigger, say); the create judges the data as stored.
        const eventColumns = sql`${actor.name}::text, ${actor.organisationId}::uuid, ${actor.apiKeyId}::uuid`
        const freshJson = JSON.stringify(fresh)
        const restagedJson = JSON.stringify(restaged)
        const staging: Array<PromiseLike<unknown>> = []
        if (fresh.length > 0) {
          staging.push(
            tx.execute(sql`with input as (
              select e.external, e.data from jsonb_to_recordset(${freshJson}::jsonb) as e(external text, data jsonb)),
            inserted as (
              insert into import_processes (supplier_id, external_account_number, state, staged_data, first_staged_at)
              select ${supplierId}::uuid, external, 'STAGED', data, now() from input
              order by external
              on conflict do nothing
              returning id, external_account_number, staged_data),
            events as (
              insert into import_events (import_process_id, type, actor, organisation_id, api_key_id)
              select id, 'STAGED'::import_event_type, ${eventColumns} from inserted),
            cleared as (
              delete from import_failures f using inserted i where f.supplier_id = ${supplierId}::uuid
                and f.external_account_number = i.external_account_number and f.step in ('validate', 'stage'))
            select i.id, i.external_account_number as external, case when i.staged_data = n.data then null else i.staged_data end as changed
            from inserted i join input n on n.external = i.external_account_number`)
          )
        }
        if (restaged.length > 0) {
          staging.push(
            tx.execute(sql`with input as (
              select m.id, m.data from jsonb_to_recordset(${restagedJson}::jsonb) as m(id bigint, data jsonb)),
            updated as (
              update import_processes p set staged_data = m.data, staged_data_erased_at = null,
                first_staged_at = coalesce(p.first_staged_at, now()), updated_at = now()
              from input m
              where p.id = m.id and p.state = 'STAGED'
              returning p.id, p.external_account_number, p.staged_data),
            events as (
              insert into import_events (import_process_id, type, actor, organisation_id, api_key_id)
              select id, 'RESTAGED'::import_event_type, ${eventColumns} from updated),
            cleared as (
              delete from import_failures f using updated u where f.supplier_id = ${supplierId}::uuid
                and f.external_account_number = u.external_account_number and f.step in ('validate', 'stage'))
            select u.id, u.external_account_number as external, case when u.staged_data = m.data then null else u.staged_data end as changed
            from updated u join input m on m.id = u.id`)
          )
        }
        const stagingDone = runInOrder(db, staging)
        stagingDone.catch(() => {}) // awaited below; a failure is thrown there
        // While the database stages them, the create's verdicts on the data sent (a copy, as it comes back from the database).
        await new Promise<void>((resolve) => setImmediate(resolve))
        const sent = [
          ...(JSON.parse(freshJson) as typeof fresh),
          ...(JSON.parse(restagedJson) as typeof restaged).map((r) => ({
            data: r.data,
            external: restagedExternal.get(r.id)!
          }))
        ]
        const verdicts = new Map(sent.map((e) => [e.external, judge(e.data, claim)]))
        const staged = (await stagingDone)
          .flatMap((r) => rowsOf<{ id: number | string; external: string; changed: unknown }>(r))
          .map((r) => {
            const changed = typeof r.changed === 'string' ? (JSON.parse(r.changed) as unknown) : r.changed
            return {
              id: Number(r.id),
              external: r.external,
              verdict: changed === null ? verdicts.get(r.external)! : judge(changed, claim)
            }
          })
        const done = new Set([...staged.map((r) => r.external), ...outcome.elsewhere])
        for (const entry of sorted) {
          if (!done.has(entry.external)) outcome.elsewhere.push(entry.external) // staged, or changed, by another request meanwhile
        }
        if (staged.length === 0) return outcome

        // The create, its writes rolled back.
        const creating: Array<{ id: number; external: string; rows: AccountRows }> = []
        const events: Array<typeof importEvents.$inferInsert> = []
        const dryRunEvent = (id: number, wouldSucceed: boolean, errors: ErrorEntry[]) =>
          events.push({
            importProcessId: id,
            type: 'DRY_RUN',
            actor: actor.name,
            organisationId: actor.organisationId,
            apiKeyId: actor.apiKeyId,
            detail: { would_succeed: wouldSucceed, errors }
          })
        for (const { id, external, verdict } of staged) {
          if ('errors' in verdict) {
            outcome.refused.set(external, verdict.errors)
            dryRunEvent(id, false, verdict.errors)
          } else {
            verdict.rows.account.importProcessId = id
            creating.push({ id, external, rows: verdict.rows })
            outcome.wouldCreate.push(external)
            dryRunEvent(id, true, [])
          }
        }
        if (creating.length > 0) {
          // A number drawn that is taken would roll the chunk back; nobody sees a dry run's numbers, so draw again.
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
              const merged: AccountRows = {
                account: creating[0]!.rows.account,
                ...noChildRows()
              }
              for (const { rows } of creating) {
                for (const key of [
                  'customers',
                  'ledgers',
                  'statements',
                  'transactions',
                  'lineItems',
                  'taxItems',
                  'supplyAddresses',
                  'supplyPoints',
                  'agreements',
                  'metadata',
                  'outbox'
                ] as const) {
                  ;(merged[key] as unknown[]).push(...rows[key])
                }
              }
              const marks = creating.map((c) => ({ id: c.id, san: c.rows.account.serviceAccountNumber }))
              const [marked] = await accountsRepo.insertAccounts(
                savepoint,
                creating.map((c) => c.rows.account),
                merged,
                [
                  savepoint.execute(sql`update import_processes p set state = 'IMPORTED', service_account_number = m.san, account_created_at = now(),
                    latest_error = null, updated_at = now()
                  from jsonb_to_recordset(${JSON.stringify(marks)}::jsonb) as m(id bigint, san text)
                  where p.id = m.id and p.state = 'STAGED' returning p.id`)
                ]
              )
              if (rowsOf(marked).length !== creating.length) {
                throw new Error('a batch account changed state while it was being dry-run created')
              }
              throw new DryRunRolledBack()
            })
          } catch (err) {
            if (!(err instanceof DryRunRolledBack)) throw err
          }
        }

        // After the rollback: each account's DRY_RUN event; a dry run that would succeed clears the pair's create record too.
        await runInOrder(db, [
          ...insertsOf(tx, importEvents, events),
          ...(outcome.wouldCreate.length === 0
            ? []
            : [
                tx.execute(sql`delete from import_failures
                where (supplier_id, external_account_number) in ${supplierExternals(supplierId, outcome.wouldCreate)} and step = 'create'`)
              ])
        ])
        return outcome
      })
    }
  }
}

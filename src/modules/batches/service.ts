import type { FastifyBaseLogger } from 'fastify'
import type { ValidateFunction } from 'ajv'
import type { BatchRequest, BatchResponse, BatchResult } from '../../../schemas/batches.js'
import type { Db } from '../../db/index.js'
import type { SupplierRow } from '../../db/columns.js'
import type { Actor } from '../../processes/repository.js'
import {
  accountFailed,
  unexpected,
  AppError,
  entriesFromAjv,
  invalidRequest,
  sortEntries,
  type AttachedInput
} from '../../errors.js'
import { utcToday } from '../../rules/context.js'
import { checkAccountData } from '../../accounts/rules.js'
import { skipped, standingOf, wholeRequestRefusal } from '../../accounts/precheck.js'
import { judgeStagedData } from '../../accounts/create-check.js'
import { compileBody } from '../../validation.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import { isExternalAccountNumber, type FailuresService } from '../failures/service.js'
import type { CreateResult, ImportsService, StageResult } from '../imports/service.js'
import type { NewAccount, Section } from '../post-import/section.js'
import {
  createBatchesRepository,
  type DryRunClaim,
  type DryRunOutcome,
  type DryRunVerdict,
  type PlannedAccount
} from './repository.js'
import { chunkSizer } from './chunks.js'
import {
  duplicateNumber,
  examineEntry,
  failedResult,
  requestsOf,
  rooted,
  twoForOneLedger,
  type Entry,
  type FailedStep
} from './entries.js'

/**
 * What a batch did: refused as a whole (nothing ran or was stored; `supplier_not_ongoing` when its
 * supplier is paused or complete, `request` for any other problem of the request as a whole), or
 * each entry's result.
 */
export type BatchOutcome =
  | { kind: 'refused'; reason: 'supplier_not_ongoing' | 'request'; error: AppError }
  | { kind: 'ran'; response: BatchResponse }

/** Accounts worked on at once on the one-by-one path. */
const CONCURRENCY = 4
/** How long an entry waits for a free concurrency slot of its supplier before it fails with 429. */
const SLOT_WAIT_MS = 30_000

/**
 * Lets requests that arrived meanwhile start before the next chunk: checking and planning a
 * chunk's accounts is work on this thread, and a batch would otherwise keep other requests of
 * the server waiting for its planning (it was also the database's thread, before PGlite moved to
 * a worker).
 */
const letOthersIn = () => new Promise<void>((resolve) => setImmediate(resolve))
/** Accounts checked, or planned, before a batch lets other requests use the thread (5 to 10 ms of work). */
const CHECKS_BETWEEN_TURNS = 10

/** Runs `work` on every item, at most `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < items.length) await work(items[next++]!)
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

/** One batch as it runs: who sent it, its supplier and team, and how. */
interface Run {
  principal: OrganisationPrincipal
  body: BatchRequest
  log: FastifyBaseLogger
  supplier: SupplierRow
  teamId: string
  dryRun: boolean
  /** How long an entry waits for a free concurrency slot of its supplier. */
  slotWaitMs: number
  actor: Actor
}

/** An entry's failure at a step (the failure records are the caller's). */
function failAt(e: Entry, step: FailedStep, error: AppError) {
  e.failure = { step, error }
}

/**
 * Batches: each entry staged, created and given its post-import sections with the single
 * endpoints' rules, codes, events and failure records. Accounts that are new or staged are staged
 * and created set-based, many per statement and one transaction per chunk (a dry run: staged,
 * then created in a savepoint rolled back); everything else (and a chunk that meets a database
 * error, retried account by account) goes through the single endpoints' services, one account
 * at a time, so an entry never changes another's outcome.
 */
export function createBatchesService(deps: {
  db: Db
  /** Which database `db` is: sets the accounts per transaction (chunks.ts). */
  databaseKind: 'postgres' | 'pglite'
  /** Whether requests other than the migration's own are coming in (PGlite keeps transactions shorter then). */
  othersActive?: () => boolean
  imports: ImportsService
  sections: Section[]
  failures: FailuresService
}) {
  const { db, imports, sections, failures } = deps
  const chunks = chunkSizer(deps.databaseKind, deps.othersActive)
  const repo = createBatchesRepository(db)
  const validators = new Map<string, ValidateFunction>(
    sections.map((section) => [section.name, compileBody(section.route.body)])
  )

  /** A step's answer in the failure records, as a single request's would be (a failure recorded, a success clearing). */
  function settle(run: Run, e: Entry, step: FailedStep, error: AppError) {
    return failures.settle(
      {
        step,
        supplierCode: run.supplier.code,
        externalAccountNumber: e.external,
        organisationId: run.principal.organisationId,
        status: error.statusCode,
        code: error.code,
        errors: error.errors
      },
      run.log
    )
  }

  /** A failure of a step, recorded as a single request's would be. */
  async function failRecorded(run: Run, e: Entry, step: FailedStep, error: AppError) {
    failAt(e, step, error)
    await settle(run, e, step, error)
  }

  /** The entries: their shape, their supplier, and account numbers repeated in the batch. */
  function examineAll(body: BatchRequest): Entry[] {
    const names = sections.map((section) => section.name)
    const entries = body.accounts.map((raw, index) => examineEntry(raw, index, body.import_supplier, names))
    const seen = new Set<string>()
    for (const e of entries) {
      if (e.failure || e.external === null) continue
      if (seen.has(e.external)) failAt(e, 'stage', duplicateNumber(e.external))
      seen.add(e.external)
    }
    return entries
  }

  /** Imported and skipped accounts first (they win over their data's problems), then the data: `data` set on those ready to stage. */
  async function checkOpen(run: Run, entries: Entry[]): Promise<void> {
    const open = entries.filter((e) => !e.failure)
    const states = await repo.states(
      run.supplier.id,
      open.flatMap((e) => (isExternalAccountNumber(e.external) ? [e.external] : []))
    )
    for (const [i, e] of open.entries()) {
      // The account checks are the batch's longest run on the thread: other requests go in between.
      if (i > 0 && i % CHECKS_BETWEEN_TURNS === 0) await letOthersIn()
      const standing = standingOf(e.external === null ? undefined : states.get(e.external))
      if (standing.kind === 'already_imported') {
        e.outcome = 'already_imported'
        e.serviceAccountNumber = standing.serviceAccountNumber
        continue
      }
      if (standing.kind === 'skipped') {
        failAt(e, 'stage', skipped())
        continue
      }
      // The checks of stage that need no database; the supplier is known to be the caller's and Ongoing.
      const checked = checkAccountData(e.raw.account, utcToday(), run.supplier)
      if (checked.errors.length > 0) await failRecorded(run, e, 'stage', accountFailed(checked.errors))
      else e.data = checked.data
    }
  }

  /** Stage and create (with the sections of new accounts): set-based where nothing stands in the way, else one account at a time. */
  async function stageAndCreateAll(run: Run, entries: Entry[]): Promise<void> {
    const ready = entries.filter((e) => e.data !== undefined)
    const oneByOne: Entry[] = []
    // A supplier with a concurrency limit: each create (a dry run's too) takes one of its slots, one account at a time.
    if (run.supplier.maxConcurrentProcessing !== null) oneByOne.push(...ready)
    else {
      for (let i = 0; i < ready.length;) {
        if (i > 0) await letOthersIn()
        const chunk = ready.slice(i, (i += chunks.next()))
        oneByOne.push(...(await (run.dryRun ? dryRunChunk(run, chunk) : createChunk(run, chunk))))
      }
    }
    await eachLimited(oneByOne, CONCURRENCY, async (e) => stageAndCreateOne(run, e))
  }

  /**
   * Stages and creates a chunk set-based, with the sections planned for its new accounts; returns
   * the entries left to the one-by-one path (all of them when the chunk met a database error:
   * nothing of it was kept).
   */
  async function createChunk(run: Run, chunk: Entry[]): Promise<Entry[]> {
    const plans = new Map<Entry, PlannedAccount>()
    for (let j = 0; j < chunk.length; j += CHECKS_BETWEEN_TURNS) {
      if (j > 0) await letOthersIn()
      await eachLimited(chunk.slice(j, j + CHECKS_BETWEEN_TURNS), CONCURRENCY, async (e) => {
        plans.set(e, await planEntry(run, e))
      })
    }
    const left: Entry[] = []
    try {
      const outcome = await repo.stageAndCreate(
        run.supplier.id,
        chunk.map((e) => plans.get(e)!),
        run.actor
      )
      chunks.held(chunk.length, outcome.heldMs)
      for (const e of chunk) {
        const created = outcome.created.get(e.external!)
        if (!created) {
          left.push(e)
          continue
        }
        e.outcome = 'created'
        e.serviceAccountNumber = created.serviceAccountNumber
        e.ledgers = created.ledgers
        e.sectionsDone = e.sectionsPlanned
        if (e.sectionFailure) await failRecorded(run, e, e.sectionFailure.step, e.sectionFailure.error)
      }
      failures.timeline.count(run.supplier.id, 'staged', outcome.created.size)
      failures.timeline.count(run.supplier.id, 'created', outcome.created.size)
    } catch (err) {
      // One account's conflict (or any database error) rolled the chunk back: account by account now.
      run.log.warn({ err, accounts: chunk.length }, 'batch chunk rolled back; its accounts are taken one by one')
      left.splice(0, left.length, ...chunk)
    }
    for (const e of chunk) {
      e.sectionFailure = undefined
      e.sectionsPlanned = false
    }
    return left
  }

  /**
   * Stages and dry-run creates a chunk set-based, with the outcomes a single stage and dry-run
   * create of each would give; returns the entries left to the one-by-one path (all of them
   * when the chunk met a database error: nothing of it was kept).
   */
  async function dryRunChunk(run: Run, chunk: Entry[]): Promise<Entry[]> {
    let outcome: DryRunOutcome
    try {
      outcome = await repo.stageAndDryRun(
        run.supplier.id,
        chunk.map((e) => ({ external: e.external!, data: e.data! })),
        run.actor,
        run.body.operations_team_name,
        (staged, claim) => judgeStaged(run, staged, claim)
      )
      chunks.held(chunk.length, outcome.heldMs)
    } catch (err) {
      run.log.warn(
        { err, accounts: chunk.length },
        'dry-run batch chunk rolled back; its accounts are taken one by one'
      )
      return chunk
    }
    const elsewhere = new Set(outcome.elsewhere)
    for (const e of chunk) {
      const refused = outcome.refused.get(e.external!)
      if (refused) await failRecorded(run, e, 'create', accountFailed(refused))
      else if (!elsewhere.has(e.external!)) e.outcome = 'would_create'
    }
    failures.timeline.count(run.supplier.id, 'staged', chunk.length - elsewhere.size)
    return chunk.filter((e) => elsewhere.has(e.external!))
  }

  /** A create's checks of staged data as stored (the team, today's rules) and, when they pass, its rows. */
  function judgeStaged(run: Run, staged: unknown, claim: DryRunClaim): DryRunVerdict {
    const verdict = judgeStagedData(staged, { id: claim.teamId, name: run.body.operations_team_name }, claim, {
      importProcessId: 0,
      supplierId: run.supplier.id,
      sendMigrationEmails: claim.sendMigrationEmails
    })
    return 'errors' in verdict ? { errors: sortEntries(verdict.errors) } : verdict
  }

  /** A new account's rows and its sections' rows, planned by the services of the single endpoints. */
  async function planEntry(run: Run, e: Entry): Promise<PlannedAccount> {
    const rows = imports.plan(e.data!, {
      importProcessId: 0,
      supplierId: run.supplier.id,
      operationsTeamId: run.teamId,
      sendMigrationEmails: run.supplier.sendMigrationEmails
    })
    const planned: PlannedAccount = {
      external: e.external!,
      data: e.data!,
      rows,
      sectionRows: [],
      postImportEvents: []
    }
    const present = sections.filter((section) => e.raw[section.name] !== undefined)
    if (present.length === 0) return planned
    // Two requests for one ledger read each other's rows: one by one after the create.
    if (present.some((section) => twoForOneLedger(section, e.raw[section.name]))) return planned
    await planSections(run, e, present, planned)
    e.sectionsPlanned = true
    return planned
  }

  /**
   * The rows of an entry's sections against the account as it will be (nothing imported after it
   * yet). A section that fails stops the entry's later sections, as it would one by one.
   */
  async function planSections(run: Run, e: Entry, present: Section[], planned: PlannedAccount): Promise<void> {
    const { rows } = planned
    const now = new Date()
    const account: NewAccount = {
      id: rows.account.id!,
      supplier: run.supplier,
      rows,
      now,
      today: now.toISOString().slice(0, 10),
      transactionIds: new Map(rows.ledgers.map((l) => [l.id!, new Set<string>()]))
    }
    for (const t of rows.transactions) account.transactionIds.get(t.ledgerId)?.add(t.transactionId)
    const ref = { import_supplier: run.supplier.code, external_account_number: e.external! }
    const ledgers = rows.ledgers.map((l) => ({ ledger_code: l.ledgerCode, ledger_number: l.ledgerNumber }))
    for (const section of present) {
      try {
        for (const { request, root } of requestsOf(section, e.raw[section.name], ref, ledgers)) {
          try {
            const plan = await section.planNew(checked(section, request), account, run.log)
            planned.sectionRows.push(...plan.rows)
            if (plan.detail) planned.postImportEvents.push({ endpoint: section.name, ...plan.detail })
          } catch (err) {
            throw rooted(err, root)
          }
        }
      } catch (err) {
        e.sectionFailure = { step: section.name, error: asAppError(err, run.log) }
        break
      }
    }
  }

  /** An account through the single stage and create, as a client would send them. */
  async function stageAndCreateOne(run: Run, e: Entry): Promise<void> {
    let staged: StageResult
    try {
      staged = await imports.stage(run.principal, { body: e.data, schemaErrors: [] })
    } catch (err) {
      return failRecorded(run, e, 'stage', asAppError(err, run.log))
    }
    if (staged.kind === 'already_imported') {
      e.outcome = 'already_imported'
      e.serviceAccountNumber = staged.serviceAccountNumber
      return settle(run, e, 'stage', staged.answer)
    }
    const started = Date.now()
    for (;;) {
      let created: CreateResult
      try {
        created = await imports.create(run.principal, {
          body: {
            external_account_number: e.external,
            import_supplier_code: run.supplier.code,
            operations_team_name: run.body.operations_team_name,
            dry_run: run.dryRun
          },
          schemaErrors: []
        })
      } catch (err) {
        return failRecorded(run, e, 'create', asAppError(err, run.log))
      }
      switch (created.kind) {
        case 'created':
          e.outcome = 'created'
          e.serviceAccountNumber = created.response.service_account_number
          e.ledgers = created.response.ledgers
          return
        case 'would_create':
          e.outcome = 'would_create'
          return settle(run, e, 'create', created.answer)
        case 'already_imported':
          e.outcome = 'already_imported'
          e.serviceAccountNumber = created.serviceAccountNumber
          return settle(run, e, 'create', created.answer)
        case 'no_slot':
          // A batch waits for a free slot of its supplier instead of answering 429.
          if (Date.now() - started >= run.slotWaitMs) return failRecorded(run, e, 'create', created.answer)
          await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 200))
      }
    }
  }

  /** The sections of an account imported before, or taken one by one, in their order, as retry-safe single requests. */
  async function runSections(run: Run, e: Entry): Promise<void> {
    const ref = { import_supplier: run.supplier.code, external_account_number: e.external! }
    for (const section of sections) {
      const value = e.raw[section.name]
      if (value === undefined) continue
      try {
        const ledgers =
          'perLedger' in section.entry ? (e.ledgers ?? (await repo.ledgersOf(e.serviceAccountNumber!))) : []
        for (const { request, root } of requestsOf(section, value, ref, ledgers)) {
          try {
            await section.write(run.principal, checked(section, request), { query: {}, log: run.log })
          } catch (err) {
            throw rooted(err, root)
          }
        }
        // A section of an account created now has no earlier failure to clear (its records went with the create).
        if (e.outcome === 'already_imported') {
          await failures.cleared(
            {
              step: section.name,
              supplierCode: run.supplier.code,
              externalAccountNumber: e.external,
              organisationId: run.principal.organisationId
            },
            run.log
          )
        }
      } catch (err) {
        return failRecorded(run, e, section.name, asAppError(err, run.log))
      }
    }
  }

  return {
    /**
     * Runs a batch. `slotWaitMs`: how long an entry waits for a free concurrency slot of its
     * supplier before it fails with 429 (an import job waits as long as it takes).
     */
    async run(
      principal: OrganisationPrincipal,
      body: BatchRequest,
      log: FastifyBaseLogger,
      options: { slotWaitMs?: number } = {}
    ): Promise<BatchOutcome> {
      const found = await repo.supplierAndTeam(
        body.import_supplier,
        principal.organisationId,
        body.operations_team_name
      )
      const refusal = wholeRequestRefusal(found, body)
      if (refusal) {
        const notOngoing = !!found.supplier && found.supplier.status !== 'Ongoing'
        return { kind: 'refused', reason: notOngoing ? 'supplier_not_ongoing' : 'request', error: refusal }
      }
      const run: Run = {
        principal,
        body,
        log,
        supplier: found.supplier!,
        teamId: found.teamId!,
        dryRun: body.dry_run === true,
        slotWaitMs: options.slotWaitMs ?? SLOT_WAIT_MS,
        actor: {
          organisationId: principal.organisationId,
          apiKeyId: principal.apiKeyId,
          name: `organisation:${principal.organisationName}`
        }
      }

      const entries = examineAll(body)
      await checkOpen(run, entries)
      await stageAndCreateAll(run, entries)
      if (!run.dryRun) {
        const withSections = entries.filter(
          (e) =>
            !e.failure &&
            !e.sectionsDone &&
            (e.outcome === 'created' || e.outcome === 'already_imported') &&
            sections.some((section) => e.raw[section.name] !== undefined)
        )
        await eachLimited(withSections, CONCURRENCY, async (e) => runSections(run, e))
      }

      const results = entries.map(resultOf)
      const counts = { created: 0, already_imported: 0, would_create: 0, failed: 0 }
      for (const r of results) counts[r.outcome]++
      return { kind: 'ran', response: { results, counts } }
    }
  }

  /**
   * A section's request checked with its endpoint's schema (defaults filled in place): its
   * input, or the 400 the endpoint answers (a section that owns its schema problems gets them).
   */
  function checked(section: Section, request: Record<string, unknown>): AttachedInput {
    const validate = validators.get(section.name)!
    const schemaErrors = validate(request) ? [] : entriesFromAjv(validate.errors ?? [])
    if (schemaErrors.length > 0 && section.route.ownsSchemaErrors !== true) throw invalidRequest(schemaErrors)
    return { body: request, schemaErrors }
  }
}
/** An error of a single step as its endpoint would answer it; anything unexpected is a 500 (503 when the database is lost). */
function asAppError(err: unknown, log: FastifyBaseLogger): AppError {
  if (err instanceof AppError) return err
  log.error({ err }, 'batch entry failed with a server error')
  return unexpected(err)
}

function resultOf(e: Entry): BatchResult {
  if (e.failure) return failedResult(e.external, e.failure.step, e.failure.error, e.serviceAccountNumber ?? null)
  if (!e.outcome) throw new Error(`batch entry ${e.index} ended without an outcome`)
  return {
    external_account_number: e.external,
    outcome: e.outcome,
    service_account_number: e.serviceAccountNumber ?? null,
    step: null,
    status: null,
    code: null,
    errors: null
  }
}

export type BatchesService = ReturnType<typeof createBatchesService>

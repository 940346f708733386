import { AccountData, type AccountSummary, type CreateResponse, type TransferStatus } from '../../../schemas/account.js'
import { SUPPLIER_CODE } from '../../../schemas/common.js'
import type { ImportProcessListItem } from '../../../schemas/imports.js'
import type { SupplierRow } from '../../db/columns.js'
import type { Db } from '../../db/index.js'
import { onPrimary, type Reads } from '../../db/replica.js'
import { databaseUnavailable, pgConstraint, pgErrorCode } from '../../db/errors.js'
import {
  accountFailed,
  answer,
  notFound,
  problem,
  sortEntries,
  type AppError,
  type AttachedInput,
  type ErrorEntry,
  type StoredEntry
} from '../../errors.js'
import { CODE } from '../../../schemas/error-codes.js'
import { fieldOf, isObject } from '../../objects.js'
import { formatDateTime, formatNullableDateTime } from '../../format.js'
import { ruleContext, utcToday, type RuleContext } from '../../rules/context.js'
import { formatDecimal } from '../../decimal.js'
import { createAccountsRepository } from '../../accounts/repository.js'
import type { Actor } from '../../processes/repository.js'
import {
  accountRules,
  DEFAULT_SUPPLIER_SETTINGS,
  normaliseAccount,
  passesForEachSetting,
  supplierRules
} from '../../accounts/rules.js'
import { planAccount } from '../../accounts/plan.js'
import { judgeStagedData } from '../../accounts/create-check.js'
import { refusalOf, skipped, standingOf, supplierProblem, type AccountStanding } from '../../accounts/precheck.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import type { FailuresService } from '../failures/service.js'
import { createImportsRepository, type ListRow, type Lookup, type ProcessList, type ProcessRow } from './repository.js'

const inProgress = (): AppError => accountFailed([problem(CODE.account_import_in_progress, null)])

/** Retry-After: the code's wait in the catalogue (a creation is short: about a second). */
const tooManyProcessing = (): AppError => answer(CODE.too_many_accounts_processing)

const dryRunRolledBack = (): AppError => answer(CODE.dry_run_rolled_back)

const nothingStaged = (): AppError =>
  accountFailed([problem(CODE.import_process_does_not_exist, 'external_account_number')])

/** Stands in for the detail of a stored error entry once it was erased (the answer's shape keeps it). */
export const ERASED_DETAIL = 'This detail has been erased.'

/** The latest error as the status and summary answer it: an erased detail is replaced by a fixed sentence. */
function shownError(latest: ProcessRow['latestError']): AccountSummary['latest_error'] {
  if (latest === null) return null
  return {
    at: latest.at,
    errors: latest.errors.map((e: StoredEntry) => ({ detail: e.detail ?? ERASED_DETAIL, code: e.code, attr: e.attr }))
  }
}

const processNotFound = (): AppError => notFound(CODE.import_process_does_not_exist)

/** Refusals raised inside the creating transaction, turned into responses after it rolled back. */
class CreateRefused extends Error {
  constructor(
    readonly error: AppError,
    readonly validation?: ErrorEntry[]
  ) {
    super(error.code)
  }
}
class DryRunSucceeded extends Error {}
/** An account found not open on the way (already imported, skipped): a result of stage and create, the error of validate. */
class NotOpen extends Error {
  constructor(
    readonly standing: Exclude<AccountStanding, { kind: 'open' }>,
    readonly answer: AppError
  ) {
    super(answer.code)
  }
}

/** What a stage did: staged (`created`: the first time), or the account was imported before (`answer`: the endpoint's 400). */
interface AlreadyImported {
  kind: 'already_imported'
  serviceAccountNumber: string
  answer: AppError
}

export type StageResult =
  | { kind: 'staged'; created: boolean; body: { import_supplier: string; external_account_number: string } }
  | AlreadyImported

/**
 * What a create did: created; would be created (a dry run); imported before; or every one of the
 * supplier's processing slots is taken (a retry shortly may pass). `answer` is the endpoint's answer.
 */
export type CreateResult =
  | { kind: 'created'; response: CreateResponse }
  | { kind: 'would_create'; answer: AppError }
  | AlreadyImported
  | { kind: 'no_slot'; answer: AppError }
class ProcessLocked extends Error {}
class NoSlot extends Error {}

/** A unique number (account or ledger) that was drawn twice: the whole creation is retried. */
const NUMBER_CONSTRAINTS = ['accounts_service_account_number_unique', 'ledgers_ledger_number_unique']
const NUMBER_ATTEMPTS = 5

export interface CreateInput {
  external_account_number?: unknown
  import_supplier_code?: unknown
  operations_team_name?: unknown
  dry_run?: unknown
}

const actorOf = (p: OrganisationPrincipal): Actor => ({
  organisationId: p.organisationId,
  apiKeyId: p.apiKeyId,
  name: `organisation:${p.organisationName}`
})

const listItem = (row: ListRow): ImportProcessListItem => ({
  external_account_number: row.externalAccountNumber,
  service_account_number: row.serviceAccountNumber,
  account_created_at: formatNullableDateTime(row.accountCreatedAt)
})

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)

export function createImportsService(db: Db, failures: FailuresService, reads: Reads = onPrimary(db)) {
  const repo = createImportsRepository(db)
  // The lists may lag by a moment: on the read replica when there is one. Status and the summary read the primary.
  const lists = reads.repository(createImportsRepository)
  const accountsRepo = createAccountsRepository(db)

  /** The caller's supplier for a code and the process of `external`, in one round trip. */
  async function lookup(
    principal: OrganisationPrincipal,
    code: string | undefined,
    external: string | undefined,
    withRunning = false
  ): Promise<Lookup | undefined> {
    return code !== undefined && SUPPLIER_CODE.test(code)
      ? repo.lookup(code, principal.organisationId, external, withRunning)
      : undefined
  }

  /**
   * The checks of "Which check wins" before the one body of every problem (validate, stage),
   * and the account rules, those of the supplier's settings included. Validate runs its rules
   * first (for each setting the supplier may have), so that its look-up can also clear the pair's
   * validate failure record when the answer will be a success.
   */
  async function precheck(principal: OrganisationPrincipal, body: unknown, ctx: RuleContext, stage: boolean) {
    const supplierCode = ctx.clean('import_supplier') ? str(fieldOf(body, 'import_supplier')) : undefined
    const external = ctx.clean('external_account_number') ? str(fieldOf(body, 'external_account_number')) : undefined
    if (!stage) accountRules(body, ctx)
    const found = stage
      ? await lookup(principal, supplierCode, external, true)
      : supplierCode !== undefined && SUPPLIER_CODE.test(supplierCode)
        ? await repo.lookupClearingValidate(
            supplierCode,
            principal.organisationId,
            external,
            passesForEachSetting(body, ctx)
          )
        : undefined
    if (found?.process && external !== undefined) {
      refuseByState(found.process, external)
      if (stage && found.running) throw inProgress()
    }
    if (stage) accountRules(body, ctx)
    supplierRules(body, ctx, found?.supplier ?? DEFAULT_SUPPLIER_SETTINGS)
    return { supplier: found?.supplier, supplierCode, known: found?.process !== undefined }
  }

  function refuseByState(process: Pick<ProcessRow, 'state' | 'serviceAccountNumber'>, external: string): void {
    const standing = standingOf(process)
    if (standing.kind !== 'open') throw new NotOpen(standing, refusalOf(standing, external))
  }

  /** Validate and stage share every check: a clean validate predicts a clean stage. */
  async function validated(
    principal: OrganisationPrincipal,
    body: unknown,
    schemaErrors: ErrorEntry[],
    stage: boolean
  ) {
    const ctx = ruleContext(schemaErrors, utcToday())
    const { supplier, supplierCode, known } = await precheck(principal, body, ctx, stage)
    const problem =
      supplierCode !== undefined || ctx.clean('import_supplier')
        ? supplierProblem(supplier, String(fieldOf(body, 'import_supplier')), 'import_supplier')
        : undefined
    if (problem) ctx.errors.push(problem)
    if (ctx.errors.length > 0) throw accountFailed(ctx.errors)
    return { supplier: supplier!, known, data: normaliseAccount(body as AccountData) }
  }

  /** The create of inside one transaction; dry runs roll back at the end. */
  async function createInTransaction(
    principal: OrganisationPrincipal,
    supplier: SupplierRow,
    process: ProcessRow,
    external: string,
    teamName: string,
    dryRun: boolean
  ): Promise<CreateResponse> {
    return db.transaction(async (tx) => {
      const claim = await repo.claim(tx, process.id, supplier.id, supplier.maxConcurrentProcessing, teamName)
      if (!claim.locked) throw new ProcessLocked()
      // The state once the lock is held: a create that ran meanwhile has committed by now.
      if (claim.state !== 'STAGED') {
        refuseByState({ state: claim.state, serviceAccountNumber: claim.serviceAccountNumber }, external)
      }
      // Erased after the look-up (an erasure request): as if it had never been staged.
      if (claim.stagedData === null) throw new CreateRefused(nothingStaged())
      if (!claim.slot) throw new NoSlot()
      const verdict = judgeStagedData(structuredClone(claim.stagedData), { id: claim.teamId, name: teamName }, claim, {
        importProcessId: process.id,
        supplierId: supplier.id,
        sendMigrationEmails: claim.sendMigrationEmails
      })
      const errors = 'errors' in verdict ? verdict.errors : []
      const problem = supplierProblem(
        { code: claim.supplierCode, status: claim.supplierStatus },
        claim.supplierCode,
        'import_supplier_code'
      )
      if (problem) errors.push(problem)
      if (errors.length > 0 || !('rows' in verdict)) throw new CreateRefused(accountFailed(errors), sortEntries(errors))
      const rows = verdict.rows
      const serviceAccountNumber = rows.account.serviceAccountNumber
      const result: CreateResponse = {
        service_account_number: serviceAccountNumber,
        ledgers: rows.ledgers.map((l) => ({ ledger_code: l.ledgerCode, ledger_number: l.ledgerNumber }))
      }
      const actor = actorOf(principal)
      // The account's inserts, the state change, the events and the records cleared go in one round trip.
      const target = { id: process.id, supplierId: supplier.id, external, serviceAccountNumber }
      const [marked] = await accountsRepo.insertAccount(
        tx,
        rows,
        repo.createWrites(tx, target, actor, dryRun ? null : result)
      )
      if (!repo.marked(marked)) throw new CreateRefused(skipped())
      if (dryRun) throw new DryRunSucceeded()
      return result
    })
  }

  /** The work of an account found open; one imported before is a result, any other refusal its answer. */
  async function whenOpen<T>(work: () => Promise<T>): Promise<T | AlreadyImported> {
    try {
      return await work()
    } catch (err) {
      if (err instanceof NotOpen && err.standing.kind === 'already_imported') {
        return { kind: 'already_imported', serviceAccountNumber: err.standing.serviceAccountNumber, answer: err.answer }
      }
      throw err instanceof NotOpen ? err.answer : err
    }
  }

  /** The stage of an account found open (`NotOpen` thrown otherwise). */
  async function stageOpen(
    principal: OrganisationPrincipal,
    { body, schemaErrors }: AttachedInput
  ): Promise<StageResult> {
    const { supplier, known, data } = await validated(principal, body, schemaErrors, true)
    const external = data.external_account_number
    const actor = actorOf(principal)
    // A first stage is one statement; a restage (or a race with another first stage) a transaction.
    if (!known && (await repo.stageNew(supplier.id, external, data, actor))) {
      failures.timeline.count(supplier.id, 'staged')
      return {
        kind: 'staged',
        created: true,
        body: { import_supplier: supplier.code, external_account_number: external }
      }
    }
    const result = await repo.stage(supplier.id, external, data, actor)
    if (result.outcome === 'in_progress') throw inProgress()
    if (result.outcome === 'refused') refuseByState(result.process, external)
    failures.timeline.count(supplier.id, 'staged')
    return {
      kind: 'staged',
      created: result.outcome === 'created',
      body: { import_supplier: supplier.code, external_account_number: external }
    }
  }

  /** The create of an account found open (`NotOpen` thrown otherwise). */
  async function createOpen(principal: OrganisationPrincipal, input: AttachedInput): Promise<CreateResult> {
    const body: CreateInput = isObject(input.body) ? input.body : {}
    const schemaErrors = input.schemaErrors
    const ctx = ruleContext(schemaErrors, utcToday())
    const code = ctx.clean('import_supplier_code') ? str(body.import_supplier_code) : undefined
    const clean = ctx.clean('external_account_number') ? str(body.external_account_number) : undefined
    const found = await lookup(principal, code, clean)
    const supplier = found?.supplier
    const unknown =
      code !== undefined && !supplier ? supplierProblem(undefined, code, 'import_supplier_code') : undefined
    if (unknown) ctx.errors.push(unknown)
    if (ctx.errors.length > 0) throw accountFailed(ctx.errors)
    const external = body.external_account_number as string
    const teamName = body.operations_team_name as string
    const dryRun = body.dry_run === true
    const process = found!.process
    // Nothing staged (never, or erased while pending or skipped); an imported account stays imported.
    if (!process || (process.state !== 'IMPORTED' && !process.hasStagedData)) throw nothingStaged()
    refuseByState(process, external)

    const actor = actorOf(principal)
    for (let attempt = 1; ; attempt++) {
      try {
        const created = await createInTransaction(principal, supplier!, process, external, teamName, dryRun)
        failures.timeline.count(supplier!.id, 'created')
        return { kind: 'created', response: created }
      } catch (err) {
        if (err instanceof DryRunSucceeded) {
          await repo.recordDryRun(process.id, true, [], actor)
          return { kind: 'would_create', answer: dryRunRolledBack() }
        }
        if (err instanceof ProcessLocked) {
          const now = await repo.findProcess(supplier!.id, external)
          if (now?.state === 'IMPORTED') refuseByState(now, external)
          throw inProgress()
        }
        if (err instanceof NoSlot) return { kind: 'no_slot', answer: tooManyProcessing() }
        if (err instanceof NotOpen) throw err
        if (err instanceof CreateRefused) {
          if (err.validation) {
            if (dryRun) await repo.recordDryRun(process.id, false, err.validation, actor)
            else await repo.recordCreateFailure(process.id, err.validation, actor)
          }
          throw err.error
        }
        const name = pgConstraint(err)
        if (pgErrorCode(err) === '23505' && name && NUMBER_CONSTRAINTS.includes(name) && attempt < NUMBER_ATTEMPTS) {
          continue
        }
        // An unexpected failure: nothing was created (the transaction rolled back); keep a trace of it.
        const failure = [
          databaseUnavailable(err) ? problem(CODE.service_unavailable, null) : problem(CODE.server_error, null)
        ]
        await (
          dryRun
            ? repo.recordDryRun(process.id, false, failure, actor)
            : repo.recordCreateFailure(process.id, failure, actor)
        ).catch(() => {})
        throw err
      }
    }
  }

  return {
    /** Plans the rows of a create (the same plan as a single create). */
    plan: planAccount,

    async validate(principal: OrganisationPrincipal, { body, schemaErrors }: AttachedInput) {
      try {
        return (await validated(principal, body, schemaErrors, false)).data
      } catch (err) {
        throw err instanceof NotOpen ? err.answer : err
      }
    },

    /** Stores the normalised data: `created` the first time, `updated` after. */
    async stage(principal: OrganisationPrincipal, input: AttachedInput): Promise<StageResult> {
      return whenOpen(() => stageOpen(principal, input))
    },

    async create(principal: OrganisationPrincipal, input: AttachedInput): Promise<CreateResult> {
      return whenOpen(() => createOpen(principal, input))
    },

    /** status: UNKNOWN, IN_PROGRESS or COMPLETED, with the latest failed create. */
    async status(principal: OrganisationPrincipal, supplierCode: string, external: string): Promise<TransferStatus> {
      const found = await lookup(principal, supplierCode, external, true)
      const process = found?.process
      if (!process) throw processNotFound()
      let status: TransferStatus['status'] = 'UNKNOWN'
      if (process.state === 'IMPORTED') status = 'COMPLETED'
      else if (process.state === 'STAGED' && found!.running) status = 'IN_PROGRESS'
      return {
        status,
        service_account_number: process.serviceAccountNumber ?? '',
        latest_error: process.state === 'IMPORTED' ? null : shownError(process.latestError)
      }
    },

    /** account summary: 404 until the account is created. */
    async summary(principal: OrganisationPrincipal, supplierCode: string, external: string): Promise<AccountSummary> {
      const found = await lookup(principal, supplierCode, external)
      const supplier = found?.supplier
      const process = found?.process
      if (!process) throw processNotFound()
      const account = process.state === 'IMPORTED' ? await accountsRepo.summary(process.id) : undefined
      if (!account) throw notFound(CODE.account_not_found)
      const latest = await repo.latestEvent(process.id)
      return {
        service_account_number: account.serviceAccountNumber,
        external_account_number: account.externalAccountNumber,
        import_supplier: supplier!.code,
        account_created_at: formatDateTime(account.createdAt),
        operations_team_name: account.operationsTeamName,
        ledgers: account.ledgers.map((l) => ({
          ledger_code: l.ledgerCode,
          ledger_number: l.ledgerNumber,
          balance: formatDecimal(l.balance),
          open_statement_from_date: l.openStatementFrom
        })),
        counts: account.counts,
        latest_event: latest ? { type: latest.type, at: formatDateTime(latest.at) } : null,
        latest_error: shownError(process.latestError)
      }
    },

    /** A page of an import-process list; 404 for an unknown or foreign supplier. */
    async listProcesses(
      principal: OrganisationPrincipal,
      supplierCode: string,
      list: ProcessList,
      page: { limit?: number; after?: string } = {}
    ): Promise<ImportProcessListItem[]> {
      const supplier = (await lookup(principal, supplierCode, undefined))?.supplier
      if (!supplier) throw processNotFound()
      return (await lists.read((r) => r.listProcesses(supplier.id, list, page))).map(listItem)
    },

    /**
     * A whole list of as chunks of items, to be streamed. The 404 for an unknown or foreign
     * supplier is decided here, and the first chunk is read here too, so a database that fails
     * at once still gets a normal error response; later failures surface from the generator.
     */
    async streamProcesses(
      principal: OrganisationPrincipal,
      supplierCode: string,
      list: ProcessList,
      after?: string
    ): Promise<AsyncGenerator<ImportProcessListItem[], void, undefined>> {
      const supplier = (await lookup(principal, supplierCode, undefined))?.supplier
      if (!supplier) throw processNotFound()
      const { chunks, first } = await lists.read(async (r) => {
        const chunks = r.processChunks(supplier.id, list, after)
        return { chunks, first: await chunks.next() }
      })
      const firstItems = first.done ? [] : first.value.map(listItem)
      return (async function* items() {
        if (firstItems.length === 0) return
        yield firstItems
        for await (const rows of chunks) yield rows.map(listItem)
      })()
    }
  }
}

export type ImportsService = ReturnType<typeof createImportsService>

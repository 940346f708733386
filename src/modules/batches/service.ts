import type { FastifyBaseLogger } from 'fastify'
import type { ValidateFunction } from 'ajv'
import { SECTIONS, type BatchRequest, type BatchResponse, type BatchResult, type Section } from '../../../schemas/batches.js'
import { BillingDocumentsRequest } from '../../../schemas/billing-documents.js'
import { HistoricalAgreementsRequest } from '../../../schemas/historical-agreements.js'
import { HistoricalStatementsRequest } from '../../../schemas/historical-statements.js'
import { NotesRequest } from '../../../schemas/notes.js'
import { PaymentInstructionRequest } from '../../../schemas/payment-instruction.js'
import { TransactionsRequest } from '../../../schemas/transaction-import.js'
import type { Db } from '../../db/index.js'
import { AppError, entriesFromAjv, entry, sortEntries, type ErrorEntry } from '../../errors.js'
import { isObject } from '../../objects.js'
import { utcToday } from '../../rules/context.js'
import { checkAccountData } from '../accounts/rules.js'
import { judgeStagedData } from '../accounts/create-check.js'
import { compileBody } from '../../validation.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import { isExternalAccountNumber, type FailuresService } from '../failures/service.js'
import type { ImportsService } from '../imports/service.js'
import type { PostImportServices } from '../post-import/services.js'
import { createBatchesRepository, type DryRunClaim, type DryRunOutcome, type DryRunVerdict, type ExtraRows, type PlannedAccount } from './repository.js'
import { agreementsDetail, planAgreements } from '../historical-agreements/service.js'
import { formatDecimal, toBig } from '../../decimal.js'

/** Accounts staged and created per transaction on the set-based path. */
export const CHUNK_ACCOUNTS = 100
/** Accounts worked on at once on the one-by-one path. */
const CONCURRENCY = 4
/** How long an entry waits for a free concurrency slot of its supplier before it fails with 429. */
const SLOT_WAIT_MS = 30_000

const invalidRequest = (errors: ErrorEntry[]) => new AppError(400, 'invalid_request', 'Invalid request.', sortEntries(errors))
const accountFailed = (errors: ErrorEntry[], detail = 'Could not validate account data.') =>
  new AppError(400, 'account_failed_validation', detail, sortEntries(errors))

type FailedStep = Exclude<BatchResult['step'], null>

/** One entry of a batch as it goes through the steps. */
interface Entry {
  index: number
  /** As sent, when a string. */
  external: string | null
  raw: Record<string, unknown>
  /** Validated and normalised: ready to stage. */
  data?: Record<string, unknown>
  outcome?: 'created' | 'already_imported' | 'would_create'
  serviceAccountNumber?: string
  ledgers?: Array<{ ledger_code: string; ledger_number: string }>
  failure?: { step: FailedStep; error: AppError }
  /** The sections were planned with the set-based create (`sectionFailure`: the one that failed). */
  sectionsPlanned?: boolean
  sectionFailure?: { step: FailedStep; error: AppError } | undefined
  /** The sections were written with the account. */
  sectionsDone?: boolean
}

/**
 * Lets requests that arrived meanwhile start before the next chunk. On PGlite the database's
 * answers come back without a turn of the event loop, so a batch would otherwise keep every
 * other request of the server waiting until its last chunk (seconds for 1,000 entries).
 */
const letOthersIn = () => new Promise<void>((resolve) => setImmediate(resolve))
/** Accounts checked before a batch lets other requests use the thread (about 10 ms of work). */
const CHECKS_BETWEEN_TURNS = 20

/** Runs `work` on every item, at most `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < items.length) await work(items[next++]!)
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
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
  imports: ImportsService
  postImport: PostImportServices
  failures: FailuresService
  vendorCodes: string[]
}) {
  const { db, imports, postImport, failures } = deps
  const repo = createBatchesRepository(db)
  const validators: Record<Section, ValidateFunction> = {
    notes: compileBody(NotesRequest),
    transactions: compileBody(TransactionsRequest),
    historical_agreements: compileBody(HistoricalAgreementsRequest),
    historical_statements: compileBody(HistoricalStatementsRequest),
    historical_billing_documents: compileBody(BillingDocumentsRequest),
    payment_instruction: compileBody(PaymentInstructionRequest(deps.vendorCodes))
  }
  /** The key of each section's list in the single endpoint's body. */
  const LIST_KEY: Partial<Record<Section, string>> = {
    notes: 'notes', transactions: 'transactions', historical_agreements: 'agreements', historical_statements: 'statements'
  }

  return {
    async run(principal: OrganisationPrincipal, body: BatchRequest, log: FastifyBaseLogger): Promise<BatchResponse> {
      const found = await repo.supplierAndTeam(body.import_supplier, principal.organisationId, body.operations_team_name)
      const problems: ErrorEntry[] = []
      if (!found.supplier) problems.push(entry('does_not_exist', 'import_supplier', `Import supplier ${body.import_supplier} does not exist.`))
      else if (found.supplier.status !== 'Ongoing') {
        problems.push(entry('import_supplier_migration_not_ongoing', 'import_supplier', `The migration of import supplier ${found.supplier.code} is ${found.supplier.status}.`))
      }
      if (found.teamId === undefined) problems.push(entry('operations_team_name_does_not_exist', 'operations_team_name', `Operations team ${body.operations_team_name} does not exist.`))
      if (problems.length > 0) throw invalidRequest(problems)
      const supplier = found.supplier!
      const teamId = found.teamId!
      const dryRun = body.dry_run === true
      const actor = { organisationId: principal.organisationId, apiKeyId: principal.apiKeyId, name: `organisation:${principal.organisationName}` }

      const fail = (e: Entry, step: FailedStep, error: AppError) => { e.failure = { step, error } }
      /** A failure of a step, recorded as a single request's would be. */
      const failRecorded = async (e: Entry, step: FailedStep, error: AppError) => {
        fail(e, step, error)
        await failures.settle({
          step, supplierCode: supplier.code, externalAccountNumber: e.external, organisationId: principal.organisationId,
          status: error.statusCode, code: error.code, errors: error.errors
        }, log)
      }

      // The entries: their shape, their supplier, and account numbers repeated in the batch.
      const entries: Entry[] = body.accounts.map((raw, index) => examine(raw, index, body.import_supplier))
      const seen = new Set<string>()
      for (const e of entries) {
        if (e.failure || e.external === null) continue
        if (seen.has(e.external)) {
          fail(e, 'stage', accountFailed([entry('duplicate_external_account_number', 'external_account_number',
            `Account ${e.external} appears earlier in the batch; each account is sent once.`)]))
        }
        seen.add(e.external)
      }

      // Imported and skipped accounts first (they win over their data's problems), then the data.
      const open = entries.filter((e) => !e.failure)
      const states = await repo.states(supplier.id, open.flatMap((e) => (isExternalAccountNumber(e.external) ? [e.external] : [])))
      for (const [i, e] of open.entries()) {
        // The account checks are the batch's longest run on the thread: other requests go in between.
        if (i > 0 && i % CHECKS_BETWEEN_TURNS === 0) await letOthersIn()
        const state = e.external === null ? undefined : states.get(e.external)
        if (state?.state === 'IMPORTED') {
          e.outcome = 'already_imported'
          e.serviceAccountNumber = state.serviceAccountNumber!
          continue
        }
        if (state?.state === 'SKIPPED') {
          fail(e, 'stage', accountFailed([entry('account_import_skipped', null, 'The import of this account has been marked to be skipped.')], 'Account import skipped.'))
          continue
        }
        const account = e.raw.account
        // The checks of stage that need no database; the supplier is known to be the caller's and Ongoing.
        const checked = checkAccountData(account, utcToday())
        if (checked.errors.length > 0) await failRecorded(e, 'stage', accountFailed(checked.errors))
        else e.data = checked.data as Record<string, unknown>
      }

      // Stage and create (with the sections of new accounts): set-based where nothing stands in the way, else one account at a time.
      const ready = entries.filter((e) => e.data !== undefined)
      const oneByOne: Entry[] = []
      // A supplier with a concurrency limit: each create (a dry run's too) takes one of its slots, one account at a time.
      if (supplier.maxConcurrentProcessing !== null) oneByOne.push(...ready)
      else if (dryRun) {
        for (let i = 0; i < ready.length; i += CHUNK_ACCOUNTS) {
          if (i > 0) await letOthersIn()
          oneByOne.push(...await dryRunChunk(ready.slice(i, i + CHUNK_ACCOUNTS)))
        }
      } else {
        for (let i = 0; i < ready.length; i += CHUNK_ACCOUNTS) {
          if (i > 0) await letOthersIn()
          const chunk = ready.slice(i, i + CHUNK_ACCOUNTS)
          const plans = new Map<Entry, PlannedAccount>()
          await eachLimited(chunk, CONCURRENCY, async (e) => { plans.set(e, await planEntry(e)) })
          try {
            const outcome = await repo.stageAndCreate(supplier.id, chunk.map((e) => plans.get(e)!), actor)
            for (const e of chunk) {
              const created = outcome.created.get(e.external!)
              if (!created) {
                oneByOne.push(e)
                continue
              }
              e.outcome = 'created'
              e.serviceAccountNumber = created.serviceAccountNumber
              e.ledgers = created.ledgers
              e.sectionsDone = e.sectionsPlanned
              if (e.sectionFailure) await failRecorded(e, e.sectionFailure.step, e.sectionFailure.error)
            }
            failures.timeline.count(supplier.id, 'staged', outcome.created.size)
            failures.timeline.count(supplier.id, 'created', outcome.created.size)
          } catch (err) {
            // One account's conflict (or any database error) rolled the chunk back: account by account now.
            log.warn({ err, accounts: chunk.length }, 'batch chunk rolled back; its accounts are taken one by one')
            oneByOne.push(...chunk)
          }
          for (const e of chunk) {
            e.sectionFailure = undefined
            e.sectionsPlanned = false
          }
        }
      }
      await eachLimited(oneByOne, CONCURRENCY, async (e) => stageAndCreateOne(e))

      // The other sections (of accounts imported before, or taken one by one), in their order, as retry-safe single requests.
      if (!dryRun) {
        const withSections = entries.filter((e) => !e.failure && !e.sectionsDone && (e.outcome === 'created' || e.outcome === 'already_imported') &&
          SECTIONS.some((s) => e.raw[s] !== undefined))
        await eachLimited(withSections, CONCURRENCY, async (e) => runSections(e))
      }

      const results = entries.map(resultOf)
      const counts = { created: 0, already_imported: 0, would_create: 0, failed: 0 }
      for (const r of results) counts[r.outcome]++
      return { results, counts }

      /**
       * Stages and dry-run creates a chunk set-based, with the outcomes a single stage and dry-run
       * create of each would give; returns the entries left to the one-by-one path (all of them
       * when the chunk met a database error: nothing of it was kept).
       */
      async function dryRunChunk(chunk: Entry[]): Promise<Entry[]> {
        let outcome: DryRunOutcome
        try {
          outcome = await repo.stageAndDryRun(supplier.id, chunk.map((e) => ({ external: e.external!, data: e.data! })), actor, body.operations_team_name,
            (staged, claim) => judgeStaged(staged, claim))
        } catch (err) {
          log.warn({ err, accounts: chunk.length }, 'dry-run batch chunk rolled back; its accounts are taken one by one')
          return chunk
        }
        const elsewhere = new Set(outcome.elsewhere)
        for (const e of chunk) {
          const refused = outcome.refused.get(e.external!)
          if (refused) await failRecorded(e, 'create', accountFailed(refused))
          else if (!elsewhere.has(e.external!)) e.outcome = 'would_create'
        }
        failures.timeline.count(supplier.id, 'staged', chunk.length - elsewhere.size)
        return chunk.filter((e) => elsewhere.has(e.external!))
      }

      /** A create's checks of staged data as stored (the team, today's rules) and, when they pass, its rows. */
      function judgeStaged(staged: unknown, claim: DryRunClaim): DryRunVerdict {
        const verdict = judgeStagedData(staged, { id: claim.teamId, name: body.operations_team_name }, {
          importProcessId: 0, supplierId: supplier.id, sendMigrationEmails: claim.sendMigrationEmails
        })
        return 'errors' in verdict ? { errors: sortEntries(verdict.errors) } : verdict
      }

      /**
       * A new account's rows and its sections' rows, planned by the services of the single
       * endpoints against the account as it will be (nothing imported after it yet). A section
       * that fails stops the entry's later sections, as it would one by one.
       */
      async function planEntry(e: Entry): Promise<PlannedAccount> {
        const rows = imports.plan(e.data as never, { importProcessId: 0, supplierId: supplier.id, operationsTeamId: teamId, sendMigrationEmails: supplier.sendMigrationEmails })
        const extra: ExtraRows = { transactions: [], lineItems: [], taxItems: [], agreements: [], billingDocuments: [], notes: [], historicalStatements: [], paymentInstructions: [] }
        const planned: PlannedAccount = { external: e.external!, data: e.data!, rows, extra, postImportEvents: [] }
        const present = SECTIONS.filter((section) => e.raw[section] !== undefined)
        if (present.length === 0) return planned
        const account = { id: rows.account.id, supplier }
        const ref = { import_supplier: supplier.code, external_account_number: e.external! }
        const now = new Date()
        const today = now.toISOString().slice(0, 10)
        const idsOn = new Map<string, Set<string>>(rows.ledgers.map((l) => [l.id!, new Set<string>()]))
        for (const t of rows.transactions) idsOn.get(t.ledgerId)?.add(t.transactionId)
        const billing = e.raw.historical_billing_documents
        if (Array.isArray(billing) && new Set(billing.map((b) => (isObject(b) ? b.ledger_code ?? 'ENERGY' : b))).size < billing.length) {
          return planned // two imports for one ledger: their rules read each other's rows, so one by one after the create
        }
        for (const section of present) {
          const value = e.raw[section]
          try {
            switch (section) {
              case 'notes': {
                const plan = postImport.notes.planForNewAccount(validated('notes', { ...ref, notes: value }) as never, account, now)
                extra.notes.push(...plan.rows)
                if (plan.detail) planned.postImportEvents.push(plan.detail)
                break
              }
              case 'transactions': {
                const request = { ...ref, transactions: value }
                const validate = validators.transactions
                const schemaErrors = validate(request) ? [] : entriesFromAjv(validate.errors ?? [])
                const energy = rows.ledgers.find((l) => l.ledgerCode === 'ENERGY')
                const open = energy && rows.statements.find((st) => st.ledgerId === energy.id && st.status === 'OPEN')
                const ledger = energy && open
                  ? { id: energy.id!, openFrom: open.periodFrom, openStatementId: open.id!, existing: [...idsOn.get(energy.id!)!] }
                  : undefined
                const plan = postImport.transactions.planForNewAccount(request as never, schemaErrors, account, ledger, today)
                extra.transactions.push(...plan.rows.transactions)
                extra.lineItems.push(...plan.rows.lineItems)
                extra.taxItems.push(...plan.rows.taxItems)
                if (plan.note) extra.notes.push(plan.note)
                if (plan.rows.transactions.length > 0) energy!.balance = formatDecimal(toBig(energy!.balance).plus(plan.delta))
                for (const t of plan.rows.transactions) idsOn.get(energy!.id!)!.add(t.transactionId)
                if (plan.detail) planned.postImportEvents.push(plan.detail)
                break
              }
              case 'historical_agreements': {
                const request = validated('historical_agreements', { ...ref, agreements: value })
                const pointIds = new Map(rows.supplyPoints.map((p) => [p.identifier, p.id!]))
                const stored = rows.agreements.map((a) => ({ supplyPointId: a.supplyPointId, tariffCode: a.tariffCode, effectiveFrom: a.effectiveFrom, effectiveTo: a.effectiveTo ?? null, historical: false }))
                const agreements = planAgreements(request as never, pointIds, stored, today)
                extra.agreements.push(...agreements)
                const detail = agreementsDetail(agreements)
                if (detail) planned.postImportEvents.push(detail)
                break
              }
              case 'historical_statements': {
                const plan = postImport.historicalStatements.planForNewAccount(validated('historical_statements', { ...ref, statements: value }) as never, account, today)
                extra.historicalStatements.push(...plan.rows)
                if (plan.detail) planned.postImportEvents.push(plan.detail)
                break
              }
              case 'historical_billing_documents': {
                const ledgers = rows.ledgers.map((l) => ({ ledger_code: l.ledgerCode, ledger_number: l.ledgerNumber, id: l.id! }))
                for (const { request, root } of billingRequests(value, ledgers, ref)) {
                  try {
                    const ledger = ledgers.find((l) => l.ledger_number === request.ledger_number)!
                    const plan = postImport.historicalBillingDocuments.planForNewAccount(request as never, { id: ledger.id, ledgerNumber: ledger.ledger_number }, idsOn.get(ledger.id)!)
                    extra.billingDocuments.push(...plan.documents)
                    extra.transactions.push(...plan.rows.transactions)
                    extra.lineItems.push(...plan.rows.lineItems)
                    extra.taxItems.push(...plan.rows.taxItems)
                    for (const t of plan.rows.transactions) idsOn.get(ledger.id)!.add(t.transactionId)
                    planned.postImportEvents.push(plan.detail)
                  } catch (err) {
                    throw rooted(err, root)
                  }
                }
                break
              }
              case 'payment_instruction': {
                if (!isObject(value)) throw invalidRequest([entry('invalid', null, 'The payment instruction must be an object.')])
                const plan = await postImport.paymentInstruction.planForNewAccount(validated('payment_instruction', { ...ref, ...value }) as never, account, log)
                extra.paymentInstructions.push(plan.row)
                planned.postImportEvents.push(plan.detail)
              }
            }
          } catch (err) {
            e.sectionFailure = { step: section, error: asAppError(err, log) }
            break
          }
        }
        e.sectionsPlanned = true
        return planned
      }

      async function stageAndCreateOne(e: Entry): Promise<void> {
        try {
          await imports.stage(principal, { body: e.data, schemaErrors: [] })
        } catch (err) {
          const error = asAppError(err, log)
          if (error.code === 'account_already_imported') {
            e.outcome = 'already_imported'
            e.serviceAccountNumber = error.extra.service_account_number as string
            await settleQuietly('stage', error)
            return
          }
          return failRecorded(e, 'stage', error)
        }
        const started = Date.now()
        for (;;) {
          try {
            const created = await imports.create(principal, {
              body: { external_account_number: e.external, import_supplier_code: supplier.code, operations_team_name: body.operations_team_name, dry_run: dryRun },
              schemaErrors: []
            })
            e.outcome = 'created'
            e.serviceAccountNumber = created.service_account_number
            e.ledgers = created.ledgers
            return
          } catch (err) {
            const error = asAppError(err, log)
            if (error.code === 'too_many_accounts_processing' && Date.now() - started < SLOT_WAIT_MS) {
              // A batch waits for a free slot of its supplier instead of answering 429.
              await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 200))
              continue
            }
            if (error.code === 'dry_run_rolled_back') {
              e.outcome = 'would_create'
              await settleQuietly('create', error)
              return
            }
            if (error.code === 'account_already_imported') {
              e.outcome = 'already_imported'
              e.serviceAccountNumber = error.extra.service_account_number as string
              await settleQuietly('create', error)
              return
            }
            return failRecorded(e, 'create', error)
          }
        }

        async function settleQuietly(step: 'stage' | 'create', error: AppError) {
          await failures.settle({
            step, supplierCode: supplier.code, externalAccountNumber: e.external, organisationId: principal.organisationId,
            status: error.statusCode, code: error.code, errors: error.errors
          }, log)
        }
      }

      async function runSections(e: Entry): Promise<void> {
        const ref = { import_supplier: supplier.code, external_account_number: e.external! }
        for (const section of SECTIONS) {
          const value = e.raw[section]
          if (value === undefined) continue
          try {
            await runSection(section, value, ref, e)
            // A section of an account created now has no earlier failure to clear (its records went with the create).
            if (e.outcome === 'already_imported') {
              await failures.cleared({ step: section, supplierCode: supplier.code, externalAccountNumber: e.external, organisationId: principal.organisationId }, log)
            }
          } catch (err) {
            return failRecorded(e, section, asAppError(err, log))
          }
        }
      }

      async function runSection(section: Section, value: unknown, ref: { import_supplier: string; external_account_number: string }, e: Entry): Promise<void> {
        if (section === 'historical_billing_documents') {
          const ledgers = e.ledgers ?? await repo.ledgersOf(e.serviceAccountNumber!)
          for (const { request, root } of billingRequests(value, ledgers, ref)) {
            try {
              await postImport.historicalBillingDocuments.create(principal, request as never)
            } catch (err) {
              throw rooted(err, root)
            }
          }
          return
        }
        if (section === 'payment_instruction' && !isObject(value)) throw invalidRequest([entry('invalid', null, 'The payment instruction must be an object.')])
        const request = section === 'payment_instruction' ? { ...ref, ...(value as object) } : { ...ref, [LIST_KEY[section]!]: value }
        const validate = validators[section]
        const valid = validate(request)
        const schemaErrors = valid ? [] : entriesFromAjv(validate.errors ?? [])
        switch (section) {
          case 'transactions':
            await postImport.transactions.create(principal, { body: request, schemaErrors }, {})
            return
          case 'notes':
            if (!valid) throw invalidRequest(schemaErrors)
            await postImport.notes.create(principal, request as never)
            return
          case 'historical_agreements':
            if (!valid) throw invalidRequest(schemaErrors)
            await postImport.historicalAgreements.create(principal, request as never)
            return
          case 'historical_statements':
            if (!valid) throw invalidRequest(schemaErrors)
            await postImport.historicalStatements.create(principal, request as never)
            return
          case 'payment_instruction':
            if (!valid) throw invalidRequest(schemaErrors)
            await postImport.paymentInstruction.create(principal, request as never, log)
        }
      }
    }
  }

  /** A section's request checked with its single endpoint's schema (defaults filled in place); throws its 400. */
  function validated(section: Exclude<Section, 'transactions'>, request: Record<string, unknown>): Record<string, unknown> {
    const validate = validators[section]
    if (!validate(request)) throw invalidRequest(entriesFromAjv(validate.errors ?? []))
    return request
  }

  /**
   * The billing documents requests of a section (one, or a list: one per ledger), each with the
   * ledger number of its `ledger_code` (default ENERGY) filled in, checked with the endpoint's
   * schema. `root` prefixes the attrs of a list's request (`1.`).
   */
  function * billingRequests(value: unknown, ledgers: Array<{ ledger_code: string; ledger_number: string }>, ref: Record<string, string>) {
    const items = Array.isArray(value) ? value : [value]
    for (const [k, item] of items.entries()) {
      const root = Array.isArray(value) ? `${k}.` : ''
      try {
        if (!isObject(item)) throw invalidRequest([entry('invalid', null, 'Each historical billing documents request must be an object.')])
        if (item.ledger_number !== undefined) throw invalidRequest([entry('unexpected_field', 'ledger_number', 'The service fills in the ledger number from ledger_code.')])
        const code = item.ledger_code ?? 'ENERGY'
        const ledger = ledgers.find((l) => l.ledger_code === code)
        if (typeof code === 'string' && !ledger) throw invalidRequest([entry('ledger_not_found', 'ledger_code', `The account has no ${code} ledger.`)])
        yield { root, request: validated('historical_billing_documents', { ...ref, ...item, ledger_code: code, ledger_number: ledger?.ledger_number ?? '' }) }
      } catch (err) {
        throw rooted(err, root)
      }
    }
  }

  /** An entry's shape: an object with `account` and known sections only. */
  function examine(raw: unknown, index: number, supplierCode: string): Entry {
    const entryOf = (external: string | null, fields: Record<string, unknown> = {}): Entry => ({ index, external, raw: fields })
    if (!isObject(raw)) {
      const e = entryOf(null)
      e.failure = { step: 'stage', error: invalidRequest([entry('invalid', null, 'An entry must be an object holding an account.')]) }
      return e
    }
    const account = raw.account
    const external = isObject(account) && typeof account.external_account_number === 'string' ? account.external_account_number : null
    const e = entryOf(external, raw)
    const shape: ErrorEntry[] = []
    if (account === undefined) shape.push(entry('required', 'account', 'This field is required.'))
    for (const key of Object.keys(raw)) {
      if (key !== 'account' && !(SECTIONS as readonly string[]).includes(key)) shape.push(entry('unexpected_field', key, 'This field is not expected here.'))
    }
    if (shape.length > 0) e.failure = { step: 'stage', error: invalidRequest(shape) }
    else if (isObject(account) && typeof account.import_supplier === 'string' && account.import_supplier !== supplierCode) {
      e.failure = {
        step: 'stage',
        error: accountFailed([entry('import_supplier_mismatch', 'import_supplier', `The account is for ${account.import_supplier}, the batch for ${supplierCode}.`)])
      }
    }
    return e
  }
}

/** A problem of one request of a list, its attrs rooted at the request's index (`1.` + attr). */
function rooted(err: unknown, root: string): unknown {
  if (root === '' || !(err instanceof AppError) || err.extra.rooted === true) return err
  const errors = err.errors.map((x) => ({ ...x, attr: x.attr === null ? root.slice(0, -1) : root + x.attr }))
  return new AppError(err.statusCode, err.code, err.message, errors, { ...err.extra, rooted: true }, err.headers)
}

/** An error of a single step as its endpoint would answer it; anything unexpected is a 500. */
function asAppError(err: unknown, log: FastifyBaseLogger): AppError {
  if (err instanceof AppError) return err
  log.error({ err }, 'batch entry failed with a server error')
  return new AppError(500, 'server_error', 'A server error occurred.')
}

function resultOf(e: Entry): BatchResult {
  if (e.failure) {
    return {
      external_account_number: e.external,
      outcome: 'failed',
      service_account_number: e.serviceAccountNumber ?? null,
      step: e.failure.step,
      status: e.failure.error.statusCode,
      code: e.failure.error.code,
      errors: e.failure.error.errors
    }
  }
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

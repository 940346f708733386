import { CODE } from '../../schemas/error-codes.js'
import { accountFailed, answer, invalidRequest, problem, type AppError, type ErrorEntry } from '../errors.js'

/**
 * The account prechecks, judged on what was looked up: the supplier (known, the caller's, its
 * migration Ongoing), the operations team, and the account's import process (skipped, already
 * imported). Validate, stage, create, the post-import endpoints and batches all judge with these,
 * so each check has one wording; each caller looks up in its own way (one account, or a
 * whole batch in one statement).
 */

/** Where an account stands: open to be staged and created, or not. */
export type AccountStanding =
  { kind: 'open' } | { kind: 'already_imported'; serviceAccountNumber: string } | { kind: 'skipped' }

export function standingOf(
  process: { state: string; serviceAccountNumber: string | null } | undefined
): AccountStanding {
  if (process?.state === 'IMPORTED') {
    return { kind: 'already_imported', serviceAccountNumber: process.serviceAccountNumber! }
  }
  if (process?.state === 'SKIPPED') return { kind: 'skipped' }
  return { kind: 'open' }
}

export function alreadyImported(externalAccountNumber: string, serviceAccountNumber: string): AppError {
  const numbers = { external_account_number: externalAccountNumber, service_account_number: serviceAccountNumber }
  return answer(
    CODE.account_already_imported,
    [problem(CODE.account_already_imported, 'external_account_number', numbers)],
    { extra: numbers },
    numbers
  )
}

export const skipped = (): AppError => accountFailed([problem(CODE.account_import_skipped, null)])

/** The answer of validate, stage and create for an account that is not open. */
export function refusalOf(standing: Exclude<AccountStanding, { kind: 'open' }>, external: string): AppError {
  return standing.kind === 'already_imported' ? alreadyImported(external, standing.serviceAccountNumber) : skipped()
}

/** The supplier's problem: unknown (or another organisation's), or its migration not Ongoing; reported at `attr`. */
export function supplierProblem(
  supplier: { code: string; status: string } | undefined,
  code: string,
  attr: 'import_supplier' | 'import_supplier_code'
): ErrorEntry | undefined {
  if (!supplier) return problem(CODE.does_not_exist, attr, { supplier: code })
  if (supplier.status !== 'Ongoing') {
    return problem(CODE.import_supplier_migration_not_ongoing, attr, {
      supplier: supplier.code,
      status: supplier.status
    })
  }
  return undefined
}

/** The operations team's problem: no team of that name. */
export function teamProblem(teamId: string | null | undefined, name: string): ErrorEntry | undefined {
  return teamId === null || teamId === undefined
    ? problem(CODE.operations_team_name_does_not_exist, 'operations_team_name', { team: name })
    : undefined
}

/**
 * A request that names a supplier and a team for all it holds (a batch, an import job), judged as
 * a whole: a 400 listing the supplier's and the team's problems, or undefined when there are none.
 */
export function wholeRequestRefusal(
  found: { supplier: { code: string; status: string } | undefined; teamId: string | null | undefined },
  request: { import_supplier: string; operations_team_name: string }
): AppError | undefined {
  const problems = [
    supplierProblem(found.supplier, request.import_supplier, 'import_supplier'),
    teamProblem(found.teamId, request.operations_team_name)
  ].filter((entry) => entry !== undefined)
  return problems.length > 0 ? invalidRequest(problems) : undefined
}

import { AppError, entry, sortEntries, type ErrorEntry } from '../../errors.js'

/**
 * The account prechecks, judged on what was looked up: the supplier (known, the caller's, its
 * migration Ongoing), the operations team, and the account's import process (skipped, already
 * imported). Validate, stage, create, the post-import endpoints and batches all judge with these,
 * so each check has one wording; each caller looks up in its own way (one account, or a
 * whole batch in one statement).
 */

/** Where an account stands: open to be staged and created, or not. */
export type AccountStanding =
  | { kind: 'open' }
  | { kind: 'already_imported'; serviceAccountNumber: string }
  | { kind: 'skipped' }

export function standingOf(process: { state: string; serviceAccountNumber: string | null } | undefined): AccountStanding {
  if (process?.state === 'IMPORTED') return { kind: 'already_imported', serviceAccountNumber: process.serviceAccountNumber! }
  if (process?.state === 'SKIPPED') return { kind: 'skipped' }
  return { kind: 'open' }
}

export const accountFailed = (errors: ErrorEntry[], detail = 'Could not validate account data.'): AppError =>
  new AppError(400, 'account_failed_validation', detail, sortEntries(errors))

export const alreadyImported = (externalAccountNumber: string, serviceAccountNumber: string): AppError =>
  new AppError(400, 'account_already_imported', 'Account has already been imported.', [
    entry('account_already_imported', 'external_account_number', `Account ${externalAccountNumber} has already been imported as ${serviceAccountNumber}.`)
  ], { external_account_number: externalAccountNumber, service_account_number: serviceAccountNumber })

export const skipped = (): AppError =>
  accountFailed([entry('account_import_skipped', null, 'The import of this account has been marked to be skipped.')], 'Account import skipped.')

/** The answer of validate, stage and create for an account that is not open. */
export function refusalOf(standing: Exclude<AccountStanding, { kind: 'open' }>, external: string): AppError {
  return standing.kind === 'already_imported' ? alreadyImported(external, standing.serviceAccountNumber) : skipped()
}

/** The supplier's problem: unknown (or another organisation's), or its migration not Ongoing; reported at `attr`. */
export function supplierProblem(
  supplier: { code: string; status: string } | undefined, code: string, attr: 'import_supplier' | 'import_supplier_code'
): ErrorEntry | undefined {
  if (!supplier) return entry('does_not_exist', attr, `Import supplier ${code} does not exist.`)
  if (supplier.status !== 'Ongoing') {
    return entry('import_supplier_migration_not_ongoing', attr, `The migration of import supplier ${supplier.code} is ${supplier.status}.`)
  }
  return undefined
}

/** The operations team's problem: no team of that name. */
export function teamProblem(teamId: string | null | undefined, name: string): ErrorEntry | undefined {
  return teamId === null || teamId === undefined
    ? entry('operations_team_name_does_not_exist', 'operations_team_name', `Operations team ${name} does not exist.`)
    : undefined
}

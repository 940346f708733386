import { teamProblem } from './precheck.js'
import type { ErrorEntry } from '../errors.js'
import { utcToday } from '../rules/context.js'
import { planAccount, type AccountRows, type PlanContext } from './plan.js'
import { checkAccountData, type SupplierSettings } from './rules.js'

/**
 * What a create decides from the staged data as stored, without the database: the operations team
 * must exist and the data must pass today's rules against the supplier's settings as they are now
 * (either may have changed since staging: a supplier switched to GB supply point checks refuses
 * an account staged with an identifier those checks refuse); then the rows to write. Single
 * creates and dry-run batches both judge through it. Errors are unsorted.
 */
export function judgeStagedData(
  staged: unknown,
  team: { id: string | null; name: string },
  supplier: SupplierSettings,
  ctx: Omit<PlanContext, 'operationsTeamId'>
): { rows: AccountRows } | { errors: ErrorEntry[] } {
  const errors: ErrorEntry[] = []
  const problem = teamProblem(team.id, team.name)
  if (problem) errors.push(problem)
  const checked = checkAccountData(staged, utcToday(), supplier)
  errors.push(...checked.errors)
  if (errors.length > 0 || team.id === null) return { errors }
  return { rows: planAccount(checked.data!, { ...ctx, operationsTeamId: team.id }) }
}

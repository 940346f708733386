import { camelCase, invalid, ownerOf, type GraphqlResolvers, type Guard } from '../auth/guard.js'
import { parseAfter, STEPS, type FailuresService, type Step } from './service.js'

/** The dashboard's failure reads of a supplier: the summary, the records, the timeline. */
export function failuresResolvers(deps: {
  guard: Guard
  failures: FailuresService
  supplierIdOf: (code: string, owner: string | undefined) => Promise<string>
}): GraphqlResolvers {
  const { guard, failures, supplierIdOf } = deps
  return {
    Query: {
      migrationFailureSummary: guard.resolver('anyone', async (args: { importSupplierCode: string }, caller) => {
        const summary = await failures.summary(await supplierIdOf(args.importSupplierCode, ownerOf(caller)))
        return {
          failingAccounts: summary.failing_accounts,
          byStep: Object.fromEntries(Object.entries(summary.by_step).map(([step, n]) => [camelCase(step), n])),
          byCode: summary.by_code
        }
      }),
      migrationFailures: guard.resolver(
        'anyone',
        async (
          args: {
            importSupplierCode: string
            step?: string | null
            code?: string | null
            first?: number | null
            after?: string | null
            externalAccountNumber?: string | null
          },
          caller
        ) => {
          const first = args.first ?? 100
          if (!Number.isInteger(first) || first < 1 || first > 10_000) throw invalid('first must be 1–10000.')
          if (args.step != null && !STEPS.includes(args.step as Step)) {
            throw invalid(`step must be one of ${STEPS.join(', ')}.`)
          }
          const items = await failures.list(await supplierIdOf(args.importSupplierCode, ownerOf(caller)), {
            ...(args.step != null ? { step: args.step as Step } : {}),
            ...(args.code != null ? { code: args.code } : {}),
            ...(args.after != null ? { after: parseAfter(args.after) } : {}),
            ...(args.externalAccountNumber != null ? { external: args.externalAccountNumber } : {}),
            limit: first
          })
          return items.map((f) => ({
            externalAccountNumber: f.external_account_number,
            step: f.step,
            failedAt: f.failed_at,
            attempts: f.attempts,
            httpStatus: f.http_status,
            code: f.code,
            errors: f.errors
          }))
        }
      ),
      migrationTimeline: guard.resolver(
        'anyone',
        async (args: { importSupplierCode: string; minutes?: number | null }, caller) => {
          const minutes = args.minutes ?? 60
          if (!Number.isInteger(minutes) || minutes < 1 || minutes > 10_080) throw invalid('minutes must be 1–10080.')
          return failures.readTimeline(await supplierIdOf(args.importSupplierCode, ownerOf(caller)), minutes)
        }
      )
    }
  }
}

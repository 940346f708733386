import { CODE, formatDetail } from '../../../schemas/error-codes.js'
import { JOB_STATES, type ImportJob, type JobState } from '../../../schemas/import-jobs.js'
import { fieldNotFound } from '../../errors.js'
import type { Audited } from '../audit/graphql.js'
import { camelCase, guarded, invalid, type GraphqlResolvers, type Guard } from '../auth/guard.js'
import type { Principal } from '../auth/service.js'
import type { ImportJobsReader } from './service.js'

/** A job id as the service makes them (a UUID). */
const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The REST job object with its keys in camelCase (its lines' too). */
function jobFields(job: ImportJob) {
  return {
    id: job.id,
    importSupplier: job.import_supplier,
    state: job.state,
    dryRun: job.dry_run,
    createdAt: job.created_at,
    startedAt: job.started_at,
    finishedAt: job.finished_at,
    notBefore: job.not_before,
    notAfter: job.not_after,
    cancelledReason: job.cancelled_reason,
    failureCodes: job.failure_codes,
    lines: Object.fromEntries(Object.entries(job.lines).map(([outcome, n]) => [camelCase(outcome), n])),
    ratePerSecond: job.rate_per_second,
    etaSeconds: job.eta_seconds
  }
}

/** No job of the caller's has this id: in the words of the REST answer's entry (`import_job_does_not_exist`). */
const jobNotFound = () => fieldNotFound(CODE.import_job_does_not_exist)

/** The jobs a caller may see: an organisation's own (its id), every job for the operator (null). */
const organisationIdOf = (caller: Principal): string | null =>
  caller.kind === 'organisation' ? caller.organisationId : null

/** The import job fields: an organisation's own jobs, every job for the operator. */
export function importJobsResolvers(deps: {
  guard: Guard
  audited: Audited
  jobs: ImportJobsReader
}): GraphqlResolvers {
  const { guard, audited, jobs } = deps
  return {
    Mutation: {
      cancelImportJob: audited(
        'cancelImportJob',
        ({ input }: { input: { id: string } }) => ({ type: 'import_job', id: input.id }),
        async ({ input }, record, caller) => {
          const done = await jobs.cancel(organisationIdOf(caller), input.id, record)
          if ('job' in done) return jobFields(done.job)
          if (done.refused === 'missing') throw jobNotFound()
          throw invalid(formatDetail(CODE.import_job_not_cancellable, { state: done.state }))
        },
        'anyone'
      )
    },
    // The job was the caller's to read: its lines are too.
    ImportJob: {
      notJsonLines: (job: ReturnType<typeof jobFields>, args: { first?: number | null }) =>
        guarded(async () => {
          const first = args.first ?? 20
          if (!Number.isInteger(first) || first < 1 || first > 100) throw invalid('first must be 1–100.')
          return jobs.notJsonLines({ id: job.id, failure_codes: job.failureCodes }, first)
        })
    },
    Query: {
      importJobs: guard.resolver(
        'anyone',
        async (
          args: {
            importSupplierCode?: string | null
            state?: string | null
            first?: number | null
            after?: string | null
          },
          caller
        ) => {
          const first = args.first ?? 100
          if (!Number.isInteger(first) || first < 1 || first > 10_000) throw invalid('first must be 1–10000.')
          if (args.state != null && !JOB_STATES.includes(args.state as JobState)) {
            throw invalid(`state must be one of ${JOB_STATES.join(', ')}.`)
          }
          if (args.after != null && !JOB_ID.test(args.after)) throw invalid('after must be the id of a job.')
          const list = await jobs.list(organisationIdOf(caller), {
            ...(args.importSupplierCode != null ? { supplierCode: args.importSupplierCode } : {}),
            ...(args.state != null ? { state: args.state as JobState } : {}),
            ...(args.after != null ? { after: args.after } : {}),
            limit: first
          })
          if (list === undefined) {
            throw fieldNotFound(CODE.does_not_exist, { supplier: String(args.importSupplierCode) })
          }
          return list.map(jobFields)
        }
      ),
      importJob: guard.resolver('anyone', async (args: { id: string }, caller) => {
        const job = await jobs.get(organisationIdOf(caller), args.id)
        return job === undefined ? null : jobFields(job)
      })
    }
  }
}

import type { Problem, Section } from './input.js'
import type { RetryCounts } from './service-client.js'

/** What a migration run reports: one line per account, and the summary. */

export type Outcome = 'created' | 'already_completed' | 'would_create' | 'failed'
export type Step = 'read' | 'status' | 'validate' | 'stage' | 'create' | 'dry_run' | Section

/** One line of the report. */
export interface ReportEntry {
  line: number
  external_account_number: string | null
  outcome: Outcome
  service_account_number: string | null
  /** Where a failed account stopped. */
  step?: Step
  /** The HTTP status of the failed call (0: no answer); absent for a line that could not be read. */
  status?: number
  code?: string
  errors?: Problem[]
  request_id?: string
  /** Items sent per post-import section (a resumed account's are sent again, changing nothing already there). */
  post_import?: Partial<Record<Section, number>>
}

export interface Summary {
  file: string
  url: string
  reportPath: string
  dryRun: boolean
  accounts: number
  created: number
  alreadyCompleted: number
  wouldCreate: number
  failed: number
  failedByStep: Partial<Record<Step, number>>
  /** Failed accounts per error code (each code counted once per account). */
  codes: Record<string, number>
  postImport: Record<Section, number>
  retries: RetryCounts
  elapsedMs: number
  /** Stopped before the end of the input: interrupted, or the API key was refused. */
  stopped?: string
}

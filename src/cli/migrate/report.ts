import type { Problem, Section } from './input.js'
import type { RetryCounts } from './service-client.js'

/** What a migration run reports: one line per account, and the summary. */

/** A report line's outcomes (a job's results file has outcomes of its own: LINE_OUTCOMES). */
export const OUTCOMES = ['created', 'already_completed', 'would_create', 'valid', 'failed'] as const
export type Outcome = (typeof OUTCOMES)[number]
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
  validateOnly: boolean
  accounts: number
  created: number
  alreadyCompleted: number
  wouldCreate: number
  valid: number
  failed: number
  failedByStep: Partial<Record<Step, number>>
  /** Failed accounts per error code (each code counted once per account). */
  codes: Record<string, number>
  postImport: Record<Section, number>
  retries: RetryCounts
  /** Lines left out with --resume: an earlier report shows them completed. Not counted in `accounts`. */
  skipped: number
  elapsedMs: number
  /** Stopped before the end of the input: interrupted, or the API key was refused. */
  stopped?: string
}

/** A summary with nothing counted yet. */
export function emptySummary(
  fields: Pick<Summary, 'file' | 'url' | 'reportPath' | 'dryRun' | 'validateOnly' | 'retries'>,
  sections: readonly Section[]
): Summary {
  return {
    ...fields,
    accounts: 0,
    created: 0,
    alreadyCompleted: 0,
    wouldCreate: 0,
    valid: 0,
    failed: 0,
    failedByStep: {},
    codes: {},
    postImport: Object.fromEntries(sections.map((s) => [s, 0])) as Record<Section, number>,
    skipped: 0,
    elapsedMs: 0
  }
}

/** Counts one report line into the summary. */
export function tally(summary: Summary, entry: ReportEntry): void {
  summary.accounts++
  if (entry.outcome === 'created') summary.created++
  else if (entry.outcome === 'already_completed') summary.alreadyCompleted++
  else if (entry.outcome === 'would_create') summary.wouldCreate++
  else if (entry.outcome === 'valid') summary.valid++
  else if (entry.outcome === 'failed') {
    summary.failed++
    const step = entry.step ?? 'read'
    summary.failedByStep[step] = (summary.failedByStep[step] ?? 0) + 1
    for (const code of new Set((entry.errors ?? []).map((e) => e.code))) {
      summary.codes[code] = (summary.codes[code] ?? 0) + 1
    }
  }
  for (const [section, count] of Object.entries(entry.post_import ?? {})) {
    summary.postImport[section as Section] = (summary.postImport[section as Section] ?? 0) + count
  }
}

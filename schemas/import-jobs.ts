import { Type, type Static } from 'typebox'
import { StandardErrorResponses, SupplierCode } from './common.js'
import { STEP_NAMES } from './failures.js'
import { JOB_LINES_EXAMPLE } from './examples.js'
import { Choice, DateTimeString, Strict, Text } from './fields.js'

/**
 * Import jobs: a whole NDJSON file (one batch entry per line) uploaded in parts and migrated by
 * the service, with a result for every line.
 */

export const JOB_STATES = ['OPEN', 'QUEUED', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED'] as const
export type JobState = (typeof JOB_STATES)[number]
export const LINE_OUTCOMES = [
  'created',
  'already_imported',
  'would_create',
  'failed',
  'not_processed',
  'skipped_blank'
] as const
export type LineOutcome = (typeof LINE_OUTCOMES)[number]

/** Why a job was cancelled: a person, its window, its supplier, never started, paused too long. */
export const CANCELLED_REASONS = [
  'cancelled',
  'window_ended',
  'supplier_complete',
  'never_started',
  'paused_too_long'
] as const
export type CancelledReason = (typeof CANCELLED_REASONS)[number]

/** The highest part number. */
export const MAX_PARTS = 10000

const settings = {
  import_supplier: Text(255),
  operations_team_name: Text(255),
  dry_run: Type.Optional(Type.Boolean({ default: false }))
}

export const CreateJobRequest = Strict(settings)
export type CreateJobRequest = Static<typeof CreateJobRequest>

/** The media type of a job's lines. */
export const NDJSON = 'application/x-ndjson'

/**
 * What a query parameter of the create says: it belongs to the one-call form. OpenAPI cannot tie a
 * parameter to one media type of the body, so its description says it (and the handler refuses it
 * with a JSON body).
 */
const oneCallOnly = (role: string) =>
  `The one-call form only (an \`${NDJSON}\` body): ${role}. With a JSON body the settings go in the body, and ` +
  'this parameter is refused (`unexpected_field`).'

/** How far ahead a job's window may open. */
export const MAX_WINDOW_LEAD_DAYS = 7

const windowFields = {
  not_before: Type.Optional({
    ...DateTimeString,
    description:
      'The job begins no line before this date-time (with an offset or Z; one in the past means now), at most ' +
      `${MAX_WINDOW_LEAD_DAYS} days ahead. Null or omitted: at once.`,
    examples: ['2026-11-28T22:00:00Z']
  }),
  not_after: Type.Optional({
    ...DateTimeString,
    description:
      'The job begins no line from this date-time on: once the lines begun have finished, the lines not begun are ' +
      '`not_processed` and the job ends CANCELLED (`window_ended`). After `not_before` (or now). Null or omitted: no end.',
    examples: ['2026-11-29T06:00:00Z']
  })
}

/** The start's optional body: the job's start window. */
export const StartJobRequest = Strict(windowFields)
export type StartJobRequest = Static<typeof StartJobRequest>

/** The one-call form's settings, as query parameters (`dry_run=true`); required there, refused with a JSON body. */
export const CreateJobQuery = Type.Object(
  {
    import_supplier: Type.Optional(
      Type.String({
        ...settings.import_supplier,
        description: oneCallOnly('required there'),
        examples: ['ACME_ENERGY']
      })
    ),
    operations_team_name: Type.Optional(
      Type.String({
        ...settings.operations_team_name,
        description: oneCallOnly('required there'),
        examples: ['Migrations']
      })
    ),
    dry_run: Type.Optional(
      Type.Boolean({ description: oneCallOnly('optional there, false by default'), examples: [false] })
    ),
    not_before: Type.Optional({
      ...windowFields.not_before,
      description: oneCallOnly("optional there, as the start's `not_before`; a `+` of an offset sent as `%2B`")
    }),
    not_after: Type.Optional({
      ...windowFields.not_after,
      description: oneCallOnly("optional there, as the start's `not_after`")
    })
  },
  { additionalProperties: false }
)

/** The one-call form's body as the document shows it: the lines of a job of one part. */
export const JobLines = Type.String({
  description:
    'The one-call form: whole lines of NDJSON, one batch entry `{account, notes?, …}` per line, each ending with ' +
    '`\\n`, as one part; the settings go in the query.',
  examples: [JOB_LINES_EXAMPLE]
})

/** The create's body: its settings as JSON (201), or the lines of a one-part job as NDJSON (202, the one-call form). */
export const CreateJobBody = {
  content: {
    'application/json': { schema: CreateJobRequest },
    [NDJSON]: { schema: JobLines }
  }
}

export const JobParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false }
)
export type JobParams = Static<typeof JobParams>

export const PartParams = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64 }),
    part: Type.Integer({ minimum: 1, maximum: MAX_PARTS })
  },
  { additionalProperties: false }
)
export type PartParams = Static<typeof PartParams>

const count = Type.Integer({ minimum: 0 })
const time = Type.Union([Type.String({ format: 'date-time' }), Type.Null()])

/** The failed lines by code: a line counts once for each distinct code it holds. */
export const FailureCodeCount = Type.Object({ code: Type.String(), lines: Type.Integer({ minimum: 1 }) })
export type FailureCodeCount = Static<typeof FailureCodeCount>
/** At most this many codes in `failure_codes`. */
export const MAX_FAILURE_CODES = 20

export const ImportJob = Type.Object({
  id: Type.String(),
  import_supplier: Type.String(),
  state: Choice(JOB_STATES),
  dry_run: Type.Boolean(),
  created_at: Type.String({ format: 'date-time' }),
  started_at: time,
  finished_at: time,
  not_before: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'No line begins before it; null when not set. A QUEUED job waits for it.'
  }),
  not_after: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'No line begins from it on; null when not set.'
  }),
  cancelled_reason: Type.Union([Choice(CANCELLED_REASONS), Type.Null()], {
    description:
      'Null unless CANCELLED: `cancelled` (a person), `window_ended` (`not_after` passed), `supplier_complete`, ' +
      '`never_started` (OPEN for a day), `paused_too_long` (PAUSED for 30 days).'
  }),
  lines: Type.Object({
    total: count,
    done: count,
    created: count,
    already_imported: count,
    would_create: count,
    failed: count,
    not_processed: count,
    skipped_blank: count
  }),
  failure_codes: Type.Array(FailureCodeCount, {
    maxItems: MAX_FAILURE_CODES,
    description:
      "The codes of the failed lines' results (each entry's code, or the result's code without entries), each with " +
      'the number of failed lines holding it, most lines first (ties by code), at most 20.'
  }),
  rate_per_second: Type.Number({
    minimum: 0,
    description: 'Lines given their result per second over the last minute.'
  }),
  eta_seconds: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: 'Seconds until every line has its result at the current rate; null unless RUNNING.'
  })
})
export type ImportJob = Static<typeof ImportJob>

export const JobListQuery = Type.Object(
  {
    import_supplier: Type.Optional(SupplierCode),
    state: Type.Optional(Choice(JOB_STATES)),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
    after: Type.Optional(Type.String({ minLength: 1, maxLength: 64 }))
  },
  { additionalProperties: false }
)
export type JobListQuery = Static<typeof JobListQuery>

/** A part's body as the document shows it: NDJSON text. */
export const PartBody = Type.String({
  description: 'Whole lines of NDJSON, one batch entry `{account, notes?, …}` per line, each ending with `\\n`.',
  examples: [JOB_LINES_EXAMPLE]
})

export const PartAnswer = Type.Object({ part: Type.Integer(), lines: count, bytes: count })

export const ResultsQuery = Type.Object(
  { outcome: Type.Optional(Choice(LINE_OUTCOMES)) },
  { additionalProperties: false }
)

/** One line's result, as a batch entry's, with its line number and the outcomes only a job has. */
export const LineResult = Type.Object({
  line: Type.Integer({ minimum: 1 }),
  external_account_number: Type.Union([Type.String(), Type.Null()]),
  outcome: Choice(LINE_OUTCOMES),
  service_account_number: Type.Union([Type.String(), Type.Null()]),
  step: Type.Union([Choice(['stage', ...STEP_NAMES.slice(2)] as const), Type.Null()]),
  status: Type.Union([Type.Integer(), Type.Null()]),
  code: Type.Union([Type.String(), Type.Null()]),
  errors: Type.Union(
    [Type.Array(Type.Object({ code: Type.String(), attr: Type.Union([Type.String(), Type.Null()]) })), Type.Null()],
    {
      description: 'Codes and attrs only: details may quote the input, and results are kept longer than it.'
    }
  )
})
export type LineResult = Static<typeof LineResult>

export const JobResponses = { 200: ImportJob, ...StandardErrorResponses }
export const JobCreatedResponses = {
  201: { ...ImportJob, description: 'With a JSON body: the job, OPEN, ready for its parts.' },
  202: { ...ImportJob, description: 'With an NDJSON body (the one-call form): the job of that one part, started.' },
  ...StandardErrorResponses
}
export const JobAcceptedResponses = { 202: ImportJob, ...StandardErrorResponses }
export const JobListResponses = { 200: Type.Array(ImportJob), ...StandardErrorResponses }
export const PartResponses = { 200: PartAnswer, ...StandardErrorResponses }
export const ResultsResponses = {
  200: {
    description: "One line's result per line (NDJSON).",
    content: { 'application/x-ndjson': { schema: LineResult } }
  },
  ...StandardErrorResponses
}
export const UnprocessedLinesResponses = {
  200: {
    description: 'The input lines that never ran (`not_processed`), unchanged (NDJSON).',
    content: { 'application/x-ndjson': { schema: { type: 'string' } } }
  },
  ...StandardErrorResponses
}
export const FailedLinesResponses = {
  200: {
    description: 'The failed input lines, unchanged (NDJSON).',
    content: { 'application/x-ndjson': { schema: { type: 'string' } } }
  },
  ...StandardErrorResponses
}

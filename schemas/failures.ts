import { Type, type Static } from 'typebox'
import { StandardErrorResponses } from './common.js'
import { Choice } from './fields.js'
import { SECTION_NAMES } from './sections.js'

/** The steps of a migration, in the order failure lists show them. */
export const STEP_NAMES = ['validate', 'stage', 'create', ...SECTION_NAMES] as const

/** Paging and filters of the failure list. */
export const FailureListQuery = Type.Object(
  {
    step: Type.Optional(Choice(STEP_NAMES)),
    code: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        description: 'Keeps records with an entry of this code, or with it as their top-level code.'
      })
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
    after: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'Exclusive: an external account number (after all its records), or `<external>:<step>`.'
      })
    )
  },
  { additionalProperties: false }
)
export type FailureListQuery = Static<typeof FailureListQuery>

export const FailureEntry = Type.Object({ code: Type.String(), attr: Type.Union([Type.String(), Type.Null()]) })

/** One open failure record: codes and attrs only, never the input or the error's text. */
export const FailureItem = Type.Object({
  external_account_number: Type.String(),
  step: Choice(STEP_NAMES),
  failed_at: Type.String({ format: 'date-time' }),
  attempts: Type.Integer({ minimum: 1, description: 'Failures of this step since it last succeeded.' }),
  http_status: Type.Integer(),
  code: Type.String({ description: "The answer's top-level code." }),
  errors: Type.Array(FailureEntry)
})

export const FailureListResponses = { 200: Type.Array(FailureItem), ...StandardErrorResponses }

const count = Type.Integer({ minimum: 0 })

export const FailureSummary = Type.Object({
  failing_accounts: count,
  by_step: Type.Object(
    Object.fromEntries(STEP_NAMES.map((s) => [s, count])) as Record<(typeof STEP_NAMES)[number], typeof count>
  ),
  by_code: Type.Array(Type.Object({ step: Choice(STEP_NAMES), code: Type.String(), accounts: count }))
})

export const FailureSummaryResponses = { 200: FailureSummary, ...StandardErrorResponses }

export const TimelineQuery = Type.Object(
  {
    minutes: Type.Integer({
      minimum: 1,
      maximum: 10080,
      default: 60,
      description: 'How many minutes, the current one included.'
    })
  },
  { additionalProperties: false }
)

export const Timeline = Type.Object({
  minutes: Type.Array(
    Type.Object({
      minute: Type.String({ format: 'date-time' }),
      staged: count,
      created: count,
      failed: Type.Integer({ minimum: 0, description: 'Requests that recorded a failure in this minute.' })
    })
  )
})

export const TimelineResponses = { 200: Timeline, ...StandardErrorResponses }

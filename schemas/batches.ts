import { Type, type Static } from 'typebox'
import { ErrorEntry, StandardErrorResponses } from './common.js'
import { STEP_NAMES } from './failures.js'
import { SECTION_NAMES } from './sections.js'
import { Choice, Strict, Text } from './fields.js'

/**
 * A batch of accounts (many accounts per request): each entry is staged, created and given its
 * post-import sections exactly as the single endpoints would, with a result per entry. Entries are
 * checked one by one (an entry that is not an object fails alone), so the body schema only bounds
 * the list.
 */

export const BatchRequest = Strict({
  import_supplier: Text(255),
  operations_team_name: Text(255),
  dry_run: Type.Optional(Type.Boolean({ default: false })),
  accounts: Type.Array(
    Type.Unknown({ description: `An entry: \`{account, ${SECTION_NAMES.map((name) => `${name}?`).join(', ')}}\`.` }),
    {
      minItems: 1,
      maxItems: 1000
    }
  )
})
export type BatchRequest = Static<typeof BatchRequest>

export const OUTCOMES = ['created', 'already_imported', 'would_create', 'failed'] as const
export type Outcome = (typeof OUTCOMES)[number]

export const BatchResult = Type.Object({
  external_account_number: Type.Union([Type.String(), Type.Null()], {
    description: 'As the entry sent it; null when it is not a string.'
  }),
  outcome: Choice(OUTCOMES),
  service_account_number: Type.Union([Type.String(), Type.Null()]),
  step: Type.Union([Choice(['stage', ...STEP_NAMES.slice(2)] as const), Type.Null()], {
    description: 'The first step that failed.'
  }),
  status: Type.Union([Type.Integer(), Type.Null()], {
    description: 'The HTTP status the single endpoint of that step would have answered.'
  }),
  code: Type.Union([Type.String(), Type.Null()]),
  errors: Type.Union([Type.Array(ErrorEntry), Type.Null()])
})
export type BatchResult = Static<typeof BatchResult>

const count = Type.Integer({ minimum: 0 })
export const BatchResponse = Type.Object({
  results: Type.Array(BatchResult),
  counts: Type.Object({ created: count, already_imported: count, would_create: count, failed: count })
})
export type BatchResponse = Static<typeof BatchResponse>

export const BatchResponses = { 200: BatchResponse, ...StandardErrorResponses }

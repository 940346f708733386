import { Type, type Static } from 'typebox'
import { StandardErrorResponses } from './common.js'
import { CODE, CODE_KINDS, ERROR_CODES, type ErrorCode } from './error-codes.js'
import { STEP_NAMES } from './failures.js'
import { Choice } from './fields.js'

/** One code of the catalogue as `GET error-codes/` answers it: no detail wording (details come with each answer). */
export const ErrorCodeItem = Type.Object(
  {
    code: Type.String(),
    status: Type.Integer({
      minimum: 400,
      maximum: 599,
      description: 'The HTTP status of an answer carrying the code.'
    }),
    kind: Choice(CODE_KINDS),
    meaning: Type.String({ description: 'What went wrong and what to do, in one sentence.' }),
    steps: Type.Array(Choice(STEP_NAMES), {
      description: 'The steps whose failure records can carry it; empty when it is not tied to a step.'
    })
  },
  {
    description:
      "`kind`: the answer's top-level `code` (`top`), an entry of `errors` (`entry`), either (`both`), " +
      "or only in GraphQL errors' `extensions.code` (`graphql`)."
  }
)
export type ErrorCodeItem = Static<typeof ErrorCodeItem>

/** Every code of the catalogue, sorted by code. */
export function errorCodeList(): ErrorCodeItem[] {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).sort().map((code) => {
    const { status, kind, meaning, steps } = ERROR_CODES[code]
    return { code, status, kind, meaning, steps: [...steps] }
  })
}

const example = errorCodeList().filter((c) => c.code === CODE.invalid_postcode || c.code === CODE.throttled)

export const ErrorCodeListResponses = {
  200: Type.Array(ErrorCodeItem, { examples: [example] }),
  ...StandardErrorResponses
}

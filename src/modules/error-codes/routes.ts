import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorCodeList, ErrorCodeListResponses } from '../../../schemas/error-code-list.js'

/** The catalogue of error codes, under /v1/data-import: the same for every organisation. */
const errorCodesRoutes: FastifyPluginAsyncTypebox = async function errorCodesRoutes(app) {
  const codes = errorCodeList()

  app.get(
    '/error-codes/',
    {
      schema: {
        tags: ['Failures and progress'],
        summary: 'Every error code, with what it means',
        description:
          'Each code the service can answer: the HTTP status of an answer carrying it, where it appears ' +
          '(`top`: the top-level `code`; `entry`: an entry of `errors`; `both`; `graphql`: GraphQL errors only), one sentence ' +
          'saying what went wrong and what to do, and the steps whose failure records can carry it. Sorted by code.',
        response: ErrorCodeListResponses
      }
    },
    async function errorCodes() {
      return codes
    }
  )
}

export default errorCodesRoutes

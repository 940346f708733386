import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  FailureListQuery,
  FailureListResponses,
  FailureSummaryResponses,
  TimelineQuery,
  TimelineResponses
} from '../../../schemas/failures.js'
import { SUPPLIER_CODE } from '../../../schemas/common.js'
import { CODE } from '../../../schemas/error-codes.js'
import { SupplierParams } from '../../../schemas/imports.js'
import { notFound } from '../../errors.js'
import { jsonArrayStream } from '../../json-stream.js'
import { organisationOf } from '../auth/service.js'
import { parseAfter, type Step } from './service.js'

const processNotFound = () => notFound(CODE.import_process_does_not_exist)

/** Failure records and the timeline of a supplier, under /v1/data-import; own suppliers only. */
const failuresRoutes: FastifyPluginAsyncTypebox = async function failuresRoutes(app) {
  const { failures } = app

  async function supplierOf(principal: ReturnType<typeof organisationOf>, code: string): Promise<string> {
    // A code that cannot be a supplier's is simply unknown (never a query with text PostgreSQL refuses).
    const id = SUPPLIER_CODE.test(code) ? await failures.repo.supplierId(code, principal.organisationId) : undefined
    if (id === undefined) throw processNotFound()
    return id
  }

  app.get(
    '/failed-account-import-processes/:supplier/',
    {
      schema: {
        tags: ['Failures and progress'],
        summary: 'Accounts whose latest attempt at a step failed',
        description:
          'One item per open failure record (the latest failure of a step, removed by its next success), ' +
          'ordered by external account number then step. Codes and attrs only. `step` and `code` filter; `limit` and ' +
          '`after` page through the list, with `Link: <…>; rel="next"` while rows remain; without `limit` the whole list is streamed.',
        params: SupplierParams,
        querystring: FailureListQuery,
        response: FailureListResponses
      }
    },
    async function listFailures(request, reply) {
      const { step, code, limit, after } = request.query
      const supplierId = await supplierOf(organisationOf(request.principal), request.params.supplier)
      const filter = {
        ...(step ? { step: step as Step } : {}),
        ...(code !== undefined ? { code } : {}),
        ...(after !== undefined ? { after: parseAfter(after) } : {})
      }
      if (limit === undefined) {
        const items = await failures.stream(supplierId, filter)
        const body = jsonArrayStream(items, function streamFailed(err) {
          request.log.error({ err }, 'failure list stream failed after the response started: body truncated')
        })
        return reply.type('application/json; charset=utf-8').send(body as never)
      }
      const rows = await failures.list(supplierId, { ...filter, limit: limit + 1 })
      if (rows.length > limit) {
        const last = rows[limit - 1]!
        const query = new URLSearchParams({
          limit: String(limit),
          after: `${last.external_account_number}:${last.step}`,
          ...(step ? { step } : {}),
          ...(code !== undefined ? { code } : {})
        })
        const path = `/v1/data-import/failed-account-import-processes/${encodeURIComponent(request.params.supplier)}/`
        reply.header('link', `<${path}?${query.toString().replace(/\+/g, '%20')}>; rel="next"`)
      }
      return rows.slice(0, limit)
    }
  )

  app.get(
    '/failure-summary/:supplier/',
    {
      schema: {
        tags: ['Failures and progress'],
        summary: 'Failing accounts by step and by error code',
        description:
          '`failing_accounts` counts accounts with an open failure record; `by_step` the accounts failing each step; ' +
          '`by_code` the accounts whose record of a step holds a code, most first.',
        params: SupplierParams,
        response: FailureSummaryResponses
      }
    },
    async function failureSummary(request) {
      return failures.summary(await supplierOf(organisationOf(request.principal), request.params.supplier))
    }
  )

  app.get(
    '/migration-timeline/:supplier/',
    {
      schema: {
        tags: ['Failures and progress'],
        summary: 'Stages, creates and failures per minute',
        description:
          'One entry per UTC minute of the last `minutes` (the current one included), oldest first, zeros included.',
        params: SupplierParams,
        querystring: TimelineQuery,
        response: TimelineResponses
      }
    },
    async function migrationTimeline(request) {
      const supplierId = await supplierOf(organisationOf(request.principal), request.params.supplier)
      return { minutes: await failures.readTimeline(supplierId, request.query.minutes) }
    }
  )
}

export default failuresRoutes

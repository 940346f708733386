import { CODE } from '../../../schemas/error-codes.js'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AccountData,
  AccountParams,
  AccountSummary,
  CreateRequest,
  CreateResponse,
  StageResponse,
  TransferStatus
} from '../../../schemas/account.js'
import { StandardErrorResponses } from '../../../schemas/common.js'
import { ImportProcessListResponses, ListQuery, SupplierParams } from '../../../schemas/imports.js'
import { attachedInput } from '../../errors.js'
import { organisationOf } from '../auth/service.js'
import type { ProcessList } from './repository.js'
import { jsonArrayStream } from '../../json-stream.js'

const LIST_SUMMARIES: Record<ProcessList, string> = {
  all: 'Every import process of a supplier, skipped ones included',
  pending: 'Import processes staged, not created, not skipped',
  imported: 'Import processes created'
}

/** The route config of an account step: its schema errors' top-level code, and its failure records. */
const accountStep = (step: 'validate' | 'stage' | 'create') => ({
  validationCode: CODE.account_failed_validation,
  failureStep: {
    step,
    supplierField: step === 'create' ? ('import_supplier_code' as const) : ('import_supplier' as const)
  }
})

/** Account import and reading import state, under /v1/data-import. */
const importsRoutes: FastifyPluginAsyncTypebox = async function importsRoutes(app) {
  const service = app.services.imports
  /**
   * Account routes take a turn of work, and validate with `attachValidation`: "already imported",
   * "skipped" and "in progress" win over schema errors, so the service decides what to answer.
   */
  const accountRoute = { attachValidation: true, preValidation: app.takeTurn } as const

  app.post(
    '/validate-account/',
    {
      ...accountRoute,
      config: accountStep('validate'),
      schema: {
        tags: ['Account import'],
        summary: 'Validate an account',
        description:
          'Every schema and rule check of the account data; nothing is stored. 200 answers the normalised account ' +
          '(decimals as strings, defaults, E.164 phones, postcodes); 400 `account_failed_validation` lists every problem.',
        body: AccountData,
        response: { 200: AccountData, ...StandardErrorResponses }
      }
    },
    async function validateAccount(request, reply) {
      const data = await service.validate(organisationOf(request.principal), attachedInput(request))
      // The data has just passed the same schema and holds nothing else: plain JSON.stringify is
      // exact here and spares the schema serialiser's per-transaction branch matching.
      return reply.serializer(JSON.stringify).send(data)
    }
  )

  app.post(
    '/account-import-process/create-or-update/',
    {
      ...accountRoute,
      config: accountStep('stage'),
      schema: {
        tags: ['Account import'],
        summary: 'Stage an account',
        description: 'The checks of validate, then the normalised data is stored: 201 the first time, 200 after.',
        body: AccountData,
        response: { 200: StageResponse, 201: StageResponse, ...StandardErrorResponses }
      }
    },
    async function stageAccount(request, reply) {
      const result = await service.stage(organisationOf(request.principal), attachedInput(request))
      if (result.kind !== 'staged') throw result.answer
      return reply.code(result.created ? 201 : 200).send(result.body)
    }
  )

  app.post(
    '/account-import-process/process/',
    {
      ...accountRoute,
      config: accountStep('create'),
      schema: {
        tags: ['Account import'],
        summary: 'Create a staged account',
        description:
          "Creates the account from its staged data, re-validated with today's date (201). With `dry_run: true` " +
          'the same work is rolled back: 400 `dry_run_rolled_back` when it would succeed.',
        body: CreateRequest,
        response: { 201: CreateResponse, ...StandardErrorResponses }
      }
    },
    async function createAccount(request, reply) {
      const result = await service.create(organisationOf(request.principal), attachedInput(request))
      if (result.kind !== 'created') throw result.answer
      return reply.code(201).send(result.response)
    }
  )

  app.get(
    '/account-transfer-status/:supplier/:external/',
    {
      schema: {
        tags: ['Import state'],
        summary: 'Import status of an account',
        description: '`UNKNOWN`, `IN_PROGRESS` (a create is running now) or `COMPLETED`, with the latest error.',
        params: AccountParams,
        response: { 200: TransferStatus, ...StandardErrorResponses }
      }
    },
    async function transferStatus(request) {
      return service.status(organisationOf(request.principal), request.params.supplier, request.params.external)
    }
  )

  app.get(
    '/accounts/:supplier/:external/',
    {
      schema: {
        tags: ['Import state'],
        summary: 'Summary of a created account',
        description:
          'Ledgers with balances, counts of what the account holds, the latest event and error; ' +
          '404 `account_not_found` until the account is created.',
        params: AccountParams,
        response: { 200: AccountSummary, ...StandardErrorResponses }
      }
    },
    async function accountSummary(request) {
      return service.summary(organisationOf(request.principal), request.params.supplier, request.params.external)
    }
  )

  for (const list of ['all', 'pending', 'imported'] as ProcessList[]) {
    app.get(
      `/${list}-account-import-processes/:supplier/`,
      {
        schema: {
          tags: ['Import state'],
          summary: LIST_SUMMARIES[list],
          description:
            'Ordered by external account number (code points). `limit` and `after` page through the list; ' +
            'while rows remain, the response has `Link: <…?limit=N&after=…>; rel="next"`.',
          operationId: `list${list[0]!.toUpperCase()}${list.slice(1)}AccountImportProcesses`,
          params: SupplierParams,
          querystring: ListQuery,
          response: ImportProcessListResponses
        }
      },
      async function listProcesses(request, reply) {
        const { limit, after } = request.query
        const principal = organisationOf(request.principal)
        if (limit === undefined) {
          // The whole list, streamed: the 404 is decided before the first byte is sent.
          const chunks = await service.streamProcesses(principal, request.params.supplier, list, after)
          const body = jsonArrayStream(chunks, function streamFailed(err) {
            request.log.error({ err }, 'list stream failed after the response started: body truncated')
          })
          // A stream payload bypasses the response schema (kept for the documentation of 200).
          return reply.type('application/json; charset=utf-8').send(body as never)
        }
        // One row more than asked says whether a next page exists.
        const rows = await service.listProcesses(principal, request.params.supplier, list, { limit: limit + 1, after })
        if (rows.length > limit) {
          const last = rows[limit - 1]!.external_account_number
          const path = `/v1/data-import/${list}-account-import-processes/${encodeURIComponent(request.params.supplier)}/`
          reply.header('link', `<${path}?limit=${limit}&after=${encodeURIComponent(last)}>; rel="next"`)
        }
        return rows.slice(0, limit)
      }
    )
  }
}

export default importsRoutes

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import {
  AccountData, AccountParams, AccountSummary, CreateRequest, CreateResponse, StageResponse, TransferStatus
} from '../../../schemas/account.js'
import { StandardErrorResponses } from '../../../schemas/common.js'
import { ImportProcessListResponses, ListQuery, SupplierParams } from '../../../schemas/imports.js'
import { entriesFromAjv, type ErrorEntry } from '../../errors.js'
import { organisationOf } from '../auth/service.js'
import type { ProcessList } from './repository.js'
import { createImportsService, type CreateInput } from './service.js'

/**
 * Schema problems of an account route's body. These routes validate with `attachValidation`:
 * "already imported", "skipped" and "in progress" win over schema errors (§2), so the service
 * decides what to answer.
 */
function schemaErrors(request: FastifyRequest): ErrorEntry[] {
  const validation = request.validationError?.validation
  return validation ? entriesFromAjv(validation as never) : []
}

const accountRoute = { attachValidation: true, config: { validationCode: 'account_failed_validation' } } as const

/** Account import (§5, §6) and reading import state (§7), under /v1/data-import. */
const importsRoutes: FastifyPluginAsyncTypebox = async function importsRoutes(app) {
  const service = createImportsService(app.db)

  app.post('/validate-account/', {
    ...accountRoute,
    schema: { body: AccountData, response: { 200: AccountData, ...StandardErrorResponses } }
  }, async function validateAccount(request) {
    return service.validate(organisationOf(request.principal), request.body, schemaErrors(request))
  })

  app.post('/account-import-process/create-or-update/', {
    ...accountRoute,
    schema: { body: AccountData, response: { 200: StageResponse, 201: StageResponse, ...StandardErrorResponses } }
  }, async function stageAccount(request, reply) {
    const result = await service.stage(organisationOf(request.principal), request.body, schemaErrors(request))
    return reply.code(result.created ? 201 : 200).send(result.body)
  })

  app.post('/account-import-process/process/', {
    ...accountRoute,
    schema: { body: CreateRequest, response: { 201: CreateResponse, ...StandardErrorResponses } }
  }, async function createAccount(request, reply) {
    const result = await service.create(organisationOf(request.principal), request.body as CreateInput, schemaErrors(request))
    return reply.code(201).send(result)
  })

  app.get('/account-transfer-status/:supplier/:external/', {
    schema: { params: AccountParams, response: { 200: TransferStatus, ...StandardErrorResponses } }
  }, async function transferStatus(request) {
    return service.status(organisationOf(request.principal), request.params.supplier, request.params.external)
  })

  app.get('/accounts/:supplier/:external/', {
    schema: { params: AccountParams, response: { 200: AccountSummary, ...StandardErrorResponses } }
  }, async function accountSummary(request) {
    return service.summary(organisationOf(request.principal), request.params.supplier, request.params.external)
  })

  for (const list of ['all', 'pending', 'imported'] as ProcessList[]) {
    app.get(`/${list}-account-import-processes/:supplier/`, {
      schema: { params: SupplierParams, querystring: ListQuery, response: ImportProcessListResponses }
    }, async function listProcesses(request, reply) {
      const { limit, after } = request.query
      const principal = organisationOf(request.principal)
      if (limit === undefined) return service.listProcesses(principal, request.params.supplier, list, { after })
      // One row more than asked says whether a next page exists.
      const rows = await service.listProcesses(principal, request.params.supplier, list, { limit: limit + 1, after })
      if (rows.length > limit) {
        const last = rows[limit - 1]!.external_account_number
        const path = `/v1/data-import/${list}-account-import-processes/${encodeURIComponent(request.params.supplier)}/`
        reply.header('link', `<${path}?limit=${limit}&after=${encodeURIComponent(last)}>; rel="next"`)
      }
      return rows.slice(0, limit)
    })
  }
}

export default importsRoutes

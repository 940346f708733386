import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Readable } from 'node:stream'
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

/**
 * A JSON array as a stream, written from chunks of items pulled one at a time: the next chunk is
 * read only when the stream wants more (the socket drained), so memory does not grow with the
 * list. Destroying the stream (client gone) ends the generator, so nothing more is read. A
 * failure after the status was sent can only cut the body short: `onError` is told and the
 * stream is destroyed, which closes the connection without the final chunk.
 */
export function jsonArrayStream(chunks: AsyncGenerator<object[], void, undefined>, onError: (err: unknown) => void): Readable {
  let opened = false
  const stream: Readable = new Readable({
    read() {
      // One turn of the event loop per chunk: PGlite answers without yielding, and other requests
      // (and this socket) should not wait for a whole list.
      setImmediate(pull)
    },
    destroy(err, callback) {
      chunks.return(undefined).then(() => callback(err), () => callback(err))
    }
  })

  function pull(): void {
    if (stream.destroyed) return
    chunks.next().then(({ done, value }) => {
      if (stream.destroyed) return
      if (done) {
        stream.push(opened ? ']' : '[]')
        stream.push(null)
        return
      }
      let text = ''
      for (const item of value) {
        text += (opened ? ',' : '[') + JSON.stringify(item)
        opened = true
      }
      stream.push(text)
    }, (err: unknown) => {
      onError(err)
      stream.destroy(err as Error)
    })
  }

  return stream
}

const accountRoute = { attachValidation: true, config: { validationCode: 'account_failed_validation' } } as const

/** Account import (§5, §6) and reading import state (§7), under /v1/data-import. */
const importsRoutes: FastifyPluginAsyncTypebox = async function importsRoutes(app) {
  const service = createImportsService(app.db)

  app.post('/validate-account/', {
    ...accountRoute,
    schema: { body: AccountData, response: { 200: AccountData, ...StandardErrorResponses } }
  }, async function validateAccount(request, reply) {
    const data = await service.validate(organisationOf(request.principal), request.body, schemaErrors(request))
    // The data has just passed the same schema and holds nothing else: plain JSON.stringify is
    // exact here and spares the schema serialiser's per-transaction branch matching.
    return reply.serializer(JSON.stringify).send(data)
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
    })
  }
}

export default importsRoutes

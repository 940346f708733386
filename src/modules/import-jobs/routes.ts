import { Readable } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { AuditAction } from '../../../schemas/audit.js'
import { SUPPLIER_CODE } from '../../../schemas/common.js'
import { CODE } from '../../../schemas/error-codes.js'
import {
  CreateJobBody,
  CreateJobQuery,
  CreateJobRequest,
  FailedLinesResponses,
  JobAcceptedResponses,
  JobCreatedResponses,
  JobListQuery,
  JobListResponses,
  JobParams,
  JobResponses,
  NDJSON,
  PartBody,
  PartParams,
  PartResponses,
  ResultsQuery,
  ResultsResponses,
  StartJobRequest,
  UnprocessedLinesResponses
} from '../../../schemas/import-jobs.js'
import type { Config } from '../../config.js'
import {
  answer,
  bodyMediaTypes,
  entriesFromAjv,
  invalidRequest,
  notFound,
  payloadTooLarge,
  problem,
  unsupportedMediaType
} from '../../errors.js'
import { ndjsonStream } from '../../json-stream.js'
import { compileBody, validatorCompiler } from '../../validation.js'
import { organisationOf } from '../auth/service.js'

const isNdjson = (request: FastifyRequest) => (request.headers['content-type'] ?? '').split(';')[0]!.trim() === NDJSON
const TAGS = ['Import jobs']

/** The route's validators, but an NDJSON body is a stream that the handler reads: only a JSON body is checked. */
const streamedBodies: typeof validatorCompiler = (route) => {
  const validate = validatorCompiler(route)
  if (route.httpPart !== 'body') return validate
  const check = (data: unknown) => data instanceof Readable || validate(data)
  return Object.defineProperty(check, 'errors', { get: () => (validate as { errors?: unknown }).errors })
}

/** The route's validators, but a request without a body is taken as an empty one (the start's window is optional). */
const optionalBody: typeof validatorCompiler = (route) => {
  const validate = validatorCompiler(route)
  if (route.httpPart !== 'body') return validate
  const check = (data: unknown) => data === undefined || data === null || validate(data)
  return Object.defineProperty(check, 'errors', { get: () => (validate as { errors?: unknown }).errors })
}

/** Import jobs under /v1/data-import: a whole file uploaded in parts and migrated by the service. */
const importJobsRoutes: FastifyPluginAsyncTypebox<{ config: Config }> = async function importJobsRoutes(app, opts) {
  // The migration's own work: PGlite batch transactions are sized by the requests of others (chunks.ts).
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, bulk: true }
  })
  const service = app.services.importJobs
  const checkSettings = compileBody(CreateJobRequest)

  // The job actions are audited: a succeeded one's record in the transaction of its change, a
  // refusal (a 4xx answer) on its own, with its code, by the onSend hook of its route.
  const { audit } = app
  const recorder = (request: FastifyRequest, action: AuditAction) => audit.recorder(audit.requestOf(request), action)
  const jobTarget = (request: FastifyRequest) => ({
    type: 'import_job' as const,
    id: String((request.params as { id?: unknown }).id)
  })
  const checkWindow = compileBody(StartJobRequest)

  // A part's body is read as it arrives, never held whole.
  app.addContentTypeParser(NDJSON, function streamed(_request, payload, done) {
    done(null, payload)
  })

  /** A body over the part limit by its declared length is refused before it is read. */
  function capPart(request: FastifyRequest) {
    if (Number(request.headers['content-length']) > opts.config.bodyLimitBytes) throw payloadTooLarge()
  }

  app.post(
    '/import-jobs/',
    {
      schema: {
        tags: TAGS,
        summary: 'Create an import job',
        description:
          'With a JSON body `{import_supplier, operations_team_name, dry_run}`: a job in state OPEN (201), to which ' +
          'parts are then uploaded. With an NDJSON body (`Content-Type: application/x-ndjson`, one batch entry per ' +
          'line) and the three settings as query parameters: a job of that one part, created and started (202). The ' +
          'query parameters belong to that form only: with a JSON body they are refused (`unexpected_field`), as ' +
          'the settings go in one place. The supplier must be yours and Ongoing, the team must exist; a refusal ' +
          'stores nothing.',
        querystring: CreateJobQuery,
        // Each media type validated as its own: the JSON settings; NDJSON lines are a stream, read by the handler.
        body: CreateJobBody,
        response: JobCreatedResponses
      },
      validatorCompiler: streamedBodies,
      onRequest: async (request) => capPart(request),
      // The one-call form is a create too: refused, nothing of it is kept.
      onSend: audit.refusals('createImportJob', () => null)
    },
    async function createJob(request, reply) {
      const principal = organisationOf(request.principal)
      const query = request.query as Record<string, unknown>
      if (isNdjson(request)) {
        // The settings and window of the one-call form, as the JSON bodies' (the query's types already converted).
        const { not_before, not_after, ...settings } = query
        const window = { not_before, not_after }
        for (const key of ['not_before', 'not_after'] as const) if (window[key] === undefined) delete window[key]
        const problems = [
          ...(checkSettings(settings) ? [] : entriesFromAjv(checkSettings.errors ?? [])),
          ...(checkWindow(window) ? [] : entriesFromAjv(checkWindow.errors ?? []))
        ]
        if (problems.length > 0) throw invalidRequest(problems)
        const job = await service.createAndStart(
          principal,
          settings as CreateJobRequest,
          window as StartJobRequest,
          request.body as unknown as Readable,
          { create: recorder(request, 'createImportJob'), start: recorder(request, 'startImportJob') }
        )
        audit.committed('createImportJob')
        audit.committed('startImportJob')
        return reply.code(202).send(job)
      }
      const extra = Object.keys(query)
      if (extra.length > 0) {
        const detail = 'With a JSON body the settings go in the body, not in the query.'
        throw invalidRequest(extra.map((key) => problem(CODE.unexpected_field, key, { detail })))
      }
      const job = await service.create(
        principal,
        request.body as CreateJobRequest,
        recorder(request, 'createImportJob')
      )
      audit.committed('createImportJob')
      return reply.code(201).send(job)
    }
  )

  app.get(
    '/import-jobs/',
    {
      schema: {
        tags: TAGS,
        summary: 'Your import jobs, newest first',
        description:
          '`import_supplier` and `state` filter; `limit` and `after` (a job id) page through the list, with ' +
          '`Link: <…>; rel="next"` while jobs remain.',
        querystring: JobListQuery,
        response: JobListResponses
      }
    },
    async function listJobs(request, reply) {
      const { import_supplier: supplier, limit } = request.query
      if (supplier !== undefined && !SUPPLIER_CODE.test(supplier)) {
        throw notFound(CODE.import_process_does_not_exist)
      }
      const principal = organisationOf(request.principal)
      const jobs = await service.list(principal, {
        ...request.query,
        ...(limit === undefined ? {} : { limit: limit + 1 })
      })
      if (limit !== undefined && jobs.length > limit) {
        const query = new URLSearchParams({
          ...(supplier === undefined ? {} : { import_supplier: supplier }),
          ...(request.query.state === undefined ? {} : { state: request.query.state }),
          limit: String(limit),
          after: jobs[limit - 1]!.id
        })
        reply.header('link', `</v1/data-import/import-jobs/?${query.toString().replace(/\+/g, '%20')}>; rel="next"`)
      }
      return limit === undefined ? jobs : jobs.slice(0, limit)
    }
  )

  app.get(
    '/import-jobs/:id/',
    {
      schema: {
        tags: TAGS,
        summary: 'An import job: state, line counts, rate and ETA',
        params: JobParams,
        response: JobResponses
      }
    },
    async function getJob(request) {
      return service.get(organisationOf(request.principal), request.params.id)
    }
  )

  app.put(
    '/import-jobs/:id/parts/:part/',
    {
      schema: {
        tags: TAGS,
        summary: 'Upload a part of an OPEN job',
        description:
          'NDJSON (`Content-Type: application/x-ndjson`), whole lines only (the part ends with `\\n`), at most the ' +
          'request body limit. Sending a part again replaces it. Lines are numbered in part-number order when the ' +
          'job starts.',
        params: PartParams,
        // For the document: the body is NDJSON text (read as a stream, never validated whole).
        consumes: [NDJSON],
        body: PartBody,
        response: PartResponses
      },
      validatorCompiler: streamedBodies,
      // Before the body is read: only NDJSON, and not over the part limit by its declared length.
      onRequest: async (request) => {
        if (!isNdjson(request)) throw unsupportedMediaType(bodyMediaTypes(request.routeOptions.schema))
        capPart(request)
      }
    },
    async function uploadPart(request) {
      return service.upload(
        organisationOf(request.principal),
        request.params.id,
        request.params.part,
        request.body as unknown as Readable
      )
    }
  )

  app.post(
    '/import-jobs/:id/start/',
    {
      schema: {
        tags: TAGS,
        summary: 'Start an OPEN job',
        description:
          'The job is QUEUED (PAUSED while its supplier is Paused) and no more parts are taken. An optional JSON ' +
          'body `{not_before, not_after}` gives it a start window: it stays QUEUED until `not_before` (at most 7 ' +
          'days ahead; not counted against the jobs an organisation may have going until then), and begins no line ' +
          'from `not_after` on: the lines not begun are then `not_processed` and the job ends CANCELLED ' +
          '(`window_ended`). No body, or both null: at once, without end. A refused start leaves the job OPEN.',
        params: JobParams,
        body: StartJobRequest,
        response: JobAcceptedResponses
      },
      validatorCompiler: optionalBody,
      onSend: audit.refusals('startImportJob', jobTarget)
    },
    async function startJob(request, reply) {
      const asked = (request.body ?? {}) as StartJobRequest
      const job = await service.start(
        organisationOf(request.principal),
        request.params.id,
        asked,
        recorder(request, 'startImportJob')
      )
      audit.committed('startImportJob')
      return reply.code(202).send(job)
    }
  )

  app.post(
    '/import-jobs/:id/cancel/',
    {
      schema: {
        tags: TAGS,
        summary: 'Cancel a job',
        description:
          'Lines not yet begun get the outcome `not_processed`; what was written stays. A COMPLETED or CANCELLED ' +
          'job cannot be cancelled.',
        params: JobParams,
        response: JobResponses
      },
      onSend: audit.refusals('cancelImportJob', jobTarget)
    },
    async function cancelJob(request) {
      const job = await service.cancel(
        organisationOf(request.principal),
        request.params.id,
        recorder(request, 'cancelImportJob')
      )
      audit.committed('cancelImportJob')
      return job
    }
  )

  app.get(
    '/import-jobs/:id/results/',
    {
      schema: {
        tags: TAGS,
        summary: "Each line's result (NDJSON)",
        description:
          'One line per input line with a result, in line order: `{line, external_account_number, outcome, ' +
          'service_account_number, step, status, code, errors}` (errors as codes and attrs). `outcome=failed` ' +
          'keeps the failed ones.',
        params: JobParams,
        querystring: ResultsQuery,
        response: ResultsResponses
      }
    },
    async function jobResults(request, reply) {
      const job = await service.ownJob(organisationOf(request.principal), request.params.id)
      const pages = service.results(job, request.query.outcome === 'failed')
      const body = ndjsonStream(pages, function streamFailed(err) {
        request.log.error({ err }, 'job results stream failed after the response started: body truncated')
      })
      return reply.type(`${NDJSON}; charset=utf-8`).send(body as never)
    }
  )

  app.get(
    '/import-jobs/:id/unprocessed-lines/',
    {
      schema: {
        tags: TAGS,
        summary: 'The input lines never run (NDJSON), unchanged',
        description:
          'The lines of a CANCELLED job whose outcome is `not_processed` (it was cancelled, or its window ended, ' +
          'before them), in line order, to submit again as a new job. 410 `input_erased` once the input has been ' +
          'erased under the retention rules.',
        params: JobParams,
        response: UnprocessedLinesResponses
      }
    },
    async function unprocessedLines(request, reply) {
      const job = await service.ownJob(organisationOf(request.principal), request.params.id)
      if (!(await service.inputHeld(job))) throw answer(CODE.input_erased)
      const body = ndjsonStream(service.unprocessedLines(job), function streamFailed(err) {
        request.log.error({ err }, 'unprocessed lines stream failed after the response started: body truncated')
      })
      return reply.type(`${NDJSON}; charset=utf-8`).send(body as never)
    }
  )

  app.get(
    '/import-jobs/:id/failed-lines/',
    {
      schema: {
        tags: TAGS,
        summary: 'The input lines that failed (NDJSON), unchanged',
        description:
          'Ready to fix and submit as a new job. 410 `input_erased` once the input has been erased under the ' +
          'retention rules.',
        params: JobParams,
        response: FailedLinesResponses
      }
    },
    async function failedLines(request, reply) {
      const job = await service.ownJob(organisationOf(request.principal), request.params.id)
      if (!(await service.inputHeld(job))) throw answer(CODE.input_erased)
      const body = ndjsonStream(service.failedLines(job), function streamFailed(err) {
        request.log.error({ err }, 'failed lines stream failed after the response started: body truncated')
      })
      return reply.type(`${NDJSON}; charset=utf-8`).send(body as never)
    }
  )
}

export default importJobsRoutes

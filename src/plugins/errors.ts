import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { databaseUnavailable, pgErrorCode } from '../db/errors.js'
import {
  AppError,
  answer,
  bodyMediaTypes,
  entriesFromAjv,
  errorHeaders,
  invalidBody,
  invalidRequest,
  payloadTooLarge,
  problem,
  unsupportedMediaType
} from '../errors.js'
import { answeredWith } from '../logging.js'
import type { ErrorBody } from '../../schemas/common.js'
import { CODE } from '../../schemas/error-codes.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Top-level `code` of a 400 for this route's schema errors (default `invalid_request`). */
    validationCode?: string
  }
}

function send(reply: FastifyReply, status: number, body: ErrorBody, headers: Record<string, string> = {}): void {
  reply.code(status).headers(headers).type('application/json; charset=utf-8').send(body)
}

/** The error each reply was answered with (`sendError`), for the hooks that run as it is sent. */
const sentErrors = new WeakMap<FastifyReply, AppError>()

/** The `AppError` a reply is answering with, if `sendError` sent one. */
export function sentError(reply: FastifyReply): AppError | undefined {
  return sentErrors.get(reply)
}

/** Sends an `AppError` as the contract's body; 5xx also carry the request id, 429 and 503 `Retry-After` (errorHeaders). */
export function sendError(reply: FastifyReply, request: FastifyRequest, error: AppError): void {
  answeredWith(reply, error.code)
  sentErrors.set(reply, error)
  send(
    reply,
    error.statusCode,
    {
      detail: error.message,
      code: error.code,
      errors: error.errors,
      ...error.extra,
      ...(error.statusCode >= 500 ? { request_id: request.id } : {})
    },
    errorHeaders(error)
  )
}

/** Body parsing, size and type errors (400/413/415): answered in the contract's body on every route. */
export function bodyError(err: FastifyError): boolean {
  return (
    (typeof err.code === 'string' && err.code.startsWith('FST_ERR_CTP_')) ||
    (err instanceof SyntaxError && err.statusCode === 400)
  )
}

/** Turns a Fastify or plugin error into our `AppError`, or undefined when it is unexpected. */
export function toAppError(err: FastifyError, request: FastifyRequest): AppError | undefined {
  if (err instanceof AppError) return err
  if (err.validation) {
    const top =
      request.routeOptions.config?.validationCode === CODE.account_failed_validation
        ? CODE.account_failed_validation
        : CODE.invalid_request
    return answer(top, entriesFromAjv(err.validation as never))
  }
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return unsupportedMediaType(bodyMediaTypes(request.routeOptions.schema))
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return payloadTooLarge()
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalidBody('The request body is empty.')
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return invalidBody('The request body is not valid JSON.')
  }
  if (err instanceof SyntaxError && err.statusCode === 400) return invalidBody('The request body is not valid JSON.')
  // Text PostgreSQL cannot store (U+0000) that slipped past validation: the input is wrong, not the server.
  const sqlState = pgErrorCode(err)
  if (sqlState === '22021' || sqlState === '22P05') {
    return invalidBody('The request holds characters that cannot be stored (U+0000).')
  }
  // The database lost or unreachable (a restart, a failover): 503 with Retry-After, not a 500.
  if (databaseUnavailable(err)) return answer(CODE.service_unavailable)
  const status = err.statusCode ?? 500
  if (status >= 400 && status < 500) {
    // Another 4xx raised by Fastify or a plugin: its message is safe and says what was wrong (a 404
    // in the catalogue's words for what does not exist).
    return status === 404
      ? answer(CODE.not_found, [
          problem(CODE.not_found, null, { what: `The resource at ${request.url.split('?')[0]}` })
        ])
      : answer(CODE.invalid_request, [problem(CODE.invalid, null, { detail: err.message })], { status })
  }
  return undefined
}

/**
 * Errors Fastify's router raises before any hook runs (Fastify's `frameworkErrors` option): a path
 * that is not valid percent-encoding, or a path segment longer than the router takes. Answered in
 * the contract's body, without echoing the URL.
 */
export function frameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id)
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      sendError(reply, request, invalidBody('The URL is not valid percent-encoding.'))
      return
    case 'FST_ERR_MAX_PARAM_LENGTH':
      sendError(
        reply,
        request,
        answer(
          CODE.invalid_request,
          [problem(CODE.max_length, null, { detail: 'A path segment is longer than 1024 characters.' })],
          { status: 414 }
        )
      )
      return
  }
  request.log.error({ err: error }, 'unexpected router error')
  sendError(reply, request, answer(CODE.server_error))
}

/**
 * Errors Node's HTTP parser meets before a request exists (Fastify's `clientErrorHandler` option):
 * a request not complete in time (408), headers too large (431), or bytes that are not HTTP
 * (400). Answered in the contract's body, then the connection is closed.
 */
export function clientError(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const error =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? answer(CODE.request_timeout)
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? answer(CODE.request_header_fields_too_large)
        : invalidRequest([problem(CODE.invalid, null, { detail: 'The request is not valid HTTP.' })])
  const status = error.statusCode
  const body: ErrorBody = { detail: error.message, code: error.code, errors: error.errors }
  // A client's malformed request: one line with the code answered, no stack (nothing failed here).
  this.log.debug({ code: error.code, cause: err.code }, 'client error')
  if (socket.writable) {
    const text = JSON.stringify(body)
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\n\r\n${text}`
    )
  }
  socket.destroy()
}

/**
 * The one place errors become the contract's body. 5xx are logged with the request id and masked.
 * Once the app is closing, new requests are answered 503 `service_stopping` (with `Retry-After`)
 * before anything else runs, in place of Fastify's own `return503OnClosing` answer, which has
 * neither the contract's body nor `Retry-After`.
 */
export default fp(
  async function errorsPlugin(app: FastifyInstance) {
    let closing = false
    app.addHook('preClose', async function refuseFromNowOn() {
      closing = true
    })
    app.addHook('onRequest', async function refuseWhileClosing(request, reply) {
      if (!closing) return
      sendError(reply, request, answer(CODE.service_stopping))
      return reply
    })

    app.setErrorHandler(function handleError(error: unknown, request, reply) {
      const appError = toAppError(error as FastifyError, request)
      if (appError) {
        if (appError.statusCode >= 500) request.log.error({ err: error }, 'request failed')
        sendError(reply, request, appError)
        return
      }
      request.log.error({ err: error }, 'unexpected error')
      sendError(reply, request, answer(CODE.server_error))
    })

    app.setNotFoundHandler(function handleNotFound(request, reply) {
      sendError(
        reply,
        request,
        answer(CODE.not_found, [
          problem(CODE.route_not_found, null, { method: request.method, path: request.url.split('?')[0]! })
        ])
      )
    })
  },
  { name: 'errors' }
)

import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { pgErrorCode } from '../db/index.js'
import { AppError, entriesFromAjv, entry, invalidBody, payloadTooLarge, sortEntries } from '../errors.js'
import type { ErrorBody } from '../../schemas/common.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Top-level `code` of a 400 for this route's schema errors (default `invalid_request`). */
    validationCode?: string
  }
}

function send(reply: FastifyReply, status: number, body: ErrorBody, headers: Record<string, string> = {}): void {
  reply.code(status).headers(headers).type('application/json; charset=utf-8').send(body)
}

/** Sends an `AppError` as the contract's body; 5xx also carry the request id. */
export function sendError(reply: FastifyReply, request: FastifyRequest, error: AppError): void {
  send(reply, error.statusCode, {
    detail: error.message,
    code: error.code,
    errors: error.errors,
    ...error.extra,
    ...(error.statusCode >= 500 ? { request_id: request.id } : {})
  }, error.headers)
}

/** Body parsing, size and type errors (400/413/415): answered in the contract's body on every route. */
export function bodyError(err: FastifyError): boolean {
  return (typeof err.code === 'string' && err.code.startsWith('FST_ERR_CTP_')) || (err instanceof SyntaxError && err.statusCode === 400)
}

/** Turns a Fastify or plugin error into our `AppError`, or undefined when it is unexpected. */
export function toAppError(err: FastifyError, request: FastifyRequest): AppError | undefined {
  if (err instanceof AppError) return err
  if (err.validation) {
    const top = request.routeOptions.config?.validationCode ?? 'invalid_request'
    const detail = top === 'account_failed_validation' ? 'Could not validate account data.' : 'Invalid request.'
    return new AppError(400, top, detail, sortEntries(entriesFromAjv(err.validation as never)))
  }
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(415, 'unsupported_media_type', 'Requests with a body must be application/json.')
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
  if (sqlState === '22021' || sqlState === '22P05') return invalidBody('The request holds characters that cannot be stored (U+0000).')
  const status = err.statusCode ?? 500
  if (status >= 400 && status < 500) {
    // Another 4xx raised by Fastify or a plugin: its message is safe and says what was wrong.
    return new AppError(status, status === 404 ? 'not_found' : 'invalid_request', 'Invalid request.', [
      entry(status === 404 ? 'not_found' : 'invalid', null, err.message)
    ])
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
      sendError(reply, request, new AppError(414, 'invalid_request', 'Invalid request.', [
        entry('max_length', null, 'A path segment is longer than 1024 characters.')
      ]))
      return
  }
  request.log.error({ err: error }, 'unexpected router error')
  sendError(reply, request, new AppError(500, 'server_error', 'A server error occurred.'))
}

/**
 * Errors Node's HTTP parser meets before a request exists (Fastify's `clientErrorHandler` option):
 * a request not complete in time (408), headers too large (431), or bytes that are not HTTP
 * (400). Answered in the contract's body, then the connection is closed.
 */
export function clientError(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const [status, body]: [number, ErrorBody] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, { detail: 'The request did not arrive in time.', code: 'request_timeout', errors: [] }]
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, { detail: 'The request headers are too large.', code: 'request_header_fields_too_large', errors: [] }]
        : [400, { detail: 'Invalid request.', code: 'invalid_request', errors: [entry('invalid', null, 'The request is not valid HTTP.')] }]
  this.log.debug({ err }, 'client error')
  if (socket.writable) {
    const text = JSON.stringify(body)
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\n\r\n${text}`)
  }
  socket.destroy()
}

/** The one place errors become the contract's body. 5xx are logged with the request id and masked. */
export default fp(async function errorsPlugin(app: FastifyInstance) {
  app.setErrorHandler(function handleError(error: unknown, request, reply) {
    const appError = toAppError(error as FastifyError, request)
    if (appError) {
      if (appError.statusCode >= 500) request.log.error({ err: error }, 'request failed')
      sendError(reply, request, appError)
      return
    }
    request.log.error({ err: error }, 'unexpected error')
    send(reply, 500, {
      detail: 'A server error occurred.',
      code: 'server_error',
      errors: [],
      request_id: request.id
    })
  })

  app.setNotFoundHandler(function handleNotFound(request, reply) {
    send(reply, 404, {
      detail: 'Not found.',
      code: 'not_found',
      errors: [entry('route_not_found', null, `No endpoint ${request.method} ${request.url.split('?')[0]}.`)]
    })
  })
}, { name: 'errors' })

/**
 * A small GraphQL-over-HTTP client for the admin command line: one POST per call, and every
 * failure turned into one of two typed errors the command line can print as one line each.
 */

import { CLIENT_CODE, CODE } from '../../schemas/error-codes.js'
import { fetchCause, isObject, isTimeout } from './http.js'

/** How long one request may take before the client gives up on it. */
export const REQUEST_TIMEOUT_MS = 30_000

export interface ServiceProblem {
  code: string
  message: string
}

/** The service answered but refused: GraphQL errors (HTTP 200 or 400) or an error body (4xx/5xx). */
export class ServiceError extends Error {
  override name = 'ServiceError'
  constructor(
    readonly problems: ServiceProblem[],
    /** The HTTP status when it was not 200. */
    readonly status?: number,
    /** Extra facts worth printing, e.g. `retry after 12 s` or a request id. */
    readonly notes: string[] = []
  ) {
    super(problems.map((p) => `${p.code}: ${p.message}`).join('; '))
  }
}

/** No usable answer at all: connection refused, DNS failure, timeout, or not GraphQL JSON. */
export class UnreachableError extends Error {
  override name = 'UnreachableError'
  constructor(
    readonly url: string,
    readonly reason: string
  ) {
    super(`cannot reach the service at ${url}: ${reason}`)
  }
}

export interface GraphQLClient {
  /** Runs one document and returns its `data`; throws `ServiceError` or `UnreachableError`. */
  request<T = Record<string, unknown>>(query: string, variables?: Record<string, unknown>): Promise<T>
  /** Exchanges an API key for a token, used as `Authorization: Bearer` by later requests. */
  login(apiKey: string): Promise<void>
}

export interface GraphQLClientOptions {
  /** The service's base URL as the user gave it (used in messages). */
  url: string
  /** The GraphQL endpoint (`<url>/graphql`). */
  endpoint: string
  fetch: typeof fetch
  timeoutMs?: number
}

const OBTAIN_TOKEN = `mutation ObtainToken($input: ObtainTokenInput!) {
  obtainToken(input: $input) { token }
}`

/** Why `fetch` failed, in words. */
function networkReason(err: unknown, endpoint: string, timeoutMs: number): string {
  if (isTimeout(err)) return `no answer within ${Math.round(timeoutMs / 1000)} s`
  const cause = fetchCause(err)
  if (cause instanceof Error && cause.message === 'bad port') {
    return `fetch refuses to connect to port ${new URL(endpoint).port} (a blocked "bad port"); use another port`
  }
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code
    return cause.message || (typeof code === 'string' ? code : cause.name)
  }
  return String(cause)
}

/** GraphQL `errors[]` as problems; an error without `extensions.code` is a plain `graphql_error`. */
function graphqlProblems(errors: unknown[]): ServiceProblem[] {
  return errors.map((e) => {
    const error = isObject(e) ? e : {}
    const extensions = isObject(error.extensions) ? error.extensions : {}
    return {
      code: typeof extensions.code === 'string' ? extensions.code : CLIENT_CODE.graphql_error,
      message: typeof error.message === 'string' ? error.message : JSON.stringify(e)
    }
  })
}

/** A non-2xx answer: the contract's body (`code`, `detail`), mercurius' `errors[]`, or anything else. */
function httpFailure(response: Response, body: unknown, text: string): ServiceError {
  const notes: string[] = []
  const retryAfter = response.headers.get('retry-after')
  if (retryAfter) notes.push(`retry after ${retryAfter} s`)
  if (isObject(body) && typeof body.request_id === 'string') notes.push(`request id ${body.request_id}`)
  if (isObject(body) && typeof body.code === 'string') {
    const detail = typeof body.detail === 'string' ? body.detail : 'no detail given'
    return new ServiceError([{ code: body.code, message: detail }], response.status, notes)
  }
  if (isObject(body) && Array.isArray(body.errors) && body.errors.length > 0) {
    return new ServiceError(graphqlProblems(body.errors), response.status, notes)
  }
  const snippet = text.replace(/\s+/g, ' ').trim().slice(0, 200)
  const message = `${response.statusText || 'HTTP error'}${snippet ? ` — ${snippet}` : ''}`
  return new ServiceError([{ code: `http_${response.status}`, message }], response.status, notes)
}

export function createGraphQLClient(options: GraphQLClientOptions): GraphQLClient {
  const timeoutMs = options.timeoutMs ?? REQUEST_TIMEOUT_MS
  let token: string | undefined

  /** POSTs one document; returns the `data` of a clean answer. */
  async function request<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    // The document's own operation name, sent alongside it (e.g. `ObtainToken`).
    const operationName = /^\s*(?:query|mutation)\s+([_A-Za-z][_0-9A-Za-z]*)/.exec(query)?.[1]
    let response: Response
    let text: string
    try {
      response = await options.fetch(options.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {})
        },
        body: JSON.stringify({ query, ...(operationName ? { operationName } : {}), variables }),
        signal: AbortSignal.timeout(timeoutMs)
      })
      text = await response.text()
    } catch (err) {
      throw new UnreachableError(options.url, networkReason(err, options.endpoint, timeoutMs))
    }
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      body = undefined
    }
    if (!response.ok) throw httpFailure(response, body, text)
    if (!isObject(body) || !('data' in body || 'errors' in body)) {
      const type = response.headers.get('content-type') ?? 'no content type'
      throw new UnreachableError(
        options.url,
        `the answer is not a GraphQL response (HTTP ${response.status}, ${type}); is this the import service?`
      )
    }
    if (Array.isArray(body.errors) && body.errors.length > 0) throw new ServiceError(graphqlProblems(body.errors))
    return body.data as T
  }

  async function login(apiKey: string): Promise<void> {
    const data = await request<{ obtainToken: { token: string } | null }>(OBTAIN_TOKEN, { input: { APIKey: apiKey } })
    if (typeof data?.obtainToken?.token !== 'string') {
      throw new ServiceError([{ code: CODE.authentication_failed, message: 'The service gave no token.' }])
    }
    token = data.obtainToken.token
  }

  return { request, login }
}

/**
 * The migration client's HTTP side: one organisation token obtained with the API key through
 * GraphQL `obtainToken`, renewed with the refresh token before it expires (and once on a 401),
 * and requests that ride out 429 and 503 (their `Retry-After`), 5xx and network failures with
 * exponential backoff and jitter. A 4xx other than 429 is an answer, never retried (a 401 only after renewing
 * the token).
 */
import { CLIENT_CODE } from '../../../schemas/error-codes.js'
import { fetchCause, isObject, isTimeout } from '../http.js'
import type { Problem } from './input.js'

export interface RetryPolicy {
  /** Attempts of one request that fails with a 5xx, a network error or a transient code (1 = no retry). */
  maxAttempts: number
  /** First backoff; it doubles per failure up to `backoffMaxMs`, each wait drawn in [half, whole]. */
  backoffBaseMs: number
  backoffMaxMs: number
  /** 429 answers waited out per request before giving up. */
  maxThrottleWaits: number
  /** Longest `Retry-After` honoured as given (longer ones are waited this long). */
  maxRetryAfterMs: number
  /** Time allowed for one attempt. */
  timeoutMs: number
  /**
   * Once the first token was had: when the service stops answering, wait this long in all for
   * `/readyz` to answer again before giving up (the waiting spends no attempts). 0: do not wait.
   */
  waitMs: number
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 6,
  backoffBaseMs: 250,
  backoffMaxMs: 10_000,
  maxThrottleWaits: 100,
  maxRetryAfterMs: 60_000,
  timeoutMs: 60_000,
  waitMs: 300_000
}

/** What was retried, counted for the summary. */
export interface RetryCounts {
  throttled: number
  serverErrors: number
  networkErrors: number
  inProgress: number
  tokens: number
  unauthorised: number
  /** Times the service went away and the client waited for it, and the time waited. */
  outages: number
  outageMs: number
}

/** The final answer to a request: HTTP status (0 when no answer came) and parsed body. */
export interface Answer {
  status: number
  body: unknown
  /** Attempts made, the last included. */
  attempts: number
  /** A streamed request's answer (200 only), its body not yet read. */
  response?: Response
  /** The answer's Retry-After header, when it had one. */
  retryAfter?: string
}

/** A request's body of raw bytes (an NDJSON part), sent in pieces so that progress can be counted. */
export interface RawBody {
  bytes: Buffer
  contentType: string
  /** Told the bytes handed to the connection so far in this attempt (from 0 again on a retry). */
  onSent?: (bytes: number) => void
}

export interface SendOptions {
  /** 400 codes that mean "not now" (e.g. a create of the same account still running): retried. */
  transient?: readonly string[]
  raw?: RawBody
  /** 429 answers with one of these codes are returned to the caller instead of being waited out. */
  throttleCodes?: readonly string[]
  /** A 200's body is left unread in `response`, for the caller to stream. */
  stream?: boolean
}

/** Bytes per piece of a raw body. */
const RAW_PIECE = 64 * 1024

/** The bytes as a stream of pieces, telling `onSent` as each is taken. */
function piecesOf(raw: RawBody): ReadableStream<Uint8Array> {
  let sent = 0
  raw.onSent?.(0)
  return new ReadableStream({
    pull(controller) {
      if (sent >= raw.bytes.length) return controller.close()
      const piece = raw.bytes.subarray(sent, sent + RAW_PIECE)
      sent += piece.length
      controller.enqueue(piece)
      raw.onSent?.(sent)
    }
  })
}

/** The API key was refused: nothing more can be done with it. */
export class AuthenticationError extends Error {
  override name = 'AuthenticationError'
  constructor(
    readonly code: string,
    message: string
  ) {
    super(message)
  }
}

/** No token could be obtained because the service did not answer (after the retries). */
export class UnavailableError extends Error {
  override name = 'UnavailableError'
  constructor(
    readonly code: string,
    message: string
  ) {
    super(message)
  }
}

export interface ServiceClientOptions {
  /** The service's base URL, without a trailing slash. */
  url: string
  apiKey: string
  retry: RetryPolicy
  fetch?: typeof fetch
  /** For tests of timing; defaults to real timers and Math.random. */
  sleep?: (ms: number) => Promise<void>
  random?: () => number
  /** Told when the service stops answering and when it is back (one line each). */
  notice?: (text: string) => void
}

const OBTAIN_TOKEN =
  'mutation ObtainToken($input: ObtainTokenInput!) { obtainToken(input: $input) { token expiresIn refreshToken refreshExpiresIn } }'

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null) return undefined
  const trimmed = header.trim()
  if (/^[0-9]+$/.test(trimmed)) return Number(trimmed) * 1000
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/** Why `fetch` failed, in a few words. */
function networkReason(err: unknown): string {
  if (isTimeout(err)) return 'no answer in time'
  const cause = fetchCause(err)
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code
    return typeof code === 'string' ? `${code} ${cause.message}`.trim() : cause.message || cause.name
  }
  return String(cause)
}

/** True when an answer names a code at its top or in its entries. */
export function hasCode(body: unknown, code: string): boolean {
  if (!isObject(body)) return false
  if (body.code === code) return true
  return Array.isArray(body.errors) && body.errors.some((e) => isObject(e) && e.code === code)
}

/** The error entries of a failed answer, for the report. */
export function problemsOf(answer: Answer): Problem[] {
  const body = answer.body
  if (isObject(body) && Array.isArray(body.errors) && body.errors.length > 0) {
    return body.errors.filter(isObject).map((e) => ({
      code: String(e.code ?? 'unknown'),
      attr: typeof e.attr === 'string' ? e.attr : null,
      detail: String(e.detail ?? '')
    }))
  }
  if (isObject(body) && typeof body.code === 'string') {
    return [{ code: body.code, attr: null, detail: String(body.detail ?? '') }]
  }
  return [{ code: `http_${answer.status}`, attr: null, detail: 'The service gave no error body.' }]
}

export function createServiceClient(options: ServiceClientOptions) {
  const doFetch = options.fetch ?? globalThis.fetch
  const sleep = options.sleep ?? defaultSleep
  const random = options.random ?? Math.random
  const policy = options.retry
  const counts: RetryCounts = {
    throttled: 0,
    serverErrors: 0,
    networkErrors: 0,
    inProgress: 0,
    tokens: 0,
    unauthorised: 0,
    outages: 0,
    outageMs: 0
  }
  /** Set once the first token was had: an outage after that is waited out. */
  let connected = false
  let outage: Promise<'back' | 'gave_up'> | undefined

  /** `/readyz` answers 200 within 2 s. */
  async function ready(): Promise<boolean> {
    try {
      const response = await doFetch(options.url + '/readyz', { signal: AbortSignal.timeout(2000) })
      await response.arrayBuffer()
      return response.status === 200
    } catch {
      return false
    }
  }

  /**
   * After a request got no answer (or a 503): `up` when the service is ready after all (the
   * failure counts as an attempt), `back` when it was away and came back, `gave_up` when it did
   * not come back within `waitMs`. Requests failing during one outage share its wait.
   */
  async function waitForService(): Promise<'up' | 'back' | 'gave_up'> {
    if (outage) return outage
    if (!connected || policy.waitMs <= 0 || (await ready())) return 'up'
    if (outage) return outage
    outage = (async () => {
      const started = Date.now()
      counts.outages++
      options.notice?.(
        `${options.url} is not answering: waiting up to ${Math.round(policy.waitMs / 1000)} s for it (GET /readyz every second)\n`
      )
      let result: 'back' | 'gave_up' = 'gave_up'
      while (Date.now() - started < policy.waitMs) {
        await sleep(1000)
        if (await ready()) {
          result = 'back'
          break
        }
      }
      counts.outageMs += Date.now() - started
      options.notice?.(
        result === 'back'
          ? `${options.url} is back after ${Math.round((Date.now() - started) / 1000)} s: carrying on\n`
          : `${options.url} did not come back within ${Math.round(policy.waitMs / 1000)} s\n`
      )
      return result
    })().finally(() => {
      outage = undefined
    })
    return outage
  }

  const unreachable = (attempts: number): Answer => ({
    status: 0,
    body: {
      code: CLIENT_CODE.service_unreachable,
      detail: `${options.url} did not answer for ${Math.round(policy.waitMs / 1000)} s (GET /readyz).`,
      errors: []
    },
    attempts
  })

  /** The wait after the n-th failure (1-based): exponential, capped, with jitter. */
  const backoff = (failures: number) => {
    const ceiling = Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** (failures - 1))
    return ceiling / 2 + random() * (ceiling / 2)
  }

  /**
   * One request with the retry policy. `auth` adds the token (data-import calls); `transient`
   * names 400 codes that mean "not now" (e.g. a create of the same account still running).
   */
  async function send(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    body: unknown,
    auth: boolean,
    sendOptions: SendOptions = {}
  ): Promise<Answer> {
    const { transient = [], raw, throttleCodes = [] } = sendOptions
    let failures = 0
    let throttles = 0
    let renewed = false
    let attempts = 0
    for (;;) {
      attempts++
      const token = auth ? await tokens.current() : undefined
      let response: Response
      let text: string
      // A timer cleared after the answer (AbortSignal.timeout would keep one alive per request for the whole timeout).
      const controller = new AbortController()
      const timer = setTimeout(
        () => controller.abort(new DOMException('The request took too long.', 'TimeoutError')),
        policy.timeoutMs
      )
      try {
        response = await doFetch(options.url + path, {
          method,
          headers: {
            accept: 'application/json',
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...(raw ? { 'content-type': raw.contentType, 'content-length': String(raw.bytes.length) } : {}),
            ...(token ? { authorization: `Token ${token}` } : {})
          },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
          ...(raw ? { body: piecesOf(raw), duplex: 'half' } : {}),
          signal: controller.signal
        } as RequestInit)
        if (sendOptions.stream && response.status === 200) {
          // The caller reads the body (a download); the time allowed was for the answer to begin.
          clearTimeout(timer)
          return { status: 200, body: undefined, attempts, response }
        }
        text = await response.text()
      } catch (err) {
        clearTimeout(timer)
        counts.networkErrors++
        if (!isTimeout(err)) {
          const service = await waitForService()
          if (service === 'back') continue
          if (service === 'gave_up') return unreachable(attempts)
        }
        if (++failures >= policy.maxAttempts) {
          return {
            status: 0,
            body: {
              code: CLIENT_CODE.network_error,
              detail: `No answer from ${options.url}: ${networkReason(err)}`,
              errors: []
            },
            attempts
          }
        }
        await sleep(backoff(failures))
        continue
      }
      clearTimeout(timer)
      let parsed: unknown
      try {
        parsed = text === '' ? undefined : JSON.parse(text)
      } catch {
        parsed = { code: `http_${response.status}`, detail: text.replace(/\s+/g, ' ').trim().slice(0, 200), errors: [] }
      }
      const status = response.status
      if (status === 401 && auth && !renewed) {
        // The token expired or was refused: renew it once and try again.
        counts.unauthorised++
        renewed = true
        await tokens.renew(token)
        continue
      }
      if (status === 429 && throttles < policy.maxThrottleWaits && !throttleCodes.some((c) => hasCode(parsed, c))) {
        counts.throttled++
        throttles++
        const after = retryAfterMs(response.headers.get('retry-after'))
        const wait = after === undefined ? backoff(Math.min(throttles, 8)) : Math.min(after, policy.maxRetryAfterMs)
        await sleep(wait + random() * 250) // a little jitter, so waiting clients do not come back at once
        continue
      }
      // A 503's Retry-After is waited before anything else (a stopping server, a database away).
      const unavailableFor = status === 503 ? retryAfterMs(response.headers.get('retry-after')) : undefined
      if (unavailableFor !== undefined) await sleep(Math.min(unavailableFor, policy.maxRetryAfterMs) + random() * 250)
      if (status === 503) {
        const service = await waitForService()
        if (service === 'back') continue
        if (service === 'gave_up') return unreachable(attempts)
      }
      const retryable = status >= 500 || (status === 400 && transient.some((code) => hasCode(parsed, code)))
      if (retryable && ++failures < policy.maxAttempts) {
        if (status >= 500) counts.serverErrors++
        else counts.inProgress++
        // A 503 whose Retry-After was waited is tried again at once.
        if (unavailableFor === undefined) await sleep(backoff(failures))
        continue
      }
      const retryAfter = response.headers.get('retry-after')
      return { status, body: parsed, attempts, ...(retryAfter !== null ? { retryAfter } : {}) }
    }
  }

  /**
   * obtainToken with an API key or a refresh token: a refusal is `AuthenticationError`, no answer
   * (after the retries) `UnavailableError`.
   */
  async function obtainToken(
    input: Record<string, string>
  ): Promise<{ token: string; expiresIn: number; refreshToken: string; refreshExpiresIn: number }> {
    const answer = await send(
      'POST',
      '/graphql',
      { query: OBTAIN_TOKEN, operationName: 'ObtainToken', variables: { input } },
      false
    )
    const body = answer.body
    const payload = isObject(body) && isObject(body.data) ? body.data.obtainToken : undefined
    if (answer.status === 200 && isObject(payload) && typeof payload.token === 'string') {
      return payload as { token: string; expiresIn: number; refreshToken: string; refreshExpiresIn: number }
    }
    const error = isObject(body) && Array.isArray(body.errors) && isObject(body.errors[0]) ? body.errors[0] : undefined
    const code =
      error && isObject(error.extensions) && typeof error.extensions.code === 'string'
        ? error.extensions.code
        : isObject(body) && typeof body.code === 'string'
          ? body.code
          : `http_${answer.status}`
    const message =
      typeof error?.message === 'string'
        ? error.message
        : isObject(body) && typeof body.detail === 'string'
          ? body.detail
          : 'no token given'
    if (answer.status === 0 || answer.status >= 500) throw new UnavailableError(code, message)
    throw new AuthenticationError(code, message)
  }

  /** The token in use; renewed by one caller at a time, the others wait for it. */
  const tokens = {
    token: undefined as string | undefined,
    expiresAt: 0,
    /** Renew this long before expiry: a fifth of the lifetime, at most a minute. */
    margin: 0,
    refreshToken: undefined as string | undefined,
    refreshExpiresAt: 0,
    pending: undefined as Promise<string> | undefined,

    async current(): Promise<string> {
      if (this.token && Date.now() < this.expiresAt - this.margin) return this.token
      return this.renew(this.token)
    },

    /** A new token, unless another caller already replaced `stale`. */
    renew(stale: string | undefined): Promise<string> {
      if (this.pending) return this.pending
      if (this.token && this.token !== stale && Date.now() < this.expiresAt - this.margin) {
        return Promise.resolve(this.token)
      }
      this.pending = this.obtain().finally(() => {
        this.pending = undefined
      })
      return this.pending
    },

    async obtain(): Promise<string> {
      let result
      if (this.refreshToken && Date.now() < this.refreshExpiresAt - 5000) {
        try {
          result = await obtainToken({ refreshToken: this.refreshToken })
        } catch (err) {
          // A refresh token is single use: one lost in a timeout is gone. The API key still works.
          if (!(err instanceof AuthenticationError)) throw err
        }
      }
      result ??= await obtainToken({ APIKey: options.apiKey })
      counts.tokens++
      const lifetimeMs = Math.max(1, result.expiresIn) * 1000
      this.token = result.token
      this.expiresAt = Date.now() + lifetimeMs
      this.margin = Math.min(60_000, lifetimeMs / 5)
      this.refreshToken = result.refreshToken
      this.refreshExpiresAt = result.refreshExpiresIn * 1000
      return result.token
    }
  }

  return {
    counts,
    /** Obtains the first token: throws `AuthenticationError` when the key is refused, `UnavailableError` when no answer comes. */
    async login(): Promise<void> {
      await tokens.renew(undefined)
      connected = true
    },
    /** A GraphQL query with the organisation's token; its `data`, or throws with the first error's message. */
    async graphql(query: string, variables: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
      const answer = await send('POST', '/graphql', { query, variables }, true)
      const body = answer.body
      const error =
        isObject(body) && Array.isArray(body.errors) && isObject(body.errors[0]) ? body.errors[0] : undefined
      if (answer.status === 200 && isObject(body) && isObject(body.data) && !error) return body.data
      const detail =
        typeof error?.message === 'string'
          ? error.message
          : isObject(body) && typeof body.detail === 'string'
            ? body.detail
            : `HTTP ${answer.status}`
      throw new UnavailableError(
        isObject(body) && typeof body.code === 'string' ? body.code : CLIENT_CODE.graphql_error,
        detail
      )
    },
    /** A GraphQL request with the organisation's token, its answer as it came (errors included). */
    graphqlAnswer: (query: string, variables: Record<string, unknown> = {}) =>
      send('POST', '/graphql', { query, variables }, true),
    /** The service's OpenAPI document (public: no token). */
    openapi: () => send('GET', '/openapi.json', undefined, false),
    get: (path: string, sendOptions: SendOptions = {}) =>
      send('GET', '/v1/data-import/' + path, undefined, true, sendOptions),
    post: (path: string, body: unknown, transient: readonly string[] = [], sendOptions: SendOptions = {}) =>
      send('POST', '/v1/data-import/' + path, body, true, { ...sendOptions, transient }),
    /** PUT of raw bytes (an import job's part). */
    put: (path: string, raw: RawBody) => send('PUT', '/v1/data-import/' + path, undefined, true, { raw }),
    /**
     * Before the `failures`-th resend of what the service answered 503 inside a 200 (batch entries
     * that lost the database): a retry counted, the backoff waited, then the service waited for if
     * it is away. False when the retries are spent or the service did not come back.
     */
    async beforeResend(failures: number): Promise<boolean> {
      if (failures >= policy.maxAttempts) return false
      counts.serverErrors++
      await sleep(backoff(failures))
      return (await waitForService()) !== 'gave_up'
    }
  }
}

export type ServiceClient = ReturnType<typeof createServiceClient>

// Talking to the service: GraphQL batches and REST reads with the session's token, renewed
// shortly before it expires.

import { Q_OBTAIN_TOKEN } from './queries.js'
import { state } from './state.js'

const STORAGE_KEY = 'amis.dashboard.session'
/** A token is renewed this long before it expires. */
const RENEW_MARGIN_MS = 60_000

export class ServiceError extends Error {
  /** `code`: the service's code (`not_found`, `throttled`, …), or `unreachable` / `bad_response`. */
  constructor(code, message) {
    super(message)
    this.code = code
  }
}

/** The session has ended (renewal refused, key revoked): the sign-in form is shown again. */
export class SessionEnded extends Error {}

/**
 * Posts a batch of GraphQL operations; returns one `{data, errors}` per operation. A body that is
 * not GraphQL's (a 415, a 429 on obtainToken, a proxy's error page) is thrown as a ServiceError.
 */
export async function post(operations, token) {
  let response
  try {
    response = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(operations),
      cache: 'no-store',
      credentials: 'omit'
    })
  } catch {
    throw new ServiceError('unreachable', 'The service cannot be reached.')
  }
  let body
  try {
    body = await response.json()
  } catch {
    throw new ServiceError('bad_response', `The service answered HTTP ${response.status} without JSON.`)
  }
  if (Array.isArray(body) && body.length === operations.length) return body
  if (body && typeof body.code === 'string') throw new ServiceError(body.code, body.detail || `HTTP ${response.status}`)
  if (body && Array.isArray(body.errors)) {
    const first = body.errors[0] ?? {}
    throw new ServiceError(first.extensions?.code ?? 'error', first.message ?? `HTTP ${response.status}`)
  }
  throw new ServiceError('bad_response', `The service answered HTTP ${response.status} unexpectedly.`)
}

/** The first error of one operation's result, or undefined. */
export function errorOf(result) {
  const first = result?.errors?.[0]
  return first
    ? new ServiceError(first.extensions?.code ?? 'error', first.message ?? 'The service reported an error.')
    : undefined
}

const hasCode = (results, codes) =>
  results.some((r) => (r.errors ?? []).some((e) => codes.includes(e.extensions?.code)))

export function errorText(error) {
  if (error.code === 'not_found') return 'Not found: this key may not see it.'
  if (error.code === 'unreachable') return 'Cannot reach the service.'
  return `The service answered with an error (${error.code}): ${error.message}`
}

// ---------------------------------------------------------------------------------------------
// The session: the token, its refresh token and its expiry, in sessionStorage (never the key)

export function readSession() {
  try {
    const session = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? 'null')
    if (
      session &&
      typeof session.token === 'string' &&
      typeof session.refreshToken === 'string' &&
      typeof session.expiresAt === 'number'
    ) {
      return session
    }
  } catch {
    // unreadable: treated as signed out
  }
  return null
}

export function storeSession(payload) {
  const session = {
    token: payload.token,
    refreshToken: payload.refreshToken,
    expiresAt: Date.now() + payload.expiresIn * 1000
  }
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session))
  state.session = session
}

let renewing = null

/** Trades the refresh token (single use) for a new pair; one renewal at a time. */
function renew() {
  renewing ??= (async () => {
    const session = state.session
    if (!session) throw new SessionEnded('You are signed out.')
    const [result] = await post([
      { query: Q_OBTAIN_TOKEN, variables: { input: { refreshToken: session.refreshToken } } }
    ])
    const error = errorOf(result)
    if (error || !result.data?.obtainToken) {
      if (error?.code === 'throttled') throw error
      throw new SessionEnded('Your session has ended and could not be renewed. Sign in again with your API key.')
    }
    if (state.session === session) storeSession(result.data.obtainToken)
  })().finally(() => {
    renewing = null
  })
  return renewing
}

/** Runs operations with the token: renewed shortly before it expires, or once on token_expired. */
export async function call(operations) {
  if (!state.session) throw new SessionEnded('You are signed out.')
  if (Date.now() >= state.session.expiresAt - RENEW_MARGIN_MS) await renew()
  let results = await post(operations, state.session.token)
  if (hasCode(results, ['token_expired'])) {
    await renew()
    results = await post(operations, state.session.token)
  }
  if (hasCode(results, ['token_expired', 'authentication_failed', 'not_authenticated'])) {
    throw new SessionEnded('The service no longer accepts this session (the key may have been revoked). Sign in again.')
  }
  return results
}

/** A GET of the REST API with the token (renewed as for GraphQL), answered as text. */
export async function restText(path) {
  if (!state.session) throw new SessionEnded('You are signed out.')
  if (Date.now() >= state.session.expiresAt - RENEW_MARGIN_MS) await renew()
  const get = async () => {
    try {
      return await fetch(path, {
        headers: { authorization: `Bearer ${state.session.token}` },
        cache: 'no-store',
        credentials: 'omit'
      })
    } catch {
      throw new ServiceError('unreachable', 'The service cannot be reached.')
    }
  }
  let response = await get()
  if (response.status === 401) {
    await renew()
    response = await get()
  }
  if (response.ok) return response.text()
  let body = null
  try {
    body = await response.json()
  } catch {
    // not the error body: said by its status below
  }
  if (response.status === 401) {
    throw new SessionEnded('The service no longer accepts this session (the key may have been revoked). Sign in again.')
  }
  throw new ServiceError(body?.code ?? 'bad_response', body?.detail ?? `HTTP ${response.status}`)
}

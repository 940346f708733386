import t, { type Test } from 'tap'
import { connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { parse } from 'graphql'
import { buildTestApp, TEST_OPERATOR_KEY } from './helpers/app.js'
import { createTenant, OBTAIN_TOKEN } from './helpers/graphql.js'
import { routeRecorder } from './helpers/security.js'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Protocol hardening: GraphQL takes only GraphQL text, 405 with Allow on known paths, callers
 * without a token hold nothing that others wait for, and slow clients are cut off in time.
 */

const post = (app: FastifyInstance, payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(payload) })

t.test('GraphQL runs only GraphQL text, and counts every obtainToken it runs', async (t) => {
  t.test('a JSON document tree in query is refused, never run, so the token limit cannot be bypassed', async (t) => {
    const { app } = await buildTestApp(t, { env: { TOKEN_RATE_LIMIT_PER_MINUTE: '3' } })
    const text = 'mutation { obtainToken(input: {APIKey: "' + TEST_OPERATOR_KEY + '"}) { token } }'
    const tree = JSON.stringify(parse(text))
    const first = await post(app, { query: tree })
    t.equal(first.statusCode, 400, 'the JSON form is a malformed request')
    t.notOk(first.json().data?.obtainToken, 'and issues no token')
    for (let i = 0; i < 3; i++) t.equal((await post(app, { query: text })).statusCode, 200, `plain call ${i + 1} is allowed`)
    t.equal((await post(app, { query: text })).statusCode, 429, 'the plain form is then throttled')
    for (let i = 0; i < 22; i++) {
      const res = await post(app, { query: tree })
      if (res.statusCode === 200 || res.json().data?.obtainToken) t.fail(`JSON form ${i + 1} ran: ${res.body}`)
    }
    const batched = await post(app, [{ query: tree }, { query: tree }])
    t.not(batched.statusCode, 200, 'nor inside a batch')
  })

  t.test('every query that is not a GraphQL string is 400, never 500', async (t) => {
    const { app } = await buildTestApp(t)
    const bodies: unknown[] = [
      { query: '8' }, { query: 'true' }, { query: 'null' }, { query: '1.5' }, { query: '"text"' }, { query: '[]' }, { query: '{}' },
      { query: '' }, { query: 8 }, { query: true }, { query: null }, { query: 1.5 }, { query: {} }, { query: [] }, { query: { kind: 'Document', definitions: [] } },
      {}, [], [1], [{ query: '8' }], [{}], [null], 8, 'x', null, true
    ]
    for (const body of bodies) {
      const res = await post(app, body)
      t.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.statusCode}`)
    }
    const tooMany = `{ ${Array.from({ length: 6000 }, (_, i) => `a${i}: __typename`).join(' ')} }`
    t.equal((await post(app, { query: tooMany })).statusCode, 400, 'a document past the token bound is refused before it is parsed whole')
    const ok = await post(app, [{ query: OBTAIN_TOKEN, variables: { input: { APIKey: TEST_OPERATOR_KEY } } }])
    t.equal(ok.statusCode, 200, 'a batch of one request still runs')
    const text = await app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/graphql' }, payload: '{ __typename }' })
    t.equal(text.statusCode, 415, 'bodies are JSON only')
  })

  t.test('GET /graphql is 405 with Allow: POST, whatever the query', async (t) => {
    const { app } = await buildTestApp(t)
    for (const url of ['/graphql?query=8', '/graphql?query=%7B__typename%7D', '/graphql']) {
      for (const method of ['GET', 'HEAD'] as const) {
        const res = await app.inject({ method, url })
        t.equal(res.statusCode, 405, `${method} ${url}`)
        t.equal(res.headers.allow, 'POST')
        if (method === 'GET') t.same(res.json(), { detail: res.json().detail, code: 'method_not_allowed', errors: [] })
      }
    }
  })
})

t.test('a known path answers other methods with 405 and Allow; unknown paths stay 404', async (t) => {
  const routes = routeRecorder()
  const { app } = await buildTestApp(t, { onRoute: routes.collect })
  const byUrl = new Map<string, Set<string>>()
  for (const r of routes.all()) byUrl.set(r.url, (byUrl.get(r.url) ?? new Set()).add(r.method))
  byUrl.get('/graphql')!.delete('GET')
  byUrl.get('/graphql')!.delete('HEAD')
  t.ok(byUrl.size >= 20, `paths seen (${byUrl.size})`)
  const all = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'] as const
  for (const [pattern, methods] of byUrl) {
    const url = pattern.replace(/:\w+/g, 'X').replace('*', 'x')
    const expected = all.filter((m) => methods.has(m)).join(', ')
    for (const method of all.filter((m) => !methods.has(m))) {
      const res = await app.inject({ method, url })
      t.equal(res.statusCode, 405, `${method} ${url}`)
      t.equal(res.headers.allow, expected, `${method} ${url}: Allow`)
      if (method !== 'HEAD') t.equal(res.json().code, 'method_not_allowed')
    }
  }
  const unknown = await app.inject({ method: 'DELETE', url: '/v1/data-import/nothing-here/' })
  t.equal(unknown.statusCode, 404)
  t.equal(unknown.json().errors[0].code, 'route_not_found')
})

/** A raw HTTP/1.1 exchange: sends `text`, reads until the server closes or `waitMs` passes. */
function exchange(port: number, text: string, waitMs: number): Promise<{ response: string; closedAfterMs: number | null; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const socket = connect(port, '127.0.0.1', () => socket.write(text))
    let response = ''
    socket.on('data', (d) => { response += d.toString() })
    socket.on('error', reject)
    const timer = setTimeout(() => resolve({ response, closedAfterMs: null, socket }), waitMs)
    socket.on('close', () => {
      clearTimeout(timer)
      resolve({ response, closedAfterMs: Date.now() - started, socket })
    })
  })
}

async function listening(t: Test, env: Record<string, string>) {
  const built = await buildTestApp(t, { env })
  await built.app.listen({ host: '127.0.0.1', port: 0 })
  return { ...built, port: (built.app.server.address() as AddressInfo).port }
}

t.test('callers without a token take no turn: stalled ones do not delay an authenticated request', async (t) => {
  const pool = 2
  const { app, port } = await listening(t, { DATABASE_POOL_SIZE: String(pool) })
  const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')
  const stalled: Socket[] = []
  t.teardown(() => { for (const s of stalled) s.destroy() })
  for (let i = 0; i < pool + 1; i++) {
    const socket = connect(port, '127.0.0.1')
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.write('POST /v1/data-import/notes/create/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"notes": [')
    stalled.push(socket)
  }
  await sleep(300)
  const started = Date.now()
  const res = await fetch(`http://127.0.0.1:${port}/v1/data-import/notes/create/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${acme.token}` },
    body: JSON.stringify({ import_supplier: 'ACME_ENERGY', external_account_number: 'EXT-1', notes: [{ body: 'x' }] }),
    signal: AbortSignal.timeout(10_000)
  }).catch((err: unknown) => err as Error)
  t.ok(!(res instanceof Error), `answered (${res instanceof Error ? res.message : res.status}) in ${Date.now() - started} ms`)
  if (!(res instanceof Error)) t.equal(res.status, 404, 'nothing staged for the pair: its normal 404')
  const tokenless = await fetch(`http://127.0.0.1:${port}/v1/data-import/notes/create/`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', signal: AbortSignal.timeout(10_000)
  })
  t.equal(tokenless.status, 401, 'a caller without a token gets its 401 at once too')
})

t.test('slow clients are cut off: headers, whole request, idle keep-alive', async (t) => {
  const { port } = await listening(t, { HEADERS_TIMEOUT_SECONDS: '1', REQUEST_TIMEOUT_SECONDS: '2', KEEP_ALIVE_TIMEOUT_SECONDS: '1' })
  const headers = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', 10_000)
  t.ok(headers.closedAfterMs !== null && headers.closedAfterMs < 5_000, `half-sent headers: closed after ${headers.closedAfterMs} ms`)
  t.match(headers.response, /^HTTP\/1\.1 408 /, 'with 408')
  t.match(headers.response, /"code":"request_timeout"/, 'in the contract body')
  const body = await exchange(port, 'POST /v1/data-import/notes/create/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":', 10_000)
  t.ok(body.closedAfterMs !== null && body.closedAfterMs >= 1_500 && body.closedAfterMs < 6_000, `half-sent body: closed after ${body.closedAfterMs} ms`)
  t.match(body.response, /^HTTP\/1\.1 408 /)
  const idle = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 10_000)
  t.match(idle.response, /^HTTP\/1\.1 200 /, 'a complete request is answered')
  t.ok(idle.closedAfterMs !== null && idle.closedAfterMs < 5_000, `an idle keep-alive connection is closed after ${idle.closedAfterMs} ms`)
})

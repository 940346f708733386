import t, { type Test } from 'tap'
import { METHODS } from 'node:http'
import { connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { parse } from 'graphql'
import { buildTestApp, TEST_OPERATOR_KEY } from './helpers/app.js'
import { createTenant, OBTAIN_TOKEN, operatorToken } from './helpers/graphql.js'
import { routeRecorder } from './helpers/security.js'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Protocol hardening: GraphQL takes only GraphQL text, 405 with Allow on known paths, callers
 * without a token hold nothing that others wait for, and slow clients are cut off in time.
 */

const post = (app: FastifyInstance, payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(payload)
  })

t.test('GraphQL runs only GraphQL text, and counts every obtainToken it runs', async (t) => {
  t.test('a JSON document tree in query is refused, never run, so the token limit cannot be bypassed', async (t) => {
    const { app } = await buildTestApp(t, { env: { TOKEN_RATE_LIMIT_PER_MINUTE: '3' } })
    const text = 'mutation { obtainToken(input: {APIKey: "' + TEST_OPERATOR_KEY + '"}) { token } }'
    const tree = JSON.stringify(parse(text))
    const first = await post(app, { query: tree })
    t.equal(first.statusCode, 400, 'the JSON form is a malformed request')
    t.notOk(first.json().data?.obtainToken, 'and issues no token')
    for (let i = 0; i < 3; i++) {
      t.equal((await post(app, { query: text })).statusCode, 200, `plain call ${i + 1} is allowed`)
    }
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
      { query: '8' },
      { query: 'true' },
      { query: 'null' },
      { query: '1.5' },
      { query: '"text"' },
      { query: '[]' },
      { query: '{}' },
      { query: '' },
      { query: 8 },
      { query: true },
      { query: null },
      { query: 1.5 },
      { query: {} },
      { query: [] },
      { query: { kind: 'Document', definitions: [] } },
      {},
      [],
      [1],
      [{ query: '8' }],
      [{}],
      [null],
      8,
      'x',
      null,
      true
    ]
    for (const body of bodies) {
      const res = await post(app, body)
      t.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.statusCode}`)
    }
    const tooMany = `{ ${Array.from({ length: 6000 }, (_, i) => `a${i}: __typename`).join(' ')} }`
    const operator = { authorization: `Bearer ${await operatorToken(app)}` }
    t.equal(
      (await post(app, { query: tooMany }, operator)).statusCode,
      400,
      'a document past the token bound is refused before it is parsed whole'
    )
    t.equal(
      (await post(app, { query: tooMany })).statusCode,
      413,
      'without a token, its size (over 64 KB) is refused first'
    )
    const ok = await post(app, [{ query: OBTAIN_TOKEN, variables: { input: { APIKey: TEST_OPERATOR_KEY } } }])
    t.equal(ok.statusCode, 200, 'a batch of one request still runs')
    const text = await app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/graphql' },
      payload: '{ __typename }'
    })
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

/** Every method Node's HTTP parser accepts; CONNECT is tried over a socket (Node hands it to the server apart). */
const PARSED_METHODS = METHODS.filter((m) => m !== 'CONNECT') as Array<NonNullable<InjectOptions['method']>>

t.test('a known path answers every other method with 405 and Allow; unknown paths stay 404', async (t) => {
  const routes = routeRecorder()
  const { app } = await buildTestApp(t, { onRoute: routes.collect })
  const byUrl = new Map<string, Set<string>>()
  for (const r of routes.all()) byUrl.set(r.url, (byUrl.get(r.url) ?? new Set()).add(r.method))
  byUrl.get('/graphql')!.delete('GET')
  byUrl.get('/graphql')!.delete('HEAD')
  t.ok(byUrl.size >= 20, `paths seen (${byUrl.size})`)
  for (const [pattern, methods] of byUrl) {
    const url = pattern.replace(/:\w+/g, 'X').replace('*', 'x')
    const expected = METHODS.filter((m) => methods.has(m)).join(', ')
    for (const method of PARSED_METHODS.filter((m) => !methods.has(m))) {
      const res = await app.inject({ method, url })
      if (res.statusCode !== 405 || res.headers.allow !== expected) {
        t.fail(`${method} ${url}: ${res.statusCode}, Allow ${res.headers.allow} (expected 405, Allow ${expected})`)
        continue
      }
      if (method !== 'HEAD') {
        t.same(res.json(), { detail: res.json().detail, code: 'method_not_allowed', errors: [] }, `${method} ${url}`)
      }
    }
  }
  t.pass(`${PARSED_METHODS.length} methods tried on each path`)
  for (const method of PARSED_METHODS) {
    const unknown = await app.inject({ method, url: '/v1/data-import/nothing-here/' })
    t.equal(unknown.statusCode, 404, `${method} on an unknown path`)
    if (method !== 'HEAD') t.equal(unknown.json().errors[0].code, 'route_not_found')
  }
})

t.test('405 comes before the body is read: QUERY and PATCH with bodies, TRACE, CONNECT, over a socket', async (t) => {
  const { port } = await listening(t, {})
  const head = (text: string) => text.split('\r\n\r\n')[0]!
  // The bodies are never completed: an answer that waited to parse them would not come.
  const cases: Array<[string, string, RegExp]> = [
    [
      'QUERY /readyz HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":',
      'GET, HEAD',
      /^HTTP\/1\.1 405 /
    ],
    ['QUERY /readyz HTTP/1.1\r\nHost: x\r\n\r\n', 'GET, HEAD', /^HTTP\/1\.1 405 /],
    [
      'PATCH /v1/data-import/notes/create/ HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nnot json',
      'POST',
      /^HTTP\/1\.1 405 /
    ],
    [
      'PUT /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
      'POST',
      /^HTTP\/1\.1 405 /
    ],
    ['TRACE /readyz HTTP/1.1\r\nHost: x\r\n\r\n', 'GET, HEAD', /^HTTP\/1\.1 405 /],
    ['PROPFIND /v1/data-import/batches HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n<', 'POST', /^HTTP\/1\.1 405 /],
    ['CONNECT /readyz HTTP/1.1\r\nHost: x\r\n\r\n', 'GET, HEAD', /^HTTP\/1\.1 405 /],
    ['GET /graphql HTTP/1.1\r\nHost: x\r\n\r\n', 'POST', /^HTTP\/1\.1 405 /]
  ]
  for (const [request, allow, status] of cases) {
    const line = request.split('\r\n')[0]
    const response = await firstAnswer(port, request, 3_000)
    t.match(response, status, `${line}: ${head(response).split('\r\n')[0] || 'no answer'}`)
    t.match(head(response), new RegExp(`\r\nallow: ${allow}\r\n`, 'i'), `${line}: Allow ${allow}`)
    t.match(response, /"code":"method_not_allowed","errors":\[\]/, `${line}: method_not_allowed`)
  }
  for (const request of [
    'CONNECT /nothing HTTP/1.1\r\nHost: x\r\n\r\n',
    'QUERY /nothing HTTP/1.1\r\nHost: x\r\n\r\n',
    'TRACE /nothing HTTP/1.1\r\nHost: x\r\n\r\n'
  ]) {
    const response = await firstAnswer(port, request, 3_000)
    t.match(
      response,
      /^HTTP\/1\.1 404 [\s\S]*"code":"route_not_found"/,
      `${request.split('\r\n')[0]}: 404 route_not_found`
    )
  }
})

/** A raw HTTP/1.1 exchange: sends `text`, reads until the server closes or `waitMs` passes. */
function exchange(
  port: number,
  text: string,
  waitMs: number
): Promise<{ response: string; closedAfterMs: number | null; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const socket = connect(port, '127.0.0.1', () => socket.write(text))
    let response = ''
    socket.on('data', (d) => {
      response += d.toString()
    })
    socket.on('error', reject)
    const timer = setTimeout(() => resolve({ response, closedAfterMs: null, socket }), waitMs)
    socket.on('close', () => {
      clearTimeout(timer)
      resolve({ response, closedAfterMs: Date.now() - started, socket })
    })
  })
}

/** Sends `text` on a new connection and reads one answer (head and Content-Length body), or what came in `waitMs`. */
function firstAnswer(port: number, text: string, waitMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text))
    let response = ''
    const done = () => {
      clearTimeout(timer)
      socket.destroy()
      resolve(response)
    }
    const timer = setTimeout(done, waitMs)
    socket.on('data', (d) => {
      response += d.toString()
      const end = response.indexOf('\r\n\r\n')
      const length = /\r\ncontent-length: (\d+)/i.exec(response)
      if (end >= 0 && length && Buffer.byteLength(response.slice(end + 4)) >= Number(length[1])) done()
    })
    socket.on('error', reject)
    socket.on('close', done)
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
  t.teardown(() => {
    for (const s of stalled) s.destroy()
  })
  for (let i = 0; i < pool + 1; i++) {
    const socket = connect(port, '127.0.0.1')
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.write(
      'POST /v1/data-import/notes/create/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"notes": ['
    )
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
  t.ok(
    !(res instanceof Error),
    `answered (${res instanceof Error ? res.message : res.status}) in ${Date.now() - started} ms`
  )
  if (!(res instanceof Error)) t.equal(res.status, 404, 'nothing staged for the pair: its normal 404')
  const tokenless = await fetch(`http://127.0.0.1:${port}/v1/data-import/notes/create/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
    signal: AbortSignal.timeout(10_000)
  })
  t.equal(tokenless.status, 401, 'a caller without a token gets its 401 at once too')
})

t.test('slow clients are cut off: headers, whole request, idle keep-alive', async (t) => {
  const { app, port } = await listening(t, {
    HEADERS_TIMEOUT_SECONDS: '1',
    REQUEST_TIMEOUT_SECONDS: '2',
    KEEP_ALIVE_TIMEOUT_SECONDS: '1'
  })
  const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')
  const headers = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', 10_000)
  t.ok(
    headers.closedAfterMs !== null && headers.closedAfterMs < 5_000,
    `half-sent headers: closed after ${headers.closedAfterMs} ms`
  )
  t.match(headers.response, /^HTTP\/1\.1 408 /, 'with 408')
  t.match(headers.response, /"code":"request_timeout"/, 'in the contract body')
  const body = await exchange(
    port,
    `POST /v1/data-import/notes/create/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${acme.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":`,
    10_000
  )
  t.ok(
    body.closedAfterMs !== null && body.closedAfterMs >= 1_500 && body.closedAfterMs < 6_000,
    `half-sent body: closed after ${body.closedAfterMs} ms`
  )
  t.match(body.response, /^HTTP\/1\.1 408 /)
  const tokenless = await exchange(
    port,
    'POST /v1/data-import/notes/create/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":',
    10_000
  )
  t.match(tokenless.response, /^HTTP\/1\.1 401 /, 'without a token, a half-sent body is answered at once')
  t.ok(
    tokenless.closedAfterMs !== null && tokenless.closedAfterMs < 1_000,
    `and its connection closed after ${tokenless.closedAfterMs} ms`
  )
  const idle = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 10_000)
  t.match(idle.response, /^HTTP\/1\.1 200 /, 'a complete request is answered')
  t.ok(
    idle.closedAfterMs !== null && idle.closedAfterMs < 5_000,
    `an idle keep-alive connection is closed after ${idle.closedAfterMs} ms`
  )
})

import t, { type Test } from 'tap'
import { join } from 'node:path'
import type { LightMyRequestResponse } from 'fastify'
import { importSuppliers } from '../drizzle/schema/index.js'
import { ERROR_CODES, type CodeSpec } from '../schemas/error-codes.js'
import { buildTestApp, TEST_OPERATOR_KEY } from './helpers/app.js'
import { exampleAccount, importSetup, TEAM } from './helpers/accounts.js'
import { createTenant, gql, OBTAIN_TOKEN } from './helpers/graphql.js'
import { clientArgs, generated, inputFile, migrationServer, runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'

/**
 * Retry hints: every 429 and 503 the service gives carries `Retry-After` (whole seconds, at least
 * 1); a request-rate limit's 429 also carries `RateLimit-Limit`, `RateLimit-Remaining` and
 * `RateLimit-Reset`. Each source is triggered through the real app. The OpenAPI document
 * describes the headers, and the migration client waits a 429's or 503's `Retry-After` on every
 * path (batches, single endpoints, job upload and start, reconcile).
 */

type Headers = Record<string, string | string[] | number | undefined>

function retryAfterOf(t: Test, headers: Headers | globalThis.Headers): number {
  const value = headers instanceof globalThis.Headers ? headers.get('retry-after') : headers['retry-after']
  t.match(String(value), /^[1-9][0-9]*$/, `Retry-After is a positive whole number of seconds (${value})`)
  return Number(value)
}

function assertRateLimited(t: Test, res: LightMyRequestResponse, limit: number) {
  t.equal(res.statusCode, 429, res.body)
  t.equal(res.json().code, 'throttled')
  const retryAfter = retryAfterOf(t, res.headers)
  t.ok(retryAfter <= 60, 'no longer than the window')
  t.equal(res.headers['ratelimit-limit'], String(limit), 'RateLimit-Limit: the requests a window allows')
  t.equal(res.headers['ratelimit-remaining'], '0', 'RateLimit-Remaining: none left')
  t.equal(res.headers['ratelimit-reset'], String(retryAfter), 'RateLimit-Reset: the seconds until the window resets')
}

function assertNoRateLimitHeaders(t: Test, headers: Headers) {
  for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
    t.equal(headers[name], undefined, `no ${name}: not a request-rate limit`)
  }
}

t.test('every 429 and 503 code of the catalogue has its Retry-After', async (t) => {
  const codes = Object.entries(ERROR_CODES as Record<string, CodeSpec>).filter(([, spec]) =>
    [429, 503].includes(spec.status)
  )
  t.same(codes.map(([code]) => code).sort(), [
    'service_stopping',
    'service_unavailable',
    'throttled',
    'too_many_accounts_processing',
    'too_many_jobs'
  ])
  for (const [code, spec] of codes) {
    t.ok(Number.isInteger(spec.retryAfterSeconds) && spec.retryAfterSeconds! >= 1, `${code}: ${spec.retryAfterSeconds}`)
  }
})

t.test('429 throttled, the organisation rate limit: Retry-After and RateLimit-*', async (t) => {
  const { app } = await buildTestApp(t, { env: { ORG_RATE_LIMIT_PER_MINUTE: '2' } })
  const acme = await createTenant(app, 'Acme', 'ACME')
  const list = () =>
    app.inject({ url: '/v1/data-import/all-account-import-processes/ACME/', headers: { authorization: acme.token } })
  t.equal((await list()).statusCode, 200)
  t.equal((await list()).statusCode, 200)
  assertRateLimited(t, await list(), 2)
})

t.test('429 throttled, the obtainToken limit per client address: Retry-After and RateLimit-*', async (t) => {
  const { app } = await buildTestApp(t, { env: { TOKEN_RATE_LIMIT_PER_MINUTE: '1' } })
  t.equal((await gql(app, OBTAIN_TOKEN, { input: { APIKey: TEST_OPERATOR_KEY } })).status, 200)
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    payload: { query: OBTAIN_TOKEN, variables: { input: { APIKey: TEST_OPERATOR_KEY } } }
  })
  assertRateLimited(t, res, 1)
})

t.test("429 too_many_accounts_processing, the supplier's concurrent creates: Retry-After 1", async (t) => {
  const { database, client } = await importSetup(t)
  t.equal((await client.stage(exampleAccount())).statusCode, 201)
  // No slot free: a limit of 0 (the operator's API takes 1 or more) leaves none, on either database.
  await database.db.update(importSuppliers).set({ maxConcurrentProcessing: 0 })
  const res = await client.create('EXT-000123')
  t.equal(res.statusCode, 429, res.body)
  t.equal(res.json().code, 'too_many_accounts_processing')
  t.equal(retryAfterOf(t, res.headers), 1)
  assertNoRateLimitHeaders(t, res.headers)
})

t.test("429 too_many_jobs, the organisation's import jobs: Retry-After 10", async (t) => {
  const setup = await importSetup(t, { env: { IMPORT_JOB_WORKERS: '0', IMPORT_JOBS_PER_ORGANISATION: '1' } })
  const submit = (external: string) =>
    setup.app.inject({
      method: 'POST',
      url: `/v1/data-import/import-jobs/?import_supplier=ACME_ENERGY&operations_team_name=${TEAM}`,
      headers: { authorization: `Token ${setup.tenant.token}`, 'content-type': 'application/x-ndjson' },
      payload: JSON.stringify({ account: exampleAccount({ external_account_number: external }) }) + '\n'
    })
  t.equal((await submit('A-1')).statusCode, 202)
  const res = await submit('A-2')
  t.equal(res.statusCode, 429, res.body)
  t.equal(res.json().code, 'too_many_jobs')
  t.equal(retryAfterOf(t, res.headers), 10)
  assertNoRateLimitHeaders(t, res.headers)
})

t.test('503 service_unavailable, readiness without a database: Retry-After 5', async (t) => {
  const { database } = await buildTestApp(t)
  const down = { ...database, ping: async () => Promise.reject(new Error('connection refused')), close: async () => {} }
  const { app } = await buildTestApp(t, { database: down })
  const res = await app.inject({ url: '/readyz' })
  t.equal(res.statusCode, 503)
  t.equal(res.json().code, 'service_unavailable')
  t.equal(retryAfterOf(t, res.headers), 5)
})

t.test('503 service_stopping, a request arriving while the server closes: Retry-After 2', async (t) => {
  const { app } = await buildTestApp(t)
  // Holds the close after the app stopped taking requests and before the server stops listening.
  let release!: () => void
  const held = new Promise<void>((resolve) => {
    release = resolve
  })
  let reached!: () => void
  const closingStarted = new Promise<void>((resolve) => {
    reached = resolve
  })
  app.addHook('preClose', async () => {
    reached()
    await held
  })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const closed = app.close()
  await closingStarted
  const res = await fetch(`${base}/healthz`)
  t.equal(res.status, 503)
  const body = (await res.json()) as { code: string; request_id?: string }
  t.equal(body.code, 'service_stopping', "the contract's body")
  t.ok(body.request_id, 'with the request id of a 5xx')
  t.equal(retryAfterOf(t, res.headers), 2)
  t.equal(res.headers.get('connection'), 'close')
  release()
  await closed
})

t.test('the OpenAPI document describes the headers of every 429 and 503', async (t) => {
  const { app } = await buildTestApp(t)
  const doc = (await app.inject({ url: '/openapi.json' })).json()
  const integer = { type: 'integer' }
  const tooMany = doc.components.responses.TooManyRequests
  const unavailable = doc.components.responses.ServiceUnavailable
  for (const name of ['Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) {
    t.match(tooMany.headers?.[name], { description: String, schema: integer }, `429: ${name}`)
  }
  t.match(unavailable.headers?.['Retry-After'], { description: String, schema: { ...integer, minimum: 1 } }, '503')
  let responses = 0
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, operation] of Object.entries(item)) {
      for (const status of ['429', '503']) {
        const response = operation.responses?.[status]
        if (!response) continue
        responses++
        t.same(
          response,
          { $ref: `#/components/responses/${status === '429' ? 'TooManyRequests' : 'ServiceUnavailable'}` },
          `${method.toUpperCase()} ${path} ${status}: the shared response with its headers`
        )
      }
    }
  }
  t.ok(doc.paths['/readyz'].get.responses['503'], 'readiness documents its 503')
  t.ok(doc.paths['/graphql'].post.responses['429'], 'GraphQL documents its 429 (obtainToken)')
  t.ok(responses > 20, `${responses} responses checked`)
})

/**
 * A fetch for the migration client that answers the first request matching `path` (and `method`)
 * with `status` and `Retry-After: 1` itself (the service never sees it) and records when each
 * request to it was made.
 */
function refusingOnce(path: RegExp, method: string, status: 429 | 503) {
  const times: number[] = []
  const wrapped: typeof fetch = async (input, init) => {
    const url = String(input)
    if (!path.test(new URL(url).pathname) || (init?.method ?? 'GET') !== method) return fetch(input, init)
    times.push(Date.now())
    if (times.length > 1) return fetch(input, init)
    // A streamed body (a job's part) is read off before the refusal, as a server would.
    if (init?.body instanceof ReadableStream) await new Response(init.body).arrayBuffer()
    return new Response(JSON.stringify({ detail: 'Not now.', code: 'test_refusal', errors: [] }), {
      status,
      headers: { 'content-type': 'application/json', 'retry-after': '1' }
    })
  }
  return { fetch: wrapped, times }
}

function assertWaited(t: Test, times: number[], what: string) {
  t.equal(times.length, 2, `${what}: refused once, then sent again`)
  const waited = times[1]! - times[0]!
  t.ok(waited >= 1000, `${what}: waited the Retry-After's second before sending again (${waited} ms)`)
  t.ok(waited < 5000, `${what}: and not much longer (${waited} ms)`)
}

t.test("the migration client waits a 429's and a 503's Retry-After on every path", async (t) => {
  const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const env = { AMIS_API_KEY: server.tenant.apiKey }
  const dir = tempDir(t)
  const accounts = (seed: string) =>
    inputFile(
      dir,
      `${seed}.ndjson`,
      generated(1, seed, { postImportShare: 0 }).map((l) => l.line as object)
    )

  const cases: Array<{ what: string; path: RegExp; method: string; status: 429 | 503; argv: () => string[] }> = [
    {
      what: 'a batch, 503',
      path: /\/batches\/$/,
      method: 'POST',
      status: 503,
      argv: () => clientArgs(accounts('batch-503'), server.url, join(dir, 'batch-503.report'), '--batch-size', '10')
    },
    {
      what: 'a batch, 429',
      path: /\/batches\/$/,
      method: 'POST',
      status: 429,
      argv: () => clientArgs(accounts('batch-429'), server.url, join(dir, 'batch-429.report'), '--batch-size', '10')
    },
    {
      what: 'a single endpoint (create), 429',
      path: /\/account-import-process\/process\/$/,
      method: 'POST',
      status: 429,
      argv: () => clientArgs(accounts('single-429'), server.url, join(dir, 'single-429.report'))
    },
    {
      what: 'a single endpoint (stage), 503',
      path: /\/account-import-process\/create-or-update\/$/,
      method: 'POST',
      status: 503,
      argv: () => clientArgs(accounts('single-503'), server.url, join(dir, 'single-503.report'))
    },
    {
      what: "a job's part upload, 503",
      path: /\/import-jobs\/[^/]+\/parts\/1\/$/,
      method: 'PUT',
      status: 503,
      argv: () => ['submit', accounts('upload-503'), '--url', server.url, '--team', TEAM]
    },
    {
      what: "a job's submit, 429",
      path: /\/import-jobs\/$/,
      method: 'POST',
      status: 429,
      argv: () => ['submit', accounts('submit-429'), '--url', server.url, '--team', TEAM]
    },
    {
      what: "a job's start, 503",
      path: /\/import-jobs\/[^/]+\/start\/$/,
      method: 'POST',
      status: 503,
      argv: () => ['submit', accounts('start-503'), '--url', server.url, '--team', TEAM]
    },
    {
      what: 'reconcile, 429',
      path: /\/reconciliation\/[^/]+\/$/,
      method: 'POST',
      status: 429,
      argv: () => ['reconcile', accounts('reconcile-429'), '--url', server.url]
    },
    {
      what: 'reconcile, 503',
      path: /\/reconciliation\/[^/]+\/$/,
      method: 'POST',
      status: 503,
      argv: () => ['reconcile', accounts('reconcile-503'), '--url', server.url]
    }
  ]
  for (const c of cases) {
    const refusing = refusingOnce(c.path, c.method, c.status)
    const run = await runClient(c.argv(), { ...env, INIT_CWD: dir }, { fetch: refusing.fetch })
    t.notOk(run.stdout.includes('test_refusal') || run.stderr.includes('test_refusal'), `${c.what}: not reported`)
    assertWaited(t, refusing.times, c.what)
  }
})

import { createServer, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { exampleAccount, importSetup, TEAM } from './helpers/accounts.js'
import { buildTestApp } from './helpers/app.js'
import { asOperator, gql, operatorToken } from './helpers/graphql.js'
import { createEndpoint } from './helpers/webhooks.js'
import { waitFor } from './helpers/wait.js'
import { webhookReceiver } from './helpers/webhook-receiver.js'
import { loadConfig } from '../src/config.js'

/**
 * Traces: a real OTLP/HTTP receiver on loopback takes what the service exports (JSON bodies,
 * `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) and the tests read the spans back: their names,
 * parents, attributes, and what they must never hold.
 */

interface Receiver {
  url: string
  /** POSTs received (answered or held). */
  posts: number
  /** Their content types. */
  contentTypes: string[]
  /** Exports held without an answer (a receiver that hangs). */
  held: number
  bodies: unknown[]
}

/** An OTLP/HTTP receiver on loopback: answers each export (or, `hang`, takes it and never answers). */
async function receiver(t: Test, mode: 'answer' | 'hang' = 'answer'): Promise<Receiver> {
  const state: Receiver = { url: '', posts: 0, contentTypes: [], held: 0, bodies: [] }
  const sockets = new Set<Socket>()
  const holding: ServerResponse[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end()
        return
      }
      state.posts++
      state.contentTypes.push(String(req.headers['content-type']))
      if (mode === 'hang') {
        state.held++
        holding.push(res)
        return
      }
      if (String(req.headers['content-type']).startsWith('application/json')) {
        state.bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')))
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return state
}

interface ExportedSpan {
  traceId: string
  spanId: string
  parentSpanId: string | undefined
  name: string
  attributes: Record<string, unknown>
  status: { code?: number; message?: string }
  resource: Record<string, unknown>
}

function attributesOf(list: Array<{ key: string; value: Record<string, unknown> }> | undefined) {
  const out: Record<string, unknown> = {}
  for (const { key, value } of list ?? []) {
    const v = value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue ?? value.arrayValue
    out[key] = typeof v === 'string' && value.intValue !== undefined ? Number(v) : v
  }
  return out
}

/** Every span the receiver got. */
function spansOf(r: Receiver): ExportedSpan[] {
  const out: ExportedSpan[] = []
  for (const body of r.bodies as Array<{ resourceSpans: any[] }>) {
    for (const rs of body.resourceSpans) {
      const resource = attributesOf(rs.resource?.attributes)
      for (const ss of rs.scopeSpans) {
        for (const s of ss.spans) {
          out.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId || undefined,
            name: s.name,
            attributes: attributesOf(s.attributes),
            status: s.status ?? {},
            resource
          })
        }
      }
    }
  }
  return out
}

/** The spans received once they satisfy `found` (5 s at most; the names received are shown if not). */
const waitForSpans = <T>(r: Receiver, found: (spans: ExportedSpan[]) => T | undefined | false): Promise<T> =>
  waitFor('the spans are received', () => found(spansOf(r)), {
    timeoutMs: 5000,
    seen: () => spansOf(r).map((s) => s.name)
  })

/** Whether `descendant` is under `ancestor` in its trace. */
function isUnder(spans: ExportedSpan[], descendant: ExportedSpan, ancestor: ExportedSpan): boolean {
  const byId = new Map(spans.map((s) => [s.spanId, s]))
  let at: ExportedSpan | undefined = descendant
  while (at?.parentSpanId !== undefined) {
    if (at.parentSpanId === ancestor.spanId) return true
    at = byId.get(at.parentSpanId)
  }
  return false
}

const tracing = (r: Receiver, more: Record<string, string> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '20',
  ...more
})

// Values the tests send that no span may hold.
const EXTERNAL = 'TRACEPROBE-7731'
const EMAIL = 'trace.probe@spanprobe.co.uk'
const GIVEN = 'Zorblattina'
const TEAM_NAME = 'Teamprobe Quenford'

function probeAccount(external: string) {
  const base = exampleAccount({ external_account_number: external })
  return { ...base, customers: [{ ...base.customers[0], email: EMAIL, given_name: GIVEN }] }
}

function neverHolds(t: Test, r: Receiver, values: string[]): void {
  const text = JSON.stringify(r.bodies)
  for (const value of values) t.notOk(text.includes(value), `no span holds ${value}`)
}

t.test('a batch request is traced as request → transaction → statements, with shapes and never values', async (t) => {
  const r = await receiver(t)
  const setup = await importSetup(t, { env: tracing(r), captureLogs: true })
  const res = await setup.app.inject({
    method: 'POST',
    url: '/v1/data-import/batches/',
    headers: { authorization: `Bearer ${setup.tenant.token}` },
    payload: {
      import_supplier: 'ACME_ENERGY',
      operations_team_name: TEAM,
      accounts: [{ account: probeAccount(EXTERNAL) }]
    }
  })
  t.equal(res.statusCode, 200, res.body)
  t.equal(res.json().results[0].outcome, 'created', res.body)

  const { request, spans } = await waitForSpans(r, (spans) => {
    const request = spans.find(
      (s) => s.attributes['http.route'] === '/v1/data-import/batches/' && s.name.startsWith('POST')
    )
    const inserts = spans.filter((s) => request && s.traceId === request.traceId && s.name.startsWith('INSERT'))
    return request && inserts.length > 0 ? { request, spans } : undefined
  })
  t.equal(request.name, 'POST /v1/data-import/batches/', 'named by method and route')
  t.equal(request.parentSpanId, undefined, 'the request is the root of its trace')
  t.equal(request.attributes['http.response.status_code'], 200)
  t.equal(request.attributes['url.path'], '/v1/data-import/batches/')
  t.equal(request.resource['service.name'], 'account-migration-import-service', 'the default service name')

  const trace = spans.filter((s) => s.traceId === request.traceId)
  const transactions = trace.filter((s) => s.name === 'transaction')
  t.ok(transactions.length > 0, 'the batch ran transactions')
  for (const tx of transactions) t.ok(isUnder(trace, tx, request), 'each transaction is under the request span')
  const statements = trace.filter((s) => s.attributes['db.query.text'] !== undefined)
  const inTransaction = statements.filter((s) => transactions.some((tx) => s.parentSpanId === tx.spanId))
  t.ok(
    inTransaction.some((s) => s.name.startsWith('INSERT')),
    'statements (an insert among them) are children of a transaction span'
  )
  for (const s of statements) {
    t.equal(s.attributes['db.system'], 'postgresql')
    t.ok(isUnder(trace, s, request), `${s.name} is under the request span`)
  }
  t.ok(
    statements.some((s) => /\$1\b/.test(String(s.attributes['db.query.text']))),
    'statements carry their shape, $1 where a value goes'
  )
  neverHolds(t, r, [EXTERNAL, EMAIL, GIVEN, setup.tenant.token, setup.tenant.apiKey])

  // Every log line of the request carries its trace id.
  const lines = setup
    .logs()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { reqId?: string; msg?: string; trace_id?: string })
    .filter((line) => line.reqId === res.headers['x-request-id'])
  t.ok(
    lines.some((line) => line.msg === 'request completed'),
    'the access line is among them'
  )
  t.ok(
    lines.every((line) => line.trace_id === request.traceId),
    'each line of the request has its trace_id'
  )
})

t.test('a GraphQL operation gets a span named by its type and name, without its variables', async (t) => {
  const r = await receiver(t)
  const setup = await buildTestApp(t, { env: tracing(r) })
  await asOperator(setup.app, 'mutation AddTeam($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', {
    n: TEAM_NAME
  })
  const operation = await waitForSpans(r, (spans) => spans.find((s) => s.name === 'mutation AddTeam'))
  t.match(operation.attributes, { 'graphql.operation.type': 'mutation', 'graphql.operation.name': 'AddTeam' })
  const request = await waitForSpans(r, (spans) =>
    spans.find((s) => s.traceId === operation.traceId && s.name === 'POST /graphql')
  )
  const spans = spansOf(r).filter((s) => s.traceId === operation.traceId)
  t.ok(isUnder(spans, operation, request), 'the operation is under its request')
  t.ok(
    spans.some((s) => s.name.startsWith('INSERT') && isUnder(spans, s, request)),
    "the operation's insert is in the same trace"
  )
  neverHolds(t, r, [TEAM_NAME])
})

t.test("an import job's chunks are spans in the job's trace, with its batches' statements under them", async (t) => {
  const r = await receiver(t)
  const setup = await importSetup(t, { env: tracing(r) })
  const lines = ['JOBPROBE-1', 'JOBPROBE-2']
    .map((external) => JSON.stringify({ account: probeAccount(external) }) + '\n')
    .join('')
  const started = await setup.app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/?import_supplier=ACME_ENERGY&operations_team_name=${encodeURIComponent(TEAM)}`,
    headers: { authorization: `Bearer ${setup.tenant.token}`, 'content-type': 'application/x-ndjson' },
    payload: lines
  })
  t.equal(started.statusCode, 202, started.body)
  const jobId = started.json().id as string
  const traceId = jobId.replace(/-/g, '')
  const request = await waitForSpans(r, (spans) =>
    spans.find((s) => s.name === 'POST /v1/data-import/import-jobs/' && s.attributes['url.path'] !== undefined)
  )
  t.equal(request.attributes['url.path'], '/v1/data-import/import-jobs/', 'its path without the query string')
  const chunk = await waitForSpans(r, (spans) =>
    spans.find((s) => s.name === 'import-job chunk' && s.attributes['amis.import_job.id'] === jobId)
  )
  t.equal(chunk.traceId, traceId, "the chunk is in the trace whose id is the job's")
  t.equal(chunk.attributes['amis.import_job.first_line'], 1)
  const spans = await waitForSpans(r, (spans) => {
    const trace = spans.filter((s) => s.traceId === traceId)
    return trace.some((s) => s.name.startsWith('INSERT import_processes') && isUnder(trace, s, chunk))
      ? trace
      : undefined
  })
  t.ok(
    spans.some((s) => s.name === 'transaction' && isUnder(spans, s, chunk)),
    "the chunk's transactions are under it"
  )
  neverHolds(t, r, ['JOBPROBE-1', EMAIL, GIVEN, 'operations_team_name='])
})

t.test('each payment vendor call and webhook delivery attempt gets a span', async (t) => {
  const r = await receiver(t)
  const vendor = createServer((req, res) => {
    const found = req.url === '/payment-instructions/CARD-7731'
    res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' })
    res.end(found ? JSON.stringify({ reference: 'CARD-7731', type: 'CARD', status: 'ACTIVE', details: {} }) : '{}')
  })
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => vendor.close(() => resolve())))
  const vendorUrl = `http://127.0.0.1:${(vendor.address() as { port: number }).port}`
  const hooks = await webhookReceiver(t)
  const setup = await importSetup(t, {
    env: tracing(r, { WEBHOOK_ALLOW_PRIVATE: '1', PAYMENT_VENDORS: `ACMEPAY=${vendorUrl}` })
  })
  const endpoint = await createEndpoint(setup.app, {
    organisation: setup.tenant.organisation,
    url: hooks.url,
    events: ['import_process.created']
  })
  const res = await setup.app.inject({
    method: 'POST',
    url: '/v1/data-import/batches/',
    headers: { authorization: `Bearer ${setup.tenant.token}` },
    payload: {
      import_supplier: 'ACME_ENERGY',
      operations_team_name: TEAM,
      accounts: [
        {
          account: probeAccount('VENDORPROBE-1'),
          payment_instruction: { vendor: 'ACMEPAY', reference: 'CARD-7731', type: 'CARD' }
        }
      ]
    }
  })
  t.equal(res.json().results?.[0]?.outcome, 'created', res.body)
  const call = await waitForSpans(r, (spans) => spans.find((s) => s.name === 'payment vendor call'))
  t.match(call.attributes, { 'amis.payment_vendor': 'ACMEPAY', 'amis.attempt': 1, 'http.response.status_code': 200 })
  const request = await waitForSpans(r, (spans) =>
    spans.find((s) => s.traceId === call.traceId && s.name === 'POST /v1/data-import/batches/')
  )
  t.ok(isUnder(spansOf(r), call, request), 'the vendor call is under its request')
  const attempt = await waitForSpans(r, (spans) => spans.find((s) => s.name === 'webhook delivery attempt'))
  t.match(attempt.attributes, {
    'amis.webhook.endpoint_id': endpoint.id,
    'amis.webhook.event_type': 'import_process.created',
    'amis.webhook.attempt': 1,
    'amis.webhook.delivered': true,
    'http.response.status_code': 200
  })
  neverHolds(t, r, ['CARD-7731', 'VENDORPROBE-1', hooks.url, vendorUrl, endpoint.secret])
})

t.test("a failed request's spans carry its error's kind, never its message", async (t) => {
  const r = await receiver(t)
  const setup = await importSetup(t, { env: tracing(r) })
  const res = await setup.app.inject({
    method: 'GET',
    url: '/v1/data-import/accounts/ACME_ENERGY/MISSINGPROBE-1/',
    headers: { authorization: `Bearer ${setup.tenant.token}` }
  })
  t.equal(res.statusCode, 404, res.body)
  const request = await waitForSpans(r, (spans) =>
    spans.find((s) => s.name.startsWith('GET /v1/data-import/accounts/') && s.attributes['http.response.status_code'])
  )
  const trace = spansOf(r).filter((s) => s.traceId === request.traceId)
  t.ok(
    trace.some((s) => s.status.code === 2),
    'a span of the request is marked failed'
  )
  t.same(
    trace.filter((s) => s.status.message).map((s) => [s.name, s.status.message]),
    [],
    'no span carries an error message'
  )
})

t.test('with OTEL_EXPORTER_OTLP_ENDPOINT unset nothing is traced or sent', async (t) => {
  const r = await receiver(t)
  // Even with the variables in the process's environment: the configuration handed to the app decides.
  const saved = { ...process.env }
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = r.url
  process.env.OTEL_BSP_SCHEDULE_DELAY = '20'
  t.teardown(() => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT
    delete process.env.OTEL_BSP_SCHEDULE_DELAY
    Object.assign(process.env, saved)
  })
  const setup = await importSetup(t, { captureLogs: true })
  t.equal(setup.config.tracing, undefined)
  t.equal(setup.app.traceRoot, undefined)
  t.notOk(setup.app.hasPlugin('@fastify/otel'), 'the instrumentation is not registered')
  const res = await setup.app.inject({
    method: 'POST',
    url: '/v1/data-import/batches/',
    headers: { authorization: `Bearer ${setup.tenant.token}` },
    payload: {
      import_supplier: 'ACME_ENERGY',
      operations_team_name: TEAM,
      accounts: [{ account: probeAccount('OFF-1') }]
    }
  })
  t.equal(res.statusCode, 200, res.body)
  await sleep(300)
  t.equal(r.posts, 0, 'nothing was sent')
  t.notOk(setup.logs().includes('trace_id'), 'no log line has a trace id')
  const metrics = await setup.app.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: `Bearer ${await operatorToken(setup.app)}` }
  })
  t.notOk(metrics.body.includes('amis_trace_spans'), 'no trace counters')
})

t.test('a collector that never answers slows no request: spans beyond the queue are dropped and counted', async (t) => {
  const r = await receiver(t, 'hang')
  const setup = await importSetup(t, {
    env: tracing(r, {
      OTEL_BSP_MAX_QUEUE_SIZE: '16',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '8',
      OTEL_EXPORTER_OTLP_TIMEOUT: '600000',
      OTEL_BSP_EXPORT_TIMEOUT: '600000'
    })
  })
  const headers = { authorization: `Bearer ${setup.tenant.token}` }
  // The first export is taken and held: the collector is now hanging.
  await setup.app.inject({ method: 'GET', url: '/v1/data-import/error-codes/', headers })
  await waitFor('the collector holds an export', () => r.held > 0, { timeoutMs: 2000, intervalMs: 20 })
  t.equal(r.held, 1, 'the collector holds an export')

  // Answered while the collector holds, within a bound far above their time (a request that
  // waited on the export would wait for ever).
  const all = Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      setup.app.inject({
        method: 'POST',
        url: '/v1/data-import/batches/',
        headers,
        payload: {
          import_supplier: 'ACME_ENERGY',
          operations_team_name: TEAM,
          accounts: [{ account: probeAccount(`HANG-${i}`) }]
        }
      })
    )
  )
  const answers = await Promise.race([all, sleep(30_000).then(() => [])])
  t.equal(answers.length, 50, 'the 50 requests are answered within 30 s')
  t.same(
    answers.map((a) => a.statusCode),
    answers.map(() => 200),
    'all 50 requests are answered while the collector holds its export'
  )
  t.equal(r.held, r.posts, 'the collector answered nothing meanwhile')

  const metrics = await setup.app.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: `Bearer ${await operatorToken(setup.app)}` }
  })
  const dropped = Number(/^amis_trace_spans_dropped_total\{reason="queue_full"\} (\d+)$/m.exec(metrics.body)?.[1])
  t.ok(dropped > 0, `spans dropped while the queue was full are counted (${dropped})`)
  t.match(metrics.body, /^amis_trace_spans_dropped_total\{reason="export_failed"\} 0$/m)
})

t.test('an export the collector refuses is counted as failed', async (t) => {
  // A port nothing listens on: each export fails to connect.
  const r = await receiver(t)
  const setup = await buildTestApp(t, {
    env: tracing({ ...r, url: 'http://127.0.0.1:9' }, { OTEL_EXPORTER_OTLP_TIMEOUT: '300' })
  })
  const token = await operatorToken(setup.app)
  const failed = await waitFor(
    'the metrics count a failed export',
    async () => {
      const metrics = await setup.app.inject({
        method: 'GET',
        url: '/metrics',
        headers: { authorization: `Bearer ${token}` }
      })
      const n = Number(/^amis_trace_spans_dropped_total\{reason="export_failed"\} (\d+)$/m.exec(metrics.body)?.[1])
      return n > 0 && n
    },
    { timeoutMs: 5000 }
  )
  t.ok(failed > 0, `spans of failed exports are counted (${failed})`)
})

t.test('the default protocol is OTLP/HTTP protobuf', async (t) => {
  const r = await receiver(t)
  const setup = await buildTestApp(t, { env: { OTEL_EXPORTER_OTLP_ENDPOINT: r.url, OTEL_BSP_SCHEDULE_DELAY: '20' } })
  await gql(setup.app, '{ __typename }', {}, await operatorToken(setup.app))
  await waitFor('the collector receives an export', () => r.posts > 0, { timeoutMs: 5000 })
  t.equal(r.contentTypes[0], 'application/x-protobuf')
})

t.test('the OTEL_* settings are checked once, at start', async (t) => {
  const base = { NODE_ENV: 'test' }
  t.equal(loadConfig(base).tracing, undefined, 'no endpoint: no traces')
  const on = loadConfig({
    ...base,
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
    OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Basic%20abc,x-scope=tenant',
    OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attributes,deployment.environment.name=test'
  }).tracing!
  t.equal(on.url, 'http://collector:4318/v1/traces')
  t.equal(on.protocol, 'http/protobuf')
  t.same(on.headers, { Authorization: 'Basic abc', 'x-scope': 'tenant' })
  t.same(on.resource, { 'service.name': 'from-attributes', 'deployment.environment.name': 'test' })
  t.equal(
    loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SERVICE_NAME: 'amis-eu' }).tracing!
      .resource['service.name'],
    'amis-eu'
  )
  t.equal(
    loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).tracing,
    undefined,
    'OTEL_SDK_DISABLED=true: no traces'
  )
  t.throws(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }), /OTEL_EXPORTER_OTLP_ENDPOINT/)
  t.throws(
    () => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    /OTEL_EXPORTER_OTLP_PROTOCOL must be one of http\/protobuf, http\/json/
  )
  t.throws(
    () => loadConfig({ ...base, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }),
    /needs OTEL_EXPORTER_OTLP_ENDPOINT/
  )
  t.throws(
    () => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_BSP_MAX_QUEUE_SIZE: '0' }),
    /OTEL_BSP_MAX_QUEUE_SIZE/
  )
})

import t, { type Test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import postgres from 'postgres'
import { sql as dsql } from 'drizzle-orm'
import { WEBHOOK_EVENT_TYPES } from '../schemas/webhooks.js'
import { openPglite } from '../src/db/index.js'
import { exampleAccount, TEAM } from './helpers/accounts.js'
import { TEST_OPERATOR_KEY, TEST_TOKEN_SECRET } from './helpers/app.js'
import { freshDatabase, rowsOf, testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant, gql, operatorToken, type GraphQLResult } from './helpers/graphql.js'
import { remote, startServer, startServers, type Running } from './helpers/server.js'
import { tempDir } from './helpers/temp-dir.js'
import { waitFor } from './helpers/wait.js'
import { webhookReceiver } from './helpers/webhook-receiver.js'

/**
 * Webhooks with real server processes: a server SIGKILLed right after a create answered, restarted
 * on the same database (PostgreSQL, and a PGlite DATA_DIR), delivers the created event; two server
 * processes delivering one endpoint's events on PostgreSQL send each (webhook-id, attempt) once,
 * and every redelivery either process accepts during or right after an attempt.
 */

const SUPPLIER = 'ACME_ENERGY'

async function post(base: string, token: string, path: string, body: unknown) {
  const res = await fetch(`${base}/v1/data-import/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body)
  })
  const text = await res.text()
  return { status: res.status, text, json: () => JSON.parse(text) }
}

const serverEnv = (extra: Record<string, string> = {}) => ({
  TOKEN_SECRET: TEST_TOKEN_SECRET,
  OPERATOR_API_KEY: TEST_OPERATOR_KEY,
  NODE_ENV: 'test',
  TOKEN_RATE_LIMIT_PER_MINUTE: '100000',
  WEBHOOK_ALLOW_PRIVATE: '1',
  ...extra
})

function killAtTeardown(t: Test, server: Running) {
  t.teardown(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
    await server.exit
  })
}

/** How long each wait here may take; an error while asking counts as not yet. */
const WAIT = { timeoutMs: 90_000, ignoreErrors: true }

/** An organisation, its supplier and team, and one endpoint; returns the tenant and the endpoint's secret. */
async function setUp(base: string, url: string, events: readonly string[]) {
  const app = remote(base)
  const tenant = await createTenant(app, 'Acme', SUPPLIER)
  await asOperator(app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
  const made = await gql(
    app,
    'mutation($i: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $i) { id secret } }',
    { i: { organisation: 'Acme', url, events } },
    tenant.token
  )
  if (made.errors) throw new Error('createWebhookEndpoint: ' + JSON.stringify(made.errors))
  const endpoint = made.data!.createWebhookEndpoint as { id: string; secret: string }
  return { tenant, endpoint }
}

type Query = (text: string) => Promise<Array<Record<string, unknown>>>

/** The outbox's events and deliveries (with their attempts), read with SQL. */
async function outbox(query: Query) {
  const events = await query(`select id::int as id, type::text as type, data->>'external_account_number' as external
    from webhook_events order by id`)
  const deliveries = await query(`select d.event_id::int as event_id, d.state::text as state, d.attempts,
      (select coalesce(json_agg(json_build_object('attempt', a.attempt, 'status', a.status) order by a.attempt), '[]')
        from webhook_attempts a where a.delivery_id = d.id) as log
    from webhook_deliveries d order by d.id`)
  return { events, deliveries }
}

t.test('a server SIGKILLed right after a create answered: the restarted one delivers the created event', async (t) => {
  // The receiver is down (503) until the first server is dead.
  let up = false
  const statuses: number[] = []
  const receiver = await webhookReceiver(t, () => {
    const status = up ? 200 : 503
    statuses.push(status)
    return status
  })

  let env: Record<string, string>
  // Reads the database while no server holds it (PGlite: one process owns the DATA_DIR).
  let readDead: <T>(fn: (query: Query) => Promise<T>) => Promise<T>
  if (testDatabaseUrl) {
    const fresh = await freshDatabase()
    await fresh.database.close()
    t.teardown(fresh.drop)
    const sql = postgres(fresh.url!, { max: 1, onnotice: () => {} })
    t.teardown(() => sql.end())
    const query: Query = (text) => sql.unsafe(text) as unknown as Promise<Array<Record<string, unknown>>>
    env = { DATABASE_URL: fresh.url! }
    readDead = (fn) => fn(query)
  } else {
    const dataDir = tempDir(t)
    env = { DATA_DIR: dataDir }
    readDead = async (fn) => {
      const database = await openPglite({ dataDir })
      try {
        return await fn(async (text) => rowsOf<Record<string, unknown>>(await database.db.execute(dsql.raw(text))))
      } finally {
        await database.close()
      }
    }
  }
  // Retries 1 s apart; a 1 s time limit makes a claim's lease 31 s (a kill mid-attempt is waited out).
  env = serverEnv({ ...env, WEBHOOK_RETRY_DELAYS: '1,1,1,1,1', WEBHOOK_TIMEOUT_MS: '1000' })
  if (testDatabaseUrl) env.DATA_DIR = tempDir(t)

  const first = await startServer(env)
  killAtTeardown(t, first)
  const { tenant, endpoint } = await setUp(first.url, receiver.url, ['import_process.created'])
  const external = 'WH-KILL-1'
  const staged = await post(
    first.url,
    tenant.token,
    'account-import-process/create-or-update/',
    exampleAccount({ external_account_number: external })
  )
  t.ok([200, 201].includes(staged.status), `staged: ${staged.status} ${staged.text.slice(0, 200)}`)
  const created = await post(first.url, tenant.token, 'account-import-process/process/', {
    external_account_number: external,
    import_supplier_code: SUPPLIER,
    operations_team_name: TEAM
  })
  first.child.kill('SIGKILL')
  await first.exit
  t.equal(created.status, 201, `created: ${created.text.slice(0, 200)}`)

  const before = await readDead(outbox)
  t.same(
    before.events.map((e) => [e.type, e.external]),
    [['import_process.created', external]],
    'the created event was committed with the create, before the kill'
  )
  t.match(before.deliveries, [{ state: 'PENDING' }], 'its delivery is pending: the receiver was down')
  t.notOk(
    statuses.includes(200),
    `nothing delivered before the kill (receiver answered ${statuses.join(', ') || 'nothing'})`
  )
  const eventId = before.events[0]!.id as number
  const attemptsBefore = Number(before.deliveries[0]!.attempts)

  up = true
  const restartedAt = Date.now()
  const second = await startServer(env)
  killAtTeardown(t, second)
  await waitFor('the receiver answered 200', async () => statuses.includes(200), WAIT)
  t.comment(
    `delivered ${Date.now() - restartedAt} ms after the restart began (attempts before the kill: ${attemptsBefore})`
  )
  const delivered = receiver.received[statuses.indexOf(200)]!
  const bodies = receiver.verified(endpoint.secret)
  t.equal(bodies.length, receiver.received.length, 'every request is signed with the endpoint secret')
  t.equal(delivered.headers['webhook-id'], `msg_${eventId}`, "the webhook-id is the event's")
  t.match(
    bodies[statuses.indexOf(200)],
    {
      type: 'import_process.created',
      data: { import_supplier: SUPPLIER, external_account_number: external }
    },
    'the delivered body: the created event of the account'
  )
  t.ok(
    receiver.received.every((r) => r.headers['webhook-id'] === `msg_${eventId}`),
    'every attempt carried the same webhook-id'
  )

  const deliveries = await waitFor(
    'the delivery recorded DELIVERED',
    async () => {
      const res = await gql(
        remote(second.url),
        'query($e: ID!) { webhookDeliveries(endpointId: $e) { eventId state attempts attemptLog { attempt status } } }',
        { e: endpoint.id },
        tenant.token
      )
      const list = res.data?.webhookDeliveries as Array<{ state: string }> | undefined
      return list?.every((d) => d.state === 'DELIVERED') ? list : undefined
    },
    WAIT
  )
  t.equal(deliveries.length, 1, 'one delivery')
  t.equal(statuses.filter((s) => s === 200).length, 1, 'delivered once')
  second.child.kill('SIGTERM')
  t.equal(await second.exit, 0, 'the second server stops cleanly')
})

/** Sums `amis_webhook_attempts_total` of one server process. */
async function attemptsOf(server: Running): Promise<number> {
  const token = await operatorToken(remote(server.url))
  const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })
  const text = await res.text()
  return text
    .split('\n')
    .filter((l) => l.startsWith('amis_webhook_attempts_total{'))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0)
}

/**
 * Two server processes on one PostgreSQL database, both delivering (WEBHOOK_CONCURRENCY default),
 * one endpoint subscribed to every event; 300 accounts created (each with a note) in batches
 * sent to both. `firstAnswer` is what the receiver answers to an id's first request (200 after).
 */
async function twoServers(t: Test, firstAnswer: 200 | 500) {
  const fresh = await freshDatabase()
  await fresh.database.close()
  t.teardown(fresh.drop)
  const sql = postgres(fresh.url!, { max: 1, onnotice: () => {} })
  t.teardown(() => sql.end())
  const query: Query = (text) => sql.unsafe(text) as unknown as Promise<Array<Record<string, unknown>>>

  const seen = new Map<string, number>()
  const ids: string[] = []
  const receiver = await webhookReceiver(t, (n) => {
    const id = String(receiver.received[n - 1]!.headers['webhook-id'])
    ids.push(id)
    const times = (seen.get(id) ?? 0) + 1
    seen.set(id, times)
    return times === 1 ? firstAnswer : 200
  })
  const servers = await startServers(t, fresh.url!, 2, serverEnv({ WEBHOOK_RETRY_DELAYS: '0.2,0.2,0.2,0.2' }))
  const { tenant, endpoint } = await setUp(servers[0]!.url, receiver.url, WEBHOOK_EVENT_TYPES)

  const n = 300
  const entries = Array.from({ length: n }, (_, i) => {
    const x = `WH-${String(i).padStart(4, '0')}`
    return { account: exampleAccount({ external_account_number: x }), notes: [{ body: `note of ${x}` }] }
  })
  const answers = await Promise.all(
    [0, 1, 2].map((b) =>
      post(servers[b % 2]!.url, tenant.token, 'batches/', {
        import_supplier: SUPPLIER,
        operations_team_name: TEAM,
        accounts: entries.slice(b * 100, (b + 1) * 100)
      })
    )
  )
  t.same(
    answers.map((a) => [a.status, a.status === 200 ? a.json().counts.created : a.text.slice(0, 200)]),
    [
      [200, 100],
      [200, 100],
      [200, 100]
    ],
    'three batches of 100 accounts created'
  )

  const started = Date.now()
  await waitFor(
    'every delivery DELIVERED',
    async () => {
      const [row] = await query(`select count(*)::int as n from webhook_deliveries where state <> 'DELIVERED'`)
      return row!.n === 0
    },
    WAIT
  )
  // A duplicate would come from a second claim of an attempt already made: give it time to show.
  await sleep(1500)
  t.comment(`${ids.length} requests received, queue drained ${Date.now() - started} ms after the batches answered`)

  const [counts] = await query(`select
      (select count(*)::int from webhook_events) as events,
      (select count(*)::int from webhook_events where type = 'import_process.created') as created,
      (select count(*)::int from webhook_deliveries) as deliveries,
      (select count(*)::int from webhook_attempts) as attempts,
      (select count(*)::int from webhook_deliveries where attempts <> ${firstAnswer === 200 ? 1 : 2}) as other_attempts`)
  t.equal(counts!.created, n, `${n} created events`)
  t.ok((counts!.events as number) >= n, `${counts!.events} events in the outbox`)
  t.equal(counts!.deliveries, counts!.events, 'one delivery per event (one endpoint)')
  const perId = firstAnswer === 200 ? 1 : 2
  t.equal(seen.size, counts!.events, 'every event arrived: distinct webhook-ids = webhook_events rows')
  t.same(
    [...seen].filter(([, times]) => times !== perId),
    [],
    `each webhook-id arrived exactly ${perId === 1 ? 'once' : 'twice'}`
  )
  t.equal(ids.length, perId * (counts!.events as number), 'requests received')
  t.equal(counts!.attempts, ids.length, 'one attempt row per request')
  t.equal(counts!.other_attempts, 0, `every delivery took ${perId} attempt(s)`)
  const expectedIds = (await query(`select 'msg_' || id as id from webhook_events order by id`)).map((r) => r.id)
  t.same([...seen.keys()].sort(), (expectedIds as string[]).sort(), "the webhook-ids are the events' ids")
  if (firstAnswer === 500) {
    const statuses = await query(`select attempt, status, count(*)::int as n from webhook_attempts
      group by 1, 2 order by 1, 2`)
    t.same(
      statuses.map((r) => [r.attempt, r.status, r.n]),
      [
        [1, 500, counts!.events],
        [2, 200, counts!.events]
      ],
      'attempt 1 answered 500, attempt 2 200, for every delivery'
    )
  }
  t.equal(receiver.verified(endpoint.secret).length, ids.length, 'every request verifies with the secret')
  const made = await Promise.all(servers.map(attemptsOf))
  t.ok(
    made.every((m) => m > 0),
    `both server processes delivered (${made.join(' + ')} attempts)`
  )
  t.equal(
    made.reduce((a, b) => a + b, 0),
    ids.length,
    'the processes counted as many attempts as the receiver got'
  )
}

/**
 * Two server processes delivering one endpoint on PostgreSQL; each request of a delivery asks the
 * other process for a redelivery, in turn while the attempt waits for its answer and right after
 * the answer (before the attempt is recorded): every redelivery arrives, once.
 */
async function redeliveredAcrossProcesses(t: Test) {
  const rounds = 16
  const fresh = await freshDatabase()
  await fresh.database.close()
  t.teardown(fresh.drop)
  const servers = await startServers(t, fresh.url!, 2, serverEnv())
  // The delivery redelivered, once its first attempt is recorded.
  const delivery: { id?: string } = {}
  const answers: Array<Promise<GraphQLResult>> = []
  const redeliver = (n: number) => {
    const asked = gql(
      remote(servers[n % 2]!.url),
      'mutation($id: ID!) { redeliverWebhook(input: {deliveryId: $id}) { state } }',
      { id: delivery.id },
      tenant.token
    )
    answers.push(asked)
    return asked
  }
  // Request 1 is the first attempt, request 2 the redelivery asked once it was recorded; each of
  // requests 2 to rounds + 1 asks for one more: the even ones before answering, the odd ones after.
  const asks = (n: number) => delivery.id !== undefined && n >= 2 && n <= rounds + 1
  const receiver = await webhookReceiver(
    t,
    (n) => (asks(n) && n % 2 === 0 ? redeliver(n).then(() => 200) : 200),
    (n) => {
      if (asks(n) && n % 2 === 1) void redeliver(n)
    }
  )
  const { tenant, endpoint } = await setUp(servers[0]!.url, receiver.url, ['import_process.created'])
  const external = 'WH-REDELIVER-1'
  const staged = await post(
    servers[1]!.url,
    tenant.token,
    'account-import-process/create-or-update/',
    exampleAccount({ external_account_number: external })
  )
  t.equal(staged.status, 201, staged.text.slice(0, 200))
  const created = await post(servers[1]!.url, tenant.token, 'account-import-process/process/', {
    external_account_number: external,
    import_supplier_code: SUPPLIER,
    operations_team_name: TEAM
  })
  t.equal(created.status, 201, created.text.slice(0, 200))
  const deliveries = (state: string) => async () => {
    const res = await gql(
      remote(servers[0]!.url),
      'query($e: ID!) { webhookDeliveries(endpointId: $e) { id state attempts } }',
      { e: endpoint.id },
      tenant.token
    )
    const [delivery] = (res.data?.webhookDeliveries ?? []) as Array<{ id: string; state: string; attempts: number }>
    return delivery?.state === state ? delivery : undefined
  }
  delivery.id = (await waitFor('the first attempt recorded', deliveries('DELIVERED'), WAIT)).id
  await redeliver(1)

  const expected = rounds + 2
  await receiver.waitFor(expected, 60_000).catch((err: Error) => t.fail(err.message))
  const last = await waitFor(
    'the last redelivery recorded',
    async () => {
      const delivery = await deliveries('DELIVERED')()
      return delivery !== undefined && delivery.attempts >= expected ? delivery : undefined
    },
    WAIT
  )
  await sleep(1000)
  t.equal(receiver.received.length, expected, `${rounds + 1} redeliveries, each sent once`)
  t.equal(last.attempts, expected)
  t.same(
    (await Promise.all(answers)).map((a) => a.errors ?? a.data?.redeliverWebhook?.state),
    Array(rounds + 1).fill('PENDING'),
    'every redelivery was accepted'
  )
  const made = await Promise.all(servers.map(attemptsOf))
  t.equal(
    made.reduce((a, b) => a + b, 0),
    expected,
    `the processes made ${made.join(' + ')} attempts`
  )
}

if (!testDatabaseUrl) {
  t.skip(
    'two server processes delivering one endpoint need the PostgreSQL server (set TEST_DATABASE_URL): a PGlite DATA_DIR is owned by one process',
    () => {}
  )
} else {
  t.test('PostgreSQL, two server processes, the receiver always 200: each event arrives exactly once', (t) =>
    twoServers(t, 200)
  )
  t.test('PostgreSQL, two server processes, the first request of each id 500: each arrives exactly twice', (t) =>
    twoServers(t, 500)
  )
  t.test('PostgreSQL, two server processes: a redelivery asked for during or right after an attempt arrives', (t) =>
    redeliveredAcrossProcesses(t)
  )
}

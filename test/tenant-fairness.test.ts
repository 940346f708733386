import t, { type Test } from 'tap'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { daysFromToday, exampleAccount, importClient, TEAM } from './helpers/accounts.js'
import { buildTestApp } from './helpers/app.js'
import { testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant, type Tenant } from './helpers/graphql.js'

/**
 * One organisation's requests (stalled uploads, many large batches) do not make another
 * organisation's requests wait: each of B's answers comes within about a second of its time alone.
 */

const POOL = 2
const SLACK_MS = 1000

async function listening(t: Test) {
  const built = await buildTestApp(t, { env: { DATABASE_POOL_SIZE: String(POOL), REQUEST_TIMEOUT_SECONDS: '60' } })
  await built.app.listen({ host: '127.0.0.1', port: 0 })
  const port = (built.app.server.address() as AddressInfo).port
  await asOperator(built.app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
  return { ...built, base: `http://127.0.0.1:${port}`, port }
}

const batchBody = (tenant: Tenant, prefix: string, n: number) => ({
  import_supplier: tenant.supplier,
  operations_team_name: TEAM,
  accounts: Array.from({ length: n }, (_, i) => ({
    account: exampleAccount({ external_account_number: `${prefix}-${i}`, import_supplier: tenant.supplier }),
    notes: [{ body: `Moved ${prefix}-${i}.` }],
    transactions: [{ transaction_id: `W-${i}`, transaction_date: daysFromToday(-1), amount: '1.50', type: 'CREDIT' }]
  }))
})

/** B's three kinds of request, each timed (ms) over real HTTP; every one must succeed. */
function bRequests(base: string, b: Tenant) {
  let n = 0
  const call = async (path: string, body: unknown, status: number) => {
    const started = performance.now()
    const res = await fetch(`${base}/v1/data-import/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${b.token}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000)
    })
    const text = await res.text()
    if (res.status !== status) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`)
    return performance.now() - started
  }
  const ref = { import_supplier: b.supplier, external_account_number: 'B-1' }
  return {
    note: () => call('notes/create/', { ...ref, notes: [{ body: `note ${++n}` }] }, 201),
    transaction: () =>
      call(
        'transactions/create/',
        {
          ...ref,
          transactions: [
            { transaction_id: `T-${++n}`, transaction_date: daysFromToday(-1), amount: '2.00', type: 'CREDIT' }
          ]
        },
        201
      ),
    batch: () => call('batches/', batchBody(b, `BB-${++n}`, 5), 200)
  }
}

type Timed = ReturnType<typeof bRequests>

/** The slowest of three runs of each of B's requests. */
async function timings(requests: Timed): Promise<Record<keyof Timed, number>> {
  const out = { note: 0, transaction: 0, batch: 0 }
  for (let i = 0; i < 3; i++) {
    for (const kind of ['note', 'transaction', 'batch'] as const) {
      out[kind] = Math.max(out[kind], await requests[kind]())
    }
  }
  return out
}

async function tenants(t: Test) {
  const setup = await listening(t)
  const a = await createTenant(setup.app, 'Acme', 'ACME_ENERGY')
  const b = await createTenant(setup.app, 'Beta', 'BETA_POWER')
  const bClient = importClient(setup.app, b)
  for (const [tenant, client] of [
    [a, importClient(setup.app, a)],
    [b, bClient]
  ] as const) {
    const external = tenant === a ? 'A-1' : 'B-1'
    const staged = await client.stage(
      exampleAccount({ external_account_number: external, import_supplier: tenant.supplier })
    )
    if (staged.statusCode !== 201) throw new Error(staged.body)
    const created = await client.create(external)
    if (created.statusCode !== 201) throw new Error(created.body)
  }
  const requests = bRequests(setup.base, b)
  await timings(requests) // warm: compiled validators, prepared statements
  return { ...setup, a, b, requests, alone: await timings(requests) }
}

function compare(t: Test, alone: Record<string, number>, loaded: Record<string, number>, what: string) {
  for (const kind of Object.keys(alone)) {
    t.ok(
      loaded[kind]! <= alone[kind]! + SLACK_MS,
      `B's ${kind} ${what}: ${Math.round(loaded[kind]!)} ms (alone ${Math.round(alone[kind]!)} ms)`
    )
  }
}

/** A's authenticated uploads to `paths`, stalled after a few bytes of their bodies. */
async function stallUploads(t: Test, port: number, a: Tenant, paths: string[]): Promise<void> {
  const sockets: Socket[] = []
  t.teardown(() => {
    for (const s of sockets) s.destroy()
  })
  for (const path of paths) {
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.write(
      `POST /v1/data-import/${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.token}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"import_supplier": "ACME_ENERGY", '
    )
    sockets.push(socket)
  }
  await sleep(300)
}

const STALLED = ['notes/create/', 'transactions/create/', 'batches/', 'historical-statements/create/']

t.test("stalled uploads of one organisation do not delay another's writes", async (t) => {
  for (const count of [POOL, 2 * POOL]) {
    t.test(`${count} stalled uploads and a stalled batch`, async (t) => {
      const { port, a, requests, alone } = await tenants(t)
      const paths = Array.from({ length: count }, (_, i) => STALLED[i % STALLED.length]!).concat('batches/')
      await stallUploads(t, port, a, paths)
      compare(t, alone, await timings(requests), `with ${paths.length} of A's uploads stalled`)
    })
  }
})

t.test(
  "many large batches of one organisation do not delay another's writes",
  {
    skip: testDatabaseUrl
      ? false
      : "the embedded database runs one transaction at a time: another organisation's batch waits for the running one (PostgreSQL only)"
  },
  async (t) => {
    const { base, a, requests, alone } = await tenants(t)
    const sent = Array.from({ length: 20 }, (_, i) =>
      fetch(`${base}/v1/data-import/batches/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${a.token}` },
        body: JSON.stringify(batchBody(a, `AB${i}`, 100)),
        signal: AbortSignal.timeout(120_000)
      }).then(async (res) => ({
        status: res.status,
        counts: ((await res.json()) as { counts: { created: number } }).counts
      }))
    )
    await sleep(200)
    compare(t, alone, await timings(requests), 'while A sends 20 batches of 100 accounts')
    const answers = await Promise.all(sent)
    t.same(
      answers.map((x) => x.status),
      Array(20).fill(200),
      "and every one of A's batches is answered"
    )
    t.same(
      answers.reduce((n, x) => n + x.counts.created, 0),
      2000,
      'creating every account'
    )
  }
)

t.test(
  "many single requests of one organisation do not delay another's writes",
  { skip: testDatabaseUrl ? false : 'the embedded database runs one transaction at a time (PostgreSQL only)' },
  async (t) => {
    const { base, a, requests, alone } = await tenants(t)
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${a.token}` }
    const sent = Array.from({ length: 200 }, (_, i) =>
      fetch(`${base}/v1/data-import/account-import-process/create-or-update/`, {
        method: 'POST',
        headers,
        body: JSON.stringify(exampleAccount({ external_account_number: `AS-${i}` })),
        signal: AbortSignal.timeout(120_000)
      }).then((res) => res.status)
    )
    await sleep(100)
    compare(t, alone, await timings(requests), 'while A stages 200 accounts at once')
    t.same(await Promise.all(sent), Array(200).fill(201), "and every one of A's accounts is staged")
  }
)

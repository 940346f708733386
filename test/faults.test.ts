import t, { type Test } from 'tap'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, TEST_OPERATOR_KEY, TEST_TOKEN_SECRET } from './helpers/app.js'
import { daysFromToday, exampleAccount, importClient, TEAM } from './helpers/accounts.js'
import { freshDatabase, holdLocks, tableCounts, testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant, type Tenant } from './helpers/graphql.js'
import { clusterMissing, startCluster, type Cluster } from './helpers/formation.js'
import { startServer, type Running } from './helpers/server.js'
import { waitFor } from './helpers/wait.js'

/**
 * Fault injection on the PostgreSQL server: a database connection dropped in the middle of a
 * create or of a post-import write, a server SIGKILLed mid-request, and the database restarted
 * under a running server. After each: nothing partial is stored, nothing is stuck IN_PROGRESS,
 * the server recovers by itself and a retry succeeds as if the fault never happened.
 *
 * Writes are made slow without any hook in the service: the test holds row locks from its own
 * connection (`FOR UPDATE`), so the service's statement waits inside its transaction, where its
 * backend can be found in `pg_stat_activity` and terminated.
 */

const ACMEPAY = 'ACMEPAY'

/** A payment vendor on loopback that knows every reference as an active card. */
async function startVendor(t: Test): Promise<string> {
  const server = createServer(function vendor(req, res) {
    const reference = decodeURIComponent((req.url ?? '').split('/').pop() ?? '')
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ reference, type: 'CARD', status: 'ACTIVE', details: { last4: '4242' } }))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** The app on a fresh database of its own, one tenant and the team; `sql` is the test's own connection. */
async function setup(t: Test) {
  const fresh = await freshDatabase()
  const vendorUrl = await startVendor(t)
  const { app, database } = await buildTestApp(t, {
    database: fresh.database,
    env: { PAYMENT_VENDORS: `${ACMEPAY}=${vendorUrl}` }
  })
  const sql = postgres(fresh.url!, { max: 2, onnotice: () => {} })
  t.teardown(async () => {
    await sql.end()
    await database.close()
    await fresh.drop()
  })
  const tenant = await createTenant(app, 'Acme', 'ACME_ENERGY')
  await asOperator(app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
  const client = importClient(app, tenant)

  /** Stages and creates the example account as `external`; its service account and ledger numbers. */
  async function account(external: string) {
    const staged = await client.stage(exampleAccount({ external_account_number: external }))
    if (staged.statusCode !== 201) throw new Error('stage failed: ' + staged.body)
    const created = await client.create(external)
    if (created.statusCode !== 201) throw new Error('create failed: ' + created.body)
    const [ids] = await sql`select a.id as account_id, a.import_process_id as process_id from accounts a
      where a.service_account_number = ${created.json().service_account_number}`
    return {
      external,
      serviceAccountNumber: created.json().service_account_number as string,
      ledgerNumber: created.json().ledgers[0].ledger_number as string,
      accountId: ids!.account_id as string,
      processId: Number(ids!.process_id)
    }
  }

  const post = (path: string, external: string, fields: Record<string, unknown>) =>
    app.inject({
      method: 'POST',
      url: `/v1/data-import/${path}`,
      headers: { authorization: `Token ${tenant.token}` },
      payload: { import_supplier: 'ACME_ENERGY', external_account_number: external, ...fields }
    })

  return { app, database, url: fresh.url!, sql, tenant, client, account, post }
}

/** The backend of this database waiting on a row lock (the service's blocked statement). */
async function blockedBackend(sql: postgres.Sql): Promise<number> {
  return waitFor(
    'a statement waits on a lock',
    async () => {
      const rows = await sql`select pid from pg_stat_activity where datname = current_database()
      and state = 'active' and wait_event_type = 'Lock' and pid <> pg_backend_pid()`
      return rows.length === 1 ? Number(rows[0]!.pid) : undefined
    },
    { timeoutMs: 20_000, ignoreErrors: true }
  )
}

async function terminate(t: Test, sql: postgres.Sql, pid: number) {
  const [row] = await sql`select pg_terminate_backend(${pid}) as done`
  t.ok(row!.done, `backend ${pid} terminated`)
  await waitFor(
    'the terminated backend is gone',
    async () => (await sql`select 1 from pg_stat_activity where pid = ${pid}`).length === 0,
    { timeoutMs: 20_000, ignoreErrors: true }
  )
}

/** Every table's row count and every ledger's balance: what a failed request must leave unchanged. */
async function snapshot(database: Parameters<typeof tableCounts>[0], sql: postgres.Sql) {
  const balances = await sql`select ledger_number, balance::text as balance from ledgers order by ledger_number`
  return { counts: await tableCounts(database), balances: balances.map((b) => `${b.ledger_number}=${b.balance}`) }
}

const delta = (after: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(
    Object.keys(after)
      .map((k) => [k, after[k]! - (before[k] ?? 0)])
      .filter(([, d]) => d !== 0)
  )

/** A post-import request, built for one account (ids only have to be unique per account). */
interface WriteCase {
  name: string
  path: string
  fields: (a: { ledgerNumber: string }) => Record<string, unknown>
}

const writeCases: WriteCase[] = [
  {
    name: 'notes',
    path: 'notes/create/',
    fields: () => ({
      notes: [
        { body: 'Moved from the legacy CRM.', is_pinned: true, created_at: '2026-11-01T09:00:00Z' },
        { document_paths: [{ document_path: '/letters/welcome.pdf' }], created_at: '2026-11-01T09:00:00Z' }
      ]
    })
  },
  {
    name: 'transactions',
    path: 'transactions/create/',
    fields: () => ({
      transactions: [
        { transaction_id: 'W-1', transaction_date: daysFromToday(-1), amount: '19.99', type: 'CHARGE' },
        // Dated before the open statement: moved into it, with a pinned note listing it.
        { transaction_id: 'W-0', transaction_date: '2026-09-12', amount: 5, type: 'CREDIT' }
      ]
    })
  },
  {
    name: 'historical agreements',
    path: 'historical-agreements/create/',
    fields: () => ({
      agreements: [
        {
          supply_point_identifier: '1200012345678',
          tariff_code: 'E-1R-VAR-19-01-01',
          effective_from: '2019-01-01',
          effective_to: '2021-03-01'
        }
      ]
    })
  },
  {
    name: 'historical statements',
    path: 'historical-statements/create/',
    fields: () => ({
      statements: [
        {
          statement_id: 'ST-2025-01',
          bill_period_from_date: '2025-01-01',
          bill_period_to_date: '2025-01-31',
          issued_date: '2025-02-03',
          number: 'INV-1',
          gross_amount: 53.5,
          statement_path: '/statements/2025/01.pdf'
        }
      ]
    })
  },
  {
    name: 'historical billing documents',
    path: 'historical-billing-documents/create/',
    fields: (a) => ({
      ledger_code: 'ENERGY',
      ledger_number: a.ledgerNumber,
      billing_document_type: 'PERIOD_BASED',
      historical_billing_documents: [
        {
          billing_document_identifier: 'BILL-2025-03',
          billing_document_type: 'PERIOD_BASED',
          issued_date: '2025-04-02',
          bill_period_from_date: '2025-03-01',
          bill_period_to_date: '2025-03-31',
          transactions: [{ transaction_id: 'B-1', transaction_date: '2025-03-31', type: 'CHARGE', amount: '53.24' }]
        }
      ],
      additional_historical_transactions: [
        {
          transaction_id: 'B-2',
          transaction_date: '2025-04-10',
          type: 'PAYMENT',
          amount: '53.24',
          reference: 'DD-202504',
          payment_type: 'DD_REGULAR_COLLECTION'
        }
      ]
    })
  },
  {
    name: 'payment instruction',
    path: 'payment-instruction/create/',
    fields: () => ({ vendor: ACMEPAY, reference: 'pm_1Nx2yZ', type: 'CARD' })
  }
]

/**
 * Where the write is held: `account` blocks its first statement (the account's row lock), `event`
 * its last one (the event's foreign-key check on the import process), after every other write of
 * the request has run in its transaction.
 */
const holds = {
  account: (a: { accountId: string }) => (sql: postgres.ReservedSql) =>
    sql`select id from accounts where id = ${a.accountId} for update`,
  event: (a: { processId: number }) => (sql: postgres.ReservedSql) =>
    sql`select id from import_processes where id = ${a.processId} for update`
}

/** A response body with the account's own identifiers replaced, to compare two accounts' answers. */
function neutral(body: string, a: { external: string; serviceAccountNumber: string }): unknown {
  return body
    ? JSON.parse(body.replaceAll(a.external, '<external>').replaceAll(a.serviceAccountNumber, '<account>'))
    : body
}

async function httpPost(server: Running, tenant: Tenant, path: string, fields: Record<string, unknown>) {
  const res = await fetch(`${server.url}/v1/data-import/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Token ${tenant.token}` },
    body: JSON.stringify({ import_supplier: 'ACME_ENERGY', ...fields })
  })
  return { status: res.status, body: await res.text() }
}

function serverEnv(url: string, dataDir: string): Record<string, string> {
  return {
    DATABASE_URL: url,
    DATA_DIR: dataDir,
    TOKEN_SECRET: TEST_TOKEN_SECRET,
    OPERATOR_API_KEY: TEST_OPERATOR_KEY,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info'
  }
}

async function ready(app: FastifyInstance) {
  return (await app.inject({ method: 'GET', url: '/readyz' })).statusCode
}

if (!testDatabaseUrl) {
  t.skip('fault injection runs against the PostgreSQL server (set TEST_DATABASE_URL)', () => {})
} else {
  t.test('connection dropped mid-write', async (t) => {
    const s = await setup(t)

    t.test('a create: nothing created, not stuck, a retry succeeds', async (t) => {
      const staged = await s.client.stage(exampleAccount({ external_account_number: 'F-CREATE' }))
      t.equal(staged.statusCode, 201)
      const before = await snapshot(s.database, s.sql)
      // The account insert's foreign-key check on the team waits for this lock.
      const release = await holdLocks(
        t,
        s.url,
        (sql) => sql`select id from operations_teams where name = ${TEAM} for update`
      )
      const pending = s.client.create('F-CREATE')
      await terminate(t, s.sql, await blockedBackend(s.sql))
      const res = await pending
      t.equal(res.statusCode, 503, res.body)
      t.equal(res.json().code, 'service_unavailable', 'the connection lost: send it again')
      t.equal(res.headers['retry-after'], '5')
      await release()
      const after = await snapshot(s.database, s.sql)
      t.same(
        delta(after.counts, before.counts),
        { import_events: 2 },
        'only the CREATE_ATTEMPTED and CREATE_FAILED events'
      )
      t.same(after.balances, before.balances)
      const status = (await s.client.status('F-CREATE')).json()
      t.equal(status.status, 'UNKNOWN', 'not stuck IN_PROGRESS')
      t.equal(status.latest_error?.errors?.[0]?.code, 'service_unavailable', 'the failure is the latest error')
      t.equal(await ready(s.app), 200, '/readyz is green')
      const retry = await s.client.create('F-CREATE')
      t.equal(retry.statusCode, 201, retry.body)
      t.equal((await s.client.status('F-CREATE')).json().status, 'COMPLETED')
      const summary = (await s.client.summary('F-CREATE')).json()
      t.equal(summary.ledgers[0].balance, '6.26', 'the balance of a clean create')
    })

    let n = 0
    for (const c of writeCases) {
      for (const at of ['account', 'event'] as const) {
        t.test(
          `${c.name}, held at the ${at === 'account' ? 'first' : 'last'} statement: nothing stored, a retry succeeds once`,
          async (t) => {
            n++
            // A control account gets the same request once, cleanly: the faulted one must end up the same.
            const control = await s.account(`F-CONTROL-${n}`)
            const before = await snapshot(s.database, s.sql)
            const clean = await s.post(c.path, control.external, c.fields(control))
            t.equal(clean.statusCode, 201, clean.body)
            const cleanDelta = delta((await snapshot(s.database, s.sql)).counts, before.counts)
            const cleanBalance = (await s.client.summary(control.external)).json().ledgers[0].balance

            const a = await s.account(`F-WRITE-${n}`)
            const start = await snapshot(s.database, s.sql)
            const release = await holdLocks(t, s.url, holds[at](a))
            const pending = s.post(c.path, a.external, c.fields(a))
            await terminate(t, s.sql, await blockedBackend(s.sql))
            const res = await pending
            t.equal(res.statusCode, 503, res.body)
            t.equal(res.json().code, 'service_unavailable')
            await release()
            t.same(await snapshot(s.database, s.sql), start, 'nothing of it stored, the balance unchanged')
            t.equal(await ready(s.app), 200, '/readyz is green')

            const retry = await s.post(c.path, a.external, c.fields(a))
            t.equal(retry.statusCode, 201, retry.body)
            t.same(neutral(retry.body, a), neutral(clean.body, control), 'the answer of a first request')
            const afterRetry = await snapshot(s.database, s.sql)
            t.same(delta(afterRetry.counts, start.counts), cleanDelta, 'the rows of one request')
            t.equal(
              (await s.client.summary(a.external)).json().ledgers[0].balance,
              cleanBalance,
              'the balance of one request'
            )
            const again = await s.post(c.path, a.external, c.fields(a))
            t.equal(again.statusCode, 201, again.body)
            t.same(await snapshot(s.database, s.sql), afterRetry, 'a second retry changes nothing')
          }
        )
      }
    }
  })

  t.test('a server SIGKILLed mid-write leaves nothing; another server takes the retry', async (t) => {
    const s = await setup(t)
    const a = await s.account('F-KILL')
    const transactions = writeCases.find((c) => c.name === 'transactions')!
    const dir = mkdtempSync(join(tmpdir(), 'amis-faults-'))
    const servers: Running[] = []
    t.teardown(async () => {
      for (const server of servers) {
        if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
      }
      await Promise.all(servers.map((server) => server.exit))
      rmSync(dir, { recursive: true, force: true })
    })
    const first = await startServer(serverEnv(s.url, join(dir, 'a')))
    servers.push(first)
    const start = await snapshot(s.database, s.sql)
    // Held at the last statement: every other write of the request has run when the server dies.
    const release = await holdLocks(t, s.url, holds.event(a))
    const doomed = httpPost(first, s.tenant, transactions.path, {
      external_account_number: a.external,
      ...transactions.fields(a)
    }).catch(() => 'connection lost')
    const pid = await blockedBackend(s.sql)
    first.child.kill('SIGKILL')
    await first.exit
    t.equal(await doomed, 'connection lost')
    await release()
    // The killed server's backend gets its lock, finds its client gone, and rolls back.
    await waitFor(
      "the killed server's backend is gone",
      async () => (await s.sql`select 1 from pg_stat_activity where pid = ${pid}`).length === 0,
      { timeoutMs: 20_000, ignoreErrors: true }
    )
    t.same(await snapshot(s.database, s.sql), start, 'nothing of it stored, the balance unchanged')

    const second = await startServer(serverEnv(s.url, join(dir, 'b')))
    servers.push(second)
    const retry = await httpPost(second, s.tenant, transactions.path, {
      external_account_number: a.external,
      ...transactions.fields(a)
    })
    t.equal(retry.status, 201, retry.body)
    t.same(
      JSON.parse(retry.body).results.map((r: { status: string }) => r.status),
      ['TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_ADDED_TO_ACCOUNT']
    )
    t.equal((await s.client.summary(a.external)).json().ledgers[0].balance, '-8.73', '6.26 - 19.99 + 5, once')
  })

  t.test(
    'the database restarted under a running server: /readyz red, then green by itself, requests succeed',
    async (t) => {
      const pg = await throwawayCluster(t)
      if (!pg) return
      const dir = mkdtempSync(join(tmpdir(), 'amis-faults-'))
      const server = await startServer(serverEnv(pg.url(), dir))
      t.teardown(async () => {
        if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
        await server.exit
        rmSync(dir, { recursive: true, force: true })
      })
      const call = (path: string, init: RequestInit = {}, token?: string) =>
        fetch(server.url + path, {
          ...init,
          headers: { 'content-type': 'application/json', ...(token ? { authorization: `Token ${token}` } : {}) }
        })
      const gql = async (query: string, token?: string) =>
        (await (
          await fetch(server.url + '/graphql', {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
            body: JSON.stringify({ query })
          })
        ).json()) as any
      const op = (await gql(`mutation { obtainToken(input: {APIKey: "${TEST_OPERATOR_KEY}"}) { token } }`)).data
        .obtainToken.token
      await gql('mutation { createOrganisation(input: {name: "Acme"}) { id } }', op)
      const key = (await gql('mutation { createApiKey(input: {organisation: "Acme"}) { key } }', op)).data.createApiKey
        .key
      await gql('mutation { createImportSupplier(input: {code: "ACME_ENERGY", organisation: "Acme"}) { code } }', op)
      await gql(`mutation { createOperationsTeam(input: {name: "${TEAM}"}) { id } }`, op)
      const token = (await gql(`mutation { obtainToken(input: {APIKey: "${key}"}) { token } }`)).data.obtainToken
        .token as string
      const stage = (external: string) =>
        call(
          '/v1/data-import/account-import-process/create-or-update/',
          {
            method: 'POST',
            body: JSON.stringify(exampleAccount({ external_account_number: external }))
          },
          token
        )
      const create = (external: string) =>
        call(
          '/v1/data-import/account-import-process/process/',
          {
            method: 'POST',
            body: JSON.stringify({
              external_account_number: external,
              import_supplier_code: 'ACME_ENERGY',
              operations_team_name: TEAM
            })
          },
          token
        )

      t.equal((await stage('DB-1')).status, 201)
      t.equal((await call('/readyz')).status, 200)

      await pg.stop('fast')
      t.equal((await call('/readyz')).status, 503, '/readyz is red while the database is down')
      const down = await stage('DB-2')
      t.equal(down.status, 503, 'a request while the database is down: 503, send it again')
      t.equal(down.headers.get('retry-after'), '5')
      t.equal(((await down.json()) as any).code, 'service_unavailable')
      t.equal((await call('/healthz')).status, 200, 'the process stays alive')

      await pg.start()
      await waitFor('/readyz is green again', async () => (await call('/readyz')).status === 200, {
        timeoutMs: 30_000,
        ignoreErrors: true
      })
      const created = await create('DB-1')
      t.equal(created.status, 201, 'the pool reconnected: ' + (await created.text()))
      t.equal((await stage('DB-2')).status, 201, 'the request that failed succeeds when retried')
      const status = (await (
        await call('/v1/data-import/account-transfer-status/ACME_ENERGY/DB-2/', {}, token)
      ).json()) as any
      t.equal(status.status, 'UNKNOWN')
    }
  )
}

/**
 * A PostgreSQL server of the test's own (the machine's shared server is used by other test files
 * at the same time, so it is never restarted), or a skip saying why there cannot be one.
 */
async function throwawayCluster(t: Test): Promise<Cluster | undefined> {
  const missing = clusterMissing()
  if (missing !== undefined) {
    t.skip(`not run: no PostgreSQL server of our own can be made: ${missing}`, () => {})
    return undefined
  }
  return startCluster(t)
}

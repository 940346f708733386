import t, { type Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { count } from 'drizzle-orm'
import { accounts, importEvents, importProcesses } from '../drizzle/schema/index.js'
import { buildSharedTestApp, TEST_OPERATOR_KEY, TEST_TOKEN_SECRET } from './helpers/app.js'
import { codes, exampleAccount, importClient, TEAM } from './helpers/accounts.js'
import { holdLocks, testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { startServer, type Running } from './helpers/server.js'
import { waitFor } from './helpers/wait.js'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * The concurrency guarantees of on the PostgreSQL server (PGlite runs one transaction at a
 * time and one server per data folder, so there is nothing to race there).
 *
 * A create is made slow without any test hook in the service: the test holds `FOR UPDATE` on the
 * operations team's row, which blocks the foreign-key check of the account insert until released.
 */

async function setup(t: Test) {
  const { app, database, url } = await buildSharedTestApp(t)
  const fresh = { url }
  const tenant = await createTenant(app, 'Acme', 'ACME_ENERGY')
  await asOperator(app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
  const client = importClient(app, tenant)
  const stageMany = async (...externals: string[]) => {
    for (const external of externals) {
      const res = await client.stage(exampleAccount({ external_account_number: external }))
      t.equal(res.statusCode, 201, res.body)
    }
  }
  const accountCount = async () => (await database.db.select({ n: count() }).from(accounts))[0]!.n
  const setLimit = (max: number | null) =>
    asOperator(
      app,
      'mutation($m: Int) { updateImportSupplier(input: {code: "ACME_ENERGY", maxConcurrentProcessing: $m}) { code } }',
      { m: max }
    )

  /** Holds the team row locked until `release()`: creates block inside their transaction. */
  const holdTeam = () =>
    holdLocks(t, fresh.url!, (sql) => sql`select id from operations_teams where name = ${TEAM} for update`)

  return { app, database, url: fresh.url!, tenant, client, stageMany, accountCount, setLimit, holdTeam }
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

async function twoServers(t: Test, url: string): Promise<[Running, Running]> {
  const dir = mkdtempSync(join(tmpdir(), 'amis-concurrency-'))
  const servers = await Promise.all([
    startServer(serverEnv(url, join(dir, 'a'))),
    startServer(serverEnv(url, join(dir, 'b')))
  ])
  t.teardown(async () => {
    for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL')
    await Promise.all(servers.map((s) => s.exit))
    rmSync(dir, { recursive: true, force: true })
  })
  return servers
}

function httpCreate(server: Running, token: string, external: string) {
  return fetch(`${server.url}/v1/data-import/account-import-process/process/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Token ${token}` },
    body: JSON.stringify({
      external_account_number: external,
      import_supplier_code: 'ACME_ENERGY',
      operations_team_name: TEAM
    })
  }).then(async (res) => ({
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: (await res.json()) as any
  }))
}

function httpStatus(server: Running, token: string, external: string) {
  return fetch(`${server.url}/v1/data-import/account-transfer-status/ACME_ENERGY/${encodeURIComponent(external)}/`, {
    headers: { authorization: `Token ${token}` }
  }).then(async (res) => (await res.json()) as { status: string })
}

if (!testDatabaseUrl) {
  t.skip('the concurrency guarantees are tested against the PostgreSQL server (set TEST_DATABASE_URL)', () => {})
} else {
  t.test('20 concurrent creates of one account make exactly one account', async (t) => {
    const { client, stageMany, accountCount } = await setup(t)
    await stageMany('RACE-1')
    const results = await Promise.all(Array.from({ length: 20 }, () => client.create('RACE-1')))
    const created = results.filter((r) => r.statusCode === 201)
    t.equal(created.length, 1, 'one winner')
    for (const loser of results.filter((r) => r.statusCode !== 201)) {
      t.equal(loser.statusCode, 400)
      t.ok(
        ['account_import_in_progress', 'account_already_imported'].includes(codes(loser)[0]![0]),
        codes(loser)[0]![0]
      )
      if (codes(loser)[0]![0] === 'account_already_imported') {
        t.equal(loser.json().service_account_number, created[0]!.json().service_account_number)
      }
    }
    t.equal(await accountCount(), 1)
  })

  t.test(
    '10 concurrent first stages of one account: one 201, the rest 200, one process, every event kept',
    async (t) => {
      const { client, database } = await setup(t)
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          client.stage(exampleAccount({ external_account_number: 'STAGE-RACE-1', sales_subchannel: `S${i}` }))
        )
      )
      t.same(
        results.map((r) => r.statusCode).sort(),
        [200, 200, 200, 200, 200, 200, 200, 200, 200, 201],
        results.map((r) => r.body).join('\n')
      )
      t.equal((await database.db.select({ n: count() }).from(importProcesses))[0]!.n, 1)
      const events = await database.db.select({ type: importEvents.type }).from(importEvents)
      t.same(events.map((e) => e.type).sort(), [
        'RESTAGED',
        'RESTAGED',
        'RESTAGED',
        'RESTAGED',
        'RESTAGED',
        'RESTAGED',
        'RESTAGED',
        'RESTAGED',
        'RESTAGED',
        'STAGED'
      ])
    }
  )

  t.test('while a create runs: IN_PROGRESS, stage and a second create are refused', async (t) => {
    const { client, stageMany, accountCount, holdTeam } = await setup(t)
    await stageMany('SLOW-1')
    const release = await holdTeam()
    const running = client.create('SLOW-1')
    await waitFor(
      'the status is IN_PROGRESS',
      async () => (await client.status('SLOW-1')).json().status === 'IN_PROGRESS',
      { timeoutMs: 15_000 }
    )
    t.same((await client.status('SLOW-1')).json(), {
      status: 'IN_PROGRESS',
      service_account_number: '',
      latest_error: null
    })
    const stage = await client.stage(exampleAccount({ external_account_number: 'SLOW-1', sales_subchannel: 'CHANGED' }))
    t.equal(stage.statusCode, 400)
    t.same(codes(stage), [['account_import_in_progress', null]])
    const second = await client.create('SLOW-1')
    t.same(codes(second), [['account_import_in_progress', null]])
    const dry = await client.create('SLOW-1', { dryRun: true })
    t.same(codes(dry), [['account_import_in_progress', null]], 'a dry run waits its turn too')
    await release()
    const res = await running
    t.equal(res.statusCode, 201, res.body)
    t.equal((await client.status('SLOW-1')).json().status, 'COMPLETED')
    t.equal(await accountCount(), 1)
  })

  t.test('the same lock key held in another database on the server is not a create in progress', async (t) => {
    const { client, stageMany, database } = await setup(t)
    await stageMany('OTHER-DB-1')
    const [process] = await database.db.select({ id: importProcesses.id }).from(importProcesses)
    // Another database on the same server (the one TEST_DATABASE_URL names) holding the very key.
    const other = postgres(testDatabaseUrl!, { max: 1, onnotice: () => {} })
    t.teardown(() => other.end())
    const reserved = await other.reserve()
    await reserved`select pg_advisory_lock(${((1n << 40n) + BigInt(process!.id)).toString()}::bigint)`
    t.equal((await client.status('OTHER-DB-1')).json().status, 'UNKNOWN')
    t.equal((await client.stage(exampleAccount({ external_account_number: 'OTHER-DB-1' }))).statusCode, 200)
    t.equal((await client.create('OTHER-DB-1')).statusCode, 201)
    await reserved`select pg_advisory_unlock_all()`
    reserved.release()
  })

  t.test('maxConcurrentProcessing 2 across two server processes: 2 run, the rest get 429', async (t) => {
    const { tenant, stageMany, accountCount, setLimit, holdTeam, url } = await setup(t)
    const externals = ['MAX-1', 'MAX-2', 'MAX-3', 'MAX-4', 'MAX-5', 'MAX-6']
    await stageMany(...externals)
    await setLimit(2)
    const [a, b] = await twoServers(t, url)
    const release = await holdTeam()
    const settled = new Map<string, { status: number; retryAfter: string | null; body: any }>()
    const calls = externals.map((external, i) =>
      httpCreate(i % 2 === 0 ? a : b, tenant.token, external).then((r) => {
        settled.set(external, r)
        return r
      })
    )
    await waitFor('four creates were refused', async () => settled.size >= 4, { timeoutMs: 15_000 })
    await sleep(300)
    t.equal(settled.size, 4, 'two creates are still running')
    for (const r of settled.values()) {
      t.equal(r.status, 429)
      t.equal(r.body.code, 'too_many_accounts_processing')
      t.match(r.retryAfter, /^\d+$/)
    }
    const statuses = await Promise.all(externals.map((e) => httpStatus(a, tenant.token, e)))
    t.equal(statuses.filter((s) => s.status === 'IN_PROGRESS').length, 2, 'two IN_PROGRESS, seen from either server')
    await release()
    const results = await Promise.all(calls)
    t.equal(results.filter((r) => r.status === 201).length, 2)
    t.equal(await accountCount(), 2)

    // The slots are free again: the refused accounts can now be created.
    const later = externals.filter((e) => settled.get(e)!.status === 429)
    for (const external of later) t.equal((await httpCreate(b, tenant.token, external)).status, 201, external)
  })

  t.test('a server killed mid-create leaves nothing behind and nothing stuck', async (t) => {
    const { tenant, stageMany, accountCount, setLimit, holdTeam, url } = await setup(t)
    await stageMany('KILL-1')
    await setLimit(1)
    const [a, b] = await twoServers(t, url)
    const release = await holdTeam()
    const doomed = httpCreate(a, tenant.token, 'KILL-1').catch(() => 'connection lost')
    await waitFor(
      'the create runs',
      async () => (await httpStatus(b, tenant.token, 'KILL-1')).status === 'IN_PROGRESS',
      { timeoutMs: 15_000 }
    )
    a.child.kill('SIGKILL')
    await a.exit
    t.equal(await doomed, 'connection lost')
    await release()
    await waitFor(
      'the killed create is rolled back',
      async () => (await httpStatus(b, tenant.token, 'KILL-1')).status === 'UNKNOWN',
      { timeoutMs: 15_000 }
    )
    t.equal(await accountCount(), 0, 'no account from the killed create')
    const res = await httpCreate(b, tenant.token, 'KILL-1')
    t.equal(res.status, 201, 'the slot and the process lock were released: ' + JSON.stringify(res.body))
    t.equal(await accountCount(), 1)
  })
}

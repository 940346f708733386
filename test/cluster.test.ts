import t, { type Test } from 'tap'
import { readdirSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { count } from 'drizzle-orm'
import { accounts } from '../drizzle/schema/index.js'
import { ConfigError, loadConfig } from '../src/config.js'
import { buildSharedTestApp, TEST_OPERATOR_KEY, TEST_TOKEN_SECRET } from './helpers/app.js'
import { exampleAccount, TEAM } from './helpers/accounts.js'
import { freshDatabase, testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { refusedStart, spawnServer } from './helpers/server.js'
import { tempDir } from './helpers/temp-dir.js'
import { waitFor } from './helpers/wait.js'

/**
 * `WORKERS=n` (scale-out): n processes started by node:cluster share one port. Everything
 * that must hold across processes (create idempotency, key revocation) is checked through the
 * shared port, with each answer traced to the worker that gave it by its request id in the logs.
 */

t.test('WORKERS is validated: 1 to 64, and above 1 only with DATABASE_URL', async (t) => {
  t.equal(loadConfig({}).workers, 1, 'default 1')
  t.equal(loadConfig({ WORKERS: '3', DATABASE_URL: 'postgres://u@h:5432/d' }).workers, 3)
  t.equal(loadConfig({ WORKERS: '1' }).workers, 1, 'one worker on the embedded database is fine')
  for (const bad of ['0', '65', 'two', '1.5']) {
    t.throws(
      () => loadConfig({ WORKERS: bad, DATABASE_URL: 'postgres://u@h:5432/d' }),
      { name: 'ConfigError', message: /^invalid configuration: WORKERS/ },
      bad
    )
  }
  try {
    loadConfig({ WORKERS: '2' })
    t.fail('WORKERS=2 without DATABASE_URL should be refused')
  } catch (err) {
    t.type(err, ConfigError)
    t.match((err as Error).message, /^invalid configuration: WORKERS=2 needs DATABASE_URL/)
  }
})

t.test('WORKERS=2 on the embedded database refuses to start with one line', async (t) => {
  const dataDir = tempDir(t)
  const r = await refusedStart({ WORKERS: '2', DATA_DIR: dataDir })
  t.equal(r.code, 1)
  t.equal(r.output.split('\n').length, 1, 'one line: ' + r.output)
  t.match(
    r.output,
    /^cannot start: invalid configuration: WORKERS=2 needs DATABASE_URL \(the embedded database serves one process per DATA_DIR\)$/
  )
  t.same(readdirSync(dataDir), [], 'no worker was started: nothing was opened in DATA_DIR')
})

t.test('workers that cannot start stop the cluster with exit code 1', async (t) => {
  const r = await refusedStart({
    WORKERS: '2',
    DATABASE_URL: 'postgres://someone:secret@127.0.0.1:1/nowhere',
    DATA_DIR: tempDir(t)
  })
  t.equal(r.code, 1)
  t.match(r.output, /cannot start: cannot use the PostgreSQL server at 127\.0\.0\.1:1\/nowhere/, 'the worker says why')
  t.match(r.output, /before it was listening: stopping the cluster/, 'the primary does not restart it')
  t.notMatch(r.output, /starting a new one/)
  t.notMatch(r.output, /secret/, 'the password is not printed')
})

interface Answer {
  status: number
  body: any
}

/** One request over a new connection (so the cluster may hand it to any worker). */
function call(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; id?: string } = {}
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {}
    if (options.token) headers.authorization = `Bearer ${options.token}`
    if (options.id) headers['x-request-id'] = options.id
    if (options.body !== undefined) headers['content-type'] = 'application/json'
    const req = httpRequest(base + path, { method, agent: false, headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (piece: string) => {
        text += piece
      })
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }))
    })
    req.on('error', reject)
    req.end(options.body !== undefined ? JSON.stringify(options.body) : undefined)
  })
}

/** Parsed JSON log lines of a server's output. */
function logLines(output: string): Array<Record<string, any>> {
  return output.split('\n').flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, any>]
    } catch {
      return []
    }
  })
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** `WORKERS=2` on the shared port, once both workers listen; killed at teardown if still running. */
async function startCluster(t: Test, env: Record<string, string>) {
  const server = spawnServer({ WORKERS: '2', DATA_DIR: tempDir(t), LOG_LEVEL: 'info', ...env })
  /** Pids of the workers that logged that they listen, oldest first. */
  const listeningPids = (): number[] =>
    logLines(server.output())
      .filter((l) => String(l.msg).startsWith('Server listening at'))
      .map((l) => l.pid as number)
  t.teardown(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
    await server.exit
    for (const pid of listeningPids()) if (alive(pid)) process.kill(pid, 'SIGKILL')
  })
  await waitFor('both workers listen', () => listeningPids().length >= 2, { timeoutMs: 60_000 })
  const base = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(server.output())![1]!

  let seq = 0
  /** A request tagged with a fresh request id, answered with the pid of the worker that served it. */
  async function traced(method: string, path: string, options: { token?: string; body?: unknown } = {}) {
    const id = `cluster-${process.pid}-${++seq}`
    const answer = await call(base, method, path, { ...options, id })
    const pid = await waitFor(
      `the log of ${id}`,
      () => logLines(server.output()).find((l) => l.reqId === id)?.pid as number | undefined,
      { timeoutMs: 5000 }
    )
    return { ...answer, pid }
  }
  return { server, base, listeningPids, traced }
}

if (!testDatabaseUrl) {
  t.skip('a cluster of workers is tested against the PostgreSQL server (set TEST_DATABASE_URL)', () => {})
} else {
  t.test('WORKERS=2 against one PostgreSQL database', async (t) => {
    const { app, database, url } = await buildSharedTestApp(t)
    const fresh = { url }
    const tenant = await createTenant(app, 'Acme', 'ACME_ENERGY')
    await asOperator(app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })

    const { server, base, listeningPids, traced } = await startCluster(t, {
      DATABASE_URL: fresh.url!,
      TOKEN_SECRET: TEST_TOKEN_SECRET,
      OPERATOR_API_KEY: TEST_OPERATOR_KEY,
      NODE_ENV: 'test'
    })
    const list = (token: string) =>
      traced('GET', '/v1/data-import/all-account-import-processes/ACME_ENERGY/?limit=1', { token })

    t.test('two workers answer on one port', async (t) => {
      const workers = listeningPids()
      t.equal(new Set(workers).size, 2, 'two worker processes')
      t.notOk(workers.includes(server.child.pid!), 'the primary serves nothing itself')
      const addresses = logLines(server.output())
        .filter((l) => String(l.msg).startsWith('Server listening at'))
        .map((l) => l.msg)
      t.same(addresses, [`Server listening at ${base}`, `Server listening at ${base}`], 'both on the same port')
      for (let i = 0; i < 6; i++) {
        const res = await call(base, 'GET', '/healthz')
        t.same([res.status, res.body], [200, { status: 'ok' }], `healthz ${i + 1}`)
      }
      const served = new Set<number>()
      for (let i = 0; i < 6; i++) {
        const res = await list(tenant.token)
        t.equal(res.status, 200)
        served.add(res.pid)
      }
      t.same([...served].sort(), [...workers].sort(), 'new connections are shared between both workers')
    })

    t.test('ten concurrent creates through both workers make one account', async (t) => {
      const staged = await call(base, 'POST', '/v1/data-import/account-import-process/create-or-update/', {
        token: tenant.token,
        body: exampleAccount({ external_account_number: 'CLUSTER-1' })
      })
      t.equal(staged.status, 201, JSON.stringify(staged.body))
      const creates = await Promise.all(
        Array.from({ length: 10 }, () =>
          traced('POST', '/v1/data-import/account-import-process/process/', {
            token: tenant.token,
            body: {
              external_account_number: 'CLUSTER-1',
              import_supplier_code: 'ACME_ENERGY',
              operations_team_name: TEAM
            }
          })
        )
      )
      t.equal(creates.filter((r) => r.status === 201).length, 1, 'exactly one 201')
      for (const loser of creates.filter((r) => r.status !== 201)) {
        t.equal(loser.status, 400)
        t.ok(
          ['account_import_in_progress', 'account_already_imported'].includes(loser.body.errors[0].code),
          loser.body.errors[0].code
        )
      }
      t.equal(new Set(creates.map((r) => r.pid)).size, 2, 'both workers took part')
      t.equal((await database.db.select({ n: count() }).from(accounts))[0]!.n, 1, 'one account in the database')
    })

    t.test('a revoked key fails on every worker within 30 s (the key cache holds 5 s)', async (t) => {
      // Both workers check the key once, so each has it cached as valid.
      const warm = new Set<number>()
      await waitFor('both workers served the key', async () => {
        const res = await list(tenant.token)
        t.equal(res.status, 200)
        warm.add(res.pid)
        return warm.size === 2
      })
      const operator = await call(base, 'POST', '/graphql', {
        body: {
          query: 'mutation($k: String) { obtainToken(input: {APIKey: $k}) { token } }',
          variables: { k: TEST_OPERATOR_KEY }
        }
      })
      const operatorToken = operator.body.data.obtainToken.token as string
      const revokedAt = Date.now()
      const revoked = await traced('POST', '/graphql', {
        token: operatorToken,
        body: {
          query: 'mutation($id: ID!) { revokeApiKey(input: {id: $id}) { id revokedAt } }',
          variables: { id: tenant.apiKeyId }
        }
      })
      t.type(revoked.body.data?.revokeApiKey?.revokedAt, 'string', 'revoked: ' + JSON.stringify(revoked.body))

      // Each worker's first refusal, then nothing but refusals.
      const refusedAfter = new Map<number, number>()
      await waitFor(
        'both workers refuse the key',
        async () => {
          const res = await list(tenant.token)
          if (res.status === 401) {
            t.equal(res.body.code, 'authentication_failed')
            if (!refusedAfter.has(res.pid)) refusedAfter.set(res.pid, Date.now() - revokedAt)
          } else {
            t.equal(res.status, 200, 'still cached')
            t.notOk(refusedAfter.has(res.pid), `worker ${res.pid} accepts the key again after refusing it`)
          }
          return refusedAfter.size === 2
        },
        { timeoutMs: 35_000 }
      )
      for (const [pid, ms] of refusedAfter) t.ok(ms <= 30_000, `worker ${pid} refuses ${ms} ms after the revocation`)
      const served = new Set<number>()
      for (let i = 0; i < 6; i++) {
        const res = await list(tenant.token)
        t.equal(res.status, 401)
        served.add(res.pid)
      }
      t.equal(served.size, 2, 'both workers checked again: both refuse')
    })

    t.test('a worker that dies is replaced', async (t) => {
      const [victim, survivor] = listeningPids()
      process.kill(victim!, 'SIGKILL')
      await waitFor('the primary reports the dead worker', () =>
        server.output().includes(`worker ${victim} died (SIGKILL): starting a new one`)
      )
      const replacement = await waitFor('a new worker listens', () => listeningPids()[2], { timeoutMs: 60_000 })
      t.not(replacement, victim)
      t.equal(alive(survivor!), true, 'the other worker kept running')
      const served = new Set<number>()
      await waitFor(
        'both workers answer',
        async () => {
          const res = await traced('GET', '/v1/data-import/all-account-import-processes/NO_SUCH/')
          t.equal(res.status, 401, 'answered (no token)')
          served.add(res.pid)
          return served.size === 2
        },
        { timeoutMs: 10_000 }
      )
      t.same([...served].sort(), [survivor, replacement].sort(), 'the survivor and the replacement share the port')
    })

    t.test('SIGTERM stops the whole cluster with exit code 0', async (t) => {
      const workers = listeningPids().filter(alive)
      t.equal(workers.length, 2)
      server.child.kill('SIGTERM')
      t.equal(await server.exit, 0, 'the primary exits 0')
      const lines = logLines(server.output())
      for (const pid of workers) {
        t.ok(
          lines.some((l) => l.pid === pid && l.msg === 'SIGTERM received: finishing requests in flight, then closing'),
          `worker ${pid} was told`
        )
        t.equal(alive(pid), false, `worker ${pid} is gone`)
      }
      t.ok(lines.some((l) => l.pid === server.child.pid && l.msg === 'all workers stopped: exiting'))
    })
  })

  t.test('development mode: one generated operator key and token secret serve both workers', async (t) => {
    const fresh = await freshDatabase()
    await fresh.database.close()
    t.teardown(fresh.drop)
    const { server, traced } = await startCluster(t, { DATABASE_URL: fresh.url!, NODE_ENV: 'development' })
    const printed = [...server.output().matchAll(/Operator API key \(shown once[^:]*\): (amo_[\w-]+)/g)].map(
      (m) => m[1]!
    )
    t.equal(printed.length, 1, 'the operator key is printed once')
    const obtained = await traced('POST', '/graphql', {
      body: {
        query: 'mutation($k: String) { obtainToken(input: {APIKey: $k}) { token } }',
        variables: { k: printed[0] }
      }
    })
    const token = obtained.body.data?.obtainToken?.token as string
    t.type(token, 'string', 'the printed key works')
    // A token signed by one worker is accepted by the other: both use the same generated secret.
    const served = new Set<number>()
    await waitFor(
      'both workers accept the operator token',
      async () => {
        const res = await traced('POST', '/graphql', { token, body: { query: '{ importSuppliers { code } }' } })
        t.same(res.body, { data: { importSuppliers: [] } })
        served.add(res.pid)
        return served.size === 2
      },
      { timeoutMs: 10_000 }
    )
    server.child.kill('SIGINT')
    t.equal(await server.exit, 0, 'SIGINT: the cluster exits 0')
  })

  t.test(
    'WORKERS=2: an address gets TOKEN_RATE_LIMIT_PER_MINUTE token requests in all, whichever worker answers',
    async (t) => {
      const fresh = await freshDatabase()
      t.teardown(fresh.drop)
      const { traced } = await startCluster(t, {
        DATABASE_URL: fresh.url!,
        TOKEN_SECRET: TEST_TOKEN_SECRET,
        OPERATOR_API_KEY: TEST_OPERATOR_KEY,
        NODE_ENV: 'test',
        TOKEN_RATE_LIMIT_PER_MINUTE: '6'
      })
      const obtain = () =>
        traced('POST', '/graphql', {
          body: { query: `mutation { obtainToken(input: {APIKey: "${TEST_OPERATOR_KEY}"}) { token } }` }
        })
      const served = new Set<number>()
      for (let i = 0; i < 6; i++) {
        const res = await obtain()
        t.equal(res.status, 200, `request ${i + 1} is allowed`)
        served.add(res.pid)
      }
      t.equal(served.size, 2, 'both workers answered')
      const refusedBy = new Set<number>()
      for (let i = 0; i < 4; i++) {
        const res = await obtain()
        t.equal(res.status, 429, `request ${7 + i} is refused`)
        refusedBy.add(res.pid)
      }
      t.equal(refusedBy.size, 2, 'by both workers')
    }
  )
}

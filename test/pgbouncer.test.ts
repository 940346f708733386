import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { PassThrough } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import postgres from 'postgres'
import { SMTPServer } from 'smtp-server'
import { sql as dsql } from 'drizzle-orm'
import { buildApp } from '../src/app.js'
import { openPostgres } from '../src/db/index.js'
import { migrationsFolder } from '../src/paths.js'
import { testConfig } from './helpers/app.js'
import { exampleAccount, TEAM } from './helpers/accounts.js'
import { holdLocks, testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant, tokenFor } from './helpers/graphql.js'
import { startServers } from './helpers/server.js'
import { waitFor } from './helpers/wait.js'

/**
 * Server processes behind a real PgBouncer in transaction pooling mode, as operators run them:
 * every transaction may get any server connection, so nothing may rely on a session (a
 * session-level lock, a prepared statement of PgBouncer before 1.21). Two servers start at once
 * on an empty database (both migrate, through PgBouncer), then stage, create and post-import
 * writes run concurrently through both, the background jobs run once, a supplier's limit of
 * creates in progress and a key's revocation hold across both, and overlapping batches create
 * each account once; PgBouncer's admin console and pg_stat_activity show that fewer server
 * connections served more clients.
 */

/** Server connections PgBouncer keeps to the database: far fewer than the clients below. */
const SERVER_CONNECTIONS = 4
/** DATABASE_POOL_SIZE of each server process (two of them) and of the in-process app. */
const PROCESS_POOL = 8
const ACCOUNTS = 30
/** How long the waits below may take, and how often they ask. */
const UNTIL = { timeoutMs: 30_000, intervalMs: 100 }
const METRICS_TOKEN = 'pgbouncer-test-metrics-token-0123456789'
/** application_name of the test's own direct connection. */
const DIRECT = 'amis-test-direct'

/** `pgbouncer` on PATH, or in /usr/sbin (Debian's place for it, often not on a user's PATH). */
function findPgbouncer(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/sbin']
  for (const dir of dirs) {
    const file = join(dir, 'pgbouncer')
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {}
  }
  return undefined
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url)
  u.pathname = '/' + name
  return u.toString()
}

/** An empty database on the server (nothing migrated), dropped at teardown. */
async function emptyDatabase(t: Test): Promise<string> {
  const base = new URL(testDatabaseUrl!).pathname.slice(1)
  const name = `${base}_pgb_${process.pid}_${randomBytes(3).toString('hex')}`
  const admin = postgres(testDatabaseUrl!, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database "${name}"`)
  await admin.end()
  t.teardown(async () => {
    const dropper = postgres(testDatabaseUrl!, { max: 1, onnotice: () => {} })
    await dropper.unsafe(`drop database if exists "${name}" with (force)`)
    await dropper.end()
  })
  return name
}

/**
 * PgBouncer on a free loopback port in front of the test server, in transaction pooling mode with
 * `SERVER_CONNECTIONS` server connections per database; its ini and auth file in a temp folder.
 */
async function startPgbouncer(t: Test, binary: string) {
  const server = new URL(testDatabaseUrl!)
  const user = decodeURIComponent(server.username) || 'postgres'
  const dir = mkdtempSync(join(tmpdir(), 'amis-pgbouncer-'))
  const port = await freePort()
  // With auth_type trust clients are not asked for a password; the one here (the test URL's) is
  // what PgBouncer logs in to the server with, should the server want one.
  writeFileSync(join(dir, 'users.txt'), `"${user}" "${decodeURIComponent(server.password)}"\n`)
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      `admin_users = ${user}`,
      'pool_mode = transaction',
      `default_pool_size = ${SERVER_CONNECTIONS}`,
      `max_db_connections = ${SERVER_CONNECTIONS}`,
      'reserve_pool_size = 0',
      'max_client_conn = 200',
      'log_connections = 0',
      'log_disconnections = 0',
      ''
    ].join('\n')
  )
  // PgBouncer refuses to run as root; -u drops to an unprivileged user once the files are read.
  const asRoot = process.getuid?.() === 0
  const child = spawn(binary, [...(asRoot ? ['-u', 'nobody'] : []), join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString()
  })
  child.stderr.on('data', (d: Buffer) => {
    out += d.toString()
  })
  const exit = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exit
    rmSync(dir, { recursive: true, force: true })
  })
  await waitFor(
    'pgbouncer listens',
    () => {
      if (child.exitCode !== null) throw new Error('pgbouncer did not start: ' + out)
      return out.includes(`listening on 127.0.0.1:${port}`)
    },
    { timeoutMs: 15_000, seen: () => out }
  )
  const url = (database: string) => {
    const u = new URL(testDatabaseUrl!)
    u.hostname = '127.0.0.1'
    u.port = String(port)
    u.pathname = '/' + database
    return u.toString()
  }
  // The admin console speaks the simple query protocol only, and has no types to fetch.
  const adminConsole = postgres(url('pgbouncer'), { max: 1, fetch_types: false, onnotice: () => {} })
  t.teardown(() => adminConsole.end({ timeout: 1 }))
  const show = async (what: 'POOLS' | 'STATS') =>
    [...(await adminConsole.unsafe(`SHOW ${what}`))] as Array<Record<string, string | number>>
  return { url, show, output: () => out }
}

/** A real SMTP server on loopback that keeps what it receives. */
async function smtpServer(t: Test) {
  const received: string[][] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      stream.resume()
      stream.on('end', () => {
        received.push(session.envelope.rcptTo.map((r) => r.address))
        callback()
      })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `smtp://127.0.0.1:${(server.server.address() as { port: number }).port}`, received }
}

interface Answer {
  status: number
  body: any
}

/** The statuses of `answers`, and the first answer that is not `expected` (for the message). */
function statuses(answers: Answer[], expected: number): { all: number[]; odd: string } {
  const odd = answers.find((r) => r.status !== expected)
  return { all: answers.map((r) => r.status), odd: odd ? `: ${odd.status} ${JSON.stringify(odd.body)}` : '' }
}

/** What the database, PgBouncer and the servers were doing, for the message of a request left unanswered. */
const stalled: { snapshot?: () => Promise<string> } = {}

/**
 * One request; a server that does not answer within 30 s (the 60 concurrent creates below take about a second here) fails
 * the test instead of hanging it, with a snapshot of what held things up.
 */
async function call(base: string, method: string, path: string, token: string, body?: unknown): Promise<Answer> {
  let res: Response
  try {
    res = await fetch(base + path, {
      method,
      signal: AbortSignal.timeout(30_000),
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  } catch (err) {
    if ((err as Error).name !== 'TimeoutError') throw err
    const snapshot = await stalled.snapshot?.().catch((e: Error) => `(no snapshot: ${e.message})`)
    throw new Error(`${method} ${base}${path}: no answer within 30 s\n${snapshot ?? ''}`, { cause: err })
  }
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {}
  return { status: res.status, body: parsed }
}

/** Error lines (pino level 50 and above) of JSON log output. */
function errorLines(output: string): string[] {
  return output.split('\n').filter((line) => {
    try {
      return (JSON.parse(line) as { level?: number }).level! >= 50
    } catch {
      return false
    }
  })
}

const pgbouncer = findPgbouncer()

if (!testDatabaseUrl) {
  t.skip('PgBouncer is tested in front of the PostgreSQL server (set TEST_DATABASE_URL)', () => {})
} else if (!pgbouncer) {
  t.skip(
    "pgbouncer is not installed (not on PATH nor in /usr/sbin; .ci/run installs it from Debian's packages)",
    () => {}
  )
} else {
  t.test('server processes behind PgBouncer in transaction pooling mode', async (t) => {
    const name = await emptyDatabase(t)
    const bouncer = await startPgbouncer(t, pgbouncer)
    const smtp = await smtpServer(t)
    const env = {
      DATABASE_PREPARE: 'false',
      DATABASE_PIPELINE: 'false',
      DATABASE_POOL_SIZE: String(PROCESS_POOL),
      SMTP_URL: smtp.url,
      STAGED_DATA_RETENTION_DAYS: '0',
      METRICS_TOKEN
    }

    // Checks read the database directly (not through PgBouncer), on a connection the counts leave out.
    const direct = postgres(withDatabase(testDatabaseUrl!, name), {
      max: 1,
      onnotice: () => {},
      connection: { application_name: DIRECT }
    })
    t.teardown(() => direct.end({ timeout: 1 }))
    const backends = async () =>
      Number(
        (
          await direct`select count(*) as n from pg_stat_activity
      where datname = ${name} and application_name is distinct from ${DIRECT} and backend_type = 'client backend'`
        )[0]!.n
      )
    const peak = { clients: 0, servers: 0, backends: 0 }
    const sampling = { on: true, error: undefined as unknown }
    const sampler = (async () => {
      while (sampling.on) {
        try {
          const pool = (await bouncer.show('POOLS')).find((p) => p.database === name)
          if (pool) {
            peak.clients = Math.max(peak.clients, Number(pool.cl_active) + Number(pool.cl_waiting))
            peak.servers = Math.max(
              peak.servers,
              ['sv_active', 'sv_idle', 'sv_used', 'sv_tested', 'sv_login'].reduce((n, k) => n + Number(pool[k]), 0)
            )
          }
          peak.backends = Math.max(peak.backends, await backends())
        } catch (err) {
          sampling.on = false
          sampling.error = err
        }
        await sleep(20)
      }
    })()
    t.teardown(async () => {
      sampling.on = false
      await sampler
    })

    // Two servers start at once on the empty database: both migrate through PgBouncer.
    const [a, b] = await startServers(t, bouncer.url(name), 2, env)
    const servers = [a!, b!]
    stalled.snapshot = async () => {
      const activity = await direct`select pid, application_name, state, wait_event_type, wait_event,
          round(extract(epoch from now() - state_change)::numeric, 1) as seconds, left(query, 160) as query
        from pg_stat_activity where datname = ${name} and application_name is distinct from ${DIRECT}
        order by state_change`
      const pools = (await bouncer.show('POOLS')).filter((p) => p.database === name)
      return [
        'pg_stat_activity:',
        ...activity.map((r) => '  ' + JSON.stringify(r)),
        'PgBouncer pools: ' + JSON.stringify(pools),
        "PgBouncer's log:",
        ...bouncer.output().trim().split('\n').slice(-10),
        'server errors:',
        ...servers.flatMap((s) => errorLines(s.output()).slice(-5))
      ].join('\n')
    }
    t.teardown(() => {
      stalled.snapshot = undefined
    })

    let logged = ''
    const logStream = new PassThrough()
    logStream.on('data', (chunk: Buffer) => {
      logged += chunk.toString('utf8')
    })
    const app = await buildApp(testConfig({ ...env, DATABASE_URL: bouncer.url(name), LOG_LEVEL: 'warn' }), {
      logStream,
      announce: () => {}
    })
    t.teardown(() => app.close())
    const tenant = await createTenant(app, 'Acme', 'ACME_ENERGY')
    await asOperator(app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
    await asOperator(
      app,
      'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", sendMigrationEmails: true}) { code } }'
    )
    const on = (i: number) => servers[i % 2]!.url
    const externals = Array.from({ length: ACCOUNTS }, (_, i) => `PGB-${String(i).padStart(3, '0')}`)

    t.test(
      'DATABASE_PIPELINE=false: queries that fail among many at once leave no other query unanswered',
      async (t) => {
        // With the driver's pipelining, PgBouncer (1.18) can lose the answer of a query sent behind
        // one that fails, and its caller waits forever; a transaction's own queries still pipeline.
        const database = await openPostgres(bouncer.url(name), 4, { prepare: false, pipeline: false })
        t.teardown(() => database.close())
        const db = database.db
        const one = async (i: number) => {
          try {
            if (i % 7 === 0) await db.execute(dsql`select 1 / 0`)
            else if (i % 5 === 0) {
              await db.transaction(async (tx) => {
                await Promise.all([tx.execute(dsql`select ${i}::int`), tx.execute(dsql`select 2`)])
              })
            } else await db.execute(dsql`select ${i}::int, pg_sleep(0.0005)`)
            return 'answered'
          } catch {
            return 'failed'
          }
        }
        for (let round = 0; round < 10; round++) {
          const all = Promise.all(Array.from({ length: 200 }, (_, i) => one(i)))
          const outcome = await Promise.race([all, sleep(15_000).then(() => 'a query left unanswered for 15 s')])
          if (typeof outcome === 'string') return t.fail(`round ${round + 1}: ${outcome}`)
        }
        t.pass('10 rounds of 200 queries, 28 of each failing: every one answered')
      }
    )

    t.test('the servers migrated the empty database once, one after the other', async (t) => {
      const applied = await direct`select hash from drizzle.__drizzle_migrations order by id`
      t.same(
        applied.map((r) => r.hash),
        readMigrationFiles({ migrationsFolder }).map((m) => m.hash),
        'every migration applied exactly once, in order'
      )
    })

    t.test(
      `${ACCOUNTS} accounts staged and created concurrently through both servers; each create sent to both at once makes one account`,
      async (t) => {
        const staged = await Promise.all(
          externals.map((external, i) =>
            call(
              on(i),
              'POST',
              '/v1/data-import/account-import-process/create-or-update/',
              tenant.token,
              exampleAccount({ external_account_number: external })
            )
          )
        )
        const stages = statuses(staged, 201)
        t.same(
          stages.all,
          externals.map(() => 201),
          'every stage answered 201' + stages.odd
        )

        const creates = await Promise.all(
          externals.flatMap((external) =>
            servers.map((server) =>
              call(server.url, 'POST', '/v1/data-import/account-import-process/process/', tenant.token, {
                external_account_number: external,
                import_supplier_code: 'ACME_ENERGY',
                operations_team_name: TEAM
              })
            )
          )
        )
        for (let i = 0; i < externals.length; i++) {
          const pair = [creates[2 * i]!, creates[2 * i + 1]!]
          const won = pair.filter((r) => r.status === 201)
          const lost = pair.filter((r) => r.status !== 201)
          const odd = pair.find((r) => r.status !== 201 && r.status !== 400)
          t.equal(
            won.length,
            1,
            `${externals[i]}: exactly one 201 (${pair.map((r) => r.status).join(', ')})${odd ? ': ' + JSON.stringify(odd.body) : ''}`
          )
          for (const r of lost) {
            const code = r.body?.errors?.[0]?.code
            t.ok(
              r.status === 400 && ['account_import_in_progress', 'account_already_imported'].includes(code),
              `${externals[i]}: the other is refused (${r.status} ${code ?? JSON.stringify(r.body)})`
            )
          }
        }
        const [row] = await direct`select (select count(*) from accounts) as accounts,
        (select count(*) from import_processes where state = 'IMPORTED') as imported`
        t.same([Number(row!.accounts), Number(row!.imported)], [ACCOUNTS, ACCOUNTS], 'one account per external number')
      }
    )

    t.test(
      'post-import writes to one account from both servers at once are serialised: the balance is exact',
      async (t) => {
        const external = externals[0]!
        const credit = (id: string) => ({
          import_supplier: 'ACME_ENERGY',
          external_account_number: external,
          transactions: [
            {
              transaction_id: id,
              transaction_date: new Date(Date.now() - 86_400_000).toISOString().slice(0, 10),
              amount: '0.10',
              type: 'CREDIT'
            }
          ]
        })
        const ids = Array.from({ length: 24 }, (_, i) => `PGB-CREDIT-${i}`)
        const answers = await Promise.all([
          ...ids.map((id, i) => call(on(i), 'POST', '/v1/data-import/transactions/create/', tenant.token, credit(id))),
          // The same transaction from both servers at once: added once, reported as existing once.
          ...servers.map((server) =>
            call(server.url, 'POST', '/v1/data-import/transactions/create/', tenant.token, credit('PGB-CREDIT-SAME'))
          )
        ])
        const writes = statuses(answers, 201)
        t.same(
          writes.all,
          answers.map(() => 201),
          'every write answered 201' + writes.odd
        )
        const results = answers.map((r) => r.body?.results?.[0]?.status)
        t.same(
          results.slice(0, ids.length),
          ids.map(() => 'TRANSACTION_ADDED_TO_ACCOUNT'),
          'each new transaction added'
        )
        t.same(
          results.slice(ids.length).sort(),
          ['TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_ALREADY_EXISTS'],
          'the repeated transaction is added once'
        )
        const summary = await call(a!.url, 'GET', `/v1/data-import/accounts/ACME_ENERGY/${external}/`, tenant.token)
        t.equal(summary.status, 200, 'the account summary')
        t.equal(summary.body.ledgers?.[0]?.balance, '8.76', '6.26 + 25 × 0.10, exactly')
      }
    )

    t.test('the background jobs run through PgBouncer', async (t) => {
      // A failed create: recorded as a failure, and counted in the timeline each server writes once a second.
      const refused = await call(b!.url, 'POST', '/v1/data-import/account-import-process/process/', tenant.token, {
        external_account_number: 'PGB-NEVER-STAGED',
        import_supplier_code: 'ACME_ENERGY',
        operations_team_name: TEAM
      })
      t.equal(refused.status, 400, 'a create of an account never staged is refused')
      const failures = await call(
        a!.url,
        'GET',
        '/v1/data-import/failed-account-import-processes/ACME_ENERGY/?limit=10',
        tenant.token
      )
      t.equal(failures.status, 200, 'the failure list')
      t.same(
        failures.body.map?.((f: { external_account_number: string; step: string }) => [
          f.external_account_number,
          f.step
        ]),
        [['PGB-NEVER-STAGED', 'create']],
        'holds that failure, and only it'
      )
      const totals = await waitFor(
        'the timeline holds every stage, create and failure',
        async () => {
          const res = await call(a!.url, 'GET', '/v1/data-import/migration-timeline/ACME_ENERGY/', tenant.token)
          const sum = { staged: 0, created: 0, failed: 0 }
          for (const m of res.body.minutes as Array<typeof sum>) {
            for (const k of ['staged', 'created', 'failed'] as const) sum[k] += m[k]
          }
          return sum.staged === ACCOUNTS && sum.created === ACCOUNTS && sum.failed === 1 ? sum : undefined
        },
        UNTIL
      )
      t.same(totals, { staged: ACCOUNTS, created: ACCOUNTS, failed: 1 }, 'timeline: counts of both servers, each once')

      // The e-mail workers of all three processes share the outbox: each account's e-mail sent once.
      await waitFor('every migration e-mail is sent', () => smtp.received.length >= ACCOUNTS, UNTIL)
      await sleep(1500) // a duplicate would arrive within the workers' next polls
      t.equal(smtp.received.length, ACCOUNTS, 'one e-mail per account, none twice')

      // The retention erasure (0 days: everything imported is due).
      const erased = await app.retention.runOnce()
      t.same(erased, { processes: ACCOUNTS, payloads: ACCOUNTS }, "every imported account's staged data erased")
      t.same(await app.retention.runOnce(), { processes: 0, payloads: 0 }, 'nothing left for a second run')

      const metrics = await fetch(`${a!.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
      t.equal(metrics.status, 200, '/metrics with the scrape token')
      const text = await metrics.text()
      t.match(
        text,
        new RegExp(`^amis_accounts_created\\{supplier="ACME_ENERGY"\\} ${ACCOUNTS}$`, 'm'),
        'metrics read the counts'
      )
      t.match(
        text,
        /^amis_creates_in_flight\{supplier="ACME_ENERGY"\} 0$/m,
        'and the locks of creates in flight (none now)'
      )
    })

    const STAGE = '/v1/data-import/account-import-process/create-or-update/'
    const CREATE = '/v1/data-import/account-import-process/process/'
    // Advisory locks of this database: none once every transaction has ended, unless one was
    // taken at session level (it would stay on whichever server connection PgBouncer gave it).
    const advisoryLocks = async () =>
      Number(
        (
          await direct`select count(*) as n from pg_locks
      where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`
        )[0]!.n
      )
    const status = (base: string, token: string, external: string) =>
      call(base, 'GET', `/v1/data-import/account-transfer-status/ACME_ENERGY/${external}/`, token)

    t.test(
      "a supplier's limit of creates in progress holds across both servers: 2 run, the rest get 429",
      async (t) => {
        const held = Array.from({ length: 6 }, (_, i) => `PGB-MAX-${i}`)
        const staged = await Promise.all(
          held.map((x, i) => call(on(i), 'POST', STAGE, tenant.token, exampleAccount({ external_account_number: x })))
        )
        t.same(
          staged.map((r) => r.status),
          held.map(() => 201),
          'staged' + statuses(staged, 201).odd
        )
        await asOperator(
          app,
          'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", maxConcurrentProcessing: 2}) { code } }'
        )
        // Creates block on the team row, held from a direct connection, so that two stay in progress.
        const release = await holdLocks(
          t,
          `${withDatabase(testDatabaseUrl!, name)}?application_name=${DIRECT}`,
          (sql) => sql`select id from operations_teams where name = ${TEAM} for update`
        )
        const settled = new Map<string, Answer>()
        const creates = held.map((x, i) =>
          call(on(i), 'POST', CREATE, tenant.token, {
            external_account_number: x,
            import_supplier_code: 'ACME_ENERGY',
            operations_team_name: TEAM
          }).then((r) => {
            settled.set(x, r)
            return r
          })
        )
        await waitFor('four creates were refused', () => settled.size >= 4, UNTIL)
        await sleep(300)
        t.equal(settled.size, 4, 'two creates are still running')
        for (const r of settled.values()) {
          t.same([r.status, r.body?.code], [429, 'too_many_accounts_processing'], 'the others are refused with 429')
        }
        const seen = await Promise.all(held.map((x, i) => status(on(i + 1), tenant.token, x)))
        t.equal(
          seen.filter((r) => r.body?.status === 'IN_PROGRESS').length,
          2,
          'two IN_PROGRESS, each seen from the other server'
        )
        await release()
        const results = await Promise.all(creates)
        t.equal(results.filter((r) => r.status === 201).length, 2, 'the two held creates finish')
        t.equal(await advisoryLocks(), 0, 'the slots and process locks ended with their transactions')
        // Still at 2: the refused ones are created, two slots at a time.
        const refused = [...settled].filter(([, r]) => r.status === 429).map(([x]) => x)
        const later: Answer[] = []
        for (const [i, x] of refused.entries()) {
          later.push(
            await call(on(i), 'POST', CREATE, tenant.token, {
              external_account_number: x,
              import_supplier_code: 'ACME_ENERGY',
              operations_team_name: TEAM
            })
          )
        }
        t.same(
          later.map((r) => r.status),
          [201, 201, 201, 201],
          'the four refused ones are created once the slots are free' + statuses(later, 201).odd
        )
        await asOperator(
          app,
          'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", maxConcurrentProcessing: null}) { code } }'
        )
      }
    )

    t.test('a revoked API key is refused by both servers within 30 s (their key cache holds 5 s)', async (t) => {
      const key = await asOperator(app, 'mutation { createApiKey(input: {organisation: "Acme"}) { id key } }')
      const token = await tokenFor(app, key.createApiKey.key as string)
      const before = await Promise.all(servers.slice(0, 2).map((server) => status(server.url, token, externals[0]!)))
      t.same(
        before.map((r) => r.status),
        [200, 200],
        'both servers accept the key (and cache it)'
      )
      const revokedAt = Date.now()
      await asOperator(app, 'mutation($id: ID!) { revokeApiKey(input: {id: $id}) { revokedAt } }', {
        id: key.createApiKey.id
      })
      const refusedAfter = await Promise.all(
        servers.slice(0, 2).map((server) =>
          waitFor(
            'the server refuses the revoked key',
            async () => {
              const res = await status(server.url, token, externals[0]!)
              return res.status === 401 ? Date.now() - revokedAt : undefined
            },
            { timeoutMs: 35_000, intervalMs: 100 }
          )
        )
      )
      for (const [i, ms] of refusedAfter.entries()) {
        t.ok(ms <= 30_000, `server ${i + 1} refuses the key ${ms} ms after its revocation`)
      }
      t.equal(
        (await status(a!.url, tenant.token, externals[0]!)).status,
        200,
        "the organisation's other key still works"
      )
    })

    t.test(
      'overlapping batches through both servers at once: each account created once with its history',
      async (t) => {
        const batchExternals = Array.from({ length: 40 }, (_, i) => `PGB-BATCH-${String(i).padStart(3, '0')}`)
        const entries = batchExternals.map((x) => ({
          account: exampleAccount({ external_account_number: x }),
          notes: [{ body: `Moved ${x}.` }],
          transactions: [
            {
              transaction_id: `${x}-T`,
              transaction_date: new Date(Date.now() - 86_400_000).toISOString().slice(0, 10),
              amount: '1.50',
              type: 'CREDIT'
            }
          ]
        }))
        const body = (accounts: unknown[]) => ({ import_supplier: 'ACME_ENERGY', operations_team_name: TEAM, accounts })
        // The second batch holds the last 30 in reverse order: 20 accounts are in both.
        const answers = await Promise.all([
          call(a!.url, 'POST', '/v1/data-import/batches/', tenant.token, body(entries.slice(0, 30))),
          call(b!.url, 'POST', '/v1/data-import/batches/', tenant.token, body(entries.slice(10).reverse()))
        ])
        t.same(
          answers.map((r) => r.status),
          [200, 200],
          'both batches answered' + statuses(answers, 200).odd
        )
        const outcomes = answers.flatMap((r) => (r.body.results as Array<{ outcome: string }>).map((e) => e.outcome))
        t.same(
          [...new Set(outcomes)].sort(),
          ['already_imported', 'created'],
          'every entry created or found already imported'
        )
        t.equal(
          answers.reduce((n, r) => n + Number(r.body.counts.created), 0),
          40,
          '40 accounts created, once each'
        )
        const [row] = await direct`select
        (select count(*) from accounts where external_account_number like 'PGB-BATCH-%') as accounts,
        (select count(*) from notes n join accounts a on a.id = n.account_id where a.external_account_number like 'PGB-BATCH-%') as notes,
        (select sum(t.amount)::numeric(12, 2) from ledger_transactions t join ledgers l on l.id = t.ledger_id join accounts a on a.id = l.account_id
          where a.external_account_number like 'PGB-BATCH-%' and t.transaction_id like 'PGB-BATCH-%') as credited`
        t.same(
          [Number(row!.accounts), Number(row!.notes), String(row!.credited)],
          [40, 40, '60.00'],
          'one account, one note and one 1.50 credit each'
        )
      }
    )

    t.test('servers started while the others are busy (a rolling restart) leave no lock behind', async (t) => {
      const statusOf = (base: string, i: number) => status(base, tenant.token, externals[i % ACCOUNTS]!)
      for (const n of [3, 4]) {
        // Requests keep every server connection busy, so PgBouncer hands each of the starting
        // server's transactions whichever connection is free first.
        const load = { on: true, requests: 0, odd: [] as string[] }
        const loops = Array.from({ length: 12 }, async (_, i) => {
          while (load.on) {
            const res = await statusOf(on(i), i)
            load.requests++
            if (res.status !== 200) load.odd.push(`${res.status} ${JSON.stringify(res.body)}`)
          }
        })
        let started
        try {
          ;[started] = await startServers(t, bouncer.url(name), 1, env)
        } finally {
          load.on = false
          await Promise.all(loops)
        }
        t.same(load.odd, [], `server ${n} started while ${load.requests} requests were answered`)
        t.equal(await advisoryLocks(), 0, `no advisory lock is held after server ${n} started`)
        t.equal((await statusOf(started!.url, n)).status, 200, `server ${n} answers`)
        servers.push(started!)
      }
    })

    t.test('PgBouncer pooled: fewer server connections served more clients', async (t) => {
      sampling.on = false
      await sampler
      t.equal(sampling.error, undefined, 'the counts were sampled throughout')
      const stats = (await bouncer.show('STATS')).find((s) => s.database === name)!
      const pool = (await bouncer.show('POOLS')).find((p) => p.database === name)!
      t.equal(pool.pool_mode, 'transaction', 'PgBouncer pools by transaction')
      t.ok(
        peak.backends > 0 && peak.backends <= SERVER_CONNECTIONS,
        `PostgreSQL saw at most ${SERVER_CONNECTIONS} connections to the database (${peak.backends})`
      )
      t.ok(
        peak.servers <= SERVER_CONNECTIONS,
        `PgBouncer held at most ${SERVER_CONNECTIONS} server connections (${peak.servers})`
      )
      t.ok(peak.clients > 2 * SERVER_CONNECTIONS, `while serving up to ${peak.clients} client connections`)
      t.ok(
        Number(stats.total_xact_count) > 2 * ACCOUNTS,
        `${stats.total_xact_count} transactions went through PgBouncer`
      )
      t.ok(
        Number(stats.total_wait_time) > 0,
        `clients waited for a free server connection (${stats.total_wait_time} µs in all)`
      )
      for (const [i, server] of servers.entries()) {
        t.same(errorLines(server.output()), [], `server ${i + 1} logged no errors`)
      }
      t.same(errorLines(logged), [], 'the in-process app logged no errors')
    })
  })
}

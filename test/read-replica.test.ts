import t, { type Test } from 'tap'
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { exampleAccount, importClient } from './helpers/accounts.js'
import { freshDatabase, testDatabaseUrl } from './helpers/database.js'
import { asPostgres, freePort, postgresUserMissing, postmasterPid } from './helpers/formation.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { remote, testServer } from './helpers/server.js'

/**
 * DATABASE_READ_URL: a streaming replica of the test's PostgreSQL server (pg_basebackup of the
 * whole cluster, so the test's database is on it), started on a free port. With the replica's
 * replay paused, what was written since is missing from the lists, the failure summary and the
 * dashboard's progress (they read the replica) but not from the status (the primary); after the
 * replay resumes it appears. With the replica stopped, the same reads answer from the primary, at once.
 */

/** Why a replica cannot be made here, or undefined when it can. */
function replicaMissing(): string | undefined {
  let bindir: string
  try {
    bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  } catch {
    return 'pg_config is not on PATH (no PostgreSQL binaries)'
  }
  try {
    execFileSync(join(bindir, 'pg_basebackup'), ['--version'], { encoding: 'utf8' })
  } catch {
    return `pg_basebackup is missing from ${bindir}`
  }
  return postgresUserMissing()
}

interface Replica {
  port: number
  sql(statement: string): Promise<string>
  /** `pg_ctl stop -m immediate`: the replica is gone without a word to its clients. */
  stop(): Promise<void>
}

/** A hot standby of the server at TEST_DATABASE_URL, in a folder of its own; killed and removed at teardown. */
async function startReplica(t: Test, database: string): Promise<Replica> {
  const bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  const source = new URL(testDatabaseUrl!)
  const { wrap, own } = asPostgres()
  const dir = mkdtempSync(join(tmpdir(), 'amis-replica-'))
  const pgdata = join(dir, 'data')
  own(dir)
  const run = (program: string, args: string[], timeout = 60_000) =>
    new Promise<string>((resolve, reject) => {
      const [file, ...rest] = [...wrap, join(bindir, program), ...args]
      execFile(file!, rest, { timeout, encoding: 'utf8', cwd: dir }, (error, stdout, stderr) =>
        error ? reject(new Error(`${program} ${args.join(' ')}: ${stderr || error.message}`)) : resolve(stdout)
      )
    })
  t.teardown(async () => {
    // pg_ctl's immediate stop ends the postmaster's children with it (a SIGKILLed postmaster leaves
    // them to notice by themselves); SIGKILL only when pg_ctl cannot.
    if (postmasterPid(pgdata) !== undefined) {
      await run('pg_ctl', ['-D', pgdata, '-m', 'immediate', 'stop'], 20_000).catch(() => '')
    }
    const pid = postmasterPid(pgdata)
    if (pid !== undefined) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone already
      }
      await sleep(200)
    }
    rmSync(dir, { recursive: true, force: true })
  })
  const host = source.hostname
  const sourcePort = source.port || '5432'
  const user = decodeURIComponent(source.username) || 'postgres'
  // -R writes standby.signal and primary_conninfo; -c fast asks for the checkpoint now.
  await run('pg_basebackup', [
    '-h',
    host,
    '-p',
    sourcePort,
    '-U',
    user,
    '-D',
    pgdata,
    '-R',
    '-X',
    'stream',
    '-c',
    'fast'
  ])
  const port = await freePort()
  // A standby refuses to start with any of these below the primary's: it gets the primary's own.
  const primarySettings = await run('psql', [
    ...['-h', host, '-p', sourcePort, '-U', user, '-d', database, '-At', '-c'],
    "select name || ' = ' || setting from pg_settings where name in ('max_connections', 'max_worker_processes', " +
      "'max_wal_senders', 'max_prepared_transactions', 'max_locks_per_transaction')"
  ])
  // Debian keeps postgresql.conf and pg_hba.conf outside the data folder: the replica gets its own.
  writeFileSync(
    join(pgdata, 'postgresql.conf'),
    [
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      'hot_standby = on',
      'fsync = off',
      "shared_buffers = '32MB'",
      primarySettings.trim()
    ].join('\n') + '\n'
  )
  writeFileSync(join(pgdata, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.1/32 trust\n')
  own(join(pgdata, 'postgresql.conf'))
  own(join(pgdata, 'pg_hba.conf'))
  writeFileSync(join(pgdata, 'pg_ident.conf'), '')
  own(join(pgdata, 'pg_ident.conf'))
  await run('pg_ctl', ['-D', pgdata, '-l', join(dir, 'replica.log'), '-w', '-t', '60', 'start']).catch((e: Error) => {
    throw new Error(`${e.message}\n${readFileSync(join(dir, 'replica.log'), 'utf8')}`)
  })
  const sql = (statement: string) =>
    run(
      'psql',
      ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', database, '-At', '-c', statement],
      10_000
    )
  return {
    port,
    sql,
    async stop() {
      await run('pg_ctl', ['-D', pgdata, '-m', 'immediate', 'stop'])
    }
  }
}

/** Polls `check` every 100 ms until it holds; fails after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return
    await sleep(100)
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`)
}

const missing = !testDatabaseUrl
  ? 'a read replica needs a PostgreSQL server to copy (set TEST_DATABASE_URL to run the PostgreSQL half)'
  : replicaMissing()

if (missing !== undefined) {
  t.skip(`not run: ${missing}`, () => {})
} else {
  t.test('the lists read the replica, status the primary; a stopped replica leaves them to the primary', async (t) => {
    const fresh = await freshDatabase()
    await fresh.database.close()
    t.teardown(fresh.drop)
    const name = new URL(fresh.url!).pathname.slice(1)
    const replica = await startReplica(t, name)
    t.equal((await replica.sql('select pg_is_in_recovery()')).trim(), 't', 'the replica is a standby')

    const server = await testServer(t, {
      DATABASE_URL: fresh.url!,
      DATABASE_READ_URL: `postgres://postgres@127.0.0.1:${replica.port}/${name}`
    })
    t.match(server.output(), /read replica at 127\.0\.0\.1:\d+\//, 'the start-up log names the replica')
    const app = remote(server.url)
    const tenant = await createTenant(app, 'Acme', 'ACME_ENERGY')
    const client = importClient(app, tenant)
    const bad = (external: string) =>
      exampleAccount({
        external_account_number: external,
        customers: [{ ...exampleAccount().customers[0], landline: 'abcde' }]
      })
    const get = async (path: string) => {
      const res = await app.inject({
        url: `/v1/data-import/${path}`,
        headers: { authorization: `Token ${tenant.token}` }
      })
      t.equal(res.statusCode, 200, `GET ${path} answers 200`)
      return res.json() as unknown
    }
    const listed = async (query = '') =>
      (
        (await get(`all-account-import-processes/ACME_ENERGY/${query}`)) as Array<{ external_account_number: string }>
      ).map((row) => row.external_account_number)
    const failing = async () =>
      ((await get('failure-summary/ACME_ENERGY/')) as { failing_accounts: number }).failing_accounts
    const failedList = async (query = '') =>
      (
        (await get(`failed-account-import-processes/ACME_ENERGY/${query}`)) as Array<{
          external_account_number: string
        }>
      ).map((row) => row.external_account_number)
    const progress = async () =>
      (
        (await asOperator(app, 'query($s: String!) { migrationProgress(importSupplierCode: $s) { staged failing } }', {
          s: 'ACME_ENERGY'
        })) as { migrationProgress: { staged: number; failing: number } }
      ).migrationProgress

    t.equal((await client.stage(exampleAccount({ external_account_number: 'EXT-1' }))).statusCode, 201)
    t.equal((await client.stage(bad('EXT-F1'))).statusCode, 400)
    await until(
      'the replica has EXT-1 and its failure',
      async () => (await listed()).includes('EXT-1') && (await failing()) === 1
    )

    await t.test('replay paused: new rows are missing from the lists and the summary, not from status', async (t) => {
      await replica.sql('select pg_wal_replay_pause()')
      await until(
        'replay paused',
        async () => (await replica.sql('select pg_get_wal_replay_pause_state()')).trim() === 'paused'
      )
      t.equal((await client.stage(exampleAccount({ external_account_number: 'EXT-2' }))).statusCode, 201)
      t.equal((await client.stage(bad('EXT-F2'))).statusCode, 400)

      const status = await client.status('EXT-2')
      t.equal(status.statusCode, 200, 'status of the new account answers (the primary has it)')
      t.equal(status.json().status, 'UNKNOWN')
      t.same(await listed(), ['EXT-1'], 'the whole list (streamed) lacks it')
      t.same(await listed('?limit=10'), ['EXT-1'], 'a page lacks it')
      t.same(await failedList(), ['EXT-F1'], 'the failure list (streamed) lacks the new failure')
      t.same(await failedList('?limit=10'), ['EXT-F1'], 'a page of failures lacks it')
      t.equal(await failing(), 1, 'the failure summary lacks it')
      t.same(await progress(), { staged: 1, failing: 1 }, "the dashboard's progress lacks both")

      await replica.sql('select pg_wal_replay_resume()')
      await until('the replica replays the new rows', async () => (await listed()).includes('EXT-2'))
      t.same(await listed(), ['EXT-1', 'EXT-2'])
      await until('the failure summary has the new failure', async () => (await failing()) === 2)
      t.same(await failedList(), ['EXT-F1', 'EXT-F2'])
      t.same(await progress(), { staged: 2, failing: 2 })
    })

    await t.test('replica stopped: the same reads answer 200 from the primary, quickly', async (t) => {
      await replica.stop()
      t.equal((await client.stage(exampleAccount({ external_account_number: 'EXT-3' }))).statusCode, 201)
      const timed = async <T>(what: string, read: () => Promise<T>): Promise<T> => {
        const started = Date.now()
        const result = await read()
        const ms = Date.now() - started
        t.ok(ms < 3000, `${what} answered in ${ms} ms (under 3 s)`)
        return result
      }
      t.same(await timed('the whole list', () => listed()), ['EXT-1', 'EXT-2', 'EXT-3'], 'from the primary')
      t.same(await timed('a page', () => listed('?limit=10')), ['EXT-1', 'EXT-2', 'EXT-3'])
      t.same(await timed('the failure list', () => failedList()), ['EXT-F1', 'EXT-F2'])
      t.equal(await timed('the failure summary', () => failing()), 2)
      t.same(await timed("the dashboard's progress", () => progress()), { staged: 3, failing: 2 })
      // Marked down: the next reads do not try the replica again.
      for (let i = 0; i < 5; i++) await timed(`list ${i + 1} after`, () => listed('?limit=10'))
      const ready = await app.inject({ url: '/readyz' })
      t.equal(ready.statusCode, 200, '/readyz: the primary serves')
      await app.inject({ url: '/readyz' })
      await sleep(300)
      const downs = server.output().match(/read replica at [^ ]+ cannot be reached/g) ?? []
      t.equal(downs.length, 1, 'the replica going down is logged once')
    })
  })
}

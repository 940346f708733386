import t from 'tap'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { exampleAccount, importClient } from './helpers/accounts.js'
import { testDatabaseUrl } from './helpers/database.js'
import { clusterMissing, startCluster } from './helpers/formation.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { remote, testServer } from './helpers/server.js'
import { waitFor } from './helpers/wait.js'

/**
 * DATABASE_READ_URL: a PostgreSQL server of the test's own and a streaming replica of it
 * (pg_basebackup), each on a free port. With the replica's replay paused, what was written since
 * is missing from the lists, the failure summary and the dashboard's progress (they read the
 * replica) but not from the status (the primary); after the replay resumes it appears. With the
 * replica stopped, the same reads answer from the primary, at once.
 */

/** Why a replica cannot be made here, or undefined when it can. */
function replicaMissing(): string | undefined {
  const missing = clusterMissing()
  if (missing !== undefined) return missing
  const bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  try {
    execFileSync(join(bindir, 'pg_basebackup'), ['--version'], { encoding: 'utf8' })
  } catch {
    return `pg_basebackup is missing from ${bindir}`
  }
  return undefined
}

const missing = !testDatabaseUrl
  ? "a read replica is a PostgreSQL server's: run with the PostgreSQL half (set TEST_DATABASE_URL)"
  : replicaMissing()

if (missing !== undefined) {
  t.skip(`not run: ${missing}`, () => {})
} else {
  t.test('the lists read the replica, status the primary; a stopped replica leaves them to the primary', async (t) => {
    // A primary of the test's own: a standby of the shared server would replay the WAL of every
    // other test file running beside it, and in CI fell more than 30 s behind.
    const primary = await startCluster(t)
    const replica = await startCluster(t, { standbyOf: primary })
    t.equal((await replica.sql('select pg_is_in_recovery()')).trim(), 't', 'the replica is a standby')

    const server = await testServer(t, { DATABASE_URL: primary.url(), DATABASE_READ_URL: replica.url() })
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
    const dashboardPending = async () =>
      (
        (await asOperator(app, 'query($s: String!) { reconciliation(importSupplierCode: $s) { accountsPending } }', {
          s: 'ACME_ENERGY'
        })) as { reconciliation: { accountsPending: number } }
      ).reconciliation.accountsPending
    const restPending = async () =>
      ((await get('reconciliation/ACME_ENERGY/')) as { accounts_pending: number }).accounts_pending

    t.equal((await client.stage(exampleAccount({ external_account_number: 'EXT-1' }))).statusCode, 201)
    t.equal((await client.stage(bad('EXT-F1'))).statusCode, 400)
    await waitFor(
      'the replica has EXT-1 and its failure',
      async () => (await listed()).includes('EXT-1') && (await failing()) === 1,
      { timeoutMs: 30_000, intervalMs: 100 }
    )

    await t.test('replay paused: new rows are missing from the lists and the summary, not from status', async (t) => {
      await replica.sql('select pg_wal_replay_pause()')
      await waitFor(
        'replay paused',
        async () => (await replica.sql('select pg_get_wal_replay_pause_state()')).trim() === 'paused',
        { timeoutMs: 30_000, intervalMs: 100 }
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
      // The REST reconciliation is the migration client's check of what it wrote: on the primary.
      t.equal(await restPending(), 2, "the REST reconciliation's totals have it (the primary's)")
      t.equal(await dashboardPending(), 1, "the dashboard's reconciliation totals lack it")

      await replica.sql('select pg_wal_replay_resume()')
      await waitFor('the replica replays the new rows', async () => (await listed()).includes('EXT-2'), {
        timeoutMs: 30_000,
        intervalMs: 100
      })
      t.same(await listed(), ['EXT-1', 'EXT-2'])
      await waitFor('the failure summary has the new failure', async () => (await failing()) === 2, {
        timeoutMs: 30_000,
        intervalMs: 100
      })
      t.same(await failedList(), ['EXT-F1', 'EXT-F2'])
      t.same(await progress(), { staged: 2, failing: 2 })
      t.equal(await dashboardPending(), 2, "the dashboard's reconciliation totals have it")
    })

    await t.test('replica stopped: the same reads answer 200 from the primary, quickly', async (t) => {
      await replica.stop('immediate')
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

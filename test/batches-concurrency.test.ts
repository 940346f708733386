import t from 'tap'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { buildSharedTestApp, buildTestApp, TEST_OPERATOR_KEY, TEST_TOKEN_SECRET } from './helpers/app.js'
import { exampleAccount, importClient, TEAM } from './helpers/accounts.js'
import { holdLocks, rowsOf, testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { PROCESS_LOCK_BASE } from '../src/db/locks.js'
import { generated, inputFile, readReport, runClient, clientArgs } from './helpers/migrate.js'
import { checkMigrated } from './helpers/migrate-expect.js'
import { startServer, startServers, type Running } from './helpers/server.js'
import { tempDir } from './helpers/temp-dir.js'
import { waitFor } from './helpers/wait.js'

/**
 * Batches against the PostgreSQL server with several server processes: overlapping batches, a
 * supplier's concurrency limit, and a server killed in the middle of a batch.
 */

function postBatch(server: Running, token: string, accounts: unknown[], more: Record<string, unknown> = {}) {
  return fetch(`${server.url}/v1/data-import/batches/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ import_supplier: 'ACME_ENERGY', operations_team_name: TEAM, accounts, ...more })
  }).then(async (res) => ({ status: res.status, body: (await res.json()) as any }))
}

if (!testDatabaseUrl) {
  t.skip('batches under concurrency are tested against the PostgreSQL server (set TEST_DATABASE_URL)', () => {})
} else {
  t.test('batches on PostgreSQL with two server processes', async (t) => {
    const { app, database, url } = await buildSharedTestApp(t)
    const tenant = await createTenant(app, 'Acme', 'ACME_ENERGY')
    await asOperator(app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
    const servers = await startServers(t, url!, 2)
    const client = importClient(app, tenant)

    t.test(
      'overlapping batches in different orders: each account created once, every entry a definite outcome',
      async (t) => {
        for (let round = 0; round < 3; round++) {
          const externals = Array.from({ length: 120 }, (_, i) => `OV-${round}-${String(i).padStart(3, '0')}`)
          const entries = externals.map((x) => ({
            account: exampleAccount({ external_account_number: x }),
            notes: [{ body: `note of ${x}` }]
          }))
          const [a, b] = await Promise.all([
            postBatch(servers[0]!, tenant.token, entries),
            postBatch(servers[1]!, tenant.token, [...entries].reverse())
          ])
          t.same([a.status, b.status], [200, 200], `round ${round}: both answered`)
          for (const answer of [a, b]) {
            const outcomes = new Set(answer.body.results.map((r: any) => r.outcome))
            t.ok(
              [...outcomes].every((o) => o === 'created' || o === 'already_imported'),
              `round ${round}: outcomes ${[...outcomes].join(', ')}`
            )
          }
          const created = a.body.counts.created + b.body.counts.created
          t.equal(created, 120, `round ${round}: 120 accounts created, once each`)
          const [row] = rowsOf<{ accounts: string | number; notes: string | number }>(
            await database.db.execute(sql`select
          (select count(*) from accounts where external_account_number like ${`OV-${round}-%`}) as accounts,
          (select count(*) from notes n join accounts a on a.id = n.account_id where a.external_account_number like ${`OV-${round}-%`}) as notes`)
          )
          t.same(
            [Number(row!.accounts), Number(row!.notes)],
            [120, 120],
            `round ${round}: one account and one note each`
          )
        }
      }
    )

    t.test(
      'a dry-run batch racing the real batch of the same accounts: each account created once, by the real one; the dry run creates nothing',
      async (t) => {
        for (let round = 0; round < 3; round++) {
          const externals = Array.from({ length: 120 }, (_, i) => `DR-${round}-${String(i).padStart(3, '0')}`)
          const entries = externals.map((x) => ({ account: exampleAccount({ external_account_number: x }) }))
          const [dry, real] = await Promise.all([
            postBatch(servers[0]!, tenant.token, entries, { dry_run: true }),
            postBatch(servers[1]!, tenant.token, [...entries].reverse())
          ])
          t.same([dry.status, real.status], [200, 200], `round ${round}: both answered`)
          // A create of the other batch holding an account when an entry is taken one by one: in progress, as for single requests.
          const inProgress = (r: any) =>
            r.outcome === 'failed' &&
            r.code === 'account_failed_validation' &&
            r.errors.map((e: any) => e.code).join() === 'account_import_in_progress'
          t.same(
            dry.body.results.filter(
              (r: any) => !['would_create', 'already_imported'].includes(r.outcome) && !inProgress(r)
            ),
            [],
            `round ${round}: dry run outcomes`
          )
          t.same(
            real.body.results.filter(
              (r: any) => !['created', 'already_imported'].includes(r.outcome) && !inProgress(r)
            ),
            [],
            `round ${round}: real outcomes`
          )
          const [row] = rowsOf<{ accounts: string | number; created: string | number; processes: string | number }>(
            await database.db.execute(sql`select
          (select count(*) from accounts where external_account_number like ${`DR-${round}-%`}) as accounts,
          (select count(*) from import_events e join import_processes p on p.id = e.import_process_id
            where p.external_account_number like ${`DR-${round}-%`} and e.type = 'CREATED') as created,
          (select count(*) from import_processes where external_account_number like ${`DR-${round}-%`}) as processes`)
          )
          t.same(
            [Number(row!.accounts), Number(row!.created)],
            [real.body.counts.created, real.body.counts.created],
            `round ${round}: the real batch's accounts, each once`
          )
          t.equal(Number(row!.processes), 120, `round ${round}: one process each`)
          // What the race left in progress, sent again: every account created once.
          const again = await postBatch(servers[1]!, tenant.token, entries)
          t.equal(
            again.body.counts.created + again.body.counts.already_imported,
            120,
            `round ${round}: all there after a retry`
          )
          const [total] = rowsOf<{ n: string | number }>(
            await database.db.execute(
              sql`select count(*) as n from accounts where external_account_number like ${`DR-${round}-%`}`
            )
          )
          t.equal(Number(total!.n), 120, `round ${round}: 120 accounts`)
        }
      }
    )

    t.test(
      'a batch waits for a free slot of its supplier, and an entry that finds none in 30 s fails with 429',
      async (t) => {
        await asOperator(
          app,
          'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", maxConcurrentProcessing: 1}) { code } }'
        )
        t.teardown(() =>
          asOperator(
            app,
            'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", maxConcurrentProcessing: null}) { code } }'
          )
        )
        const [supplier] = rowsOf<{ id: string }>(
          await database.db.execute(sql`select id from import_suppliers where code = 'ACME_ENERGY'`)
        )
        // The supplier's only slot, held by another session (as a create running elsewhere would).
        const release = await holdLocks(t, url!, (s) => s`select pg_advisory_xact_lock(hashtext(${supplier!.id}), 0)`)
        const started = Date.now()
        const waiting = postBatch(servers[0]!, tenant.token, [
          { account: exampleAccount({ external_account_number: 'SLOT-1' }) }
        ])
        const answer = await waiting
        const waited = Date.now() - started
        t.ok(waited >= 29_000, `waited ${waited} ms`)
        t.same(
          answer.body.results.map((r: any) => [r.outcome, r.step, r.status, r.code]),
          [['failed', 'create', 429, 'too_many_accounts_processing']]
        )
        await release()
        const retried = await postBatch(servers[0]!, tenant.token, [
          { account: exampleAccount({ external_account_number: 'SLOT-1' }) }
        ])
        t.same(retried.body.counts.created, 1, 'with the slot free, the same entry is created')
        t.equal((await client.status('SLOT-1')).json().status, 'COMPLETED')
      }
    )

    t.test(
      'a staged account another request holds: left to the one-by-one path, the rest of its chunk created together',
      async (t) => {
        for (const x of ['HELD-1', 'HELD-2']) {
          t.equal((await client.stage(exampleAccount({ external_account_number: x }))).statusCode, 201, `${x} staged`)
        }
        const [held] = rowsOf<{ id: string | number }>(
          await database.db.execute(sql`select id from import_processes where external_account_number = 'HELD-1'`)
        )
        // HELD-1's process lock, as a create running elsewhere holds it.
        const release = await holdLocks(
          t,
          url!,
          (s) => s`select pg_advisory_xact_lock(${(PROCESS_LOCK_BASE + BigInt(held!.id)).toString()}::bigint)`
        )
        // An app of its own on the same database, whose log the test reads.
        const { app: logged, logs } = await buildTestApp(t, { database, captureLogs: true })
        const res = await logged.inject({
          method: 'POST',
          url: '/v1/data-import/batches/',
          headers: { authorization: `Bearer ${tenant.token}` },
          payload: {
            import_supplier: 'ACME_ENERGY',
            operations_team_name: TEAM,
            accounts: ['HELD-1', 'HELD-2', 'HELD-3', 'HELD-4'].map((x) => ({
              account: exampleAccount({ external_account_number: x })
            }))
          }
        })
        t.equal(res.statusCode, 200)
        t.same(
          res.json().results.map((r: any) => [r.external_account_number, r.outcome, r.errors?.map((e: any) => e.code)]),
          [
            ['HELD-1', 'failed', ['account_import_in_progress']],
            ['HELD-2', 'created', undefined],
            ['HELD-3', 'created', undefined],
            ['HELD-4', 'created', undefined]
          ]
        )
        t.notMatch(logs(), /batch chunk rolled back/, 'the chunk was not rolled back for it')
        await release()
        const [row] = rowsOf<{ state: string; accounts: string | number }>(
          await database.db.execute(sql`select p.state,
            (select count(*) from accounts where external_account_number = 'HELD-1') as accounts
            from import_processes p where p.external_account_number = 'HELD-1'`)
        )
        t.same([row!.state, Number(row!.accounts)], ['STAGED', 0], 'HELD-1 still staged, not created')
      }
    )

    t.test(
      'a server killed in the middle of a batch: every entry done or not started; --resume finishes, nothing twice',
      async (t) => {
        const dir = tempDir(t)
        const lines = generated(400, 'batch-kill').map((l) => l.line as any)
        const file = inputFile(dir, 'accounts.ndjson', lines)
        const env = {
          DATABASE_URL: url!,
          DATA_DIR: join(dir, 'data'),
          TOKEN_SECRET: TEST_TOKEN_SECRET,
          OPERATOR_API_KEY: TEST_OPERATOR_KEY,
          NODE_ENV: 'test'
        }
        const victim = await startServer(env)
        t.teardown(() => {
          if (victim.child.exitCode === null) victim.child.kill('SIGKILL')
        })
        const first = runClient(
          clientArgs(
            file,
            victim.url,
            join(dir, 'first.ndjson'),
            '--batch-size',
            '100',
            '--max-attempts',
            '2',
            '--wait',
            '1'
          ),
          { AMIS_API_KEY: tenant.apiKey }
        )
        // Kill it once some accounts of the run exist, while batches are still being worked on.
        await waitFor(
          '50 accounts of the run exist',
          async () => {
            const [row] = rowsOf<{ n: string | number }>(
              await database.db.execute(
                sql`select count(*) as n from accounts where external_account_number in ${sql.raw(`(${lines.map((l) => `'${l.account.external_account_number}'`).join(',')})`)}`
              )
            )
            return Number(row!.n) >= 50
          },
          { timeoutMs: 60_000, intervalMs: 10 }
        )
        victim.child.kill('SIGKILL')
        await victim.exit
        const interrupted = await first
        t.not(interrupted.code, 0, 'the first run could not finish')

        // Nothing half done: every account is whole or absent (a created account has its accounts' rows and its events).
        const [broken] = rowsOf<{ n: string | number }>(
          await database.db.execute(sql`select count(*) as n from import_processes p
        where p.state = 'IMPORTED' and not exists (select 1 from accounts a where a.import_process_id = p.id)`)
        )
        t.equal(Number(broken!.n), 0, 'no process marked imported without its account')

        const again = await startServer({ ...env, DATA_DIR: join(dir, 'data2') })
        t.teardown(() => {
          if (again.child.exitCode === null) again.child.kill('SIGKILL')
        })
        const second = await runClient(
          clientArgs(file, again.url, join(dir, 'second.ndjson'), '--batch-size', '100', '--resume'),
          { AMIS_API_KEY: tenant.apiKey }
        )
        t.equal(second.code, 0, second.stdout)
        t.equal(readReport(join(dir, 'second.ndjson')).length, 400)
        await checkMigrated(t, () => client, lines)
      }
    )
  })
}

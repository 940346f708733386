import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import { DRIVER_PATCH_MARKS, driverFile, driverPatchProblem } from '../src/db/driver-check.js'
import { freshDatabase, testDatabaseUrl } from './helpers/database.js'
import { tempDir } from './helpers/temp-dir.js'

t.test('the installed postgres driver carries the patch (patches/postgres+3.4.9.patch)', async (t) => {
  t.equal(driverPatchProblem(), undefined)
  for (const [name, marks] of Object.entries(DRIVER_PATCH_MARKS)) {
    for (const mark of marks) t.match(readFileSync(driverFile(name), 'utf8'), mark, name)
  }
  const pkg = JSON.parse(readFileSync(join(driverFile('index.js'), '..', '..', 'package.json'), 'utf8')) as {
    version: string
  }
  t.equal(pkg.version, '3.4.9', 'the exact version the patch was made for')
})

t.test('an unpatched driver (any change missing) is named in one line that says what to do', async (t) => {
  const copy = () => {
    const dir = tempDir(t)
    for (const name of Object.keys(DRIVER_PATCH_MARKS)) writeFileSync(join(dir, name), readFileSync(driverFile(name)))
    return dir
  }
  t.equal(driverPatchProblem(copy()), undefined, 'a copy of the patched files passes')
  for (const [name, marks] of Object.entries(DRIVER_PATCH_MARKS)) {
    for (const mark of marks) {
      const dir = copy()
      writeFileSync(join(dir, name), readFileSync(join(dir, name), 'utf8').replaceAll(mark, ''))
      const problem = driverPatchProblem(dir)
      t.match(problem, /not patched.*npx patch-package/, mark)
      t.notMatch(problem, /\n/)
    }
  }
  t.match(driverPatchProblem(join(tempDir(t), 'missing')), /cannot be read/)
})

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

if (!testDatabaseUrl) {
  t.skip(
    'a connection lost inside a transaction is tested against the PostgreSQL server (set TEST_DATABASE_URL)',
    () => {}
  )
} else {
  t.test('a connection lost inside a transaction (a failover, a terminated backend)', async (t) => {
    const fresh = await freshDatabase()
    await fresh.database.close()
    t.teardown(fresh.drop)
    const unhandled: unknown[] = []
    const onUnhandled = (err: unknown) => unhandled.push(err)
    process.on('unhandledRejection', onUnhandled)
    t.teardown(() => {
      process.off('unhandledRejection', onUnhandled)
    })
    const admin = postgres(fresh.url!, { max: 1, onnotice: () => {} })
    // One connection: the next transaction runs on the same connection object, reconnected.
    const client = postgres(fresh.url!, { max: 1, onnotice: () => {}, connection: { application_name: 'lost-tx' } })
    t.teardown(async () => {
      await client.end({ timeout: 2 })
      await admin.end({ timeout: 2 })
    })
    await admin`create table written (n int)`
    /** Terminates the client's backend once it is in `state` (active: in a query; idle in transaction: between them). */
    const terminate = async (state: string) => {
      for (let i = 0; i < 200; i++) {
        const rows = await admin`select pg_terminate_backend(pid) from pg_stat_activity
          where application_name = 'lost-tx' and state = ${state}`
        if (rows.length) return
        await sleep(10)
      }
      throw new Error(`no backend in state ${state}`)
    }
    /** The server's own FATAL (57P01, terminated by an administrator) may arrive before the close. */
    const LOST = /^(CONNECTION_CLOSED|57P01)$/
    const written = async () => (await admin`select n from written order by n`).map((r) => Number(r.n))
    const settled = <T>(p: Promise<T>) =>
      Promise.race([
        p.then(
          () => 'resolved',
          (e: { code?: string }) => e.code ?? 'rejected'
        ),
        sleep(5000).then(() => 'hung')
      ])

    t.test('killed during a query: begin rejects, and the queued queries with it', async (t) => {
      const run = settled(
        client.begin((tx) => [tx`select pg_sleep(5)`, tx`insert into written values (1)`, tx`select 1`])
      )
      await terminate('active')
      t.match(await run, LOST)
      t.same(await written(), [])
    })

    t.test('killed between two queries: what the callback sends afterwards is refused, never run', async (t) => {
      let goOn = () => {}
      let inserted = () => {}
      const waiting = new Promise<void>((resolve) => (inserted = resolve))
      const killed = new Promise<void>((resolve) => (goOn = resolve))
      let tell = (_outcome: string) => {}
      const later = new Promise<string>((resolve) => (tell = resolve))
      const run = settled(
        client.begin(async (tx) => {
          await tx`insert into written values (2)`
          inserted()
          await killed
          tell(await settled(Promise.resolve(tx`insert into written values (3)`)))
        })
      )
      // Queued behind it on the one connection: it gets the connection once reconnected.
      const next = settled(client.begin((tx) => tx`insert into written values (4)`))
      await waiting
      await terminate('idle in transaction')
      t.match(await run, LOST, 'the transaction fails')
      goOn()
      t.equal(await next, 'resolved', 'the next transaction runs, on a new connection')
      t.equal(
        await Promise.race([later, sleep(5000).then(() => 'hung')]),
        'CONNECTION_CLOSED',
        "the callback's later query is refused"
      )
      t.same(await written(), [4], 'nothing of the lost transaction is stored, not even what it sent after the loss')
    })

    t.test('a callback that swallows the error: no commit, begin rejects', async (t) => {
      const run = settled(
        client.begin(async (tx) => {
          await tx`insert into written values (5)`
          await tx`select pg_sleep(5)`.catch(() => {})
          return 'carried on'
        })
      )
      await terminate('active')
      t.match(await run, LOST)
      t.same(await written(), [4])
    })

    t.test('a savepoint lost with its transaction', async (t) => {
      const run = settled(
        client.begin(async (tx) => {
          await tx`insert into written values (6)`
          await tx.savepoint((s) => s`select pg_sleep(5)`)
        })
      )
      await terminate('active')
      t.match(await run, LOST)
      t.same(await written(), [4])
    })

    t.test('afterwards: nothing was left unhandled, the client works and ends', async (t) => {
      await sleep(200)
      t.same(unhandled, [], 'no unhandled rejection')
      t.same(await client.begin((tx) => tx`select 1 as one`), [{ one: 1 }])
      t.equal(await settled(client.end({ timeout: 2 })), 'resolved')
    })
  })
}

import t, { type Test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'drizzle-orm'
import { PgliteWorkerClient } from '../src/db/pglite-client.js'
import { migrationsFolder } from '../src/paths.js'
import { buildTestApp } from './helpers/app.js'
import { tempDir } from './helpers/temp-dir.js'
import { openPglite, rowsOf, runInOrder, timedTransaction } from '../src/db/index.js'

// The embedded PGlite runs in a worker thread of its own (src/db/pglite-worker.ts): while it works,
// the server's thread answers other requests. These tests are about PGlite, so they open one of
// their own on either half of the suite.

/** The app on an in-memory PGlite of its own, closed after the app. */
async function pgliteApp(t: Test) {
  const database = await openPglite({ dataDir: 'memory://' })
  const built = await buildTestApp(t, { database })
  t.teardown(() => database.close())
  return built
}

/** A request must answer within this while the database is busy (it takes about 1 ms when idle). */
const BOUND_MS = 200

t.test('requests answer while the embedded database is busy', async (t) => {
  const { app, database } = await pgliteApp(t)
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200)
  // The longest gap between ticks of a 10 ms timer: how long the thread was held at once.
  let lastTick = performance.now()
  let maxGapMs = 0
  const ticker = setInterval(() => {
    const now = performance.now()
    maxGapMs = Math.max(maxGapMs, now - lastTick)
    lastTick = now
  }, 10)
  const started = performance.now()
  const state = { busy: true }
  const operation = database.db.execute(sql`select pg_sleep(1.5)`).finally(() => {
    state.busy = false
  })
  const times: number[] = []
  while (state.busy) {
    const began = performance.now()
    const res = await app.inject({ url: '/healthz' })
    if (state.busy) times.push(performance.now() - began)
    t.equal(res.statusCode, 200)
    await sleep(50)
  }
  await operation
  clearInterval(ticker)
  t.ok(performance.now() - started >= 1400, 'the operation kept the database busy for 1.5 s')
  t.ok(times.length >= 10, `/healthz answered ${times.length} times during it (one every 50 ms or so)`)
  const slowest = Math.max(0, ...times)
  t.ok(slowest < BOUND_MS, `/healthz answered within ${BOUND_MS} ms (at most ${Math.round(slowest)} ms)`)
  t.ok(maxGapMs < BOUND_MS, `the thread was never held ${BOUND_MS} ms at once (at most ${Math.round(maxGapMs)} ms)`)
})

t.test('a statement outside a transaction waits for the transaction in progress only', async (t) => {
  const { database } = await pgliteApp(t)
  const { db } = database
  const ended: string[] = []
  const transaction = (name: string) =>
    db
      .transaction(async (tx) => {
        await tx.execute(sql`select pg_sleep(0.3)`)
      })
      .then(() => ended.push(name))
  // On one session everything waits for the transaction in progress; a read sent after two more
  // transactions were asked for still runs before them.
  const running = [transaction('first'), transaction('second'), transaction('third')]
  const read = db.execute(sql`select 1`).then(() => ended.push('read'))
  await Promise.all([...running, read])
  t.ok(
    ended.indexOf('read') < ended.indexOf('second'),
    `the read ended before the second transaction (${ended.join(', ')})`
  )
  t.ok(ended.indexOf('read') < ended.indexOf('third'), 'and before the third')
})

t.test('a transaction holds the database from its first statement only, and says for how long', async (t) => {
  const { database } = await pgliteApp(t)
  const { db } = database
  const ended: string[] = []
  // The first works 300 ms on this thread before its first statement; the second, asked for
  // meanwhile, sends its statement at once and does not wait for the first.
  const slow = timedTransaction(db, async (tx) => {
    await sleep(300)
    await tx.execute(sql`select 1`)
    return {}
  }).then((outcome) => {
    ended.push('slow')
    return outcome
  })
  await sleep(20)
  const quick = db
    .transaction(async (tx) => {
      await tx.execute(sql`select 1`)
    })
    .then(() => ended.push('quick'))
  const [{ heldMs }] = await Promise.all([slow, quick])
  t.same(ended, ['quick', 'slow'], 'the second ended first')
  t.ok(heldMs < 150, `the first held the database ${Math.round(heldMs)} ms, not the 300 ms before its statement`)
})

t.test("a transaction's last statements go with its commit, and one that fails rolls it all back", async (t) => {
  const { database } = await pgliteApp(t)
  const { db } = database
  await db.execute(sql`create table early (x int primary key)`)
  /**
   * A transaction that has begun, then sends two inserts with its commit and holds this thread
   * for 300 ms (as planning the next chunk of a batch would) before it reads their answers.
   */
  const insertsThenBusy = (a: number, b: number) =>
    timedTransaction(db, async (tx) => {
      await tx.execute(sql`select 1`)
      const sent = runInOrder(
        db,
        [tx.execute(sql`insert into early values (${a})`), tx.execute(sql`insert into early values (${b})`)],
        {
          thenCommit: true
        }
      )
      const until = performance.now() + 300
      while (performance.now() < until) {
        // busy
      }
      await sent
      return {}
    })
  const { heldMs } = await insertsThenBusy(1, 2)
  t.ok(
    heldMs < 150,
    `the transaction held the database ${Math.round(heldMs)} ms, not while this thread was busy for 300 ms`
  )
  const failed = await insertsThenBusy(3, 1).then(
    () => undefined,
    (err: unknown) => err as Error
  )
  t.match(String(failed?.cause ?? failed), /duplicate key/, 'the duplicate fails the transaction')
  t.same(
    rowsOf<{ x: number }>(await db.execute(sql`select x from early order by x`)).map((r) => r.x),
    [1, 2],
    'the first transaction is committed whole, and nothing of the failed one'
  )
})

t.test('a database thread that stops fails every call, at once and later', async (t) => {
  const client = await PgliteWorkerClient.open({ dataDir: 'memory://', migrationsFolder })
  t.teardown(() => client.close())
  const pending = client.query('select pg_sleep(5)')
  await sleep(100)
  const stoppedAt = performance.now()
  await client.terminate()
  await t.rejects(pending, /the embedded database's thread exited/, 'the call in flight fails')
  t.ok(performance.now() - stoppedAt < 1000, 'without waiting for the statement')
  await t.rejects(client.query('select 1'), /the embedded database's thread exited/, 'a later call fails too')
  await t.rejects(
    client.transaction(async () => {}),
    /the embedded database's thread exited/,
    'and a transaction'
  )
})

t.test('a new data folder is made, migrated and opened again with the embedded settings', async (t) => {
  const dataDir = tempDir(t)
  const sharedBuffers = async () => {
    const database = await openPglite({ dataDir })
    try {
      const [row] = rowsOf<{ shared_buffers: string }>(await database.db.execute(sql`show shared_buffers`))
      const [migrated] = rowsOf<{ n: number }>(
        await database.db.execute(sql`select count(*)::int as n from drizzle.__drizzle_migrations`)
      )
      return { sharedBuffers: row?.shared_buffers, migrated: (migrated?.n ?? 0) > 0 }
    } finally {
      await database.close()
    }
  }
  // The first open makes the database in a worker that then ends; the server's own worker opens it.
  t.same(await sharedBuffers(), { sharedBuffers: '16MB', migrated: true }, 'first start')
  t.same(await sharedBuffers(), { sharedBuffers: '16MB', migrated: true }, 'and the next')
})

t.test('a data folder that cannot hold a database is refused with its reason', async (t) => {
  const dataDir = tempDir(t)
  writeFileSync(join(dataDir, 'pglite'), 'not a folder')
  await t.rejects(openPglite({ dataDir }), {
    name: 'DatabaseStartupError',
    message: `cannot open the embedded database in ${join(dataDir, 'pglite')}: a file is where a folder should be (ENOTDIR)`
  })
})

import t from 'tap'
import { buildTestApp } from './helpers/app.js'
import { setTimeout as sleep } from 'node:timers/promises'

t.test('health endpoints need no token', async (t) => {
  const { app, database } = await buildTestApp(t)
  const live = await app.inject({ url: '/healthz' })
  t.equal(live.statusCode, 200)
  t.same(live.json(), { status: 'ok' })
  const ready = await app.inject({ url: '/readyz' })
  t.equal(ready.statusCode, 200)
  t.same(ready.json(), { status: 'ok', database: database.kind })
})

t.test('/readyz is 503 when the database does not answer, and recovers', async (t) => {
  const { database } = await buildTestApp(t)
  let down = true
  const flaky = {
    ...database,
    ping: async (ms?: number) => {
      if (down) throw new Error('connection refused')
      return database.ping(ms)
    },
    close: async () => {}
  }
  const { app } = await buildTestApp(t, { database: flaky })
  const res = await app.inject({ url: '/readyz' })
  t.equal(res.statusCode, 503)
  t.same(res.json(), { detail: res.json().detail, code: 'service_unavailable', errors: [] })
  down = false
  t.equal((await app.inject({ url: '/readyz' })).statusCode, 200)
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'liveness does not depend on the database')
})

t.test('closing finishes requests in flight, refuses new ones, then closes the database', async (t) => {
  const { app, database } = await buildTestApp(t)
  let release!: () => void
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  let arrived!: () => void
  const started = new Promise<void>((resolve) => {
    arrived = resolve
  })
  app.get('/test/slow', async () => {
    arrived()
    await gate
    return { done: true }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address() as { port: number }
  const base = `http://127.0.0.1:${address.port}`

  const inFlight = fetch(`${base}/test/slow`)
  await started // in the handler: in flight, whatever the machine's load
  const closing = app.close()
  await sleep(100)
  const refused = await fetch(`${base}/healthz`).then(
    (r) => r.status,
    () => 'refused'
  )
  t.ok(refused === 503 || refused === 'refused', `a new request is refused while closing (${refused})`)
  release()
  const res = await inFlight
  t.equal(res.status, 200, 'the request in flight completes')
  t.same(await res.json(), { done: true })
  const closedAt = Date.now()
  await closing
  t.ok(Date.now() - closedAt < 5000, 'close() does not wait for keep-alive connections to time out')
  await t.rejects(database.ping(500), 'the database is closed afterwards')
})

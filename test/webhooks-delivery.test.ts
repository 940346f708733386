import t from 'tap'
import { exampleAccount, importSetup } from './helpers/accounts.js'
import { gql, operatorToken, type GraphQLResult } from './helpers/graphql.js'
import { webhookReceiver, type Behaviour } from './helpers/webhook-receiver.js'
import { REDELIVER, createEndpoint, deliveriesOf, deliveriesWhen, sleep, type Delivery } from './helpers/webhooks.js'

/**
 * Delivery faults: an endpoint that answers 500, one that never answers within the time limit,
 * one that redirects (not followed) and one that resets the connection are each tried on the
 * schedule, with the same webhook-id every time, then FAILED with every attempt recorded;
 * redeliverWebhook makes one more attempt, also when asked for while an attempt is in flight or
 * not yet recorded. /metrics counts attempts and shows the queue.
 */

const DELAYS = [0.2, 0.2, 0.2]
const TIMEOUT_MS = 500
const ENV = {
  WEBHOOK_ALLOW_PRIVATE: '1',
  WEBHOOK_RETRY_DELAYS: DELAYS.join(','),
  WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS)
}
const ATTEMPTS = 1 + DELAYS.length

async function metrics(app: Awaited<ReturnType<typeof importSetup>>['app']): Promise<string> {
  const res = await app.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: `Bearer ${await operatorToken(app)}` }
  })
  if (res.statusCode !== 200) throw new Error(`/metrics: ${res.statusCode} ${res.body}`)
  return res.body
}

/** A sample's value, its labels matched in any order. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line)
    if (!match || match[1] !== name) continue
    const got = Object.fromEntries([...(match[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]))
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(match[3])
  }
  return undefined
}

t.test('500, a hang, a redirect and a reset: retried on the schedule, then FAILED; redelivery', async (t) => {
  // The redirect's target: it must get nothing.
  const target = await webhookReceiver(t)
  const faults: Array<[string, Behaviour, RegExp, number | null]> = [
    ['500', 500, /^HTTP 500$/, 500],
    ['hang', 'hang', new RegExp(`^no answer within ${TIMEOUT_MS} ms$`), null],
    ['redirect', { redirect: target.url }, /^redirect not followed \(HTTP 302\)$/, 302],
    ['reset', 'reset', /^connection reset$/, null]
  ]
  const { app, tenant, client } = await importSetup(t, { env: ENV })
  const cases: Array<{
    name: string
    receiver: Awaited<ReturnType<typeof webhookReceiver>>
    endpoint: Awaited<ReturnType<typeof createEndpoint>>
    error: RegExp
    status: number | null
  }> = []
  for (const [name, behaviour, error, status] of faults) {
    // Every attempt of the schedule fails; the redelivery after it is answered 200.
    const receiver = await webhookReceiver(t, (n) => (n <= ATTEMPTS ? behaviour : 200))
    const endpoint = await createEndpoint(
      app,
      { organisation: 'Acme', url: receiver.url, events: ['import_process.created'] },
      tenant.token
    )
    cases.push({ name, receiver, endpoint, error, status })
  }
  t.equal((await client.stage(exampleAccount())).statusCode, 201)
  t.equal((await client.create('EXT-000123')).statusCode, 201)

  const failed = new Map<string, Delivery>()
  for (const c of cases) {
    const [delivery] = await deliveriesWhen(
      app,
      c.endpoint.id,
      (d) => d.length === 1 && d[0]!.state === 'FAILED',
      30_000
    )
    failed.set(c.name, delivery!)
  }
  for (const c of cases) {
    t.test(c.name, async (t) => {
      const delivery = failed.get(c.name)!
      t.equal(delivery.attempts, ATTEMPTS, `1 + ${DELAYS.length} attempts`)
      t.equal(delivery.nextAttemptAt, null)
      t.equal(delivery.lastStatus, c.status)
      t.match(delivery.lastError, c.error)
      t.same(
        delivery.attemptLog.map((a) => a.attempt),
        [1, 2, 3, 4]
      )
      for (const attempt of delivery.attemptLog) {
        t.equal(attempt.status, c.status, `attempt ${attempt.attempt}: status`)
        t.match(attempt.error, c.error, `attempt ${attempt.attempt}: error`)
        t.type(attempt.durationMs, 'number')
        t.ok(attempt.durationMs >= 0)
        if (c.name === 'hang') t.ok(attempt.durationMs >= TIMEOUT_MS - 5, 'waited the time limit')
        if (c.name === 'hang') t.ok(attempt.durationMs < TIMEOUT_MS + 1000, 'and no longer')
      }
      t.equal(c.receiver.received.length, ATTEMPTS, 'the receiver saw every attempt')
      const ids = new Set(c.receiver.received.map((r) => r.headers['webhook-id']))
      t.same([...ids], [delivery.eventId], 'the same webhook-id on every attempt')
      c.receiver.verified(c.endpoint.secret)
      // Each retry waits its delay after the attempt before it ended.
      for (let i = 1; i < c.receiver.received.length; i++) {
        const gap = c.receiver.received[i]!.at - c.receiver.received[i - 1]!.at
        t.ok(gap >= DELAYS[i - 1]! * 1000 - 20, `retry ${i} after ${gap} ms`)
      }

      const redelivered = await gql(app, REDELIVER, { id: delivery.id }, tenant.token)
      t.match(redelivered.data?.redeliverWebhook, { id: delivery.id, state: 'PENDING' })
      const [after] = await deliveriesWhen(app, c.endpoint.id, (d) => d[0]!.state === 'DELIVERED', 10_000)
      t.equal(after!.attempts, ATTEMPTS + 1, 'one more attempt')
      t.match(after!.attemptLog[ATTEMPTS], { attempt: ATTEMPTS + 1, status: 200, error: null })
      t.equal(after!.lastError, null)
      t.equal(c.receiver.received.length, ATTEMPTS + 1)
      t.equal(c.receiver.received[ATTEMPTS]!.headers['webhook-id'], delivery.eventId, 'the same webhook-id again')
      t.same(
        c.receiver.verified(c.endpoint.secret).map((b) => b.data.external_account_number),
        Array(ATTEMPTS + 1).fill('EXT-000123')
      )
    })
  }
  t.test('no redirect is followed', async (t) => {
    t.equal(target.received.length, 0)
  })

  t.test('/metrics counts the attempts by outcome', async (t) => {
    const text = await metrics(app)
    for (const c of cases) {
      const of = (outcome: string) => sample(text, 'amis_webhook_attempts_total', { endpoint: c.endpoint.id, outcome })
      t.equal(of('retrying'), DELAYS.length, `${c.name}: retrying`)
      t.equal(of('failed'), 1, `${c.name}: failed`)
      t.equal(of('delivered'), 1, `${c.name}: delivered`)
    }
    t.equal(sample(text, 'amis_webhook_deliveries_pending'), 0)
    t.equal(sample(text, 'amis_webhook_oldest_pending_seconds'), 0)
  })
})

t.test('/metrics shows the queue: pending deliveries and the oldest one’s age', async (t) => {
  // No worker in this process: what is queued stays PENDING.
  const { app, tenant, client } = await importSetup(t, { env: { ...ENV, WEBHOOK_CONCURRENCY: '0' } })
  const before = await metrics(app)
  t.match(before, /^# TYPE amis_webhook_attempts_total counter$/m)
  t.equal(sample(before, 'amis_webhook_deliveries_pending'), 0)
  t.equal(sample(before, 'amis_webhook_oldest_pending_seconds'), 0)
  const endpoint = await createEndpoint(
    app,
    {
      organisation: 'Acme',
      url: 'http://127.0.0.1:9/hooks',
      events: ['import_process.created', 'import_process.dry_run']
    },
    tenant.token
  )
  t.equal((await client.stage(exampleAccount())).statusCode, 201)
  t.equal((await client.create('EXT-000123', { dryRun: true })).statusCode, 400)
  t.equal((await client.create('EXT-000123')).statusCode, 201)
  await new Promise((resolve) => setTimeout(resolve, 1100))
  const text = await metrics(app)
  t.equal(sample(text, 'amis_webhook_deliveries_pending'), 2)
  t.ok((sample(text, 'amis_webhook_oldest_pending_seconds') ?? 0) >= 1, 'the oldest is over a second old')
  t.same(
    (await deliveriesOf(app, endpoint.id)).map((d) => [d.event, d.state, d.attempts]),
    [
      ['import_process.created', 'PENDING', 0],
      ['import_process.dry_run', 'PENDING', 0]
    ]
  )
})

/**
 * A redelivery asked for at any moment of an attempt is sent: the worker records attempts a few
 * milliseconds after the receiver answered, and a redelivery accepted in between (or while the
 * receiver has not answered yet) must not be marked DELIVERED by that recording.
 */
const REDELIVERIES = 20
for (const when of ['right after the receiver answered', 'while the attempt is in flight'] as const) {
  t.test(`a redelivery asked for ${when} is sent, each of ${REDELIVERIES} times`, async (t) => {
    const { app, tenant, client } = await importSetup(t, { env: ENV })
    // The delivery redelivered, once its first attempt is recorded.
    const delivery: { id?: string } = {}
    const answers: Array<Promise<GraphQLResult>> = []
    const redeliver = () => {
      const asked = gql(app, REDELIVER, { id: delivery.id }, tenant.token)
      answers.push(asked)
      return asked
    }
    // Request 1 is the first attempt; request 2 the redelivery asked once it was recorded; each of
    // requests 2 to REDELIVERIES + 1 asks for one more, as it is answered or while it waits.
    const asks = (n: number) => delivery.id !== undefined && n >= 2 && n <= REDELIVERIES + 1
    const receiver =
      when === 'while the attempt is in flight'
        ? await webhookReceiver(t, (n) => (asks(n) ? redeliver().then(() => 200) : 200))
        : await webhookReceiver(
            t,
            () => 200,
            (n) => {
              if (asks(n)) void redeliver()
            }
          )
    const endpoint = await createEndpoint(
      app,
      { organisation: 'Acme', url: receiver.url, events: ['import_process.created'] },
      tenant.token
    )
    t.equal((await client.stage(exampleAccount())).statusCode, 201)
    t.equal((await client.create('EXT-000123')).statusCode, 201)
    const [first] = await deliveriesWhen(app, endpoint.id, (d) => d.length === 1 && d[0]!.state === 'DELIVERED')
    delivery.id = first!.id
    await redeliver()

    const expected = REDELIVERIES + 2
    await receiver.waitFor(expected, 30_000).catch((err: Error) => t.fail(err.message))
    const [after] = await deliveriesWhen(
      app,
      endpoint.id,
      (d) => d[0]!.state === 'DELIVERED' && d[0]!.attempts >= expected,
      10_000
    ).catch((err: Error) => {
      t.fail(err.message)
      return []
    })
    // Each redelivery makes one attempt, no more: give a duplicate time to show.
    await sleep(700)
    t.equal(receiver.received.length, expected, `${REDELIVERIES + 1} redeliveries, each sent once`)
    const states = (await Promise.all(answers)).map((a) => a.errors ?? a.data?.redeliverWebhook?.state)
    t.same(states, Array(REDELIVERIES + 1).fill('PENDING'), 'every redelivery was accepted as PENDING')
    t.equal(after?.attempts, expected, 'one attempt each')
    t.same(
      after?.attemptLog.map((a) => a.status),
      Array(expected).fill(200)
    )
    t.same(new Set(receiver.received.map((r) => r.headers['webhook-id'])), new Set([first!.eventId]))
    receiver.verified(endpoint.secret)
  })
}

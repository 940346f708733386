import t from 'tap'
import { createServer, type Socket } from 'node:net'
import { sql } from 'drizzle-orm'
import { exampleAccount, importSetup } from './helpers/accounts.js'
import { rowsOf } from './helpers/database.js'
import { createTenant, gql, operatorToken } from './helpers/graphql.js'
import { webhookReceiver } from './helpers/webhook-receiver.js'
import {
  CREATE_ENDPOINT,
  DELETE_ENDPOINT,
  DELIVERIES,
  LIST_ENDPOINTS,
  REDELIVER,
  createEndpoint,
  deliveriesOf,
  deliveriesWhen,
  errorCode,
  sleep,
  webhookEvents
} from './helpers/webhooks.js'

/**
 * Webhook endpoints: https and public addresses only (checked at registration, and again when
 * delivering), no credentials in the URL, known event types, 10 per organisation; the secret is
 * shown once; an organisation manages its own endpoints and deliveries only, the operator every
 * one; a deleted endpoint gets nothing more.
 */

const PRIVATE = { WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_RETRY_DELAYS: '0.2,0.2', WEBHOOK_TIMEOUT_MS: '2000' }
/** A public address: accepted without a lookup (nothing is delivered to it in these tests). */
const PUBLIC_URL = 'https://93.184.215.14/hooks'

t.test('registration refuses what is not https to a public address', async (t) => {
  const { app, tenant } = await importSetup(t)
  const create = (url: string, events = ['import_process.created']) =>
    gql(app, CREATE_ENDPOINT, { i: { organisation: 'Acme', url, events } }, tenant.token)

  for (const url of [
    'http://example.com/hooks',
    'http://93.184.215.14/hooks',
    'https://127.0.0.1/hooks',
    'https://10.0.0.1/hooks',
    'https://192.168.1.1/hooks',
    'https://169.254.169.254/latest/meta-data',
    'https://100.64.0.1/hooks',
    'https://0.0.0.0/hooks',
    'https://[::1]/hooks',
    'https://[::ffff:127.0.0.1]/hooks',
    'https://[::ffff:10.0.0.1]/hooks',
    'https://[fd00::1]/hooks',
    'https://localhost/hooks',
    'https://user:pass@example.com/hooks',
    'https://user@93.184.215.14/hooks',
    'not a url'
  ]) {
    const res = await create(url)
    t.equal(errorCode(res), 'invalid', url)
    t.equal(res.data?.createWebhookEndpoint ?? null, null)
  }
  t.match((await create('https://localhost/hooks')).errors?.[0]?.message, /localhost.*loopback/)
  // What the operator's setting would allow says so; what it would not, does not.
  for (const url of ['https://127.0.0.1/hooks', 'https://localhost/hooks', 'http://example.com/hooks']) {
    t.match(
      (await create(url)).errors?.[0]?.message,
      /the operator may allow http:\/\/ and private addresses with WEBHOOK_ALLOW_PRIVATE=1 \(for tests and private networks\)\.$/,
      `${url}: the way out is named`
    )
  }
  t.notMatch((await create('https://user:pass@example.com/hooks')).errors?.[0]?.message, /WEBHOOK_ALLOW_PRIVATE/)
  t.equal(errorCode(await create(PUBLIC_URL, ['import_process.created', 'account.deleted'])), 'invalid', 'unknown type')
  t.equal(errorCode(await create(PUBLIC_URL, [])), 'invalid', 'no type')
  t.same((await gql(app, LIST_ENDPOINTS, {}, tenant.token)).data?.webhookEndpoints, [], 'nothing stored')

  const made = await create(PUBLIC_URL, ['import_process.created', 'import_process.created', 'post_import.failed'])
  t.equal(made.errors, undefined, 'a public https URL is accepted')
  t.same(made.data?.createWebhookEndpoint.events, ['import_process.created', 'post_import.failed'])
})

t.test('the secret is shown once; at most 10 endpoints an organisation', async (t) => {
  const { app, tenant } = await importSetup(t)
  const beta = await createTenant(app, 'Beta', 'BETA_POWER')
  const secrets = new Set<string>()
  for (let i = 1; i <= 10; i++) {
    const made = await createEndpoint(
      app,
      { organisation: 'Acme', url: `${PUBLIC_URL}/${i}`, events: ['import_process.created'] },
      tenant.token
    )
    t.match(made.secret, /^whsec_[A-Za-z0-9+/]{32}$/)
    secrets.add(made.secret)
  }
  t.equal(secrets.size, 10, 'a secret of its own each')
  const eleventh = await gql(
    app,
    CREATE_ENDPOINT,
    { i: { organisation: 'Acme', url: `${PUBLIC_URL}/11`, events: ['import_process.created'] } },
    tenant.token
  )
  t.equal(errorCode(eleventh), 'invalid', 'the 11th is refused')
  const byOperator = await gql(
    app,
    CREATE_ENDPOINT,
    {
      i: { organisation: 'Acme', url: `${PUBLIC_URL}/11`, events: ['import_process.created'] }
    },
    await operatorToken(app)
  )
  t.equal(errorCode(byOperator), 'invalid', 'by the operator too')
  await createEndpoint(app, { organisation: 'Beta', url: PUBLIC_URL, events: ['import_process.created'] }, beta.token)

  const listed = await gql(app, LIST_ENDPOINTS, {}, tenant.token)
  t.equal(listed.data?.webhookEndpoints.length, 10)
  t.notOk(JSON.stringify(listed.body).includes('whsec_'), 'no secret in the list')
  const asOperatorList = await gql(app, LIST_ENDPOINTS, {}, await operatorToken(app))
  t.equal(asOperatorList.data?.webhookEndpoints.length, 11)
  t.notOk(JSON.stringify(asOperatorList.body).includes('whsec_'), 'nor in the operator’s')
  const secretField = await gql(app, '{ webhookEndpoints { id secret } }', {}, tenant.token)
  t.ok(secretField.errors, 'an endpoint has no secret field')
})

t.test('an organisation manages its own endpoints only; the operator every one', async (t) => {
  const receiver = await webhookReceiver(t)
  const { app, tenant, client, database } = await importSetup(t, { env: PRIVATE })
  const beta = await createTenant(app, 'Beta', 'BETA_POWER')
  const op = await operatorToken(app)

  const acme = await createEndpoint(
    app,
    { organisation: 'Acme', url: receiver.url, events: ['import_process.created'] },
    tenant.token
  )
  const betaOwn = await createEndpoint(
    app,
    { organisation: 'Beta', url: receiver.url + '/beta', events: ['import_process.created'] },
    beta.token
  )
  const forAcme = await gql(
    app,
    CREATE_ENDPOINT,
    { i: { organisation: 'Acme', url: receiver.url, events: ['import_process.created'] } },
    beta.token
  )
  t.equal(errorCode(forAcme), 'not_found', 'Beta cannot register one for Acme')

  t.equal((await client.stage(exampleAccount())).statusCode, 201)
  t.equal((await client.create('EXT-000123')).statusCode, 201)
  const [delivery] = await deliveriesWhen(app, acme.id, (d) => d.length === 1 && d[0]!.state === 'DELIVERED')

  // Beta sees and touches nothing of Acme's.
  t.same(
    (await gql(app, LIST_ENDPOINTS, {}, beta.token)).data?.webhookEndpoints.map((e: { id: string }) => e.id),
    [betaOwn.id]
  )
  t.same((await gql(app, LIST_ENDPOINTS, { o: 'Acme' }, beta.token)).data?.webhookEndpoints, [])
  t.equal(errorCode(await gql(app, DELIVERIES, { e: acme.id }, beta.token)), 'not_found', 'deliveries')
  t.equal(errorCode(await gql(app, DELETE_ENDPOINT, { id: acme.id }, beta.token)), 'not_found', 'delete')
  t.equal(errorCode(await gql(app, REDELIVER, { id: delivery!.id }, beta.token)), 'not_found', 'redeliver')
  t.equal(errorCode(await gql(app, REDELIVER, { id: '999999' }, tenant.token)), 'not_found', 'no such delivery')
  t.equal(
    errorCode(await gql(app, DELETE_ENDPOINT, { id: '00000000-0000-4000-8000-000000000000' }, tenant.token)),
    'not_found'
  )
  t.equal((await deliveriesOf(app, acme.id)).length, 1, 'still there')

  // Acme reads its own; the operator reads and manages every one.
  t.equal((await deliveriesOf(app, acme.id, tenant.token))[0]!.state, 'DELIVERED')
  t.same(
    (await gql(app, LIST_ENDPOINTS, {}, op)).data?.webhookEndpoints.map(
      (e: { organisation: string }) => e.organisation
    ),
    ['Acme', 'Beta']
  )
  t.same(
    (await gql(app, LIST_ENDPOINTS, { o: 'Beta' }, op)).data?.webhookEndpoints.map((e: { id: string }) => e.id),
    [betaOwn.id]
  )
  t.equal((await deliveriesOf(app, acme.id, op)).length, 1)
  t.equal(errorCode(await gql(app, DELETE_ENDPOINT, { id: betaOwn.id }, op)), undefined, 'the operator deletes Beta’s')

  // Acme deletes its endpoint: its deliveries go with it, and nothing more is sent or queued.
  const deleted = await gql(app, DELETE_ENDPOINT, { id: acme.id }, tenant.token)
  t.same(deleted.data?.deleteWebhookEndpoint, { id: acme.id, url: receiver.url })
  t.equal(errorCode(await gql(app, DELIVERIES, { e: acme.id }, tenant.token)), 'not_found')
  t.same((await gql(app, LIST_ENDPOINTS, {}, op)).data?.webhookEndpoints, [])
  const before = receiver.received.length
  const queuedBefore = (await webhookEvents(database)).length
  t.equal((await client.stage(exampleAccount({ external_account_number: 'EXT-2' }))).statusCode, 201)
  t.equal((await client.create('EXT-2')).statusCode, 201)
  await sleep(1200)
  t.equal(receiver.received.length, before, 'nothing delivered after the delete')
  t.equal((await webhookEvents(database)).length, queuedBefore, 'nothing queued')
  t.equal(
    rowsOf<{ n: number }>(await database.db.execute(sql`select count(*)::int as n from webhook_deliveries`))[0]!.n,
    0,
    'the deliveries went with the endpoints'
  )
})

t.test(
  'the address is checked again when delivering: a name that resolves to loopback gets no connection',
  async (t) => {
    let connections = 0
    const sockets = new Set<Socket>()
    const server = createServer((socket) => {
      connections++
      sockets.add(socket)
      socket.destroy()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.teardown(
      () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy()
          server.close(() => resolve())
        })
    )
    const port = (server.address() as { port: number }).port
    const { app, client, database } = await importSetup(t, {
      env: { WEBHOOK_RETRY_DELAYS: '0.2', WEBHOOK_TIMEOUT_MS: '1000' }
    })
    // Stored directly: registration would refuse it (as a name whose address changed since would have passed).
    const [endpoint] = rowsOf<{ id: string }>(
      await database.db.execute(sql`insert into webhook_endpoints (organisation_id, url, events, secret)
      select id, ${`https://localhost:${port}/hooks`}, '{import_process.created}', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
      from organisations where name = 'Acme' returning id`)
    )
    t.equal((await client.stage(exampleAccount())).statusCode, 201)
    t.equal((await client.create('EXT-000123')).statusCode, 201)
    const [delivery] = await deliveriesWhen(app, endpoint!.id, (d) => d.length === 1 && d[0]!.state === 'FAILED')
    t.equal(delivery!.attempts, 2, 'tried on the schedule, then FAILED')
    for (const attempt of delivery!.attemptLog) {
      t.equal(attempt.status, null)
      t.match(attempt.error, /^refused: localhost: (127\.0\.0\.1|::1) is not a public address \(loopback\)/)
    }
    t.equal(connections, 0, 'no connection was made')
  }
)

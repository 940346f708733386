import t from 'tap'
import { WEBHOOK_EVENT_TYPES } from '../schemas/webhooks.js'
import { exampleAccount, importClient, importedSetup, importSetup, jobSettled, TEAM } from './helpers/accounts.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { webhookReceiver } from './helpers/webhook-receiver.js'
import { createEndpoint, deliveriesWhen, sleep, webhookEvents } from './helpers/webhooks.js'

/**
 * Webhook events: every type reaches a real receiver, signed (Standard Webhooks, verified with the
 * `standardwebhooks` package), with the body of its type and no personal data; single requests,
 * the operator, batches and import jobs alike. The outbox is written in the transaction of what it
 * reports (a dry run or a refused create queues no created event), for subscribed types and
 * organisations with an endpoint only.
 */

const ENV = { WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_RETRY_DELAYS: '0.2,0.2,0.2', WEBHOOK_TIMEOUT_MS: '2000' }

type Body = { type: string; timestamp: string; data: Record<string, unknown> }

const ACCOUNT_KEYS = ['external_account_number', 'import_supplier', 'service_account_number']
const FAILURE_KEYS = [...ACCOUNT_KEYS, 'code', 'errors', 'step'].sort()
const JOB_KEYS = ['import_supplier', 'job_id', 'lines']

/** The example account's personal values: none may appear in a webhook. */
function personalValues(): string[] {
  const account = exampleAccount()
  const customer = account.customers[0]
  const address = account.supply_addresses[0].supply_address
  return [
    customer.given_name,
    customer.family_name,
    customer.email,
    customer.landline,
    address.street_address.split('\n')[0],
    address.postal_code
  ]
}

const keys = (data: Record<string, unknown>) => Object.keys(data).sort()
const submitJob = (app: Awaited<ReturnType<typeof importSetup>>['app'], token: string, text: string) =>
  app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/?import_supplier=ACME_ENERGY&operations_team_name=${TEAM}`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' },
    payload: text
  })
const jobLine = (external: string) =>
  JSON.stringify({ account: exampleAccount({ external_account_number: external }) }) + '\n'

t.test('every event type reaches the receiver, signed, with its exact body and no personal data', async (t) => {
  const receiver = await webhookReceiver(t)
  const setup = await importSetup(t, { env: ENV })
  const { app, tenant, client } = setup
  const endpoint = await createEndpoint(
    app,
    { organisation: 'Acme', url: receiver.url, events: [...WEBHOOK_EVENT_TYPES] },
    tenant.token
  )
  t.match(endpoint.secret, /^whsec_/)
  const headers = { authorization: `Bearer ${tenant.token}` }
  const post = (path: string, payload: object) =>
    app.inject({ method: 'POST', url: `/v1/data-import/${path}`, headers, payload })
  const ref = { import_supplier: 'ACME_ENERGY', external_account_number: 'EXT-000123' }

  // Single requests: a dry run, a create, a section written and refused, a create refused.
  t.equal((await client.stage(exampleAccount())).statusCode, 201)
  t.equal((await client.create('EXT-000123', { dryRun: true })).statusCode, 400, 'dry run rolled back')
  const created = await client.create('EXT-000123')
  t.equal(created.statusCode, 201)
  const serviceAccountNumber = created.json().service_account_number as string
  t.equal((await post('notes/create/', { ...ref, notes: [{ body: 'Moved.' }] })).statusCode, 201)
  t.equal((await post('notes/create/', { ...ref, notes: [{ body: '   ' }] })).statusCode, 400)
  t.equal((await client.create('EXT-NOTHING')).statusCode, 400, 'nothing staged')
  // The operator skips an account.
  t.equal((await client.stage(exampleAccount({ external_account_number: 'EXT-SKIP' }))).statusCode, 201)
  await asOperator(
    app,
    'mutation { skipImportProcess(input: {importSupplierCode: "ACME_ENERGY", externalAccountNumber: "EXT-SKIP"}) { state } }'
  )
  // A batch creating two accounts.
  const batch = await post('batches/', {
    import_supplier: 'ACME_ENERGY',
    operations_team_name: TEAM,
    accounts: ['B-1', 'B-2'].map((x) => ({ account: exampleAccount({ external_account_number: x }) }))
  })
  t.equal(batch.statusCode, 200, batch.body)
  t.match(batch.json().counts, { created: 2 })
  // An import job of two lines, run to the end; another cancelled before it starts.
  const submitted = await submitJob(app, tenant.token, jobLine('J-1') + jobLine('J-2'))
  t.equal(submitted.statusCode, 202, submitted.body)
  const job = await jobSettled(app, tenant.token, submitted.json().id)
  t.equal(job.state, 'COMPLETED')
  const open = await post('import-jobs/', { import_supplier: 'ACME_ENERGY', operations_team_name: TEAM })
  t.equal(open.statusCode, 201, open.body)
  const cancelled = await post(`import-jobs/${open.json().id}/cancel/`, {})
  t.equal(cancelled.statusCode, 200, cancelled.body)
  const cancelledJob = (await app.inject({ url: `/v1/data-import/import-jobs/${open.json().id}/`, headers })).json()
  t.equal(cancelledJob.state, 'CANCELLED')

  // dry_run, created, written, post failed, create failed, skipped, 2 batch created, 2 job created, completed, cancelled
  const expected = 12
  await receiver.waitFor(expected).catch((err: Error) => {
    t.fail(`${err.message}: ${receiver.verified(endpoint.secret).map((b) => b.type)}`)
  })
  await deliveriesWhen(app, endpoint.id, (d) => d.length === expected && d.every((x) => x.state === 'DELIVERED'))
  await sleep(300)
  t.equal(receiver.received.length, expected, 'each event once')

  const bodies: Body[] = receiver.verified(endpoint.secret)
  t.equal(bodies.length, expected, 'every signature verifies with the secret')
  for (const [i, request] of receiver.received.entries()) {
    const id = String(request.headers['webhook-id'])
    t.match(id, /^msg_\d+$/, 'webhook-id')
    t.equal(request.headers['content-type'], 'application/json')
    // Seconds since 1970: the event's time or the attempt's, so between the two.
    const timestamp = Number(request.headers['webhook-timestamp'])
    t.match(String(request.headers['webhook-timestamp']), /^\d+$/)
    t.ok(
      timestamp >= Math.floor(Date.parse(bodies[i]!.timestamp) / 1000) && timestamp <= Math.ceil(request.at / 1000),
      'webhook-timestamp between the event and its arrival'
    )
    t.match(String(request.headers['webhook-signature']), /^v1,/)
    t.same(Object.keys(JSON.parse(request.body)).sort(), ['data', 'timestamp', 'type'])
    for (const value of personalValues()) {
      t.notOk(request.body.includes(value), `no personal value ${value} in ${bodies[i]!.type}`)
    }
    t.notMatch(request.body, /given_name|family_name|email|address/)
  }
  t.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, expected, 'one id per event')

  const ofType = (type: string) => bodies.filter((b) => b.type === type).map((b) => b.data)
  const account = (external: string, san: string | null) => ({
    import_supplier: 'ACME_ENERGY',
    external_account_number: external,
    service_account_number: san
  })
  for (const b of bodies) t.match(b.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)

  t.same(ofType('import_process.dry_run'), [account('EXT-000123', null)])
  const createdEvents = ofType('import_process.created')
  t.same(
    createdEvents.map((d) => d.external_account_number).sort(),
    ['B-1', 'B-2', 'EXT-000123', 'J-1', 'J-2'],
    'one created event per account created: single, batch and job lines'
  )
  for (const d of createdEvents) {
    t.same(keys(d), ACCOUNT_KEYS)
    t.match(d.service_account_number, /\S/, 'with its service account number')
  }
  t.same(
    createdEvents.find((d) => d.external_account_number === 'EXT-000123'),
    account('EXT-000123', serviceAccountNumber)
  )
  t.same(ofType('post_import.written'), [{ ...account('EXT-000123', serviceAccountNumber), step: 'notes' }])
  const postFailed = ofType('post_import.failed')
  t.equal(postFailed.length, 1)
  t.same(keys(postFailed[0]!), FAILURE_KEYS)
  t.same(postFailed[0], {
    ...account('EXT-000123', serviceAccountNumber),
    step: 'notes',
    code: postFailed[0]!.code,
    errors: [{ code: 'note_body_or_document_path_not_found', attr: 'notes.0' }]
  })
  t.match(postFailed[0]!.code, /\S/)
  const createFailed = ofType('import_process.create_failed')
  t.equal(createFailed.length, 1)
  t.same(keys(createFailed[0]!), FAILURE_KEYS)
  t.match(createFailed[0], { ...account('EXT-NOTHING', null), step: 'create' })
  for (const e of createFailed[0]!.errors as Array<Record<string, unknown>>) t.same(keys(e), ['attr', 'code'])
  const skipped = ofType('import_process.skipped')
  t.same(skipped, [account('EXT-SKIP', null)])

  const completed = ofType('import_job.completed')
  t.equal(completed.length, 1)
  t.same(keys(completed[0]!), JOB_KEYS)
  t.same(
    completed[0],
    { import_supplier: 'ACME_ENERGY', job_id: job.id, lines: job.lines },
    'lines as GET job has them'
  )
  t.equal((completed[0]!.lines as { created: number }).created, 2)
  t.same(ofType('import_job.cancelled'), [
    { import_supplier: 'ACME_ENERGY', job_id: cancelledJob.id, lines: cancelledJob.lines }
  ])
})

t.test('a rolled-back create queues no created event', async (t) => {
  const receiver = await webhookReceiver(t)
  const setup = await importSetup(t, { env: ENV })
  const { app, tenant, client, database } = setup
  const endpoint = await createEndpoint(
    app,
    {
      organisation: 'Acme',
      url: receiver.url,
      events: ['import_process.created', 'import_process.dry_run', 'import_process.create_failed']
    },
    tenant.token
  )
  t.equal((await client.stage(exampleAccount())).statusCode, 201)
  t.equal((await client.create('EXT-000123', { dryRun: true })).statusCode, 400)
  t.same(
    (await webhookEvents(database)).map((e) => e.type),
    ['import_process.dry_run'],
    'the dry run: dry_run and no created'
  )
  t.equal((await client.create('EXT-000123', { team: 'No Such Team' })).statusCode, 400)
  t.same(
    (await webhookEvents(database)).map((e) => e.type),
    ['import_process.dry_run', 'import_process.create_failed'],
    'a refused create: create_failed and no created'
  )
  await receiver.waitFor(2)
  await deliveriesWhen(app, endpoint.id, (d) => d.length === 2 && d.every((x) => x.state === 'DELIVERED'))
  await sleep(300)
  t.same(
    receiver.verified(endpoint.secret).map((b) => b.type),
    ['import_process.dry_run', 'import_process.create_failed']
  )

  t.test('subscribed to created only, a failure queues nothing', async (t) => {
    const only = await importSetup(t, { env: ENV })
    await createEndpoint(
      only.app,
      { organisation: 'Acme', url: receiver.url, events: ['import_process.created'] },
      only.tenant.token
    )
    t.equal((await only.client.create('EXT-NOTHING')).statusCode, 400)
    t.equal((await only.client.stage(exampleAccount())).statusCode, 201)
    t.equal((await only.client.create('EXT-000123', { dryRun: true })).statusCode, 400)
    t.equal((await only.client.create('EXT-000123', { team: 'No Such Team' })).statusCode, 400)
    t.same(await webhookEvents(only.database), [], 'no webhook_events row')
  })
})

t.test('only subscribed types are queued, and only for organisations with an endpoint', async (t) => {
  const receiver = await webhookReceiver(t)
  const setup = await importedSetup(t, { env: ENV })
  const { app, database, post } = setup
  const beta = await createTenant(app, 'Beta', 'BETA_POWER')
  const betaClient = importClient(app, beta)
  // Before any endpoint exists nothing is queued (the account of importedSetup was created).
  t.same(await webhookEvents(database), [], 'no endpoint anywhere: nothing queued')

  const endpoint = await createEndpoint(app, {
    organisation: 'Acme',
    url: receiver.url,
    events: ['post_import.written']
  })
  t.equal((await post('notes/create/', { notes: [{ body: 'One.' }] })).statusCode, 201)
  t.equal((await post('notes/create/', { notes: [{ body: ' ' }] })).statusCode, 400)
  t.equal((await setup.client.stage(exampleAccount({ external_account_number: 'EXT-2' }))).statusCode, 201)
  t.equal((await setup.client.create('EXT-2')).statusCode, 201)
  t.equal((await setup.client.create('EXT-NOTHING')).statusCode, 400)
  // Beta, without an endpoint, creates an account and fails one.
  t.equal(
    (await betaClient.stage(exampleAccount({ external_account_number: 'BETA-1', import_supplier: 'BETA_POWER' })))
      .statusCode,
    201
  )
  t.equal((await betaClient.create('BETA-1')).statusCode, 201)
  t.equal((await betaClient.create('BETA-NOTHING')).statusCode, 400)

  const events = await webhookEvents(database)
  t.same(
    events.map((e) => [e.organisation, e.type]),
    [['Acme', 'post_import.written']],
    'one row: the subscribed type of the organisation with an endpoint'
  )
  await receiver.waitFor(1)
  await deliveriesWhen(app, endpoint.id, (d) => d.length === 1 && d[0]!.state === 'DELIVERED')
  await sleep(300)
  t.same(
    receiver.verified(endpoint.secret).map((b) => b.type),
    ['post_import.written']
  )
})

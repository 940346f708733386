import t from 'tap'
import { asc, sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { auditEvents } from '../drizzle/schema/index.js'
import { createImportJobsRepository } from '../src/modules/import-jobs/repository.js'
import { exampleAccount, importSetup, TEAM } from './helpers/accounts.js'
import { rowsOf } from './helpers/database.js'
import { createTenant, gql, operatorToken, type Tenant } from './helpers/graphql.js'
import { CREATE_ENDPOINT, DELETE_ENDPOINT, deliveriesOf, REDELIVER } from './helpers/webhooks.js'

/**
 * The audit trail of the webhook actions (createWebhookEndpoint, deleteWebhookEndpoint,
 * redeliverWebhook) and of the import job actions (createImportJob, startImportJob,
 * cancelImportJob, through REST and GraphQL): succeeded ones written with their change, refusals
 * with their code; an organisation reads the records of its own endpoints and jobs.
 */

/** This process runs no jobs (started ones stay QUEUED) and sends no webhooks (deliveries stay PENDING). */
const QUIET = { IMPORT_JOB_WORKERS: '0', WEBHOOK_CONCURRENCY: '0', WEBHOOK_ALLOW_PRIVATE: '1' }

const EVENTS = `query($o: String, $a: String) {
  auditEvents(organisation: $o, action: $a, first: 1000) {
    id at action outcome code actor { kind organisation apiKeyId } target { type id } changes ip requestId
  }
}`

const entry = (external: string) => JSON.stringify({ account: exampleAccount({ external_account_number: external }) })
const lines = (...texts: string[]) => texts.map((text) => text + '\n').join('')

async function rows(app: FastifyInstance) {
  return app.db.select().from(auditEvents).orderBy(asc(auditEvents.id))
}

async function organisationId(app: FastifyInstance, name: string): Promise<string> {
  return rowsOf<{ id: string }>(await app.db.execute(sql`select id from organisations where name = ${name}`))[0]!.id
}

/** A GraphQL request with its own X-Request-Id: the body and that id. */
async function graphql(
  app: FastifyInstance,
  requestId: string,
  query: string,
  variables: Record<string, unknown>,
  token?: string
) {
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { 'x-request-id': requestId, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    payload: { query, variables }
  })
  if (res.headers['x-request-id'] !== requestId) throw new Error('the server did not keep the request id')
  return res.json()
}

/** REST calls on the import jobs of `tenant`'s token (or `token`), each with its own X-Request-Id. */
function jobsOf(app: FastifyInstance, tenant: Tenant, token: string | null = tenant.token) {
  const url = (path: string) => `/v1/data-import/import-jobs/${path}`
  const headers = (requestId: string) => ({
    'x-request-id': requestId,
    ...(token === null ? {} : { authorization: `Bearer ${token}` })
  })
  return {
    create: (requestId: string, body: object = { import_supplier: tenant.supplier, operations_team_name: TEAM }) =>
      app.inject({ method: 'POST', url: url(''), headers: headers(requestId), payload: body }),
    submit: (requestId: string, payload: string) =>
      app.inject({
        method: 'POST',
        url: url(`?import_supplier=${tenant.supplier}&operations_team_name=${TEAM}`),
        headers: { ...headers(requestId), 'content-type': 'application/x-ndjson' },
        payload
      }),
    part: (id: string, payload: string) =>
      app.inject({
        method: 'PUT',
        url: url(`${id}/parts/1/`),
        headers: { ...headers('part'), 'content-type': 'application/x-ndjson' },
        payload
      }),
    start: (requestId: string, id: string) =>
      app.inject({ method: 'POST', url: url(`${id}/start/`), headers: headers(requestId) }),
    cancel: (requestId: string, id: string) =>
      app.inject({ method: 'POST', url: url(`${id}/cancel/`), headers: headers(requestId) })
  }
}

/** The code a refusal's record must carry: the answer's first entry's code, else its top-level code. */
const answerCode = (res: { json(): unknown }) => {
  const body = res.json() as { code: string; errors?: Array<{ code: string }> }
  return body.errors?.[0]?.code ?? body.code
}

t.test(
  'webhook actions: each recorded with who, what, where and which request; refusals with their code',
  async (t) => {
    const { app, tenant: acme, client } = await importSetup(t, { env: QUIET })
    const beta = await createTenant(app, 'Beta', 'BETA_POWER')
    const op = await operatorToken(app)
    const acmeId = await organisationId(app, 'Acme')
    const acmeActor = { actorKind: 'organisation', actorOrganisation: 'Acme', actorApiKeyId: acme.apiKeyId }
    const betaActor = { actorKind: 'organisation', actorOrganisation: 'Beta', actorApiKeyId: beta.apiKeyId }
    const input = { organisation: 'Acme', url: 'http://127.0.0.1:9/hooks', events: ['import_process.created'] }

    const created = await graphql(app, 'req-create-endpoint', CREATE_ENDPOINT, { i: input }, acme.token)
    const endpoint = created.data.createWebhookEndpoint as { id: string; secret: string }
    t.match((await rows(app)).at(-1), {
      action: 'createWebhookEndpoint',
      outcome: 'succeeded',
      code: null,
      ...acmeActor,
      targetType: 'webhook_endpoint',
      targetId: endpoint.id,
      targetOrganisationId: acmeId,
      changes: null,
      ip: '127.0.0.1',
      requestId: 'req-create-endpoint'
    })

    // An account created: one delivery to the endpoint, PENDING (no sender runs here).
    t.equal((await client.stage(exampleAccount())).statusCode, 201)
    t.equal((await client.create('EXT-000123')).statusCode, 201)
    const [delivery] = await deliveriesOf(app, endpoint.id, acme.token)
    t.ok(delivery, 'a delivery')

    await graphql(app, 'req-redeliver', REDELIVER, { id: delivery!.id }, acme.token)
    t.match((await rows(app)).at(-1), {
      action: 'redeliverWebhook',
      outcome: 'succeeded',
      ...acmeActor,
      targetType: 'webhook_delivery',
      targetId: delivery!.id,
      targetOrganisationId: acmeId,
      requestId: 'req-redeliver'
    })

    // Beta may not touch Acme's: refused as not_found, and the record names no target of Acme's.
    const refusals: Array<[string, string, Record<string, unknown>]> = [
      ['req-beta-redeliver', REDELIVER, { id: delivery!.id }],
      ['req-beta-delete', DELETE_ENDPOINT, { id: endpoint.id }],
      ['req-beta-create', CREATE_ENDPOINT, { i: input }]
    ]
    for (const [requestId, query, variables] of refusals) {
      const res = await graphql(app, requestId, query, variables, beta.token)
      t.equal(res.errors?.[0]?.extensions?.code, 'not_found', `${requestId}: refused`)
      t.match((await rows(app)).at(-1), {
        outcome: 'refused',
        code: 'not_found',
        ...betaActor,
        targetType: null,
        targetId: null,
        targetOrganisationId: null,
        ip: '127.0.0.1',
        requestId
      })
    }
    const invalidUrl = await graphql(
      app,
      'req-bad-url',
      CREATE_ENDPOINT,
      { i: { ...input, url: 'ftp://x' } },
      acme.token
    )
    t.equal(invalidUrl.errors?.[0]?.extensions?.code, 'invalid')
    t.match((await rows(app)).at(-1), { action: 'createWebhookEndpoint', outcome: 'refused', code: 'invalid' })
    const anonymous = await graphql(app, 'req-anonymous', DELETE_ENDPOINT, { id: endpoint.id })
    t.equal(anonymous.errors?.[0]?.extensions?.code, 'not_authenticated')
    t.match((await rows(app)).at(-1), {
      action: 'deleteWebhookEndpoint',
      code: 'not_authenticated',
      actorKind: 'anonymous',
      targetType: 'webhook_endpoint',
      targetId: endpoint.id
    })

    // The operator deletes Acme's endpoint: recorded as Acme's, though the endpoint is gone.
    await graphql(app, 'req-op-delete', DELETE_ENDPOINT, { id: endpoint.id }, op)
    t.match((await rows(app)).at(-1), {
      action: 'deleteWebhookEndpoint',
      outcome: 'succeeded',
      actorKind: 'operator',
      actorOrganisation: null,
      targetType: 'webhook_endpoint',
      targetId: endpoint.id,
      targetOrganisationId: acmeId,
      requestId: 'req-op-delete'
    })
    // Gone: refused, without a target (it does not exist).
    await graphql(app, 'req-gone', REDELIVER, { id: delivery!.id }, acme.token)
    t.match((await rows(app)).at(-1), { action: 'redeliverWebhook', code: 'not_found', targetType: null })

    // Acme reads what concerns it: its own actions and the operator's on its endpoint, not Beta's refusals.
    const acmeReads = (await gql(app, EVENTS, {}, acme.token)).data!.auditEvents as Array<Record<string, any>>
    const seen = acmeReads.map((e) => e.requestId)
    for (const id of ['req-create-endpoint', 'req-redeliver', 'req-op-delete', 'req-gone', 'req-bad-url']) {
      t.ok(seen.includes(id), `Acme sees ${id}`)
    }
    for (const id of ['req-beta-redeliver', 'req-beta-delete', 'req-beta-create']) {
      t.notOk(seen.includes(id), `Acme does not see ${id}`)
    }
    const betaSeen = ((await gql(app, EVENTS, {}, beta.token)).data!.auditEvents as Array<Record<string, any>>).map(
      (e) => e.requestId
    )
    t.ok(betaSeen.includes('req-beta-delete'), 'Beta sees its own refusals')
    t.notOk(betaSeen.includes('req-create-endpoint') || betaSeen.includes('req-op-delete'), "but nothing of Acme's")

    // No record holds a key, a token or the webhook secret.
    const secrets = [acme.apiKey, acme.token, beta.apiKey, beta.token, op, endpoint.secret]
    const texts = (await rows(app)).map((r) => JSON.stringify(r))
    t.ok(texts.length > 10, 'records to search')
    t.notOk(
      texts.some((text) => secrets.some((secret) => text.includes(secret))),
      'no key, token or secret in any record'
    )
    t.notOk(
      texts.some((text) => text.includes('whsec_')),
      'nothing like a webhook secret'
    )
  }
)

t.test(
  'import job actions through REST: create, start, the one-call form, cancel; refusals with the answer code',
  async (t) => {
    const { app, tenant: acme } = await importSetup(t, { env: QUIET })
    const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
    const op = await operatorToken(app)
    const acmeId = await organisationId(app, 'Acme')
    const acmeActor = { actorKind: 'organisation', actorOrganisation: 'Acme', actorApiKeyId: acme.apiKeyId }
    const jobs = jobsOf(app, acme)
    const last = async () => (await rows(app)).at(-1)

    const created = await jobs.create('req-job-create')
    t.equal(created.statusCode, 201)
    const id = created.json().id as string
    const job = { targetType: 'import_job', targetId: id, targetOrganisationId: acmeId }
    t.match(await last(), {
      action: 'createImportJob',
      outcome: 'succeeded',
      code: null,
      ...acmeActor,
      ...job,
      changes: null,
      ip: '127.0.0.1',
      requestId: 'req-job-create'
    })
    t.equal((await jobs.part(id, lines(entry('A-1')))).statusCode, 200)
    const before = (await rows(app)).length
    t.equal((await jobs.start('req-job-start', id)).statusCode, 202)
    const afterStart = await rows(app)
    t.equal(afterStart.length, before + 1, 'a part is not an action: the start is the one record')
    t.match(afterStart.at(-1), {
      action: 'startImportJob',
      outcome: 'succeeded',
      ...acmeActor,
      ...job,
      requestId: 'req-job-start'
    })

    const again = await jobs.start('req-job-start-again', id)
    t.equal(again.statusCode, 400)
    t.equal(answerCode(again), 'import_job_not_open')
    t.match(await last(), {
      action: 'startImportJob',
      outcome: 'refused',
      code: 'import_job_not_open',
      ...acmeActor,
      ...job,
      requestId: 'req-job-start-again'
    })

    // The one-call form creates and starts: two records, of one request, in the start's transaction.
    const submitted = await jobs.submit('req-job-submit', lines(entry('A-2')))
    t.equal(submitted.statusCode, 202)
    const submittedId = submitted.json().id as string
    const pair = (await rows(app)).slice(-2)
    t.match(pair, [
      {
        action: 'createImportJob',
        outcome: 'succeeded',
        ...acmeActor,
        targetId: submittedId,
        requestId: 'req-job-submit'
      },
      {
        action: 'startImportJob',
        outcome: 'succeeded',
        ...acmeActor,
        targetId: submittedId,
        requestId: 'req-job-submit'
      }
    ])
    // A refused one-call job is kept nowhere, nor recorded as made: one refusal, under the create's name.
    const count = (await rows(app)).length
    const refusedSubmit = await jobs.submit('req-job-submit-refused', entry('A-3'))
    t.equal(refusedSubmit.statusCode, 400)
    const afterRefusal = await rows(app)
    t.equal(afterRefusal.length, count + 1, 'one record')
    t.match(afterRefusal.at(-1), {
      action: 'createImportJob',
      outcome: 'refused',
      code: answerCode(refusedSubmit),
      ...acmeActor,
      targetType: null,
      requestId: 'req-job-submit-refused'
    })
    t.equal(answerCode(refusedSubmit), 'incomplete_line')

    const cancelled = await jobs.cancel('req-job-cancel', id)
    t.equal(cancelled.statusCode, 200)
    t.match(await last(), {
      action: 'cancelImportJob',
      outcome: 'succeeded',
      ...acmeActor,
      ...job,
      requestId: 'req-job-cancel'
    })
    const cancelAgain = await jobs.cancel('req-job-cancel-again', id)
    t.equal(cancelAgain.statusCode, 400)
    t.match(await last(), {
      action: 'cancelImportJob',
      outcome: 'refused',
      code: answerCode(cancelAgain),
      ...job
    })
    t.equal(answerCode(cancelAgain), 'import_job_not_cancellable')

    // Refusals by others: another organisation's token (its job is as one that does not exist), the
    // operator's token (no data-import calls), no token; and a create the supplier check refuses.
    const foreign = await jobsOf(app, other).cancel('req-foreign-cancel', submittedId)
    t.equal(foreign.statusCode, 404)
    t.match(await last(), {
      action: 'cancelImportJob',
      outcome: 'refused',
      code: answerCode(foreign),
      actorKind: 'organisation',
      actorOrganisation: 'Other',
      targetType: null,
      targetId: null,
      requestId: 'req-foreign-cancel'
    })
    const byOperator = await jobsOf(app, acme, op).start('req-operator-start', submittedId)
    t.equal(byOperator.statusCode, 403)
    t.match(await last(), {
      action: 'startImportJob',
      code: 'permission_denied',
      actorKind: 'operator',
      targetType: 'import_job',
      targetId: submittedId
    })
    const anonymous = await jobsOf(app, acme, null).cancel('req-anonymous-cancel', submittedId)
    t.equal(anonymous.statusCode, 401)
    t.match(await last(), { action: 'cancelImportJob', code: answerCode(anonymous), actorKind: 'anonymous' })
    const badSupplier = await jobs.create('req-bad-supplier', {
      import_supplier: 'OTHER_ENERGY',
      operations_team_name: TEAM
    })
    t.equal(badSupplier.statusCode, 400)
    t.match(await last(), {
      action: 'createImportJob',
      outcome: 'refused',
      code: answerCode(badSupplier),
      ...acmeActor,
      targetType: null,
      requestId: 'req-bad-supplier'
    })

    // What the service does by itself is not an action: a job cancelled as its supplier completes.
    const open = (await jobs.create('req-open')).json().id as string
    const withCancels = (await rows(app)).filter((r) => r.action === 'cancelImportJob').length
    await gql(app, 'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: Complete}) { code } }', {}, op)
    await createImportJobsRepository(app.db).settleStates()
    const settled = rowsOf<{ state: string; cancelled_reason: string }>(
      await app.db.execute(sql`select state, cancelled_reason from import_jobs where id = ${open}::uuid`)
    )[0]!
    t.same(settled, { state: 'CANCELLED', cancelled_reason: 'supplier_complete' }, 'cancelled by the service')
    t.equal(
      (await rows(app)).filter((r) => r.action === 'cancelImportJob').length,
      withCancels,
      'not recorded as an action'
    )

    // /metrics counts the records by action and outcome, whatever the route.
    const metrics = (await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${op}` } })).body
    for (const [action, outcome, n] of [
      ['createImportJob', 'succeeded', 3],
      ['createImportJob', 'refused', 2],
      ['startImportJob', 'succeeded', 2],
      ['startImportJob', 'refused', 2],
      ['cancelImportJob', 'succeeded', 1],
      ['cancelImportJob', 'refused', 3]
    ] as const) {
      t.match(
        metrics,
        `amis_audit_events_total{action="${action}",outcome="${outcome}"} ${n}\n`,
        `${action} ${outcome}`
      )
    }

    const secrets = [acme.apiKey, acme.token, other.apiKey, other.token, op]
    t.notOk(
      (await rows(app)).some((r) => secrets.some((secret) => JSON.stringify(r).includes(secret))),
      'no key or token in any record'
    )
  }
)

t.test('cancelImportJob through GraphQL: the same action as REST; records concern the job organisation', async (t) => {
  const { app, tenant: acme } = await importSetup(t, { env: QUIET })
  const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
  const op = await operatorToken(app)
  const acmeJobs = jobsOf(app, acme)
  const otherJobs = jobsOf(app, other)
  const ids = {
    acmeRest: (await acmeJobs.create('a1')).json().id as string,
    acmeOwn: (await acmeJobs.create('a2')).json().id as string,
    acmeByOperator: (await acmeJobs.create('a3')).json().id as string,
    other: (await otherJobs.create('o1')).json().id as string
  }
  const CANCEL = 'mutation($id: ID!) { cancelImportJob(input: {id: $id}) { id state } }'

  t.equal((await acmeJobs.cancel('req-rest', ids.acmeRest)).statusCode, 200)
  const own = await graphql(app, 'req-graphql', CANCEL, { id: ids.acmeOwn }, acme.token)
  t.equal(own.data.cancelImportJob.state, 'CANCELLED')
  await graphql(app, 'req-operator', CANCEL, { id: ids.acmeByOperator }, op)
  await graphql(app, 'req-operator-other', CANCEL, { id: ids.other }, op)
  const foreign = await graphql(app, 'req-foreign', CANCEL, { id: ids.acmeRest }, other.token)
  t.equal(foreign.errors?.[0]?.extensions?.code, 'not_found')
  const finished = await graphql(app, 'req-finished', CANCEL, { id: ids.acmeOwn }, acme.token)
  t.equal(finished.errors?.[0]?.extensions?.code, 'invalid')

  const all = await rows(app)
  const byRequest = (requestId: string) => all.find((r) => r.requestId === requestId)
  t.match(byRequest('req-rest'), { action: 'cancelImportJob', outcome: 'succeeded', targetId: ids.acmeRest })
  t.match(byRequest('req-graphql'), {
    action: 'cancelImportJob',
    outcome: 'succeeded',
    actorKind: 'organisation',
    actorOrganisation: 'Acme',
    targetType: 'import_job',
    targetId: ids.acmeOwn
  })
  t.match(byRequest('req-operator'), {
    action: 'cancelImportJob',
    outcome: 'succeeded',
    actorKind: 'operator',
    targetId: ids.acmeByOperator
  })
  t.match(byRequest('req-foreign'), {
    action: 'cancelImportJob',
    outcome: 'refused',
    code: 'not_found',
    actorOrganisation: 'Other',
    targetType: null
  })
  t.match(byRequest('req-finished'), {
    action: 'cancelImportJob',
    outcome: 'refused',
    code: 'invalid',
    targetId: ids.acmeOwn
  })

  // Each organisation reads the records of its own jobs, whoever acted; none of the other's.
  const cancels = async (token: string) =>
    ((await gql(app, EVENTS, { a: 'cancelImportJob' }, token)).data!.auditEvents as Array<Record<string, any>>).map(
      (e) => e.requestId
    )
  t.same(await cancels(acme.token), ['req-finished', 'req-operator', 'req-graphql', 'req-rest'], "Acme's, newest first")
  t.same(await cancels(other.token), ['req-foreign', 'req-operator-other'], "Other's: its own job and its own refusal")
  const forAcme = (
    (await gql(app, EVENTS, { o: 'Acme', a: 'cancelImportJob' }, op)).data!.auditEvents as Array<Record<string, any>>
  ).map((e) => e.requestId)
  t.same(forAcme, await cancels(acme.token), 'the operator filtering by Acme sees the same')
  const createsSeen = (
    (await gql(app, EVENTS, { a: 'createImportJob' }, acme.token)).data!.auditEvents as Array<Record<string, any>>
  ).map((e) => e.target.id)
  t.same(createsSeen.sort(), [ids.acmeRest, ids.acmeOwn, ids.acmeByOperator].sort(), 'its own creates only')
})

t.test(
  'an audited change that rolls back leaves no record; a record that cannot be written stops the change',
  async (t) => {
    const { app, tenant: acme } = await importSetup(t, { env: QUIET })
    const jobs = jobsOf(app, acme)
    const first = (await jobs.create('c1')).json().id as string
    const second = (await jobs.create('c2')).json().id as string
    const stateOf = async (id: string) =>
      rowsOf<{ state: string }>(await app.db.execute(sql`select state from import_jobs where id = ${id}::uuid`))[0]!
        .state

    // The cancel fails at commit, after the change and its record were written.
    await app.db.execute(sql`create function refuse_cancel() returns trigger language plpgsql as $$
    begin if new.state = 'CANCELLED' and new.id = '${sql.raw(first)}'::uuid then
      raise exception 'late failure'; end if; return new; end $$`)
    await app.db.execute(sql`create constraint trigger refuse_cancel after update on import_jobs
    deferrable initially deferred for each row execute function refuse_cancel()`)
    const failed = await jobs.cancel('req-rolled-back', first)
    t.equal(failed.statusCode, 500, 'the change failed')
    t.equal(await stateOf(first), 'OPEN', 'not cancelled')
    t.same(
      (await rows(app)).filter((r) => r.requestId === 'req-rolled-back'),
      [],
      'no record of it (a failure of the service is no refusal)'
    )

    // The record cannot be written: the change does not happen either.
    await app.db.execute(sql`create function refuse_record() returns trigger language plpgsql as $$
    begin if new.action = 'cancelImportJob' then raise exception 'no record'; end if; return new; end $$`)
    await app.db.execute(sql`create trigger refuse_record before insert on audit_events
    for each row execute function refuse_record()`)
    const unrecorded = await jobs.cancel('req-unrecorded', second)
    t.equal(unrecorded.statusCode, 500)
    t.equal(await stateOf(second), 'OPEN', 'no change without its record')

    // The same for a webhook endpoint.
    await app.db.execute(sql`create or replace function refuse_record() returns trigger language plpgsql as $$
    begin if new.action = 'createWebhookEndpoint' then raise exception 'no record'; end if; return new; end $$`)
    const endpoint = await gql(
      app,
      CREATE_ENDPOINT,
      { i: { organisation: 'Acme', url: 'http://127.0.0.1:9/hooks', events: ['import_process.created'] } },
      acme.token
    )
    t.ok(endpoint.errors, 'refused')
    t.equal(
      rowsOf<{ n: number }>(await app.db.execute(sql`select count(*)::int as n from webhook_endpoints`))[0]!.n,
      0,
      'no endpoint without its record'
    )
  }
)

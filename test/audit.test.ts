import t from 'tap'
import { asc, eq, sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { auditEvents, organisations } from '../drizzle/schema/index.js'
import { createRetentionWorker } from '../src/modules/retention/worker.js'
import { buildTestApp, testConfig } from './helpers/app.js'
import { createTenant, gql, OBTAIN_TOKEN, operatorToken } from './helpers/graphql.js'

const WHOLE_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/

const EVENTS = `query($o: String, $a: String, $s: String, $u: String, $f: Int, $after: String) {
  auditEvents(organisation: $o, action: $a, since: $s, until: $u, first: $f, after: $after) {
    id at action outcome code actor { kind organisation apiKeyId } target { type id } changes ip requestId
  }
}`

/** Posts a document and returns the body and the request id the server gave it. */
async function post(app: FastifyInstance, query: string, variables: Record<string, unknown>, token?: string) {
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: token ? { authorization: `Bearer ${token}` } : {},
    payload: { query, variables }
  })
  return { body: res.json(), requestId: String(res.headers['x-request-id']) }
}

async function rows(app: FastifyInstance) {
  return app.db.select().from(auditEvents).orderBy(asc(auditEvents.id))
}

t.test('each operator action is recorded with who, what, where and which request', async (t) => {
  const { app } = await buildTestApp(t)
  const op = await operatorToken(app)
  const made = await post(app, 'mutation { createOrganisation(input: {name: "Acme"}) { id } }', {}, op)
  const key = await post(app, 'mutation { createApiKey(input: {organisation: "Acme"}) { id key } }', {}, op)
  const keyId = key.body.data.createApiKey.id as string
  await post(app, 'mutation { createImportSupplier(input: {code: "ACME", organisation: "Acme"}) { code } }', {}, op)
  const update = 'mutation($i: UpdateImportSupplierInput!) { updateImportSupplier(input: $i) { code } }'
  await post(app, update, { i: { code: 'ACME', status: 'Paused', documentRoot: '', maxConcurrentProcessing: 5 } }, op)
  await post(app, update, { i: { code: 'ACME', status: 'Paused' } }, op)
  await post(app, 'mutation { createOperationsTeam(input: {name: "Team A"}) { id } }', {}, op)
  const pair = '{importSupplierCode: "ACME", externalAccountNumber: "A-1"}'
  await post(app, `mutation { skipImportProcess(input: ${pair}) { state } }`, {}, op)
  await post(app, `mutation { eraseStagedData(input: ${pair}) { state } }`, {}, op)
  await post(app, 'mutation($id: ID!) { revokeApiKey(input: {id: $id}) { id } }', { id: keyId }, op)

  const res = await gql(app, EVENTS, { f: 1000 }, op)
  t.notOk(res.errors, 'read')
  const events = (res.data!.auditEvents as Array<Record<string, any>>).reverse()
  const operator = { kind: 'operator', organisation: null, apiKeyId: null }
  t.same(
    events.map((e) => [e.action, e.outcome, e.code, e.actor, e.target, e.changes]),
    [
      ['obtainToken', 'succeeded', null, operator, null, null],
      ['createOrganisation', 'succeeded', null, operator, { type: 'organisation', id: 'Acme' }, null],
      ['createApiKey', 'succeeded', null, operator, { type: 'api_key', id: keyId }, null],
      ['createImportSupplier', 'succeeded', null, operator, { type: 'import_supplier', id: 'ACME' }, null],
      [
        'updateImportSupplier',
        'succeeded',
        null,
        operator,
        { type: 'import_supplier', id: 'ACME' },
        { status: { from: 'Ongoing', to: 'Paused' }, maxConcurrentProcessing: { from: null, to: 5 } }
      ],
      ['updateImportSupplier', 'succeeded', null, operator, { type: 'import_supplier', id: 'ACME' }, null],
      ['createOperationsTeam', 'succeeded', null, operator, { type: 'operations_team', id: 'Team A' }, null],
      ['skipImportProcess', 'succeeded', null, operator, { type: 'import_process', id: 'ACME/A-1' }, null],
      ['eraseStagedData', 'succeeded', null, operator, { type: 'import_process', id: 'ACME/A-1' }, null],
      ['revokeApiKey', 'succeeded', null, operator, { type: 'api_key', id: keyId }, null]
    ]
  )
  for (const e of events) {
    t.match(e.at, WHOLE_SECONDS, `${e.action}: at in whole seconds`)
    t.equal(e.ip, '127.0.0.1', `${e.action}: the client address`)
  }
  t.equal(events[1]!.requestId, made.requestId, 'request_id is the X-Request-Id of the request')
  const ids = events.map((e) => Number(e.id))
  t.same(
    ids,
    [...ids].sort((a, b) => a - b),
    'ids increase with time'
  )
})

t.test('obtainToken: an API key exchanged or refused as revoked is recorded; others are not', async (t) => {
  const { app } = await buildTestApp(t)
  const acme = await createTenant(app, 'Acme', 'ACME')
  const before = (await rows(app)).length
  const renewal = await gql(app, OBTAIN_TOKEN, { input: { APIKey: acme.apiKey } })
  await gql(app, OBTAIN_TOKEN, { input: { refreshToken: renewal.data!.obtainToken.refreshToken } })
  await gql(app, OBTAIN_TOKEN, { input: { APIKey: 'amk_unknown-key' } })
  let all = await rows(app)
  t.equal(all.length, before + 1, 'the key exchange only: not the renewal, not the unknown key')
  t.match(all.at(-1), {
    action: 'obtainToken',
    outcome: 'succeeded',
    actorKind: 'organisation',
    actorOrganisation: 'Acme',
    actorApiKeyId: acme.apiKeyId,
    targetType: 'api_key',
    targetId: acme.apiKeyId
  })
  const op = await operatorToken(app)
  await gql(app, 'mutation($id: ID!) { revokeApiKey(input: {id: $id}) { id } }', { id: acme.apiKeyId }, op)
  const refused = await gql(app, OBTAIN_TOKEN, { input: { APIKey: acme.apiKey } })
  t.equal(refused.errors?.[0]?.extensions?.code, 'authentication_failed')
  all = await rows(app)
  t.match(all.at(-1), {
    action: 'obtainToken',
    outcome: 'refused',
    code: 'authentication_failed',
    actorKind: 'anonymous',
    actorOrganisation: null,
    targetType: 'api_key',
    targetId: acme.apiKeyId
  })
  // The organisation sees the attempt with its revoked key.
  const other = await createTenant(app, 'Other', 'OTHER')
  void other
  const seen = await gql(app, EVENTS, { o: 'Acme', a: 'obtainToken' }, op)
  t.equal(seen.data!.auditEvents[0].outcome, 'refused', 'it concerns the organisation whose key it was')
})

t.test('refusals are recorded on their own, with their code and a target only when it is theirs', async (t) => {
  const { app } = await buildTestApp(t)
  const acme = await createTenant(app, 'Acme', 'ACME')
  await createTenant(app, 'Other', 'OTHER')
  const op = await operatorToken(app)
  const cases: Array<[string, string | undefined, string, object | null]> = [
    ['mutation { createOrganisation(input: {name: "Acme"}) { id } }', acme.token, 'permission_denied', null],
    [
      'mutation { updateImportSupplier(input: {code: "ACME", status: Paused}) { code } }',
      acme.token,
      'permission_denied',
      { targetType: 'import_supplier', targetId: 'ACME' }
    ],
    [
      'mutation { updateImportSupplier(input: {code: "OTHER", status: Paused}) { code } }',
      acme.token,
      'permission_denied',
      { targetType: null, targetId: null }
    ],
    ['mutation { createOperationsTeam(input: {name: "T"}) { id } }', undefined, 'not_authenticated', null],
    [
      'mutation { revokeApiKey(input: {id: "00000000-0000-4000-8000-000000000000"}) { id } }',
      op,
      'not_found',
      { targetType: null }
    ],
    [
      'mutation { createImportSupplier(input: {code: "ACME", organisation: "Acme"}) { code } }',
      op,
      'already_exists',
      { targetType: 'import_supplier', targetId: 'ACME' }
    ],
    [
      'mutation { updateImportSupplier(input: {code: "ACME", status: null}) { code } }',
      op,
      'invalid',
      { targetType: 'import_supplier', targetId: 'ACME' }
    ],
    [
      'mutation { eraseStagedData(input: {importSupplierCode: "ACME", externalAccountNumber: "NONE"}) { state } }',
      op,
      'not_found',
      { targetType: null }
    ]
  ]
  for (const [query, token, code, target] of cases) {
    const before = (await rows(app)).length
    const res = await gql(app, query, {}, token)
    t.equal(res.errors?.[0]?.extensions?.code, code, `${query}: refused`)
    const all = await rows(app)
    t.equal(all.length, before + 1, 'one record')
    t.match(all.at(-1), { outcome: 'refused', code, changes: null, ...(target ?? {}) })
  }
  const denied = (await rows(app)).find((r) => r.code === 'permission_denied')!
  t.match(denied, { actorKind: 'organisation', actorOrganisation: 'Acme', actorApiKeyId: acme.apiKeyId })
  t.equal((await rows(app)).find((r) => r.code === 'not_authenticated')!.actorKind, 'anonymous')
  // Acme's own name as the target of an operator's action it may not do: that is its own.
  await gql(app, 'mutation { createApiKey(input: {organisation: "Acme"}) { id } }', {}, acme.token)
  t.match((await rows(app)).at(-1), { action: 'createApiKey', code: 'permission_denied', targetType: null })
})

t.test('a change that rolls back leaves no record; the record rolls back with it', async (t) => {
  const { app } = await buildTestApp(t)
  const op = await operatorToken(app)
  // Fails the transaction at commit, after the change and its record were written.
  await app.db.execute(sql`create function refuse_org() returns trigger language plpgsql as $$
    begin if new.name = 'Doomed' then raise exception using errcode = '23505', message = 'late unique violation'; end if; return new; end $$`)
  await app.db.execute(sql`create constraint trigger refuse_org after insert on organisations
    deferrable initially deferred for each row execute function refuse_org()`)
  const before = (await rows(app)).length
  const res = await gql(app, 'mutation { createOrganisation(input: {name: "Doomed"}) { id } }', {}, op)
  t.equal(res.errors?.[0]?.extensions?.code, 'already_exists', 'the change failed')
  t.same(await app.db.select().from(organisations).where(eq(organisations.name, 'Doomed')), [], 'no organisation')
  const all = await rows(app)
  t.equal(
    all.filter((r) => r.outcome === 'succeeded' && r.action === 'createOrganisation').length,
    0,
    'no record of it'
  )
  t.equal(all.length, before + 1, 'only the refusal')
  t.match(all.at(-1), { outcome: 'refused', code: 'already_exists', targetType: null })
})

t.test('no record holds a key, a token or a refresh token', async (t) => {
  const { app } = await buildTestApp(t)
  const acme = await createTenant(app, 'Acme', 'ACME')
  const op = await operatorToken(app)
  const pair = await gql(app, OBTAIN_TOKEN, { input: { APIKey: acme.apiKey } })
  await gql(app, 'mutation($id: ID!) { revokeApiKey(input: {id: $id}) { id } }', { id: acme.apiKeyId }, op)
  await gql(app, OBTAIN_TOKEN, { input: { APIKey: acme.apiKey } })
  const secrets = [acme.apiKey, acme.token, op, pair.data!.obtainToken.token, pair.data!.obtainToken.refreshToken]
  const texts = (await rows(app)).map((r) => JSON.stringify(r))
  t.ok(texts.length >= 6, 'records to search')
  for (const text of texts) {
    for (const secret of secrets) t.notOk(text.includes(secret), 'no secret in a record')
  }
})

t.test('auditEvents: newest first, paged, filtered; organisations see what concerns them', async (t) => {
  const { app } = await buildTestApp(t)
  const acme = await createTenant(app, 'Acme', 'ACME')
  const other = await createTenant(app, 'Other', 'OTHER')
  const op = await operatorToken(app)
  const all = (await gql(app, EVENTS, {}, op)).data!.auditEvents as Array<Record<string, any>>
  t.ok(all.length >= 8, 'every record for the operator')
  t.ok(Number(all[0]!.id) > Number(all[1]!.id), 'newest first')
  const page1 = (await gql(app, EVENTS, { f: 2 }, op)).data!.auditEvents
  const page2 = (await gql(app, EVENTS, { f: 2, after: page1[1].id }, op)).data!.auditEvents
  t.same(
    [...page1, ...page2].map((e: any) => e.id),
    all.slice(0, 4).map((e) => e.id),
    'after: the next page'
  )
  const forAcme = (await gql(app, EVENTS, { o: 'Acme' }, op)).data!.auditEvents as Array<Record<string, any>>
  t.ok(forAcme.length >= 4, 'records concerning Acme')
  t.notOk(
    forAcme.some((e) => JSON.stringify(e).includes('OTHER') || e.target?.id === other.apiKeyId),
    "none of Other's"
  )
  const own = await gql(app, EVENTS, {}, acme.token)
  t.same(
    own.data!.auditEvents.map((e: any) => e.id),
    forAcme.map((e) => e.id),
    'an organisation sees what concerns it'
  )
  t.ok(
    own.data!.auditEvents.every((e: any) => e.ip === null),
    'without the address'
  )
  t.ok(
    forAcme.every((e) => e.ip === '127.0.0.1'),
    'the operator sees it'
  )
  t.equal((await gql(app, EVENTS, { o: 'Other' }, acme.token)).errors?.[0]?.extensions?.code, 'not_found')
  t.equal((await gql(app, EVENTS, { o: 'Nobody' }, op)).errors?.[0]?.extensions?.code, 'not_found')
  t.ok(
    (await gql(app, EVENTS, { a: 'createApiKey' }, op)).data!.auditEvents.every(
      (e: any) => e.action === 'createApiKey'
    ),
    'action keeps one action'
  )
  const at = all[0]!.at as string
  t.ok((await gql(app, EVENTS, { s: at, u: at }, op)).data!.auditEvents.length >= 1, 'since/until inclusive')
  t.same((await gql(app, EVENTS, { u: '2000-01-01T00:00:00Z' }, op)).data!.auditEvents, [], 'until bounds')
  for (const bad of [{ f: 0 }, { f: 1001 }, { after: 'x' }, { s: '2026-13-01' }]) {
    t.equal((await gql(app, EVENTS, bad, op)).errors?.[0]?.extensions?.code, 'invalid', JSON.stringify(bad))
  }
})

t.test('records older than AUDIT_RETENTION_DAYS are removed by the retention job; counted in /metrics', async (t) => {
  const { app, config } = await buildTestApp(t)
  t.equal(config.auditRetentionDays, 400, 'default 400 days')
  t.throws(() => testConfig({ AUDIT_RETENTION_DAYS: '0' }), 'at least 1')
  await createTenant(app, 'Acme', 'ACME')
  const [oldest, older] = await rows(app)
  await app.db.execute(sql`update audit_events set at = now() - interval '401 days' where id = ${oldest!.id}`)
  await app.db.execute(sql`update audit_events set at = now() - interval '399 days' where id = ${older!.id}`)
  const worker = createRetentionWorker(app.retention, app.log, { audit: { log: app.audit, days: 400 } })
  worker.start()
  await worker.stop()
  const left = (await rows(app)).map((r) => r.id)
  t.notOk(left.includes(oldest!.id), 'the 401-day-old record removed')
  t.ok(left.includes(older!.id), 'the 399-day-old record kept')

  await gql(app, 'mutation { createOrganisation(input: {name: "Acme"}) { id } }', {}, await operatorToken(app))
  const metrics = await app.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: `Bearer ${await operatorToken(app)}` }
  })
  t.match(metrics.body, /amis_audit_events_total\{action="createOrganisation",outcome="succeeded"\} 1\n/)
  t.match(metrics.body, /amis_audit_events_total\{action="createOrganisation",outcome="refused"\} 1\n/)
  t.match(metrics.body, /amis_audit_events_total\{action="obtainToken",outcome="succeeded"\} \d+/)
})

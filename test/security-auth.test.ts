import t from 'tap'
import { createSigner } from 'fast-jwt'
import { sql } from 'drizzle-orm'
import {
  buildSchema,
  getNamedType,
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  isLeafType,
  type GraphQLArgument,
  type GraphQLInputType,
  type GraphQLOutputType
} from 'graphql'
import { graphqlSchema } from '../schemas/graphql.js'
import { buildTestApp, TEST_OPERATOR_KEY, TEST_TOKEN_SECRET } from './helpers/app.js'
import { asOperator, createTenant, gql, OBTAIN_TOKEN, operatorToken } from './helpers/graphql.js'
import { concreteUrl, expectStandalone, routeRecorder, UNREACHABLE_VENDOR, type Endpoint } from './helpers/security.js'

const PARAMS = {
  supplier: 'ACME_ENERGY',
  external: 'EXT-000123',
  id: '00000000-0000-4000-8000-000000000000',
  part: '1'
}
const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
const nowSeconds = () => Math.floor(Date.now() / 1000)

/** One request to an endpoint with the given Authorization header (none when undefined). */
function call(app: Awaited<ReturnType<typeof buildTestApp>>['app'], endpoint: Endpoint, authorization?: string) {
  const url = concreteUrl(endpoint.url, PARAMS)
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization }
  return app.inject({
    method: endpoint.method as 'GET',
    url,
    headers,
    ...(endpoint.method === 'POST' ? { payload: {} } : {})
  })
}

/** A query or mutation using `field` with placeholder arguments: what the schema accepts, nothing more. */
function documentFor(
  operation: 'query' | 'mutation',
  name: string,
  args: readonly GraphQLArgument[],
  type: GraphQLOutputType
): string {
  const literal = (input: GraphQLInputType): string => {
    if (input instanceof GraphQLNonNull) return literal(input.ofType)
    if (input instanceof GraphQLList) return `[${literal(input.ofType)}]`
    if (input instanceof GraphQLEnumType) return input.getValues()[0]!.name
    if (input instanceof GraphQLInputObjectType) {
      const fields = Object.values(input.getFields()).filter((f) => f.type instanceof GraphQLNonNull)
      return `{${fields.map((f) => `${f.name}: ${literal(f.type)}`).join(', ')}}`
    }
    switch (input.name) {
      case 'Int':
        return '1'
      case 'Boolean':
        return 'false'
      case 'ID':
        return '"00000000-0000-4000-8000-000000000000"'
      default:
        return '"ACME_ENERGY"'
    }
  }
  const argText = args.length ? `(${args.map((a) => `${a.name}: ${literal(a.type)}`).join(', ')})` : ''
  const selection = isLeafType(getNamedType(type)) ? '' : ' { __typename }'
  return `${operation} { ${name}${argText}${selection} }`
}

/** Every operator field of the GraphQL surface (all but obtainToken), from the SDL: a new one cannot be forgotten. */
function operatorFields(): Array<{ name: string; document: string }> {
  const schema = buildSchema(graphqlSchema)
  const fields: Array<{ name: string; document: string }> = []
  for (const [operation, type] of [
    ['query', schema.getQueryType()],
    ['mutation', schema.getMutationType()]
  ] as const) {
    for (const field of Object.values((type as GraphQLObjectType).getFields())) {
      if (field.name === 'obtainToken') continue
      fields.push({ name: field.name, document: documentFor(operation, field.name, field.args, field.type) })
    }
  }
  return fields
}

t.test(
  'every protected endpoint refuses missing, expired, forged and revoked tokens, and the wrong kind',
  async (t) => {
    const routes = routeRecorder()
    const { app } = await buildTestApp(t, { onRoute: routes.collect, env: UNREACHABLE_VENDOR })
    const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')
    const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
    const revoked = await createTenant(app, 'Gone', 'GONE_ENERGY')
    await asOperator(app, 'mutation($id: ID!) { revokeApiKey(input: {id: $id}) { id revokedAt } }', {
      id: revoked.apiKeyId
    })
    const opToken = await operatorToken(app)

    const endpoints = routes.protected()
    const dataImport = endpoints.filter((e) => e.url.startsWith('/v1/data-import/'))
    const operatorOnly = endpoints.filter((e) => !e.url.startsWith('/v1/data-import/'))
    // The enumeration itself: if these fail, the route list changed and this file needs a look.
    t.ok(
      dataImport.filter((e) => e.method !== 'HEAD').length >= 14,
      `every data-import route is seen (${dataImport.length})`
    )
    t.same(
      operatorOnly.map((e) => `${e.method} ${e.url}`).sort(),
      ['GET /metrics', 'HEAD /metrics'],
      'the operator-only HTTP routes'
    )
    t.ok(
      routes.all().some((r) => r.url === '/healthz'),
      'public routes are seen, and set apart'
    )

    const [h, p, s] = acme.token.split('.') as [string, string, string]
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'))
    const forged: Record<string, string> = {
      'payload changed to another organisation, signature kept': [h, b64({ ...claims, kid: other.apiKeyId }), s].join(
        '.'
      ),
      'payload changed to the operator role, signature kept': [
        h,
        b64({ role: 'op', iat: claims.iat, exp: claims.exp }),
        s
      ].join('.'),
      'expiry pushed back, signature kept': [h, b64({ ...claims, exp: claims.exp + 86400 }), s].join('.'),
      'signature altered': [h, p, s.slice(0, -3) + (s.endsWith('AAA') ? 'BBB' : 'AAA')].join('.'),
      'signed with another secret': createSigner({
        key: 'not-the-test-secret-not-the-test-secret-0123',
        expiresIn: 60_000
      })({ role: 'org', kid: acme.apiKeyId }),
      'alg none, no signature': [b64({ alg: 'none', typ: 'JWT' }), p, ''].join('.'),
      'alg none, signature kept': [b64({ alg: 'none', typ: 'JWT' }), p, s].join('.'),
      'alg HS512 in the header, signature kept': [b64({ alg: 'HS512', typ: 'JWT' }), p, s].join('.'),
      'no kid': createSigner({ key: TEST_TOKEN_SECRET, expiresIn: 60_000 })({ role: 'org' }),
      'an unknown kid': createSigner({ key: TEST_TOKEN_SECRET, expiresIn: 60_000 })({
        role: 'org',
        kid: '00000000-0000-4000-8000-000000000000'
      }),
      'a role that does not exist': createSigner({ key: TEST_TOKEN_SECRET, expiresIn: 60_000 })({
        role: 'admin',
        kid: acme.apiKeyId
      }),
      garbage: 'not.a.jwt',
      'a revoked API key': revoked.token
    }
    const expired = createSigner({ key: TEST_TOKEN_SECRET, expiresIn: 1000, clockTimestamp: Date.now() - 120_000 })
    const expiredTokens = {
      organisation: expired({ role: 'org', kid: acme.apiKeyId }),
      operator: expired({
        role: 'op',
        okh: JSON.parse(Buffer.from(opToken.split('.')[1]!, 'base64url').toString('utf8')).okh
      })
    }
    t.ok(claims.exp > nowSeconds(), 'the genuine token is valid, so only the tampering can fail it')

    for (const endpoint of endpoints) {
      const label = `${endpoint.method} ${endpoint.url}`
      t.test(label, async (t) => {
        expectStandalone(t, await call(app, endpoint), 401, 'not_authenticated', 'no token')
        expectStandalone(t, await call(app, endpoint, '   '), 401, 'not_authenticated', 'a blank header')
        const kind = endpoint.url.startsWith('/v1/data-import/') ? 'organisation' : 'operator'
        for (const scheme of ['', 'Token ', 'Bearer ']) {
          expectStandalone(
            t,
            await call(app, endpoint, scheme + expiredTokens[kind]),
            401,
            'token_expired',
            `expired (${scheme || 'bare'})`
          )
        }
        for (const [what, token] of Object.entries(forged)) {
          expectStandalone(t, await call(app, endpoint, `Bearer ${token}`), 401, 'authentication_failed', what)
        }
        expectStandalone(
          t,
          await call(app, endpoint, `Basic ${acme.token}`),
          401,
          'authentication_failed',
          'an unknown scheme'
        )
        if (kind === 'organisation') {
          expectStandalone(
            t,
            await call(app, endpoint, `Bearer ${opToken}`),
            403,
            'permission_denied',
            'an operator token'
          )
          const allowed = await call(app, endpoint, `Token ${acme.token}`)
          t.notOk(
            [401, 403].includes(allowed.statusCode),
            `the organisation's own token passes authentication (${allowed.statusCode})`
          )
        } else {
          expectStandalone(
            t,
            await call(app, endpoint, `Bearer ${acme.token}`),
            403,
            'permission_denied',
            'an organisation token'
          )
          t.equal((await call(app, endpoint, `Bearer ${opToken}`)).statusCode, 200, 'the operator token passes')
        }
      })
    }

    t.test('GraphQL operator fields', async (t) => {
      const fields = operatorFields()
      t.ok(fields.length >= 10, `every operator field is seen (${fields.map((f) => f.name).join(', ')})`)
      const expectCode = (res: Awaited<ReturnType<typeof gql>>, code: string, label: string) => {
        t.equal(res.status, 200, `${label}: HTTP 200`)
        t.equal(res.errors?.[0]?.extensions?.code, code, `${label}: ${code} (got ${JSON.stringify(res.errors)})`)
        t.notOk(res.data && Object.values(res.data).some((v) => v !== null), `${label}: no data`)
      }
      // Fields an organisation may read for its own suppliers: another's is as if it did not exist.
      const ownSuppliers: Record<string, string> = {
        importProcessEvents:
          '{ importProcessEvents(importSupplierCode: "OTHER_ENERGY", externalAccountNumber: "X") { type } }',
        migrationProgress: '{ migrationProgress(importSupplierCode: "OTHER_ENERGY") { staged } }',
        migrationFailureSummary: '{ migrationFailureSummary(importSupplierCode: "OTHER_ENERGY") { failingAccounts } }',
        reconciliation: '{ reconciliation(importSupplierCode: "OTHER_ENERGY") { accountsCreated } }',
        migrationFailures: '{ migrationFailures(importSupplierCode: "OTHER_ENERGY") { step } }',
        migrationTimeline: '{ migrationTimeline(importSupplierCode: "OTHER_ENERGY") { minute } }'
      }
      for (const { name, document } of fields) {
        expectCode(await gql(app, document), 'not_authenticated', `${name} without a token`)
        if (name === 'importSuppliers') {
          const own = await gql(app, '{ importSuppliers { code organisation } }', {}, acme.token)
          t.same(
            own.data?.importSuppliers,
            [{ code: 'ACME_ENERGY', organisation: 'Acme' }],
            'importSuppliers with an organisation token: its own only'
          )
        } else if (name === 'operationsTeamExists') {
          // The migration client's pre-flight: a yes or no about one name, never the list of teams.
          const own = await gql(app, document, {}, acme.token)
          t.same(
            [own.errors, own.data?.operationsTeamExists],
            [undefined, false],
            'operationsTeamExists with an organisation token: a yes or no only'
          )
        } else if (name === 'errorCodes') {
          // The catalogue's fixed texts, the same for everyone: any signed-in token reads them.
          const own = await gql(app, '{ errorCodes { code meaning } }', {}, acme.token)
          t.ok(
            !own.errors && (own.data?.errorCodes?.length ?? 0) > 10,
            'errorCodes with an organisation token: the catalogue'
          )
        } else if (name === 'sections') {
          // The sections' names and labels, the same for everyone: any signed-in token reads them.
          const own = await gql(app, '{ sections { name label } }', {}, acme.token)
          t.ok(!own.errors && (own.data?.sections?.length ?? 0) > 0, 'sections with an organisation token: the list')
        } else if (name === 'importJobs') {
          // An organisation's own jobs: another's supplier is as if it did not exist.
          expectCode(
            await gql(app, '{ importJobs(importSupplierCode: "OTHER_ENERGY") { id } }', {}, acme.token),
            'not_found',
            "importJobs of another organisation's supplier"
          )
          const own = await gql(app, '{ importJobs { id } }', {}, acme.token)
          t.same([own.errors, own.data?.importJobs], [undefined, []], 'importJobs with an organisation token: its own')
        } else if (name === 'importJob') {
          const own = await gql(app, document, {}, acme.token)
          t.same([own.errors, own.data?.importJob], [undefined, null], 'importJob of a job not its own: null')
        } else if (name === 'cancelImportJob') {
          expectCode(await gql(app, document, {}, acme.token), 'not_found', 'cancelImportJob of a job not its own')
        } else if (name === 'auditEvents') {
          // An organisation reads the records concerning itself; another's name is as if it did not exist.
          expectCode(
            await gql(app, '{ auditEvents(organisation: "Other") { id } }', {}, acme.token),
            'not_found',
            'auditEvents of another organisation'
          )
          const own = await gql(app, '{ auditEvents { id actor { organisation } } }', {}, acme.token)
          t.notOk(own.errors, 'auditEvents with an organisation token: its own records')
          t.ok(
            (own.data?.auditEvents ?? []).every(
              (e: any) => e.actor.organisation === 'Acme' || e.actor.organisation === null
            ),
            'none of another organisation as actor'
          )
        } else if (name === 'webhookEndpoints') {
          const own = await gql(app, '{ webhookEndpoints { id } }', {}, acme.token)
          t.same(
            [own.errors, own.data?.webhookEndpoints],
            [undefined, []],
            'webhookEndpoints with an organisation token: its own'
          )
        } else if (
          ['createWebhookEndpoint', 'deleteWebhookEndpoint', 'webhookDeliveries', 'redeliverWebhook'].includes(name)
        ) {
          // An organisation manages its own endpoints: another's (or another organisation) is as if it did not exist.
          expectCode(await gql(app, document, {}, acme.token), 'not_found', `${name} of what is not its own`)
        } else if (ownSuppliers[name]) {
          expectCode(
            await gql(app, ownSuppliers[name]!, {}, acme.token),
            'not_found',
            `${name} of another organisation's supplier`
          )
        } else {
          expectCode(
            await gql(app, document, {}, acme.token),
            'permission_denied',
            `${name} with an organisation token`
          )
        }
        expectCode(
          await gql(app, document, {}, expiredTokens.operator),
          'token_expired',
          `${name} with an expired operator token`
        )
        expectCode(
          await gql(app, document, {}, forged['payload changed to the operator role, signature kept']),
          'authentication_failed',
          `${name} forged`
        )
        expectCode(
          await gql(app, document, {}, forged['alg none, no signature']),
          'authentication_failed',
          `${name} alg none`
        )
        expectCode(
          await gql(app, document, {}, revoked.token),
          'authentication_failed',
          `${name} with a revoked key's token`
        )
      }
      // Nothing above changed anything: the only organisations are the three made here.
      const suppliers = await asOperator(app, '{ importSuppliers { code } }')
      t.same(suppliers.importSuppliers.map((s: { code: string }) => s.code).sort(), [
        'ACME_ENERGY',
        'GONE_ENERGY',
        'OTHER_ENERGY'
      ])
    })

    t.test('a revoked key gets no new token', async (t) => {
      const res = await gql(app, OBTAIN_TOKEN, { input: { APIKey: revoked.apiKey } })
      t.equal(res.errors?.[0]?.extensions?.code, 'authentication_failed')
      t.equal(res.data?.obtainToken, null)
    })
  }
)

t.test('brute force on obtainToken: throttled, and a correct key is refused too until the window passes', async (t) => {
  // Tenants are made through a second app on the same database, so their tokens do not count here.
  const setup = await buildTestApp(t)
  const acme = await createTenant(setup.app, 'Acme', 'ACME_ENERGY')
  const { app } = await buildTestApp(t, { database: setup.database, env: { TOKEN_RATE_LIMIT_PER_MINUTE: '5' } })

  // From an address of its own: on a database server the limits are shared, and the tenant's
  // set-up (through the other app, from the default address) counts there.
  const attempt = (APIKey: string) =>
    app.inject({
      method: 'POST',
      url: '/graphql',
      remoteAddress: '192.0.2.7',
      payload: { query: OBTAIN_TOKEN, variables: { input: { APIKey } } }
    })
  for (let i = 0; i < 5; i++) {
    const res = await attempt(`amk_guess_${i}`)
    t.equal(res.statusCode, 200, `guess ${i + 1} is answered`)
    t.equal(res.json().errors[0].extensions.code, 'authentication_failed', `guess ${i + 1} fails`)
  }
  for (const [what, key] of [
    ['the next guess', 'amk_guess_6'],
    ['the correct organisation key', acme.apiKey],
    ['the operator key', TEST_OPERATOR_KEY]
  ]) {
    const res = await attempt(key!)
    expectStandalone(t, res, 429, 'throttled', what!)
    const retryAfter = Number(res.headers['retry-after'])
    t.ok(
      Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
      `${what}: Retry-After in seconds (${res.headers['retry-after']})`
    )
    t.notMatch(res.body, /eyJ/, `${what}: no token in the answer`)
  }
  const aliased = await app.inject({
    method: 'POST',
    url: '/graphql',
    remoteAddress: '127.0.0.2',
    payload: {
      query: `mutation { ${[1, 2, 3, 4, 5, 6].map((i) => `k${i}: obtainToken(input: {APIKey: "amk_${i}"}) { token }`).join(' ')} }`
    }
  })
  expectStandalone(t, aliased, 429, 'throttled', 'six guesses aliased in one request')

  // The window is a fixed minute: the in-process store reads Date.now, the shared one the
  // database's clock. Move the first past it and end the shared windows.
  const realNow = Date.now
  t.teardown(() => {
    Date.now = realNow
  })
  Date.now = () => realNow() + 61_000
  await app.db.execute(sql`update rate_limit_counts set window_ends_at = now() - interval '1 second'`)
  const res = await attempt(acme.apiKey)
  t.equal(res.statusCode, 200, 'after the window the correct key works again')
  t.type(res.json().data.obtainToken.token, 'string')
})

import t from 'tap'
import { createSigner } from 'fast-jwt'
import { eq } from 'drizzle-orm'
import { apiKeys, refreshTokens } from '../drizzle/schema/index.js'
import { KEY_CACHE_MS } from '../src/modules/auth/service.js'
import { buildTestApp, TEST_OPERATOR_KEY, TEST_TOKEN_SECRET } from './helpers/app.js'
import { asOperator, createTenant, gql, OBTAIN_TOKEN, operatorToken } from './helpers/graphql.js'

const LIST = '/v1/data-import/all-account-import-processes/ACME_ENERGY/'

t.test('obtainToken', async (t) => {
  const { app } = await buildTestApp(t)
  const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')

  t.test('an organisation API key gives a signed token, its lifetime and a refresh token', async (t) => {
    const res = await gql(app, OBTAIN_TOKEN, { input: { APIKey: acme.apiKey } })
    t.equal(res.status, 200)
    const payload = res.data!.obtainToken
    t.match(payload.token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT')
    t.equal(payload.expiresIn, 3600, 'default lifetime one hour')
    t.match(payload.refreshToken, /^amr_[\w-]{43}$/)
    const week = Math.floor(Date.now() / 1000) + 7 * 86400
    t.ok(Math.abs(payload.refreshExpiresIn - week) < 5, 'refreshExpiresIn is Unix time seven days ahead')
    const list = await app.inject({ url: LIST, headers: { authorization: payload.token } })
    t.equal(list.statusCode, 200)
  })

  t.test('the token lifetime comes from configuration', async (t) => {
    const { app: short } = await buildTestApp(t, { env: { TOKEN_TTL_SECONDS: '120' } })
    const res = await gql(short, OBTAIN_TOKEN, { input: { APIKey: TEST_OPERATOR_KEY } })
    t.equal(res.data!.obtainToken.expiresIn, 120)
  })

  t.test('both or neither of APIKey and refreshToken is invalid', async (t) => {
    for (const input of [{}, { APIKey: acme.apiKey, refreshToken: 'amr_x' }]) {
      const res = await gql(app, OBTAIN_TOKEN, { input })
      t.equal(res.status, 200)
      t.equal(res.data!.obtainToken, null)
      t.equal(res.errors![0]!.extensions!.code, 'invalid')
    }
  })

  t.test('a wrong or unknown API key fails', async (t) => {
    for (const APIKey of ['', 'amk_nope', acme.apiKey + 'x', acme.apiKey.toUpperCase()]) {
      const res = await gql(app, OBTAIN_TOKEN, { input: { APIKey } })
      t.equal(res.errors![0]!.extensions!.code, 'authentication_failed', JSON.stringify(APIKey))
      t.equal(res.data!.obtainToken, null)
    }
  })

  t.test('any operation name is accepted', async (t) => {
    const res = await gql(app, 'mutation Whatever($k: String) { obtainToken(input: {APIKey: $k}) { token } }', {
      k: acme.apiKey
    })
    t.type(res.data!.obtainToken.token, 'string')
  })
})

t.test('refresh tokens', async (t) => {
  const { app, database } = await buildTestApp(t)
  const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')
  const first = (await gql(app, OBTAIN_TOKEN, { input: { APIKey: acme.apiKey } })).data!.obtainToken

  t.test('are single use: each use returns a new pair, a reuse fails', async (t) => {
    const second = await gql(app, OBTAIN_TOKEN, { input: { refreshToken: first.refreshToken } })
    const pair = second.data!.obtainToken
    t.type(pair.token, 'string')
    t.not(pair.refreshToken, first.refreshToken)
    const list = await app.inject({ url: LIST, headers: { authorization: `JWT ${pair.token}` } })
    t.equal(list.statusCode, 200, 'the refreshed token works')
    const reuse = await gql(app, OBTAIN_TOKEN, { input: { refreshToken: first.refreshToken } })
    t.equal(reuse.errors![0]!.extensions!.code, 'authentication_failed')
    t.equal(reuse.data!.obtainToken, null)
  })

  t.test('two concurrent uses of one refresh token: exactly one wins', async (t) => {
    const pair = (await gql(app, OBTAIN_TOKEN, { input: { APIKey: acme.apiKey } })).data!.obtainToken
    const results = await Promise.all(
      [1, 2, 3].map(() => gql(app, OBTAIN_TOKEN, { input: { refreshToken: pair.refreshToken } }))
    )
    t.equal(results.filter((r) => r.data!.obtainToken !== null).length, 1)
    t.equal(results.filter((r) => r.errors?.[0]?.extensions?.code === 'authentication_failed').length, 2)
  })

  t.test('an unknown refresh token fails', async (t) => {
    const res = await gql(app, OBTAIN_TOKEN, { input: { refreshToken: 'amr_unknown' } })
    t.equal(res.errors![0]!.extensions!.code, 'authentication_failed')
  })

  t.test('an expired refresh token gives token_expired', async (t) => {
    const pair = (await gql(app, OBTAIN_TOKEN, { input: { APIKey: acme.apiKey } })).data!.obtainToken
    await database.db.update(refreshTokens).set({ expiresAt: new Date(Date.now() - 1000) })
    const res = await gql(app, OBTAIN_TOKEN, { input: { refreshToken: pair.refreshToken } })
    t.equal(res.errors![0]!.extensions!.code, 'token_expired')
  })

  t.test('operator refresh tokens give operator tokens', async (t) => {
    const pair = (await gql(app, OBTAIN_TOKEN, { input: { APIKey: TEST_OPERATOR_KEY } })).data!.obtainToken
    const next = (await gql(app, OBTAIN_TOKEN, { input: { refreshToken: pair.refreshToken } })).data!.obtainToken
    const res = await gql(app, '{ importSuppliers { code } }', {}, next.token)
    t.same(res.data!.importSuppliers, [{ code: 'ACME_ENERGY' }])
  })

  t.test('a revoked key cannot refresh', async (t) => {
    const pair = (await gql(app, OBTAIN_TOKEN, { input: { APIKey: acme.apiKey } })).data!.obtainToken
    await asOperator(app, 'mutation($id: ID!) { revokeApiKey(input: {id: $id}) { id } }', { id: acme.apiKeyId })
    const res = await gql(app, OBTAIN_TOKEN, { input: { refreshToken: pair.refreshToken } })
    t.equal(res.errors![0]!.extensions!.code, 'authentication_failed')
  })
})

t.test('the Authorization header on data-import paths', async (t) => {
  const { app } = await buildTestApp(t)
  const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')
  const call = (authorization?: string) =>
    app.inject({ url: LIST, headers: authorization === undefined ? {} : { authorization } })

  t.test('is accepted in all four forms', async (t) => {
    for (const header of [
      acme.token,
      `Token ${acme.token}`,
      `JWT ${acme.token}`,
      `Bearer ${acme.token}`,
      `bearer  ${acme.token}`
    ]) {
      t.equal((await call(header)).statusCode, 200, header.split(' ')[0] ?? '')
    }
  })

  t.test('missing: 401 not_authenticated', async (t) => {
    for (const header of [undefined, '', '   ']) {
      const res = await call(header)
      t.equal(res.statusCode, 401)
      t.same(res.json(), { detail: res.json().detail, code: 'not_authenticated', errors: [] })
    }
  })

  t.test('bad signature, garbage or a wrong scheme: 401 authentication_failed', async (t) => {
    const [h, p, s] = acme.token.split('.')
    const tampered = [h, p, s!.slice(0, -2) + (s!.endsWith('AA') ? 'BB' : 'AA')].join('.')
    const otherSecret = createSigner({ key: 'another-secret-another-secret-another-secret', expiresIn: 60_000 })({
      role: 'op'
    })
    const forgedPayload = [h, Buffer.from(JSON.stringify({ role: 'op' })).toString('base64url'), s].join('.')
    for (const header of [
      tampered,
      otherSecret,
      forgedPayload,
      'garbage',
      `Basic ${acme.token}`,
      `Token ${acme.token} extra`
    ]) {
      const res = await call(header)
      t.equal(res.statusCode, 401)
      t.equal(res.json().code, 'authentication_failed', header.slice(0, 12))
    }
  })

  t.test('expired: 401 token_expired', async (t) => {
    const expired = createSigner({ key: TEST_TOKEN_SECRET, expiresIn: 1000, clockTimestamp: Date.now() - 60_000 })({
      role: 'org',
      kid: acme.apiKeyId
    })
    const res = await call(`Bearer ${expired}`)
    t.equal(res.statusCode, 401)
    t.equal(res.json().code, 'token_expired')
  })

  t.test('an operator token: 403 permission_denied', async (t) => {
    const res = await call(`Bearer ${await operatorToken(app)}`)
    t.equal(res.statusCode, 403)
    t.equal(res.json().code, 'permission_denied')
  })

  t.test('an operator token signed for an earlier operator key fails', async (t) => {
    const old = createSigner({ key: TEST_TOKEN_SECRET, expiresIn: 60_000 })({ role: 'op', okh: 'not-the-key' })
    const res = await gql(app, '{ importSuppliers { code } }', {}, old)
    t.equal(res.errors![0]!.extensions!.code, 'authentication_failed')
  })
})

t.test('revocation', async (t) => {
  const { app, database } = await buildTestApp(t)
  const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')
  // A second server process on the same database, with its own cache of key states.
  const { app: other } = await buildTestApp(t, { database })
  const call = (a: typeof app) => a.inject({ url: LIST, headers: { authorization: acme.token } })
  t.equal((await call(other)).statusCode, 200, 'the other server has seen the key')

  await asOperator(app, 'mutation($id: ID!) { revokeApiKey(input: {id: $id}) { id } }', { id: acme.apiKeyId })
  const here = await call(app)
  t.equal(here.statusCode, 401, 'the revoking server refuses at once')
  t.equal(here.json().code, 'authentication_failed')

  t.equal(
    KEY_CACHE_MS,
    5_000,
    'key states are cached for 5 s, the figure docs/api.md, docs/operator-guide.md and docs/scaling.md give'
  )
  await new Promise((resolve) => setTimeout(resolve, KEY_CACHE_MS + 200))
  const there = await call(other)
  t.equal(there.statusCode, 401, 'the other server refuses within the cache time')
  t.equal(there.json().code, 'authentication_failed')
  const stored = async () => (await database.db.select().from(refreshTokens)).length
  const before = await stored()
  const token = await gql(app, OBTAIN_TOKEN, { input: { APIKey: acme.apiKey } })
  t.equal(token.errors![0]!.extensions!.code, 'authentication_failed', 'a revoked key gets no new token')
  t.equal(await stored(), before, 'and no refresh token is stored for it')
  const unknown = await gql(app, OBTAIN_TOKEN, { input: { APIKey: 'amk_' + 'x'.repeat(40) } })
  t.equal(unknown.errors![0]!.extensions!.code, 'authentication_failed', 'an unknown key gets none')
  t.equal(await stored(), before, 'nothing stored for it either')
})

t.test('secrets are never stored or logged in clear', async (t) => {
  const { app, database, logs } = await buildTestApp(t, { captureLogs: true })
  const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')
  const pair = (await gql(app, OBTAIN_TOKEN, { input: { APIKey: acme.apiKey } })).data!.obtainToken
  await app.inject({ url: LIST, headers: { authorization: `Bearer ${pair.token}` } })
  await app.inject({ url: LIST, headers: { authorization: 'Bearer not-a-token' } })
  await gql(app, OBTAIN_TOKEN, { input: { refreshToken: pair.refreshToken } })

  const keyRows = await database.db.select().from(apiKeys).where(eq(apiKeys.id, acme.apiKeyId))
  t.notMatch(JSON.stringify(keyRows), acme.apiKey, 'the API key is not in its row')
  t.notMatch(JSON.stringify(keyRows), acme.apiKey.slice(4), 'nor its random part')
  const refreshRows = await database.db.select().from(refreshTokens)
  t.notMatch(JSON.stringify(refreshRows), pair.refreshToken.slice(4), 'refresh tokens are stored hashed')

  const logged = logs()
  t.ok(logged.length > 0, 'the app did log')
  for (const secret of [acme.apiKey, pair.refreshToken, pair.token, TEST_OPERATOR_KEY, 'not-a-token']) {
    t.notOk(logged.includes(secret.slice(4, 40)), 'not in the logs: ' + secret.slice(0, 4))
  }
})

import t, { type Test } from 'tap'
import { buildTestApp, TEST_OPERATOR_KEY } from './helpers/app.js'
import { createTenant, gql, OBTAIN_TOKEN } from './helpers/graphql.js'

const tokenQuery = (n: number) =>
  `mutation { ${Array.from({ length: n }, (_, i) => `t${i}: obtainToken(input: {APIKey: "${TEST_OPERATOR_KEY}"}) { token }`).join(' ')} }`

function assertThrottled(t: Test, res: any) {
  t.equal(res.statusCode, 429)
  t.same(res.json(), { detail: res.json().detail, code: 'throttled', errors: [] })
  const retryAfter = Number(res.headers['retry-after'])
  t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After is 1–60 s (${res.headers['retry-after']})`)
}

t.test('obtainToken is limited per client address, counting every field', async (t) => {
  t.test('separate requests', async (t) => {
    const { app } = await buildTestApp(t, { env: { TOKEN_RATE_LIMIT_PER_MINUTE: '3' } })
    for (let i = 0; i < 3; i++) {
      const ok = await gql(app, OBTAIN_TOKEN, { input: { APIKey: TEST_OPERATOR_KEY } })
      t.type(ok.data!.obtainToken.token, 'string', `call ${i + 1} is allowed`)
    }
    const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query: tokenQuery(1) } })
    assertThrottled(t, res)
    const failing = await app.inject({
      method: 'POST',
      url: '/graphql',
      payload: { query: 'mutation { obtainToken(input: {APIKey: "wrong"}) { token } }' }
    })
    t.equal(failing.statusCode, 429, 'wrong keys are throttled too: no brute force')
    const elsewhere = await app.inject({
      method: 'POST',
      url: '/graphql',
      remoteAddress: '127.0.0.9',
      payload: { query: tokenQuery(1) }
    })
    t.equal(elsewhere.statusCode, 200, 'another address has its own budget')
  })

  t.test('aliased fields in one request', async (t) => {
    const { app } = await buildTestApp(t, { env: { TOKEN_RATE_LIMIT_PER_MINUTE: '3' } })
    const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query: tokenQuery(4) } })
    assertThrottled(t, res)
  })

  t.test('fields in fragments count', async (t) => {
    const { app } = await buildTestApp(t, { env: { TOKEN_RATE_LIMIT_PER_MINUTE: '3' } })
    const query = `mutation { ...F ... on Mutation { b: obtainToken(input: {APIKey: "x"}) { token } } }
      fragment F on Mutation { a: obtainToken(input: {APIKey: "x"}) { token } c: obtainToken(input: {APIKey: "x"}) { token } d: obtainToken(input: {APIKey: "x"}) { token } }`
    const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query } })
    assertThrottled(t, res)
  })

  t.test('batched operations', async (t) => {
    const { app } = await buildTestApp(t, { env: { TOKEN_RATE_LIMIT_PER_MINUTE: '3' } })
    const res = await app.inject({
      method: 'POST',
      url: '/graphql',
      payload: [{ query: tokenQuery(2) }, { query: tokenQuery(2) }]
    })
    assertThrottled(t, res)
  })

  t.test('other GraphQL fields do not count', async (t) => {
    const { app } = await buildTestApp(t, { env: { TOKEN_RATE_LIMIT_PER_MINUTE: '1' } })
    const token = (await gql(app, OBTAIN_TOKEN, { input: { APIKey: TEST_OPERATOR_KEY } })).data!.obtainToken.token
    for (let i = 0; i < 5; i++) {
      const res = await gql(app, '{ importSuppliers { code } }', {}, token)
      t.equal(res.status, 200)
      t.same(res.data, { importSuppliers: [] })
    }
  })
})

t.test('data-import calls are limited per organisation when configured', async (t) => {
  const { app } = await buildTestApp(t, { env: { ORG_RATE_LIMIT_PER_MINUTE: '2' } })
  const acme = await createTenant(app, 'Acme', 'ACME')
  const other = await createTenant(app, 'Other', 'OTHER')
  const list = (tenant: typeof acme, authorization = `Bearer ${tenant.token}`) =>
    app.inject({ url: `/v1/data-import/all-account-import-processes/${tenant.supplier}/`, headers: { authorization } })
  t.equal((await list(acme)).statusCode, 200)
  t.equal((await list(acme)).statusCode, 200)
  assertThrottled(t, await list(acme))
  t.equal((await list(other)).statusCode, 200, 'another organisation is not affected')
  const unauthenticated = await app.inject({ url: '/v1/data-import/all-account-import-processes/ACME/' })
  t.equal(unauthenticated.statusCode, 401, 'authentication is checked before the rate limit')
})

t.test('the organisation limit is off by default', async (t) => {
  const { app } = await buildTestApp(t)
  const acme = await createTenant(app, 'Acme', 'ACME')
  for (let i = 0; i < 40; i++) {
    const res = await app.inject({
      url: '/v1/data-import/all-account-import-processes/ACME/',
      headers: { authorization: acme.token }
    })
    if (res.statusCode !== 200) t.fail(`call ${i + 1} got ${res.statusCode}`)
  }
  t.pass('40 calls in a row')
})

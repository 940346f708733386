import t from 'tap'
import { Type } from 'typebox'
import { eq } from 'drizzle-orm'
import { organisations } from '../drizzle/schema/index.js'
import { compareAttr, sortEntries } from '../src/errors.js'
import { buildTestApp } from './helpers/app.js'
import { createTenant } from './helpers/graphql.js'

const Item = Type.Object(
  { amount: Type.Number(), note: Type.Optional(Type.String({ maxLength: 5 })) },
  { additionalProperties: false }
)
const Body = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    count: Type.Optional(Type.Integer({ minimum: 1 })),
    kind: Type.Optional(Type.Union([Type.Literal('A'), Type.Literal('B')])),
    items: Type.Optional(Type.Array(Item, { maxItems: 20 })),
    nested: Type.Optional(Type.Object({ ok: Type.Boolean() }, { additionalProperties: false }))
  },
  { additionalProperties: false }
)

/** The real app plus test routes that exercise the error plugin and the validators. */
async function appWithTestRoutes(t: Parameters<typeof buildTestApp>[0], env: Record<string, string> = {}) {
  const built = await buildTestApp(t, { env })
  const { app } = built
  app.post('/test/echo', { schema: { body: Body } }, async (request) => request.body)
  app.post(
    '/test/account',
    { schema: { body: Body }, config: { validationCode: 'account_failed_validation' } },
    async () => ({})
  )
  app.get(
    '/test/query',
    {
      schema: {
        querystring: Type.Object({ limit: Type.Integer({ minimum: 1, maximum: 100 }) }, { additionalProperties: false })
      }
    },
    async (request) => request.query
  )
  app.get('/test/boom', async () => {
    throw new Error('secret internals: password=hunter2')
  })
  app.post('/test/lookup', async (request) => {
    const name = (request.body as { name: string }).name
    return app.db.select().from(organisations).where(eq(organisations.name, name))
  })
  app.post('/test/authed', { schema: { body: Body }, onRequest: app.requireOrganisation }, async () => ({ ok: true }))
  return built
}

const post = (app: any, url: string, payload: string, type = 'application/json') =>
  app.inject({ method: 'POST', url, headers: { 'content-type': type }, payload })

t.test('body parse, size and type errors', async (t) => {
  const { app } = await appWithTestRoutes(t, { BODY_LIMIT_BYTES: '2048' })

  t.test('malformed JSON: 400 invalid_request with one `invalid` at null', async (t) => {
    for (const payload of ['{bad', '{"name": "x",}', '[1, 2', '{"__proto__": {"x": 1}}']) {
      const res = await post(app, '/test/echo', payload)
      t.equal(res.statusCode, 400, payload)
      t.same(res.json(), {
        detail: res.json().detail,
        code: 'invalid_request',
        errors: [{ detail: res.json().errors[0].detail, code: 'invalid', attr: null }]
      })
    }
  })

  t.test('an empty JSON body: 400', async (t) => {
    const res = await post(app, '/test/echo', '')
    t.equal(res.statusCode, 400)
    t.equal(res.json().code, 'invalid_request')
  })

  t.test('a body that is not JSON: 415 unsupported_media_type', async (t) => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await post(app, '/test/echo', 'name=x', type)
      t.equal(res.statusCode, 415, type)
      t.same(res.json(), { detail: res.json().detail, code: 'unsupported_media_type', errors: [] })
    }
  })

  t.test('an oversized body: 413 payload_too_large', async (t) => {
    const res = await post(app, '/test/echo', JSON.stringify({ name: 'x'.repeat(3000) }))
    t.equal(res.statusCode, 413)
    t.same(res.json(), { detail: res.json().detail, code: 'payload_too_large', errors: [] })
    const fits = await post(app, '/test/echo', JSON.stringify({ name: 'x'.repeat(1000) }))
    t.equal(fits.statusCode, 200, 'a body under the limit is fine')
  })

  t.test('the same three on /graphql come in the contract body', async (t) => {
    const bad = await post(app, '/graphql', '{bad')
    t.equal(bad.statusCode, 400)
    t.equal(bad.json().code, 'invalid_request')
    const type = await post(app, '/graphql', 'x', 'text/plain')
    t.equal(type.statusCode, 415)
    t.equal(type.json().code, 'unsupported_media_type')
    const big = await post(app, '/graphql', JSON.stringify({ query: `{ ${'x'.repeat(3000)} }` }))
    t.equal(big.statusCode, 413)
    t.equal(big.json().code, 'payload_too_large')
  })

  t.test('check order: authentication first, on the headers alone, then the body', async (t) => {
    for (const [payload, type, what] of [
      ['x', 'text/plain', 'the wrong type'],
      ['{bad', 'application/json', 'malformed JSON'],
      [JSON.stringify({ wrong: 1 }), 'application/json', 'an invalid body'],
      ['x'.repeat(5000), 'application/json', 'a body over the limit']
    ] as const) {
      const res = await post(app, '/test/authed', payload, type)
      t.equal(res.statusCode, 401, `no token and ${what}: 401`)
      t.equal(res.json().code, 'not_authenticated')
      t.equal(res.headers.connection, 'close', 'the connection is closed: its body is never read')
    }
  })
})

t.test('schema errors', async (t) => {
  const { app } = await appWithTestRoutes(t)

  t.test('every problem is listed with its code and attr, sorted', async (t) => {
    const res = await post(
      app,
      '/test/echo',
      JSON.stringify({
        name: '',
        count: '22',
        kind: 'C',
        items: [{ amount: 'x' }, {}, { amount: 1, note: 'too long' }, { amount: 1, typo: 2 }],
        nested: { typo: 1 },
        extra: 1
      })
    )
    t.equal(res.statusCode, 400)
    const body = res.json()
    t.equal(body.code, 'invalid_request')
    t.same(
      body.errors.map((e: any) => [e.attr, e.code]),
      [
        ['count', 'invalid'],
        ['extra', 'unexpected_field'],
        ['items.0.amount', 'invalid'],
        ['items.1.amount', 'required'],
        ['items.2.note', 'max_length'],
        ['items.3.typo', 'unexpected_field'],
        ['kind', 'invalid_choice'],
        ['name', 'blank'],
        ['nested.ok', 'required'],
        ['nested.typo', 'unexpected_field']
      ]
    )
    for (const e of body.errors) t.type(e.detail, 'string')
  })

  t.test('a required field sent as null gets `null`; strings are not coerced to numbers', async (t) => {
    const res = await post(app, '/test/echo', JSON.stringify({ name: null, count: '3' }))
    t.same(
      res.json().errors.map((e: any) => [e.attr, e.code]),
      [
        ['count', 'invalid'],
        ['name', 'null']
      ]
    )
  })

  t.test('unknown fields are rejected, not dropped', async (t) => {
    const res = await post(app, '/test/echo', JSON.stringify({ name: 'x', nmae: 'typo' }))
    t.equal(res.statusCode, 400)
    t.same(
      res.json().errors.map((e: any) => [e.attr, e.code]),
      [['nmae', 'unexpected_field']]
    )
  })

  t.test('indexes sort numerically', async (t) => {
    const items = Array.from({ length: 12 }, () => ({ amount: 1 }))
    items[2] = { amount: 'x' } as never
    items[10] = { amount: 'y' } as never
    const res = await post(app, '/test/echo', JSON.stringify({ name: 'x', items }))
    t.same(
      res.json().errors.map((e: any) => e.attr),
      ['items.2.amount', 'items.10.amount']
    )
  })

  t.test('arrays past maxItems: max_items at the array', async (t) => {
    const res = await post(
      app,
      '/test/echo',
      JSON.stringify({ name: 'x', items: Array.from({ length: 21 }, () => ({ amount: 1 })) })
    )
    t.same(
      res.json().errors.map((e: any) => [e.attr, e.code]),
      [['items', 'max_items']]
    )
  })

  t.test('a route can name its top-level code', async (t) => {
    const res = await post(app, '/test/account', JSON.stringify({}))
    t.equal(res.json().code, 'account_failed_validation')
    t.same(
      res.json().errors.map((e: any) => [e.attr, e.code]),
      [['name', 'required']]
    )
  })

  t.test('text the database cannot store is a 400, not a 500', async (t) => {
    const res = await post(app, '/test/lookup', JSON.stringify({ name: 'a\u0000b' }))
    t.equal(res.statusCode, 400)
    t.same(
      res.json().errors.map((e: any) => [e.attr, e.code]),
      [[null, 'invalid']]
    )
  })

  t.test('a valid body passes unchanged', async (t) => {
    const body = { name: 'x', count: 2, kind: 'A', items: [{ amount: 1.5 }], nested: { ok: true } }
    const res = await post(app, '/test/echo', JSON.stringify(body))
    t.equal(res.statusCode, 200)
    t.same(res.json(), body)
  })

  t.test('query strings are coerced, and their attr is the parameter name', async (t) => {
    t.same((await app.inject({ url: '/test/query?limit=10' })).json(), { limit: 10 })
    const bad = await app.inject({ url: '/test/query?limit=abc' })
    t.equal(bad.statusCode, 400)
    t.same(
      bad.json().errors.map((e: any) => [e.attr, e.code]),
      [['limit', 'invalid']]
    )
    const unknown = await app.inject({ url: '/test/query?limit=1&sort=x' })
    t.same(
      unknown.json().errors.map((e: any) => [e.attr, e.code]),
      [['sort', 'unexpected_field']]
    )
  })
})

t.test('not found, server errors and request ids', async (t) => {
  const { app, logs } = await buildTestApp(t, { captureLogs: true })
  app.get('/test/boom', async () => {
    throw new Error('secret internals: password=hunter2')
  })

  t.test('an unknown route: 404 not_found', async (t) => {
    const res = await app.inject({ url: '/v1/data-import/nothing-here/' })
    t.equal(res.statusCode, 404)
    t.same(res.json(), {
      detail: 'Not found.',
      code: 'not_found',
      errors: [{ detail: res.json().errors[0].detail, code: 'route_not_found', attr: null }]
    })
  })

  t.test('an unexpected error: 500 server_error that leaks nothing and carries the request id', async (t) => {
    const res = await app.inject({ url: '/test/boom' })
    t.equal(res.statusCode, 500)
    const body = res.json()
    t.same(Object.keys(body).sort(), ['code', 'detail', 'errors', 'request_id'])
    t.equal(body.code, 'server_error')
    t.same(body.errors, [])
    t.equal(body.request_id, res.headers['x-request-id'])
    t.notMatch(res.body, /secret|hunter2|Error|at /)
    t.match(logs(), /secret internals/, 'the full error is logged')
    t.match(logs(), new RegExp(body.request_id), 'with the request id')
  })

  t.test('every response carries X-Request-Id; a sane incoming one is kept', async (t) => {
    for (const url of ['/healthz', '/nope', '/test/boom']) {
      t.match((await app.inject({ url })).headers['x-request-id'], /^[0-9a-f-]{36}$/, url)
    }
    const kept = await app.inject({ url: '/healthz', headers: { 'x-request-id': 'client-123' } })
    t.equal(kept.headers['x-request-id'], 'client-123')
    const replaced = await app.inject({ url: '/healthz', headers: { 'x-request-id': 'bad id\u0007' } })
    t.match(replaced.headers['x-request-id'], /^[0-9a-f-]{36}$/)
  })

  t.test('the Authorization header is redacted from logs', async (t) => {
    const acme = await createTenant(app, 'Acme', 'ACME')
    await app.inject({
      url: '/v1/data-import/all-account-import-processes/ACME/',
      headers: { authorization: `Bearer ${acme.token}` }
    })
    t.notOk(logs().includes(acme.token.slice(20)))
  })
})

t.test('sort order of error entries', async (t) => {
  t.ok(compareAttr(null, 'a') < 0, 'null first')
  t.ok(compareAttr('a.2', 'a.10') < 0, 'indexes numerically')
  t.ok(compareAttr('a', 'a.b') < 0, 'a path before its extensions')
  t.ok(compareAttr('B', 'a') < 0, 'names by code point')
  t.ok(compareAttr('\u{1F600}', '\uFFFF') > 0, 'by code point, not UTF-16 unit')
  const sorted = sortEntries([
    { detail: '', code: 'z', attr: 'b' },
    { detail: '', code: 'a', attr: 'b' },
    { detail: '', code: 'x', attr: null }
  ])
  t.same(
    sorted.map((e) => `${e.attr}:${e.code}`),
    ['null:x', 'b:a', 'b:z'],
    'then by code'
  )
  const many = Array.from({ length: 150 }, (_, i) => ({ detail: '', code: 'c', attr: `items.${i}` }))
  const first100 = sortEntries(many.reverse())
  t.equal(first100.length, 100, 'the first 100 are returned')
  t.equal(first100[99]!.attr, 'items.99')
})

import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { validate, compileErrors } from '@readme/openapi-parser'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { FastifyInstance, LightMyRequestResponse, RouteOptions } from 'fastify'
import { AccountData, CreateRequest } from '../schemas/account.js'
import { toOpenApiSchema } from '../src/plugins/openapi.js'
import { daysFromToday, exampleAccount, importedSetup, importSetup, TEAM } from './helpers/accounts.js'
import { EXAMPLE_ACCOUNT, paymentInstructionExample, REQUEST_EXAMPLES } from '../schemas/examples.js'
import { WEBHOOK_EVENT_TYPES } from '../schemas/webhooks.js'

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020

type Doc = Record<string, any>

/** Routes that are deliberately not in the document, and why. */
function undocumented(method: string, url: string): boolean {
  if (method === 'HEAD') return true // Fastify's automatic HEAD of each GET
  if (url === '/docs' || url.startsWith('/docs/')) return true // the documentation page and its assets
  if (url === '/dashboard' || url.startsWith('/dashboard/')) return true // the web dashboard and its assets
  return url === '/graphql' && method === 'GET' // GraphQL is described as one POST operation
}

/** `/v1/x/:a/` and `/v1/x/{a}` name the same path. */
const pathKey = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\/$/, '')

/** The app with the routes it registered, and its document as `GET /openapi.json` serves it. */
async function documented(t: Test, env: Record<string, string> = {}) {
  const routes: RouteOptions[] = []
  const setup = await importSetup(t, {
    env,
    onRoute: (route) => {
      routes.push(route)
    }
  })
  return { ...setup, routes, doc: await served(t, setup.app) }
}

/** `documented` with the example account staged and created, and `post` for the post-import endpoints. */
async function documentedWithAccount(t: Test) {
  const setup = await importedSetup(t)
  return { ...setup, doc: await served(t, setup.app) }
}

async function served(t: Test, app: FastifyInstance): Promise<Doc> {
  const res = await app.inject({ url: '/openapi.json' })
  t.equal(res.statusCode, 200, 'served without a token')
  t.match(res.headers['content-type'], /^application\/json/)
  return res.json() as Doc
}

function operations(doc: Doc): Array<{ path: string; method: string; op: Doc }> {
  return Object.entries(doc.paths as Record<string, Record<string, Doc>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ path, method, op }))
  )
}

/** Required names and property names, all the way down: what a client must send, and may. */
function shape(schema: any, components: Record<string, any> = {}): unknown {
  if (schema === null || typeof schema !== 'object') return null
  if (typeof schema.$ref === 'string') {
    return shape(components[schema.$ref.replace('#/components/schemas/', '')], components)
  }
  const out: Record<string, unknown> = {}
  if (schema.properties) {
    out.required = [...(schema.required ?? [])].sort()
    out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, shape(v, components)]))
    out.additionalProperties = schema.additionalProperties
  }
  if (schema.items) out.items = shape(schema.items, components)
  for (const key of ['oneOf', 'anyOf', 'allOf']) {
    if (schema[key]) out[key] = schema[key].map((s: unknown) => shape(s, components))
  }
  return out
}

/**
 * A strict JSON Schema 2020-12 validator for the document's schemas: an Ajv keyword of the
 * project (`decimal`, `omitEmpty`, …) leaking into the document is an "unknown keyword" here.
 */
function strictAjv(doc: Doc): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, discriminator: true, allErrors: true })
  addFormats(ajv)
  ajv.addKeyword('example')
  const extensions = new Set<string>()
  JSON.stringify(doc, (key, value) => {
    if (key.startsWith('x-')) extensions.add(key)
    return value
  })
  for (const keyword of extensions) ajv.addKeyword(keyword)
  ajv.addSchema({ $id: 'components', $defs: forAjv(doc.components.schemas) })
  return ajv
}

function compileIn(ajv: Ajv2020, schema: unknown) {
  return ajv.compile(forAjv(schema))
}

/**
 * The document's schemas as Ajv takes them: references into the `components` schema, and
 * discriminators without `mapping` (Ajv finds the branch by the tag's `const`; the Redocly lint
 * in `npm run lint:openapi` checks that each mapping names a real component).
 */
function forAjv(schema: unknown): any {
  return JSON.parse(
    JSON.stringify(schema, (key, value) => {
      if (key === 'discriminator' && value && typeof value === 'object') return { propertyName: value.propertyName }
      return value
    }).replaceAll('#/components/schemas/', 'components#/$defs/')
  )
}

/** The objects marked `x-omit-empty` in a schema, all the way down (through references to components). */
function omitEmptyObjects(schema: unknown, components: Record<string, unknown>, seen = new Set<unknown>()): Doc[] {
  if (schema === null || typeof schema !== 'object' || seen.has(schema)) return []
  seen.add(schema)
  const ref = (schema as Doc).$ref
  if (typeof ref === 'string') {
    return omitEmptyObjects(components[ref.replace('#/components/schemas/', '')], components, seen)
  }
  const found: Doc[] = (schema as Doc)['x-omit-empty'] === true ? [schema as Doc] : []
  for (const value of Object.values(schema)) found.push(...omitEmptyObjects(value, components, seen))
  return found
}

/** Every example in the document with the schema it illustrates: media types' and parameters' `example`, schemas' `examples`. */
function examplesOf(
  node: unknown,
  where: string,
  found: Array<{ where: string; schema: unknown; value: unknown }> = []
) {
  if (node === null || typeof node !== 'object') return found
  const object = node as Doc
  if (object.schema && typeof object.schema === 'object') {
    if ('example' in object) found.push({ where, schema: object.schema, value: object.example })
    for (const [name, example] of Object.entries((object.examples ?? {}) as Record<string, { value: unknown }>)) {
      found.push({ where: `${where} (${name})`, schema: object.schema, value: example.value })
    }
  } else if (Array.isArray(object.examples)) {
    for (const value of object.examples) found.push({ where, schema: object, value })
  }
  for (const [key, value] of Object.entries(object)) {
    if (key !== 'example' && key !== 'examples') examplesOf(value, `${where}/${key}`, found)
  }
  return found
}

/** A value as JSON text with every character outside printable ASCII escaped (a raw U+2028 would break a report's lines). */
const shown = (value: unknown) =>
  JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)

/** True when the server refused the value at `attr` (an error there or inside it). */
function refusedAt(res: LightMyRequestResponse, attr: string): boolean {
  if (res.statusCode !== 400) return false
  return (res.json().errors as Array<{ attr: string | null }>).some(
    (e) => e.attr === attr || e.attr?.startsWith(`${attr}.`)
  )
}

const accountDataBefore = JSON.stringify(AccountData)

t.test('the document is valid OpenAPI 3.1', async (t) => {
  const { doc } = await documented(t)
  t.equal(doc.openapi, '3.1.0')
  const result = await validate(structuredClone(doc) as never)
  t.ok(result.valid, result.valid ? 'valid' : compileErrors(result))
  t.same(result.warnings, [], 'no warnings')

  t.test('its schemas hold only JSON Schema and OpenAPI keywords (or x- extensions)', async (t) => {
    const ajv = strictAjv(doc)
    let compiled = 0
    for (const { path, method, op } of operations(doc)) {
      const schemas = [
        ...(op.parameters ?? []).map((p: Doc) => p.schema),
        ...Object.values(op.requestBody?.content ?? {}).map((m: any) => m.schema),
        ...Object.values(op.responses).flatMap((r: any) => Object.values(r.content ?? {}).map((m: any) => m.schema))
      ]
      for (const schema of schemas) {
        t.doesNotThrow(() => compileIn(ajv, schema), `${method} ${path}`)
        compiled++
      }
    }
    t.ok(compiled > 40, `${compiled} schemas compiled`)
    const text = JSON.stringify(doc)
    for (const keyword of ['decimal', 'omitEmpty', 'jsonValue', 'errorCodes']) {
      t.notMatch(text, new RegExp(`"${keyword}":`), `no bare ${keyword}`)
    }
    t.match(text, /"x-decimal":\{"integer":10,"scale":10\}/, 'decimals keep their bounds as an extension')
  })
})

t.test('every route of the app is in the document with its methods', async (t) => {
  const { doc, routes } = await documented(t)
  const paths = new Map(Object.entries(doc.paths as Record<string, Doc>).map(([p, item]) => [pathKey(p), item]))
  const seen: string[] = []
  for (const route of routes) {
    for (const method of [route.method].flat()) {
      if (undocumented(method, route.url)) {
        t.notOk(paths.get(pathKey(route.url))?.[method.toLowerCase()], `${method} ${route.url} is not listed`)
        continue
      }
      t.ok(paths.get(pathKey(route.url))?.[method.toLowerCase()], `${method} ${route.url}`)
      seen.push(`${method} ${pathKey(route.url)}`)
    }
  }
  t.equal(operations(doc).length, seen.length, 'and nothing else')
  for (const expected of [
    'POST /graphql',
    'GET /metrics',
    'GET /healthz',
    'GET /readyz',
    'GET /openapi.json',
    'POST /v1/data-import/validate-account',
    'POST /v1/data-import/account-import-process/process',
    'GET /v1/data-import/accounts/{supplier}/{external}',
    'GET /v1/data-import/pending-account-import-processes/{supplier}',
    'POST /v1/data-import/transactions/create',
    'POST /v1/data-import/payment-instruction/create'
  ]) {
    t.ok(seen.includes(expected), expected)
  }

  const ids = operations(doc).map(({ op }) => op.operationId)
  t.ok(
    ids.every((id) => typeof id === 'string' && id.length > 0),
    'every operation has an operationId'
  )
  t.equal(new Set(ids).size, ids.length, 'operationIds are unique')
  t.ok(
    operations(doc).every(({ op }) => typeof op.summary === 'string' && op.tags?.length === 1),
    'every operation has a summary and a tag'
  )
})

t.test('data-import operations: bearer token, shared error responses', async (t) => {
  const { doc, routes } = await documented(t)
  t.same(doc.components.securitySchemes.clientToken, {
    ...doc.components.securitySchemes.clientToken,
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT'
  })
  const errorBody = doc.components.schemas.ErrorBody
  t.same(errorBody.required, ['detail', 'code', 'errors'])
  t.same(doc.components.schemas.ErrorEntry.required, ['detail', 'code', 'attr'])
  t.same(doc.components.responses.TooManyRequests.headers['Retry-After'].schema, { type: 'integer', minimum: 1 })

  const dataImport = operations(doc).filter(({ path }) => path.startsWith('/v1/data-import/'))
  const served = routes
    .filter((r) => r.url.startsWith('/v1/data-import/'))
    .flatMap((r) => [r.method].flat())
    .filter((m) => m !== 'HEAD')
  t.equal(dataImport.length, served.length, 'every data-import route is documented')
  for (const { path, method, op } of dataImport) {
    t.same(op.security, [{ clientToken: [] }], `${method} ${path}: security`)
    const expected: Record<string, string> = {
      400: 'BadRequest',
      401: 'Unauthorized',
      403: 'Forbidden',
      404: 'NotFound',
      429: 'TooManyRequests',
      500: 'ServerError',
      ...(method === 'post' ? { 413: 'PayloadTooLarge', 415: 'UnsupportedMediaType' } : {})
    }
    for (const [status, name] of Object.entries(expected)) {
      t.same(op.responses[status], { $ref: `#/components/responses/${name}` }, `${method} ${path}: ${status}`)
      t.same(doc.components.responses[name].content['application/json'].schema, {
        $ref: '#/components/schemas/ErrorBody'
      })
    }
    const success = Object.keys(op.responses).filter((s) => s.startsWith('2'))
    t.ok(success.length > 0, `${method} ${path}: a success response`)
  }

  for (const { path, method, op } of operations(doc)) {
    const every: Record<string, string> = {
      405: 'MethodNotAllowed',
      408: 'RequestTimeout',
      431: 'RequestHeaderFieldsTooLarge',
      500: 'ServerError',
      503: 'ServiceUnavailable'
    }
    if (path.includes('{')) every[414] = 'UriTooLong'
    for (const [status, name] of Object.entries(every)) {
      t.same(op.responses[status], { $ref: `#/components/responses/${name}` }, `${method} ${path}: ${status}`)
    }
  }
  t.same(doc.components.responses.MethodNotAllowed.headers.Allow.schema, { type: 'string' }, '405 carries Allow')

  const metrics = doc.paths['/metrics'].get
  t.same(metrics.security, [{ operatorToken: [] }, { metricsToken: [] }], '/metrics: operator token or METRICS_TOKEN')
  t.ok(metrics.responses['200'].content['text/plain; version=0.0.4; charset=utf-8'], '/metrics: Prometheus text')
  const graphql = doc.paths['/graphql'].post
  t.same(graphql.security, [{}, { operatorToken: [] }, { clientToken: [] }], '/graphql: obtainToken needs no token')
  t.match(graphql.description, /obtainToken/)
  t.ok(graphql.requestBody.content['application/json'].schema.anyOf, 'one operation or a batch')
  t.same(doc.paths['/healthz'].get.security, [], 'health needs no token, and says so')
})

t.test('request bodies are the schemas the routes validate with', async (t) => {
  const { doc, routes } = await documented(t)
  // The document names each path without its trailing slash (both are served), parameters as `{name}`.
  const bodyOf = (path: string) =>
    doc.paths[path.replace(/\/$/, '').replace(/:(\w+)/g, '{$1}')].post.requestBody.content['application/json'].schema
  const account = bodyOf('/v1/data-import/validate-account/')
  t.same(
    account,
    bodyOf('/v1/data-import/account-import-process/create-or-update/'),
    'validate and stage take the same body'
  )
  for (const field of [
    'external_account_number',
    'import_supplier',
    'account_type',
    'billing_address',
    'ledgers',
    'supply_addresses',
    'transfer_balance'
  ]) {
    t.ok(account.required.includes(field), `account: ${field} is required`)
  }
  t.equal(account.additionalProperties, false, 'unknown fields are refused')
  t.equal(account.properties.transfer_balance['x-decimal'].integer, 10)
  t.match(account.properties.transfer_balance.description, /Exact decimal/)
  const create = bodyOf('/v1/data-import/account-import-process/process/')
  t.same([...create.required].sort(), ['external_account_number', 'import_supplier_code', 'operations_team_name'])
  t.same(
    create.properties.dry_run,
    { default: false, anyOf: [{ type: 'boolean' }, { $ref: '#/components/schemas/EmptyValue' }] },
    'a boolean, or empty'
  )
  t.same(shape(create, doc.components.schemas), shape(toOpenApiSchema(CreateRequest, { request: true })))

  let compared = 0
  for (const route of routes) {
    // A part of an import job is NDJSON text, read as a stream: documented, not a JSON body.
    if (!route.schema?.body || route.url === '/graphql' || route.method === 'PUT') continue
    t.same(
      shape(bodyOf(route.url), doc.components.schemas),
      shape(toOpenApiSchema(route.schema.body, { request: true })),
      `${route.url}: same fields as the route's schema`
    )
    compared++
  }
  t.equal(
    compared,
    Object.keys(REQUEST_EXAMPLES).length + 1,
    'every data-import POST compared (the payment instruction too)'
  )
  const part = doc.paths['/v1/data-import/import-jobs/{id}/parts/{part}'].put.requestBody
  t.same(Object.keys(part.content), ['application/x-ndjson'], 'a part is documented as NDJSON')
  t.equal(part.content['application/x-ndjson'].schema.type, 'string')
})

t.test('the document describes what the service really accepts and answers', async (t) => {
  const { doc, client } = await documented(t)
  const ajv = strictAjv(doc)
  const op = doc.paths['/v1/data-import/validate-account'].post
  const request = compileIn(ajv, op.requestBody.content['application/json'].schema)
  const answer = compileIn(ajv, op.responses['200'].content['application/json'].schema)
  const errorBody = compileIn(ajv, { $ref: '#/components/schemas/ErrorBody' })

  const ok = await client.validate(exampleAccount())
  t.equal(ok.statusCode, 200)
  t.ok(answer(ok.json()), 'the 200 answer fits its schema: ' + JSON.stringify(answer.errors))
  t.ok(request(ok.json()), 'the normalised account is a valid request body: ' + JSON.stringify(request.errors))
  t.notOk(request({ ...ok.json(), surname: 'x' }), 'an unknown field is not')

  const bad = await client.validate(exampleAccount({ transfer_balance: 'twelve' }))
  t.equal(bad.statusCode, 400)
  t.ok(errorBody(bad.json()), 'a 400 fits ErrorBody')
  t.notOk(request(bad.json()), 'and so does not the account schema')
})

t.test('generating the document changes no route schema', async (t) => {
  const { app } = await documented(t)
  t.equal(JSON.stringify(AccountData), accountDataBefore, 'AccountData still carries its Ajv keywords')
  t.match(accountDataBefore, /"decimal":\{/)
  t.same(
    (await app.inject({ url: '/docs/json' })).json(),
    (await app.inject({ url: '/openapi.json' })).json(),
    'the page reads the same document'
  )
})

t.test('a newcomer can read it: how to authenticate, a real example of every body, named shapes', async (t) => {
  const { doc } = await documented(t, { PAYMENT_VENDORS: 'STRIPE=http://127.0.0.1:9' })
  t.match(
    doc.info.description,
    /How to authenticate[\s\S]*obtainToken[\s\S]*Authorization: Bearer/,
    'the token steps are in the introduction'
  )
  t.notMatch(JSON.stringify(doc), /§/, 'no references to documents the reader does not have')
  t.same(doc.servers, [{ url: '/', description: 'This service' }], '"Try it out" calls this service')

  let bodies = 0
  for (const { path, method, op } of operations(doc)) {
    const media = op.requestBody?.content?.['application/json']
    if (!media || path === '/graphql') continue
    bodies++
    t.ok(media.example, `${method} ${path}: an example body`)
    const expected =
      path === '/v1/data-import/payment-instruction/create'
        ? paymentInstructionExample(['STRIPE'])
        : REQUEST_EXAMPLES[path]
    t.same(media.example, expected, `${method} ${path}: the project's example`)
  }
  t.equal(
    bodies,
    Object.keys(REQUEST_EXAMPLES).length + 1,
    "every data-import POST has one (the payment instruction's for the configured vendor), and every example is used"
  )
  const accountExample =
    doc.paths['/v1/data-import/validate-account'].post.requestBody.content['application/json'].example
  t.equal(
    accountExample.external_account_number,
    EXAMPLE_ACCOUNT.external_account_number,
    'the account example is the example account'
  )

  // Each post-import union branch is a named component, chosen by its tag.
  const named = Object.keys(doc.components.schemas)
  for (const name of ['ChargeTransaction', 'PaymentTransaction', 'ItemBasedDocument', 'PeriodBasedDocument']) {
    t.ok(named.includes(name), `${name} is a named schema`)
  }
  const withDiscriminator = JSON.stringify(doc).match(/"discriminator":\{"propertyName":"[a-z_]+","mapping":\{/g) ?? []
  t.ok(withDiscriminator.length > 0, 'unions say which field picks the branch')
})

t.test("its patterns are portable: other languages' regular expression engines take them", async (t) => {
  const { doc } = await documented(t)
  const patterns = new Set<string>()
  JSON.stringify(doc, (key, value) => {
    if (key === 'pattern' && typeof value === 'string') patterns.add(value)
    return value
  })
  t.ok(patterns.size >= 3, `${patterns.size} distinct patterns`)
  for (const pattern of patterns) {
    t.notMatch(
      pattern,
      /\[\^\]|\\p\{|\(\?<[A-Za-z]/,
      `${pattern}: no JavaScript-only syntax ([^], \\p{…}, named groups)`
    )
    t.doesNotThrow(() => new RegExp(pattern), `${pattern}: compiles without the u flag`)
  }
  const python = spawnSync('python3', ['-c', 'import json, re, sys\nfor p in json.load(sys.stdin): re.compile(p)'], {
    input: JSON.stringify([...patterns]),
    encoding: 'utf8'
  })
  if (python.error) {
    t.skip(`python3 is not installed here, so Python's re was not tried (${python.error.message})`, () => {})
  } else t.equal(python.status, 0, `Python's re compiles every pattern ${python.stderr}`)
})

t.test(
  'an optional field sent as null or blank is omitted: the document accepts both wherever the server does',
  async (t) => {
    const { doc } = await documented(t)
    const ajv = strictAjv(doc)
    const problems: string[] = []
    let optional = 0
    for (const { path, method, op } of operations(doc)) {
      const body = op.requestBody?.content?.['application/json']?.schema
      if (!body) continue
      for (const object of omitEmptyObjects(body, doc.components.schemas)) {
        for (const [name, property] of Object.entries(object.properties as Record<string, unknown>)) {
          const validate = compileIn(ajv, property)
          if ((object.required ?? []).includes(name)) {
            // A required field sent as null is refused (`null`), whatever its type.
            if (validate(null)) problems.push(`${method} ${path}: required ${name} accepts null`)
            continue
          }
          optional++
          for (const value of [null, '', ' ', '\t\r\n\u00a0\u2028\u3000\ufeff']) {
            if (!validate(value)) problems.push(`${method} ${path}: optional ${name} refuses ${shown(value)}`)
          }
        }
      }
    }
    t.same(problems, [], 'every optional field takes null and blank strings; no required one takes null')
    t.ok(optional > 50, `${optional} optional fields checked`)

    // Blank is what the server trims to nothing (String.prototype.trim), character for character.
    const empty = doc.components.schemas.EmptyValue
    t.ok(empty, 'one named schema says what counts as empty')
    const blank = new RegExp(empty?.pattern ?? '(?!)', 'u')
    const differ: string[] = []
    for (let code = 0; code <= 0xffff; code++) {
      const c = String.fromCharCode(code)
      if (blank.test(c.repeat(2)) !== (c.trim() === '')) differ.push(code.toString(16))
    }
    t.same(differ, [], 'the blank pattern matches exactly the characters trim() removes')
  }
)

t.test('the fields a fuzzer found: the document accepts exactly what the server accepts', async (t) => {
  const { doc, app, tenant, ref } = await documentedWithAccount(t)
  const ajv = strictAjv(doc)
  const today = daysFromToday(0)
  const taxItem = { amount: '0.05', tax_type: 'VAT', value_taxed: '1.00', rate: '0.05', unit_type: 'PROPORTION' }
  const blanks = [null, '', '  ', '\t\n', '\u00a0', '\ufeff']
  const cases: Array<{ path: string; attr: string; body: (value: unknown, i: number) => unknown; values: unknown[] }> =
    [
      {
        path: '/v1/data-import/notes/create',
        attr: 'notes.0.unpin_at',
        body: (value, i) => ({ ...ref, notes: [{ body: `Pinned ${i}.`, is_pinned: true, unpin_at: value }] }),
        values: [...blanks, '\u001c', '2999-01-01T00:00:00Z', 'soon', 5]
      },
      {
        path: '/v1/data-import/historical-statements/create',
        attr: 'statements.0.statement_path',
        body: (value, i) => ({
          ...ref,
          statements: [
            {
              statement_id: `ST-F-${i}`,
              bill_period_from_date: '2025-01-01',
              bill_period_to_date: '2025-01-31',
              issued_date: '2025-02-03',
              gross_amount: '53.50',
              statement_path: value
            }
          ]
        }),
        values: [...blanks, 'statements/2025/01.pdf', 'x'.repeat(1025), 5, []]
      },
      {
        path: '/v1/data-import/transactions/create',
        attr: 'transactions.0.tax_items',
        body: (value, i) => ({
          ...ref,
          transactions: [
            { transaction_id: `TX-F-${i}`, transaction_date: today, amount: '1.00', type: 'CHARGE', tax_items: value }
          ]
        }),
        values: [...blanks, [], [taxItem], 'x', 5, [{}], {}]
      },
      {
        path: '/v1/data-import/batches',
        attr: 'dry_run',
        body: (value) => ({
          import_supplier: ref.import_supplier,
          operations_team_name: TEAM,
          dry_run: value,
          accounts: [{ account: exampleAccount() }]
        }),
        values: [...blanks, true, false, 'true', 0]
      }
    ]
  for (const { path, attr, body, values } of cases) {
    const validate = compileIn(ajv, doc.paths[path].post.requestBody.content['application/json'].schema)
    for (const [i, value] of values.entries()) {
      const payload = body(value, i)
      const documentAccepts = validate(payload)
      const res = await app.inject({
        method: 'POST',
        url: `${path}/`,
        headers: { authorization: `Token ${tenant.token}` },
        payload: payload as object
      })
      const serverAccepts = !refusedAt(res, attr)
      t.equal(
        documentAccepts,
        serverAccepts,
        `${attr}: ${shown(value)}: the document ${documentAccepts ? 'accepts' : 'refuses'} it, the server ${serverAccepts ? `accepts it (${res.statusCode})` : 'refuses it'}`
      )
    }
  }
})

t.test('unpin_at only on a pinned note: the document says so, and refuses what the server refuses', async (t) => {
  const { doc, app, tenant, ref } = await documentedWithAccount(t)
  const op = doc.paths['/v1/data-import/notes/create'].post
  const schema = op.requestBody.content['application/json'].schema
  const note = schema.properties.notes.items
  t.match(
    note.properties.unpin_at.description,
    /is_pinned[\s\S]*unexpected_field/,
    'the field says it needs is_pinned: true'
  )
  t.match(op.description, /unpin_at[\s\S]*unexpected_field/, 'the operation names the code')
  const validate = compileIn(strictAjv(doc), schema)
  const at = '2999-01-01T00:00:00Z'
  const notes: Array<Record<string, unknown>> = [
    { unpin_at: at },
    { is_pinned: false, unpin_at: at },
    { is_pinned: null, unpin_at: at },
    { is_pinned: ' ', unpin_at: at },
    { is_pinned: true, unpin_at: at },
    { is_pinned: false, unpin_at: null },
    { is_pinned: false, unpin_at: ' ' },
    { is_pinned: false },
    { is_pinned: true }
  ]
  for (const [i, fields] of notes.entries()) {
    const payload = { ...ref, notes: [{ body: `Note ${i}.`, ...fields }] }
    const documentAccepts = validate(payload)
    const res = await app.inject({
      method: 'POST',
      url: '/v1/data-import/notes/create/',
      headers: { authorization: `Token ${tenant.token}` },
      payload
    })
    const serverAccepts = !refusedAt(res, 'notes.0.unpin_at') && !refusedAt(res, 'notes.0.is_pinned')
    t.equal(
      documentAccepts,
      serverAccepts,
      `${JSON.stringify(fields)}: the document ${documentAccepts ? 'accepts' : 'refuses'} it, the server ${serverAccepts ? `accepts it (${res.statusCode})` : 'refuses it'}`
    )
  }
})

t.test('every example in the document is valid against the schema it illustrates', async (t) => {
  // A vendor other than the one the examples were first written with: the example must follow the configuration.
  for (const env of [{}, { PAYMENT_VENDORS: 'STRIPE=http://127.0.0.1:9' }] as Array<Record<string, string>>) {
    t.test(`PAYMENT_VENDORS=${env.PAYMENT_VENDORS ?? ''}`, async (t) => {
      const { doc } = await documented(t, env)
      const ajv = strictAjv(doc)
      const examples = examplesOf(doc, '#')
      for (const { where, schema, value } of examples) {
        const validate = compileIn(ajv, schema)
        t.ok(validate(value), validate.errors ? `${where}: ${JSON.stringify(validate.errors)}` : where)
      }
      t.ok(examples.length > Object.keys(REQUEST_EXAMPLES).length, `${examples.length} examples checked`)
      const payment =
        doc.paths['/v1/data-import/payment-instruction/create'].post.requestBody.content['application/json']
      if (env.PAYMENT_VENDORS) {
        t.equal(payment.example?.vendor, 'STRIPE', 'the payment instruction names the configured vendor')
      } else t.notOk('example' in payment, 'no vendor configured, no valid payment instruction: none is shown')
    })
  }
})

t.test('webhooks: every event type, its body schema and the signature headers', async (t) => {
  const { doc } = await documented(t)
  const webhooks = doc.webhooks as Record<string, Doc>
  t.same(Object.keys(webhooks).sort(), [...WEBHOOK_EVENT_TYPES].sort(), 'one entry per event type')
  const ajv = strictAjv(doc)
  for (const [type, item] of Object.entries(webhooks)) {
    const op = item.post
    t.same(
      op.parameters.map((p: Doc) => `${p.in}:${p.name}`),
      ['header:webhook-id', 'header:webhook-timestamp', 'header:webhook-signature'],
      `${type}: the Standard Webhooks headers`
    )
    const schema = op.requestBody.content['application/json'].schema
    t.equal(schema.properties.type.const, type, `${type}: its body's type`)
    t.doesNotThrow(() => compileIn(ajv, schema), `${type}: the body schema compiles`)
  }
})

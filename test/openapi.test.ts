import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { validate, compileErrors } from '@readme/openapi-parser'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { FastifyInstance, LightMyRequestResponse, RouteOptions } from 'fastify'
import { AccountData, CreateRequest } from '../schemas/account.js'
import { toOpenApiSchema } from '../src/plugins/openapi.js'
import { compileBody } from '../src/validation.js'
import { codes, daysFromToday, exampleAccount, importedSetup, importSetup, TEAM } from './helpers/accounts.js'
import { EXAMPLE_ACCOUNT, paymentInstructionExample, REQUEST_EXAMPLES } from '../schemas/examples.js'
import { WEBHOOK_EVENT_TYPES } from '../schemas/webhooks.js'
import { isWellFormed, TEXT_PATTERN, TRIMMED_PATTERN } from '../schemas/text.js'

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

/** Keywords whose value is a map of names to schemas: a child named `example` there is a schema, not an example. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'schemas'])

interface Example {
  where: string
  schema: unknown
  value: unknown
  /** A media type's, parameter's or header's example (its `schema` beside it), or a schema's own. */
  of: 'media' | 'parameter' | 'header' | 'schema'
  mediaType?: string
}

/**
 * Every example in the document with the schema it illustrates, wherever it is: `example` and
 * `examples` of media types (request bodies and responses), parameters and headers, and
 * `examples` (or `example`) of schemas. Every key of those names is taken, so an example put
 * somewhere new is checked too (an Example Object without a `value`, an external one, fails).
 */
function examplesOf(node: unknown, where: string, found: Example[] = [], schemaMap = false): Example[] {
  if (node === null || typeof node !== 'object') return found
  const object = node as Doc
  const children = Object.entries(object)
  if (schemaMap) {
    for (const [name, child] of children) examplesOf(child, `${where}/${name}`, found)
    return found
  }
  const beside = object.schema && typeof object.schema === 'object' && !Array.isArray(object.schema)
  const of: Example['of'] = !beside
    ? 'schema'
    : typeof object.in === 'string'
      ? 'parameter'
      : /\/headers\/[^/]+$/.test(where)
        ? 'header'
        : 'media'
  const mediaType = of === 'media' ? where.slice(where.lastIndexOf('/content/') + '/content/'.length) : undefined
  const schema = beside ? object.schema : object
  if ('example' in object) found.push({ where, schema, value: object.example, of, ...(mediaType ? { mediaType } : {}) })
  if (Array.isArray(object.examples)) {
    for (const [i, value] of object.examples.entries()) found.push({ where: `${where} (${i})`, schema, value, of })
  } else if (object.examples && typeof object.examples === 'object') {
    for (const [name, example] of Object.entries(object.examples as Record<string, Doc>)) {
      found.push({ where: `${where} (${name})`, schema, value: example.value, of, ...(mediaType ? { mediaType } : {}) })
      if (!('value' in example)) {
        found.push({ where: `${where} (${name}): no value to check`, schema: false, value: 0, of })
      }
    }
  }
  for (const [key, value] of children) {
    if (key !== 'example' && key !== 'examples') examplesOf(value, `${where}/${key}`, found, SCHEMA_MAPS.has(key))
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
  t.match(
    doc.info.license,
    { name: /UNLICENSED/, identifier: 'LicenseRef-Proprietary' },
    'info.license: proprietary, no licence granted (the repository has none)'
  )
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
    // A body of several media types: its JSON one.
    const body = route.schema.body as { content?: Record<string, { schema: unknown }> }
    t.same(
      shape(bodyOf(route.url), doc.components.schemas),
      shape(toOpenApiSchema(body.content?.['application/json']?.schema ?? body, { request: true })),
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

/** Samples that tell the engines apart: blanks, NUL, lone surrogates, supplementary characters, decimals. */
const PATTERN_SAMPLES = [
  '',
  'a',
  ' a',
  'a ',
  ' ',
  '\t\u00a0\u2028\u3000\ufeff',
  '\u001c',
  '\u0085',
  'a\u0000b',
  '\u0000',
  'a\ud800',
  '\udfff',
  '\ud83d\ude80',
  ' \ud83d\ude80 ',
  'Zoë 中文',
  '12.50',
  '-0.5',
  '0',
  '01',
  '1.',
  '.5',
  '1e3',
  '+1',
  '12345678901',
  '1.50000000000000'
]

t.test("its patterns are portable: JavaScript's, Python's and Rust's engines take them alike", async (t) => {
  const { doc } = await documented(t)
  const patterns = new Set<string>()
  JSON.stringify(doc, (key, value) => {
    if (key === 'pattern' && typeof value === 'string') patterns.add(value)
    if (key === 'patternProperties' && value && typeof value === 'object') {
      Object.keys(value).forEach((p) => patterns.add(p))
    }
    return value
  })
  t.ok(patterns.size >= 5, `${patterns.size} distinct patterns`)
  for (const pattern of patterns) {
    t.notMatch(
      pattern,
      /\[\^\]|\\p\{|\(\?<[A-Za-z]/,
      `${pattern}: no JavaScript-only syntax ([^], \\p{…}, named groups)`
    )
    // Rust's `regex` takes no lookaround; `\d`, `\w`, `\s` and `\b` mean other characters in Python and Rust.
    t.notMatch(pattern, /\(\?<?[=!]/, `${pattern}: no lookaround`)
    t.notMatch(pattern, /(^|[^\\])(\\\\)*\\[dDwWsSbB]/, `${pattern}: no class escapes whose meaning differs`)
    // Rust's engines refuse a surrogate code point anywhere (its strings cannot hold one).
    t.notMatch(pattern, /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/, `${pattern}: no surrogate code point`)
    for (const flags of ['', 'u', 'v']) {
      t.doesNotThrow(() => new RegExp(pattern, flags), `${pattern}: compiles in JavaScript with flags '${flags}'`)
    }
  }
  // What each engine says of each sample (strings ending in a newline left out: Python's `$` also matches before one).
  const javascript = (samples: string[]) => [...patterns].map((p) => samples.map((s) => new RegExp(p, 'u').test(s)))
  // Python's re, and Rust's engines through jsonschema-rs (the Rust validator's Python bindings):
  // fancy-regex (its default) and regex. Strings with a lone surrogate are left out for Rust, whose
  // strings cannot hold one.
  const withoutSurrogates = PATTERN_SAMPLES.filter((s) => isWellFormed(s))
  const run = spawnSync(
    'python3',
    [
      '-c',
      'import json, re, sys\n' +
        'patterns, samples, well_formed = json.load(sys.stdin)\n' +
        'out = {"python": [[bool(re.search(p, s)) for s in samples] for p in [re.compile(p) for p in patterns]]}\n' +
        'try:\n  import jsonschema_rs as j\nexcept ImportError:\n  j = None\n' +
        'if j:\n' +
        '  for name, options in (("fancy-regex", j.FancyRegexOptions()), ("regex", j.RegexOptions())):\n' +
        '    validators = [j.validator_for({"type": "string", "pattern": p}, pattern_options=options) for p in patterns]\n' +
        '    out[name] = [[v.is_valid(s) for s in well_formed] for v in validators]\n' +
        'print(json.dumps(out))'
    ],
    { input: JSON.stringify([[...patterns], PATTERN_SAMPLES, withoutSurrogates]), encoding: 'utf8' }
  )
  if (run.error) {
    t.skip(`python3 is not installed here, so neither Python's re nor Rust's engines were tried`, () => {})
  } else {
    t.equal(run.status, 0, `Python's re, and Rust's engines where installed, compile every pattern ${run.stderr}`)
    const answers = (run.status === 0 ? JSON.parse(run.stdout) : {}) as Record<string, boolean[][]>
    t.same(answers.python, javascript(PATTERN_SAMPLES), "Python's re matches what JavaScript's (u flag) does")
    if (answers.regex === undefined) {
      t.skip(
        "jsonschema-rs is not installed for python3 (pip install jsonschema-rs): Rust's engines not tried",
        () => {}
      )
    } else {
      for (const engine of ['fancy-regex', 'regex']) {
        t.same(answers[engine], javascript(withoutSurrogates), `Rust's ${engine} matches what JavaScript's does`)
      }
    }
  }
  // Text patterns still refuse U+0000 and a lone surrogate, and take a supplementary character.
  for (const pattern of [TEXT_PATTERN, TRIMMED_PATTERN]) {
    t.ok(patterns.has(pattern), `${pattern.slice(0, 20)}…: in the document`)
    const re = new RegExp(pattern, 'u')
    t.same(
      ['a\u0000b', 'a\ud800', '\udfffa', 'a\ud83d\ude80'].map((s) => re.test(s)),
      [false, false, false, true]
    )
  }
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
      const at = (pattern: RegExp, of: Example['of']) =>
        examples.filter((e) => e.of === of && pattern.test(e.where)).length
      t.ok(at(/\/requestBody\//, 'media') > Object.keys(REQUEST_EXAMPLES).length, 'request bodies: examples checked')
      t.ok(at(/\/parameters\//, 'parameter') >= 3, 'parameters: examples checked')
      t.ok(at(/\/responses\//, 'media') >= 1, 'responses: examples checked')
      t.ok(at(/^#\/components\/schemas\//, 'schema') >= 1, 'named schemas: examples checked')

      // NDJSON examples are text: each line is a batch entry whose account is a valid account.
      const account = compileIn(
        ajv,
        doc.paths['/v1/data-import/validate-account'].post.requestBody.content['application/json'].schema
      )
      const ndjson = examples.filter((e) => e.mediaType === 'application/x-ndjson')
      t.ok(ndjson.length >= 2, 'the NDJSON bodies (a part, the one-call create) have examples')
      for (const { where, value } of ndjson) {
        t.match(value, /\n$/, `${where}: whole lines`)
        for (const line of String(value).split('\n').slice(0, -1)) {
          const entry = JSON.parse(line) as { account: unknown }
          t.ok(account(entry.account), `${where}: the line's account is valid ${JSON.stringify(account.errors)}`)
        }
      }
      const payment =
        doc.paths['/v1/data-import/payment-instruction/create'].post.requestBody.content['application/json']
      if (env.PAYMENT_VENDORS) {
        t.equal(payment.example?.vendor, 'STRIPE', 'the payment instruction names the configured vendor')
      } else t.notOk('example' in payment, 'no vendor configured, no valid payment instruction: none is shown')
    })
  }
})

/** Every schema marked `x-decimal` in the document, with where it is. */
function decimalSchemas(node: unknown, where: string, found: Array<{ where: string; schema: Doc }> = []) {
  if (node === null || typeof node !== 'object') return found
  if ((node as Doc)['x-decimal']) found.push({ where, schema: node as Doc })
  for (const [key, value] of Object.entries(node)) decimalSchemas(value, `${where}/${key}`, found)
  return found
}

t.test('decimal bounds are in standard keywords: the document takes only what the server takes', async (t) => {
  const { doc } = await documented(t)
  const ajv = strictAjv(doc)
  const found = decimalSchemas(doc, '#')
  t.ok(found.length > 20, `${found.length} decimals in the document`)
  const kinds = new Map<string, Doc>()
  for (const { schema } of found) kinds.set(JSON.stringify([schema['x-decimal'], schema.type]), schema)
  t.ok(kinds.size >= 4, `${kinds.size} kinds of decimal (bounds, sign, type)`)
  let checked = 0
  for (const schema of kinds.values()) {
    const { integer, scale, positive } = schema['x-decimal'] as { integer: number; scale: number; positive?: boolean }
    const takesNumbers = [schema.type].flat().includes('integer')
    const label = `${integer} + ${scale}${positive ? ', positive' : ''}${takesNumbers ? '' : ', strings only'}`
    const documentTakes = compileIn(ajv, schema)
    // The server's own check: the same keyword its routes validate with.
    const serverTakes = compileBody({
      type: takesNumbers ? ['string', 'number'] : 'string',
      decimal: schema['x-decimal']
    })
    t.ok(typeof schema.pattern === 'string', `${label}: a pattern for its string form`)
    if (takesNumbers) {
      t.equal(schema.exclusiveMaximum, 10 ** integer, `${label}: its range as JSON numbers`)
      t.equal(schema.exclusiveMinimum, positive ? 0 : -(10 ** integer))
    }
    const nines = '9'.repeat(integer)
    const places = '1'.repeat(scale)
    const strings = [
      '0',
      '-0',
      '1',
      '-1',
      '0.5',
      '-0.5',
      nines,
      `-${nines}`,
      `1${nines}`,
      `-1${nines}`,
      `${nines}.${places}`,
      `0.${places}`,
      `0.${places}1`,
      `0.${places}000`,
      `0.${'0'.repeat(scale - 1)}1`,
      `0.${'0'.repeat(scale)}1`,
      `0.${'0'.repeat(scale)}`,
      `1.${'0'.repeat(scale + 5)}`,
      '01',
      '1.',
      '.5',
      '+1',
      '1e3',
      ' 1',
      '1 ',
      '',
      ' ',
      '-',
      'x',
      '12.50',
      '-40.50'
    ]
    const numbers = [
      0,
      -0,
      1,
      -1,
      0.5,
      -0.5,
      53.24,
      0.1 + 0.2,
      1e-7,
      10 ** integer - 1,
      -(10 ** integer - 1),
      10 ** integer,
      -(10 ** integer),
      10 ** 15,
      999999999999999,
      1234567890.12345,
      1.5e300
    ]
    for (const value of [...strings, ...numbers]) {
      const documented = documentTakes(value)
      const served = serverTakes(value)
      if (typeof value === 'string') {
        t.equal(
          documented,
          served,
          `${label}: ${shown(value)}: the document ${documented ? 'takes' : 'refuses'} it, so does the server`
        )
      } else if (documented) {
        t.ok(served, `${label}: ${value}: the document takes it, so the server must`)
      }
      checked++
    }
    // Random decimal strings around the bounds: the pattern and the server agree on every one.
    let seed = integer * 31 + scale
    const random = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
      return seed / 2 ** 32
    }
    const digits = (n: number) => Array.from({ length: n }, () => String(Math.floor(random() * 10))).join('')
    const differ: string[] = []
    for (let i = 0; i < 2000; i++) {
      const whole =
        random() < 0.2 ? '0' : String(1 + Math.floor(random() * 9)) + digits(Math.floor(random() * (integer + 2)))
      const fraction =
        random() < 0.3
          ? ''
          : '.' + digits(1 + Math.floor(random() * (scale + 3))) + '0'.repeat(Math.floor(random() * 3))
      const text = (random() < 0.3 ? '-' : '') + whole + fraction
      if (documentTakes(text) !== serverTakes(text)) differ.push(text)
    }
    t.same(differ, [], `${label}: 2000 random decimal strings, the same answer from both`)
  }
  t.ok(checked > 100, `${checked} values checked`)
  // A generated client reads the bounds from standard keywords, not from the extension alone.
  const balance =
    doc.paths['/v1/data-import/validate-account'].post.requestBody.content['application/json'].schema.properties
      .transfer_balance
  t.match(balance, { type: ['string', 'integer'], exclusiveMaximum: 1e10, exclusiveMinimum: -1e10, pattern: /^\^/ })
})

t.test('a note has a body or document paths: the schema says so, as the server does', async (t) => {
  const { doc, app, tenant, ref } = await documentedWithAccount(t)
  const schema = doc.paths['/v1/data-import/notes/create'].post.requestBody.content['application/json'].schema
  const note = schema.properties.notes.items
  t.ok(Array.isArray(note.anyOf), 'a machine-readable rule (anyOf)')
  t.match(note.description, /note_body_or_document_path_not_found/, 'and its code in the description')
  const validate = compileIn(strictAjv(doc), schema)
  const paths = [{ document_path: 'letters/welcome.pdf' }]
  const notes: Array<Record<string, unknown>> = [
    {},
    { body: null },
    { body: '' },
    { body: ' \t' },
    { document_paths: null },
    { document_paths: '' },
    { body: null, document_paths: ' ' },
    { is_pinned: true },
    { body: 'A note.' },
    { document_paths: paths },
    { body: ' ', document_paths: paths },
    { body: 'A note.', document_paths: null },
    { body: 'A note.', document_paths: paths }
  ]
  for (const [i, fields] of notes.entries()) {
    const payload = { ...ref, notes: [{ ...fields, ...(fields.body === 'A note.' ? { body: `A note ${i}.` } : {}) }] }
    const documentAccepts = validate(payload)
    const res = await app.inject({
      method: 'POST',
      url: '/v1/data-import/notes/create/',
      headers: { authorization: `Token ${tenant.token}` },
      payload
    })
    const serverAccepts = !refusedAt(res, 'notes.0')
    t.equal(
      documentAccepts,
      serverAccepts,
      `${shown(fields)}: the document ${documentAccepts ? 'accepts' : 'refuses'} it, the server ${serverAccepts ? `accepts it (${res.statusCode})` : `refuses it (${JSON.stringify(codes(res))})`}`
    )
    if (!serverAccepts && Object.keys(fields).every((k) => k !== 'document_paths' || !Array.isArray(fields[k]))) {
      t.same(
        codes(res),
        [['note_body_or_document_path_not_found', 'notes.0']],
        `${shown(fields)}: the code and attr as before`
      )
    }
  }
})

t.test('creating an import job: a JSON body or the one-call NDJSON form, each as the server takes it', async (t) => {
  const { doc, app, tenant } = await documented(t, { IMPORT_JOB_WORKERS: '0' })
  const op = doc.paths['/v1/data-import/import-jobs'].post
  t.same(Object.keys(op.requestBody.content).sort(), ['application/json', 'application/x-ndjson'], 'both bodies')
  const ndjson = op.requestBody.content['application/x-ndjson']
  t.equal(ndjson.schema.type, 'string')
  t.match(ndjson.schema.description, /one-call/)
  t.match(op.responses['201'], { description: /JSON body/ })
  t.match(op.responses['202'], { description: /NDJSON body/ })
  const parameters = op.parameters as Doc[]
  t.same(parameters.map((p) => `${p.in}:${p.name}`).sort(), [
    'query:dry_run',
    'query:import_supplier',
    'query:not_after',
    'query:not_before',
    'query:operations_team_name'
  ])
  for (const parameter of parameters) {
    // OpenAPI cannot tie a parameter to one media type of the body: each says which it belongs to.
    t.equal(parameter.required, false, `${parameter.name}: not required (a JSON body refuses it)`)
    t.match(parameter.description, /one-call form only[\s\S]*unexpected_field/, `${parameter.name}: says so`)
  }
  const headers = { authorization: `Bearer ${tenant.token}` }
  const query = new URLSearchParams(parameters.map((p): [string, string] => [p.name, String(p.example)])).toString()

  // The document's own examples: the JSON body alone, and the NDJSON body with the parameters.
  const json = await app.inject({
    method: 'POST',
    url: '/v1/data-import/import-jobs/',
    headers,
    payload: op.requestBody.content['application/json'].example
  })
  t.equal(json.statusCode, 201, json.body)
  const oneCall = await app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/?${query}`,
    headers: { ...headers, 'content-type': 'application/x-ndjson' },
    payload: ndjson.example
  })
  t.equal(oneCall.statusCode, 202, oneCall.body)
  // Both at once are ambiguous: refused, as each parameter's description says.
  const both = await app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/?${query}`,
    headers,
    payload: op.requestBody.content['application/json'].example
  })
  t.equal(both.statusCode, 400)
  t.same(
    codes(both),
    parameters.map((p) => ['unexpected_field', p.name]).sort((a, b) => a[1]!.localeCompare(b[1]!)),
    'each parameter refused at its name'
  )
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

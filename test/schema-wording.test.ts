import t from 'tap'
import type { LightMyRequestResponse, RouteOptions } from 'fastify'
import { exampleAccount, importedSetup, TEAM } from './helpers/accounts.js'
import { postImportBodies, UNREACHABLE_VENDOR } from './helpers/security.js'

/**
 * No error detail a person reads is Ajv's own wording ("must NOT be valid", "must match pattern
 * ...", "must have required property 'x'"): every schema keyword of every route is provoked, and
 * each answer's details are checked. The routes and their schemas come from the app itself (its
 * `onRoute` hook), so a new route or a new keyword is tried without editing this file; a keyword
 * this file cannot provoke fails the test until it is taught to.
 */

/** Ajv's default messages (ajv/dist/vocabularies), as they would read in a detail. */
const AJV_WORDING =
  /^must |must NOT (be|have)|must match|must be equal to|must have (required )?property|must be [<>]=? |must be (string|number|integer|boolean|object|array|null)\b|must be multiple of|must contain at (least|most)|must pass "|boolean schema is false|property name must be valid|tag "[^"]*" must be|value of tag/

/** Keywords that only describe, or that our validator acts on without refusing anything. */
const NOT_REFUSING = new Set([
  '$id',
  '$schema',
  'title',
  'description',
  'default',
  'examples',
  'example',
  'readOnly',
  'writeOnly',
  'deprecated',
  'errorCodes',
  'errorDetails',
  'omitEmpty',
  'properties',
  'items', // walked into; an array's items are refused by their own keywords
  'propertyName', // of a discriminator
  'mapping'
])

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Schema = Record<string, any>
type Path = Array<string | number>

/** One change to a valid request that breaks one keyword of one field. */
interface Mutation {
  keyword: string
  path: Path
  /** The value to put at `path`; `DELETE` removes the field. */
  value: Json | typeof DELETE
}
const DELETE = Symbol('delete')

const jsonType = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v

/** A value of none of the schema's types. */
function wrongType(types: string[]): Json {
  const allows = (v: unknown) => types.includes(jsonType(v)) || (jsonType(v) === 'integer' && types.includes('number'))
  const candidates: Json[] = [12345, 'text', true, {}, [], 1.5]
  return candidates.find((c) => !allows(c)) ?? null
}

/** Deeper than `depth` levels. */
const nested = (depth: number): Json => (depth === 0 ? 1 : { a: nested(depth - 1) })

/** The mutations breaking each keyword of `schema` at `path`, whose current value is `value` (undefined when absent). */
function mutationsOf(schema: Schema, value: Json | undefined, path: Path, seen: Set<string>): Mutation[] {
  const out: Mutation[] = []
  const add = (keyword: string, at: Path, v: Json | typeof DELETE) => {
    seen.add(keyword)
    out.push({ keyword, path: at, value: v })
  }
  for (const keyword of Object.keys(schema)) seen.add(`in schema: ${keyword}`)

  if (schema.type !== undefined) {
    const types = [schema.type].flat() as string[]
    add('type', path, wrongType(types))
    if (!types.includes('null')) add('type', path, null)
  }
  if (Array.isArray(schema.enum)) add('enum', path, 'NOT_A_CHOICE')
  if (schema.const !== undefined) add('const', path, typeof schema.const === 'string' ? 'NOT_THE_CONSTANT' : 99999)
  if (schema.not !== undefined) add('not', path, 'ANY_VALUE')
  if (typeof schema.maxLength === 'number') add('maxLength', path, 'x'.repeat(schema.maxLength + 1))
  if (typeof schema.minLength === 'number') {
    add('minLength', path, schema.minLength > 1 ? 'x'.repeat(schema.minLength - 1) : '')
  }
  if (typeof schema.pattern === 'string') {
    add('pattern', path, ' x ')
    add('pattern', path, 'a\u0000b')
    add('pattern', path, '~~~')
  }
  if (typeof schema.format === 'string') add('format', path, 'not-a-' + schema.format)
  if (typeof schema.minimum === 'number') add('minimum', path, schema.minimum - 1)
  if (typeof schema.exclusiveMinimum === 'number') add('exclusiveMinimum', path, schema.exclusiveMinimum)
  if (typeof schema.maximum === 'number') add('maximum', path, schema.maximum + 1)
  if (typeof schema.exclusiveMaximum === 'number') add('exclusiveMaximum', path, schema.exclusiveMaximum)
  if (schema.decimal) {
    const { integer, scale } = schema.decimal as { integer: number; scale: number }
    add('decimal', path, 'abc')
    add('decimal', path, ' ')
    add('decimal', path, '1' + '0'.repeat(integer))
    add('decimal', path, '1.' + '1'.repeat(scale + 1))
    add('decimal', path, '-1')
  }
  if (schema.jsonValue) {
    add('jsonValue', path, null)
    add('jsonValue', path, nested((schema.jsonValue as { maxDepth: number }).maxDepth + 1) as Json)
    add('jsonValue', path, 'a\u0000b')
  }
  const items = Array.isArray(value) ? value : []
  const item: Json = items[0] ?? 'x'
  if (typeof schema.minItems === 'number') {
    add('minItems', path, schema.minItems === 1 ? [] : Array.from({ length: schema.minItems - 1 }, () => item))
  }
  if (typeof schema.maxItems === 'number') {
    add(
      'maxItems',
      path,
      Array.from({ length: schema.maxItems + 1 }, () => item)
    )
  }
  if (schema.uniqueItems === true) add('uniqueItems', path, [item, item])
  if (Array.isArray(schema.required) && value && typeof value === 'object' && !Array.isArray(value)) {
    for (const key of schema.required as string[]) if (key in value) add('required', [...path, key], DELETE)
  }
  if (schema.additionalProperties === false) add('additionalProperties', [...path, 'unexpected_field_x'], 'x')

  // A tagged union: a tag no branch has, none, and not a string; then the branch the value takes.
  const branches = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined
  if (branches) {
    seen.add(schema.oneOf ? 'oneOf' : 'anyOf')
    const tag = (schema.discriminator as { propertyName?: string } | undefined)?.propertyName
    if (tag && value && typeof value === 'object' && !Array.isArray(value)) {
      add('discriminator', [...path, tag], 'NOT_A_TAG')
      add('discriminator', [...path, tag], DELETE)
      add('discriminator', [...path, tag], 7)
      const branch = branches.find((b) => b.properties?.[tag]?.const === value[tag])
      if (branch) out.push(...mutationsOf(branch, value, path, seen))
    } else {
      for (const branch of branches) {
        const types = branch.type === undefined ? undefined : ([branch.type].flat() as string[])
        if (value === undefined || !types || types.includes(jsonType(value))) {
          out.push(...mutationsOf(branch, value, path, seen))
        }
      }
    }
  }
  for (const [key, sub] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
    const child = value && typeof value === 'object' && !Array.isArray(value) ? value[key] : undefined
    out.push(...mutationsOf(sub, child, [...path, key], seen))
  }
  if (schema.items && typeof schema.items === 'object') {
    out.push(...mutationsOf(schema.items as Schema, items[0], [...path, 0], seen))
  }
  return out
}

/** A copy of `base` with the mutation applied (missing parents made). */
function applied(base: Json, m: Mutation): Json {
  if (m.path.length === 0) return m.value === DELETE ? {} : m.value
  const copy = structuredClone(base) as any
  let node = copy
  for (const [i, key] of m.path.slice(0, -1).entries()) {
    if (node[key] === null || typeof node[key] !== 'object') node[key] = typeof m.path[i + 1] === 'number' ? [] : {}
    node = node[key]
  }
  const last = m.path.at(-1)!
  if (m.value === DELETE) delete node[last]
  else node[last] = m.value
  return copy
}

/** Every detail of an error answer, the batch's results' and the payment instruction's `error_detail` included. */
function detailsOf(res: LightMyRequestResponse): string[] {
  if (!String(res.headers['content-type'] ?? '').startsWith('application/json') || res.body === '') return []
  const body = res.json()
  const entries = (list: unknown) =>
    Array.isArray(list) ? list.map((e: { detail?: unknown }) => e?.detail).filter((d) => typeof d === 'string') : []
  return [
    ...(typeof body?.detail === 'string' ? [body.detail] : []),
    ...(typeof body?.error_detail === 'string' ? [body.error_detail] : []),
    ...entries(body?.errors),
    ...(Array.isArray(body?.results) ? body.results.flatMap((r: { errors?: unknown }) => entries(r?.errors)) : [])
  ]
}

t.test('no error detail is Ajv default wording, for any keyword of any route', async (t) => {
  const routes: RouteOptions[] = []
  const setup = await importedSetup(t, { onRoute: (r) => routes.push(r), env: UNREACHABLE_VENDOR })
  const { app, ref, ledgerNumber } = setup
  const headers = { authorization: `Token ${setup.tenant.token}` }
  const seen = new Set<string>()
  const found = new Map<string, string>()
  let refused = 0

  const check = (res: LightMyRequestResponse, label: string) => {
    if (res.statusCode >= 400) refused++
    for (const detail of detailsOf(res)) {
      if (AJV_WORDING.test(detail) && !found.has(detail)) found.set(detail, label)
    }
  }

  /** A valid request body for each POST route this file knows; others start from `{}`. */
  const bodies: Record<string, Json> = {
    '/v1/data-import/validate-account/': exampleAccount({ external_account_number: 'EXT-WORDING' }),
    '/v1/data-import/account-import-process/create-or-update/': exampleAccount({
      external_account_number: 'EXT-WORDING'
    }),
    '/v1/data-import/account-import-process/process/': {
      external_account_number: 'EXT-000123',
      import_supplier_code: 'ACME_ENERGY',
      operations_team_name: TEAM,
      dry_run: true
    },
    '/v1/data-import/batches/': {
      import_supplier: 'ACME_ENERGY',
      operations_team_name: TEAM,
      dry_run: true,
      accounts: [{ account: exampleAccount({ external_account_number: 'EXT-WORDING' }) }]
    },
    '/graphql': { query: '{ __typename }' },
    ...Object.fromEntries(
      Object.entries(postImportBodies(ledgerNumber)).map(([url, body]) => [url, { ...ref, ...body } as Json])
    )
  }
  /** A value for each path parameter: the tenant's supplier and account, or any word. */
  const params: Record<string, string> = { supplier: 'ACME_ENERGY', external: 'EXT-000123' }
  const urlOf = (pattern: string) => pattern.replace(/:(\w+)/g, (_m, name: string) => params[name] ?? 'x')
  const query = (values: Record<string, Json>) =>
    Object.entries(values)
      .filter(([, v]) => v === null || typeof v !== 'object')
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
      .join('&')

  const tried = new Set<string>()
  for (const route of routes) {
    const schema = route.schema as Record<string, Schema> | undefined
    const methods = [route.method].flat()
    if (!schema || methods.includes('HEAD')) continue
    const method = methods[0]!
    const url = route.url as string
    if (schema.body) {
      const key = `${method} ${url}`
      if (tried.has(key)) continue
      tried.add(key)
      const base = bodies[url] ?? {}
      // A body of several media types (`content`): its JSON one (an NDJSON body is a stream, not validated whole).
      const body = (schema.body.content?.['application/json']?.schema ?? schema.body) as Schema
      for (const m of mutationsOf(body, base, [], seen)) {
        const payload = applied(base, m)
        const res = await app.inject({
          method: method as 'POST',
          url: urlOf(url),
          headers: { ...headers, 'content-type': 'application/json' },
          payload: JSON.stringify(payload)
        })
        check(res, `${key} ${m.keyword} at ${m.path.join('.')}`)
      }
    }
    for (const part of ['querystring', 'params'] as const) {
      if (!schema[part]) continue
      const mutations = mutationsOf(schema[part], {}, [], seen).filter((m) => m.path.length === 1)
      for (const m of mutations) {
        const name = String(m.path[0])
        const target =
          part === 'params'
            ? urlOf(url).replace(
                encodeURIComponent(params[name] ?? 'x'),
                m.value === DELETE || (m.value !== null && typeof m.value === 'object')
                  ? ''
                  : encodeURIComponent(String(m.value))
              )
            : `${urlOf(url)}?${query(m.value === DELETE ? {} : { [name]: m.value })}`
        const res = await app.inject({ method: method as 'GET', url: target, headers })
        check(res, `${method} ${url} ${part} ${m.keyword} at ${name}`)
      }
    }
  }

  // A batch's entries are checked by the service against the single endpoints' schemas: one
  // mutation of each keyword of the account's schema, inside an entry.
  const accountRoute = routes.find((r) => r.url === '/v1/data-import/validate-account/')!
  const accountBase = bodies['/v1/data-import/validate-account/']!
  const firstOfEach = new Map<string, Mutation>()
  for (const m of mutationsOf((accountRoute.schema as Record<string, Schema>).body!, accountBase, [], new Set())) {
    if (!firstOfEach.has(m.keyword)) firstOfEach.set(m.keyword, m)
  }
  const batch = bodies['/v1/data-import/batches/'] as Record<string, Json>
  for (const m of firstOfEach.values()) {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/data-import/batches/',
      headers,
      payload: { ...batch, accounts: [{ account: applied(accountBase, m) }] }
    })
    check(res, `batch entry: account ${m.keyword} at ${m.path.join('.')}`)
  }
  const vendorless = await app.inject({
    method: 'POST',
    url: '/v1/data-import/batches/',
    headers,
    payload: {
      ...batch,
      accounts: [
        {
          account: exampleAccount({ external_account_number: 'EXT-WORDING-2' }),
          payment_instruction: { vendor: 'NOPAY', reference: 'pm_1', type: 'CARD' }
        }
      ]
    }
  })
  check(vendorless, 'batch entry: an unknown payment vendor')

  const unprovoked = [...seen]
    .filter((k) => k.startsWith('in schema: '))
    .map((k) => k.slice('in schema: '.length))
    .filter((k) => !NOT_REFUSING.has(k) && !seen.has(k))
  t.same(unprovoked, [], 'every refusing keyword of the route schemas is provoked (teach mutationsOf a new one)')
  t.ok(refused > 500, `requests refused: ${refused}`)
  t.same(Object.fromEntries(found), {}, 'no detail in Ajv wording (detail → the request that got it)')
})

t.test('with no payment vendor configured, the vendor detail says so', async (t) => {
  const setup = await importedSetup(t)
  const res = await setup.post('payment-instruction/create/', { vendor: 'STRIPE', reference: 'pm_1', type: 'CARD' })
  t.equal(res.statusCode, 400)
  const details = detailsOf(res)
  t.same(
    details.filter((d) => AJV_WORDING.test(d)),
    [],
    'no Ajv wording'
  )
  t.ok(
    details.includes('Payment vendor STRIPE is not configured on this service; configured: none.'),
    details.join(' | ')
  )
})

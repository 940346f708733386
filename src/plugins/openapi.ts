import { readFileSync } from 'node:fs'
import { STATUS_CODES } from 'node:http'
import { join } from 'node:path'
import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { ErrorBody } from '../../schemas/common.js'
import {
  COMPONENT_SCHEMAS,
  DOCUMENTED_RULES,
  ERROR_RESPONSES,
  EVERY_OPERATION_STATUSES,
  GraphqlDocumentation,
  NAMED_BRANCHES,
  PATH_PARAMETER_STATUSES,
  MetricsDocumentation,
  OpenApiDocumentResponses,
  SECURITY_SCHEMES,
  TAGS
} from '../../schemas/openapi.js'
import { REQUEST_EXAMPLES } from '../../schemas/examples.js'
import { webhookPathItems } from '../../schemas/webhooks.js'
import { BLANK_PATTERN } from '../../schemas/text.js'
import { projectRoot } from '../paths.js'

/** Where the interactive documentation is served. */
export const DOCS_PREFIX = '/docs'

/**
 * The page's Content-Security-Policy: everything from this server only (the UI's assets come from
 * node_modules, never a CDN). Inline styles are allowed: the UI sets style attributes.
 */
export const DOCS_CSP =
  "default-src 'self'; base-uri 'self'; connect-src 'self'; font-src 'self' data:; " +
  "form-action 'self'; frame-ancestors 'none'; img-src 'self' data:; object-src 'none'; script-src 'self'; " +
  "style-src 'self' 'unsafe-inline'"

/** Keywords of JSON Schema 2020-12 (and draft-07, which Ajv reads) and of OpenAPI's Schema Object. */
const STANDARD_KEYWORDS = new Set([
  '$schema',
  '$id',
  '$ref',
  '$anchor',
  '$dynamicRef',
  '$dynamicAnchor',
  '$vocabulary',
  '$comment',
  '$defs',
  'definitions',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'dependentSchemas',
  'prefixItems',
  'items',
  'additionalItems',
  'contains',
  'properties',
  'patternProperties',
  'additionalProperties',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
  'type',
  'enum',
  'const',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxContains',
  'minContains',
  'maxProperties',
  'minProperties',
  'required',
  'dependentRequired',
  'title',
  'description',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
  'examples',
  'format',
  'contentEncoding',
  'contentMediaType',
  'contentSchema',
  'discriminator',
  'xml',
  'externalDocs',
  'example'
])
/** Keywords whose value is a map of name → schema. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'])
/** Keywords whose value is a schema or a list of schemas. */
const SUBSCHEMAS = new Set([
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'prefixItems',
  'items',
  'additionalItems',
  'contains',
  'additionalProperties',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema'
])

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type SchemaObject = { [key: string]: unknown }

function appendDescription(schema: SchemaObject, text: string): void {
  schema.description = typeof schema.description === 'string' ? `${schema.description} ${text}` : text
}

/** `omitEmpty` → `x-omit-empty`: an OpenAPI extension (allowed anywhere) named after a keyword. */
function extensionName(keyword: string): string {
  return 'x-' + keyword.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())
}

/**
 * A response as the document shows it: a schema, or (for other media types than JSON) an object
 * with `description` and `content: {<media type>: {schema}}` as @fastify/swagger reads it.
 */
function toOpenApiResponse(response: unknown): unknown {
  const content = (response as { content?: Record<string, { schema: unknown }> } | null)?.content
  if (!content) return toOpenApiSchema(response)
  return {
    ...(response as SchemaObject),
    content: Object.fromEntries(
      Object.entries(content).map(([type, media]) => [type, { ...media, schema: toOpenApiSchema(media.schema) }])
    )
  }
}

/** The `decimal` keyword's bounds (src/validation.ts). */
interface DecimalSpec {
  integer: number
  scale: number
  positive?: boolean
}

/** JSON numbers of at most this many digits are exact (src/decimal.ts). */
const EXACT_DIGITS = 15

/**
 * A decimal string within the bounds, as a pattern that every engine reads alike (no lookaround):
 * at most `integer` digits before the point, at most `scale` after it once trailing zeros are
 * dropped (`1.5000` has one place), and for a positive decimal no sign and not zero. What the
 * `decimal` keyword takes as a string, exactly.
 */
function decimalPattern({ integer, scale, positive }: DecimalSpec): string {
  const whole = `[1-9][0-9]{0,${integer - 1}}`
  const places = `\\.[0-9]{1,${scale}}0*`
  if (!positive) return `^-?(0|${whole})(${places})?$`
  // Positive: a whole part that is not zero, or zero and a fraction with a digit other than 0 within `scale` places.
  return `^(${whole}(${places})?|0\\.[0-9]{0,${scale - 1}}[1-9]0*)$`
}

/**
 * The decimal's bounds in standard keywords, so that a generated client or another validator
 * knows them: the pattern of its string form and, when it takes JSON numbers, their range. A
 * JSON number's decimal places and significant digits have no keyword that validators compute
 * exactly (`multipleOf: 0.01` refuses 0.3 in binary floating point, in Ajv and Python's jsonschema
 * alike), so the schema takes the numbers it can state exactly, whole ones of at most 15 digits
 * within the bound; the description says the service also takes a JSON number with a fraction.
 * The service accepts everything the schema does.
 */
function decimalKeywords(decimal: DecimalSpec, type: unknown): SchemaObject {
  const types = [type].flat()
  if (decimal.integer > EXACT_DIGITS) throw new Error(`a decimal of ${decimal.integer} integer digits`)
  const keywords: SchemaObject = { pattern: decimalPattern(decimal) } // applies to strings only
  if (!types.includes('number')) return keywords
  const bound = 10 ** decimal.integer
  return {
    ...keywords,
    type: types.map((t) => (t === 'number' ? 'integer' : t)),
    exclusiveMinimum: decimal.positive ? 0 : -bound,
    exclusiveMaximum: bound
  }
}

function decimalDescription(schema: SchemaObject, { integer, scale, positive }: DecimalSpec): string {
  const bounds = `at most ${integer} digits before the point and ${scale} after${positive ? ', greater than zero' : ''}`
  const text = [schema.type].flat().includes('integer')
    ? `Exact decimal: a decimal string, or a JSON number of at most ${EXACT_DIGITS} significant digits; ${bounds}. ` +
      'The schema lists the JSON numbers every validator checks exactly, whole ones; a JSON number with a fraction ' +
      'within the bounds is taken too. Returned as a decimal string.'
    : `Exact decimal, as a decimal string only; ${bounds}. Returned as a decimal string.`
  return typeof schema.description === 'string' ? `${schema.description} ${text}` : text
}

/** What an optional field of an `omitEmpty` object may also be sent as: one named component. */
function emptyValue(): SchemaObject {
  return {
    type: ['null', 'string'],
    // Empty, or only what `String.prototype.trim` removes: what `omitEmpty` (src/validation.ts) tests.
    pattern: BLANK_PATTERN,
    description:
      '`null`, or a string that is empty or only whitespace: taken as if the field were not sent (its default, if any, applies).',
    [COMPONENT]: 'EmptyValue'
  }
}

/**
 * An optional field of an `omitEmpty` object as a request may send it: its own schema, or an
 * empty value. Its description and default stay outside, where readers and tools look for them.
 */
function omittable(property: SchemaObject): SchemaObject {
  const { description, default: fallback, ...own } = property
  return {
    ...(description !== undefined ? { description } : {}),
    ...(fallback !== undefined ? { default: fallback } : {}),
    anyOf: [own, emptyValue()]
  }
}

/**
 * A copy of a schema for the document: the project's Ajv keywords (src/validation.ts) become `x-`
 * extensions with a sentence for people, so nothing unknown to OpenAPI leaks in. In a request
 * (`request: true`), an `omitEmpty` object's optional fields also take what it treats as omitted.
 * Never changes its input (the same objects validate requests).
 */
export function toOpenApiSchema(schema: unknown, options: { request?: boolean } = {}): unknown {
  if (Array.isArray(schema)) return schema.map((s) => toOpenApiSchema(s, options))
  if (schema === null || typeof schema !== 'object') return schema
  const out: SchemaObject = {}
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_MAPS.has(key) && value !== null && typeof value === 'object') {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, toOpenApiSchema(sub, options)]))
    } else if (SUBSCHEMAS.has(key)) {
      out[key] = toOpenApiSchema(value, options)
    } else if (STANDARD_KEYWORDS.has(key) || key.startsWith('x-')) {
      out[key] = structuredClone(value as Json)
    } else {
      out[extensionName(key)] = structuredClone(value as Json)
    }
  }
  const decimal = out['x-decimal'] as DecimalSpec | undefined
  if (decimal) Object.assign(out, decimalKeywords(decimal, out.type), { description: decimalDescription(out, decimal) })
  const jsonValue = out['x-json-value'] as { maxBytes: number; maxDepth: number } | undefined
  if (jsonValue) {
    out.not ??= { type: 'null' } // the keyword refuses null (`null`)
    appendDescription(
      out,
      `Any JSON value but null, at most ${jsonValue.maxBytes} bytes serialised and ${jsonValue.maxDepth} levels deep.`
    )
  }
  const source = schema as SchemaObject
  if (options.request && source.omitEmpty === true && out.properties) {
    const required = new Set((source.required ?? []) as string[])
    out.properties = Object.fromEntries(
      Object.entries(out.properties as Record<string, SchemaObject>).map(([name, property]) => [
        name,
        required.has(name) ? property : omittable(property)
      ])
    )
  }
  // Rules a service checks that JSON Schema can state (schemas/openapi.ts).
  Object.assign(out, structuredClone(DOCUMENTED_RULES.get(source)))
  // A union's branches become named components (`finishDocument` moves them); its discriminator maps to them.
  const discriminator = source.discriminator as { propertyName: string } | undefined
  if (discriminator && Array.isArray(source.oneOf)) {
    const mapping: Record<string, string> = {}
    for (const branch of source.oneOf as SchemaObject[]) {
      const name = NAMED_BRANCHES.get(branch)
      const value = (branch.properties as Record<string, SchemaObject> | undefined)?.[discriminator.propertyName]?.const
      if (name && typeof value === 'string') mapping[value] = `#/components/schemas/${name}`
    }
    out.discriminator = { ...discriminator, mapping }
  }
  const name = NAMED_BRANCHES.get(source)
  if (name) out[COMPONENT] = name
  return out
}

/** Marks a schema that `finishDocument` moves to `components.schemas` under this name. */
const COMPONENT = 'x-amis-component'

/** Moves every marked schema of the document to `components.schemas`, leaving a `$ref`. */
function extractComponents(node: unknown, components: Record<string, unknown>): unknown {
  if (Array.isArray(node)) return node.map((n) => extractComponents(n, components))
  if (node === null || typeof node !== 'object') return node
  const out: SchemaObject = {}
  for (const [key, value] of Object.entries(node)) out[key] = extractComponents(value, components)
  const name = out[COMPONENT]
  if (typeof name !== 'string') return out
  delete out[COMPONENT]
  components[name] ??= out
  return { $ref: `#/components/schemas/${name}` }
}

const withoutSlash = (url: string) => (url.length > 1 ? url.replace(/\/+$/, '') : url)

/** Marks the statuses answered with the shared error body; `finishDocument` turns them into `$ref`s. */
const ERROR_STATUSES = 'x-amis-error-statuses'

/** One route's schema as the document shows it (a new object: the route's own is left alone). */
function documentRoute({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }) {
  // Routes that only answer 405 (GET /graphql among them) are not operations.
  if (route.config?.methodNotAllowed === true) return { schema: { hide: true } }
  let source = (schema ?? {}) as SchemaObject
  if (url === '/graphql') source = { ...GraphqlDocumentation }
  if (url === '/metrics') source = { ...MetricsDocumentation }
  if (source.hide) return { schema: source }

  const out: SchemaObject = { ...source }
  for (const part of ['body', 'querystring', 'params', 'headers'] as const) {
    if (source[part] !== undefined) out[part] = toOpenApiSchema(source[part], { request: true })
  }
  // A body of several media types (`content`), each with its own schema.
  const content = (source.body as { content?: Record<string, { schema: unknown }> } | undefined)?.content
  if (content) {
    out.body = {
      content: Object.fromEntries(
        Object.entries(content).map(([type, media]) => [
          type,
          { ...media, schema: toOpenApiSchema(media.schema, { request: true }) }
        ])
      )
    }
  }
  const errorStatuses: string[] = []
  if (source.response) {
    const response: SchemaObject = {}
    for (const [status, value] of Object.entries(source.response as SchemaObject)) {
      if (value === ErrorBody && ERROR_RESPONSES[status]) errorStatuses.push(status)
      else response[status] = toOpenApiResponse(value)
    }
    out.response = response
  }
  if (errorStatuses.length > 0) out[ERROR_STATUSES] = errorStatuses
  out.operationId ??= route.handler.name || undefined
  // Each route declares who may call it; a route that declares nothing is public.
  out.security ??= []
  // Examples are keyed by the document's path (`{param}`, not `:param`).
  const example = REQUEST_EXAMPLES[withoutSlash(url).replace(/:(\w+)/g, '{$1}')]
  if (example !== undefined && content) {
    const media = (out.body as { content: Record<string, { schema: SchemaObject }> }).content['application/json']!
    media.schema = { ...media.schema, examples: [example] }
  } else if (example !== undefined && out.body) out.body = { ...(out.body as SchemaObject), examples: [example] }
  // Every path is served with and without its trailing slash: the document names the one without.
  return { schema: out as FastifySchema, url: withoutSlash(url) }
}

type Operation = {
  responses: Record<string, { description: string; content?: unknown } | { $ref: string }>
  [key: string]: unknown
}
type Paths = Record<string, Record<string, Operation>>

/** The document @fastify/swagger made: the parts finishDocument reads and changes. */
interface OpenApiDocument {
  paths?: Paths
  components: { schemas: Record<string, unknown>; [key: string]: unknown }
  [key: string]: unknown
}

/** Shared error responses as `$ref`s, and readable descriptions for the others. */
function finishDocument({ openapiObject }: { openapiObject: OpenApiDocument }) {
  for (const pathItem of Object.values(openapiObject.paths ?? {})) {
    for (const operation of Object.values(pathItem)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if ('description' in response && response.description === 'Default Response') {
          response.description =
            status === '201' && !response.content ? 'Created (empty body).' : `${STATUS_CODES[status] ?? status}.`
        }
      }
      const statuses = (operation[ERROR_STATUSES] ?? []) as string[]
      delete operation[ERROR_STATUSES]
      const hasPathParameters = ((operation.parameters ?? []) as Array<{ in?: string }>).some((p) => p.in === 'path')
      for (const status of [...EVERY_OPERATION_STATUSES, ...(hasPathParameters ? PATH_PARAMETER_STATUSES : [])]) {
        if (!(status in operation.responses) && !statuses.includes(status)) statuses.push(status)
      }
      for (const status of statuses) {
        operation.responses[status] = { $ref: `#/components/responses/${ERROR_RESPONSES[status]!.name}` }
      }
      operation.responses = Object.fromEntries(
        Object.entries(operation.responses).sort(([a], [b]) => a.localeCompare(b))
      )
    }
  }
  const schemas = openapiObject.components.schemas
  // Only marked schemas inside operations change: paths, methods and operations stay as they are.
  openapiObject.paths = extractComponents(openapiObject.paths, schemas) as Paths | undefined
  for (const [name, schema] of Object.entries(schemas)) schemas[name] = extractComponents(schema, schemas)
  return openapiObject
}

/** `components.responses`: one per error status, all with the contract's error body. */
function errorResponses() {
  return Object.fromEntries(
    Object.values(ERROR_RESPONSES).map(({ name, description, headers }) => [
      name,
      {
        description,
        ...(headers
          ? {
              headers: Object.fromEntries(
                Object.entries(headers).map(([header, schema]) => {
                  const { description: about, ...rest } = toOpenApiSchema(schema) as SchemaObject
                  return [header, { description: about, schema: rest }]
                })
              )
            }
          : {}),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } }
      }
    ])
  )
}

function componentSchemas() {
  const schemas = Object.fromEntries(
    Object.entries(COMPONENT_SCHEMAS).map(([name, schema]) => [name, toOpenApiSchema(schema) as SchemaObject])
  )
  // ErrorBody refers to its entries by name.
  schemas.ErrorBody = {
    ...schemas.ErrorBody,
    properties: {
      ...(schemas.ErrorBody!.properties as SchemaObject),
      errors: { type: 'array', items: { $ref: '#/components/schemas/ErrorEntry' } }
    }
  }
  return schemas
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version
}

/**
 * The OpenAPI 3.1 document of every route, built by @fastify/swagger from the routes' own TypeBox
 * schemas (`GET /openapi.json`), and the interactive documentation on it (`GET /docs`, Swagger UI
 * served from node_modules). Registered before the routes, so its onRoute hook sees them all.
 */
export default fp(
  async function openapiPlugin(app: FastifyInstance) {
    const options: FastifyDynamicSwaggerOptions = {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Account Migration Import Service',
          version: packageVersion(),
          // The package is private and the repository carries no licence: none is granted. An SPDX
          // expression may name a licence of its own with `LicenseRef-`.
          license: {
            name: 'Proprietary (UNLICENSED): no licence is granted to use, copy or distribute it',
            identifier: 'LicenseRef-Proprietary'
          },
          description:
            "Moves energy customer accounts from a previous supplier's system into the platform: validate, " +
            'stage and create accounts (one by one, or many per request with `POST /v1/data-import/batches`), add their ' +
            'history, and follow the migration (progress, failures by code, a per-minute timeline).\n\n' +
            '## How to authenticate\n' +
            '1. Exchange your API key for a token: `POST /graphql` with ' +
            '`{"query": "mutation { obtainToken(input: {APIKey: \\"amk_…\\"}) { token expiresIn refreshToken } }"}`.\n' +
            '2. Send the token on every call: `Authorization: Bearer <token>` (here: the **Authorize** button, `clientToken`).\n' +
            '3. Before it expires (`expiresIn` seconds), trade the `refreshToken` for a new pair with `obtainToken(input: {refreshToken: …})`.\n\n' +
            'Every 4xx/5xx body is `ErrorBody`: `code` is stable, `errors[].attr` is the path of the input at fault. ' +
            'Paths accept a trailing slash or none. In objects marked `x-omit-empty`, an optional field sent as `null` ' +
            'or blank is treated as omitted. Money and other decimals are exact: decimal strings (or JSON numbers of at ' +
            'most 15 significant digits) in major units (`"53.24"` is 53 pounds 24 pence), answered as decimal strings.'
        },
        servers: [{ url: '/', description: 'This service' }],
        // What the service posts to the webhook endpoints organisations register (GraphQL createWebhookEndpoint).
        webhooks: webhookPathItems() as never,
        tags: TAGS,
        components: {
          securitySchemes: SECURITY_SCHEMES as never,
          schemas: componentSchemas() as never,
          responses: errorResponses() as never
        }
      },
      transform: documentRoute as never,
      transformObject: finishDocument as never
    }
    await app.register(swagger, options)

    app.get(
      '/openapi.json',
      {
        schema: {
          summary: 'This OpenAPI document',
          tags: ['Operations'],
          operationId: 'openapi',
          response: OpenApiDocumentResponses
        },
        logLevel: 'warn'
      },
      async function openapiDocument() {
        return app.swagger() as { openapi: string }
      }
    )

    // The documentation page and its assets ignore a query string (Swagger UI's own, a cache buster).
    await app.register(async function documentationPage(scope) {
      scope.addHook('onRoute', function ignoreQuery(route) {
        route.config = { ...route.config, anyQuery: true }
      })
      await scope.register(swaggerUi, {
        routePrefix: DOCS_PREFIX,
        staticCSP: DOCS_CSP,
        uiConfig: { deepLinking: true, docExpansion: 'list', defaultModelsExpandDepth: 0 },
        theme: {
          title: 'Account Migration Import Service: API',
          // The page is this service's documentation: no "explore any URL" bar.
          css: [{ filename: 'theme.css', content: '.swagger-ui .topbar { display: none }' }]
        }
      })
    })
  },
  { name: 'openapi' }
)

import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { CODE } from '../../schemas/error-codes.js'
import { invalidRequest, problem } from '../errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route reads no query string and ignores one (a page or a static asset, which browsers and
     * caches may request with one): unknown parameters are not refused. Every other route refuses them.
     */
    anyQuery?: boolean
  }
}

/** The query parameters a route's schema declares, per schema. */
const declaredNames = new WeakMap<object, ReadonlySet<string>>()
const NONE: ReadonlySet<string> = new Set()

function declared(schema: unknown): ReadonlySet<string> {
  if (schema === null || typeof schema !== 'object') return NONE
  let names = declaredNames.get(schema)
  if (!names) {
    names = new Set(Object.keys((schema as { properties?: object }).properties ?? {}))
    declaredNames.set(schema, names)
  }
  return names
}

/** The query parameters of a request that its route does not declare. */
function unknownParameters(request: FastifyRequest): string[] {
  const query = request.query as Record<string, unknown> | undefined
  if (!query) return []
  const keys = Object.keys(query)
  if (keys.length === 0) return []
  const names = declared(request.routeOptions.schema?.querystring)
  return keys.filter((key) => !names.has(key))
}

/**
 * Unknown input is refused, in the query string too: a query parameter the route's schema does not
 * declare (a typo of a filter, a flag the endpoint does not take) is 400 `invalid_request` with
 * `unexpected_field` at its name, on every route, whether it declares query parameters or none. One
 * hook for all, built from each route's own schema (what the OpenAPI document lists), so a new route
 * is covered as it is written. It runs once the caller is known and the body read, before the
 * route's validation and before it waits for a turn of work.
 */
export default fp(
  async function queriesPlugin(app: FastifyInstance) {
    app.addHook('preValidation', async function refuseUnknownQuery(request) {
      if (request.is404 || request.routeOptions.config?.anyQuery === true) return
      const unknown = unknownParameters(request)
      if (unknown.length === 0) return
      throw invalidRequest(
        unknown.map((name) =>
          problem(CODE.unexpected_field, name, { detail: 'This query parameter is not expected here.' })
        )
      )
    })
  },
  { name: 'queries' }
)

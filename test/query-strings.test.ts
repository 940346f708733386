import t from 'tap'
import type { RouteOptions } from 'fastify'
import { importedSetup } from './helpers/accounts.js'
import { operatorToken } from './helpers/graphql.js'
import { concreteUrl, isPublicRoute, UNREACHABLE_VENDOR } from './helpers/security.js'
import { bodyMediaTypes } from '../src/errors.js'

/**
 * Unknown input is refused in the query string too: every route the app registers (taken from
 * buildApp's onRoute hook, so a new one is tried without editing this file) answers a query
 * parameter it does not declare with 400 `invalid_request`, `unexpected_field` at the parameter's
 * name, whether it declares query parameters or none. Only pages and static assets (the API
 * documentation, the dashboard) ignore a query string, and say so in their route config.
 */

const UNKNOWN = 'not_a_parameter'

/** Path parameters: values of the example account (the check comes before any look-up). */
const PARAMS = {
  supplier: 'ACME_ENERGY',
  external: 'EXT-000123',
  id: '00000000-0000-4000-8000-000000000000',
  part: '1'
}

t.test('every route refuses a query parameter it does not declare', async (t) => {
  const routes: RouteOptions[] = []
  const setup = await importedSetup(t, {
    onRoute: (route) => {
      routes.push(route)
    },
    env: UNREACHABLE_VENDOR
  })
  const { app, tenant } = setup
  const operator = await operatorToken(app)
  let refused = 0
  let ignored = 0
  for (const route of routes) {
    const url = route.url as string
    for (const method of [route.method].flat()) {
      // Fastify's wildcard of the documentation's static files: tried through a real file below.
      const path = url.includes('*') ? url.replace('*', 'index.html') : concreteUrl(url, PARAMS)
      const token = url === '/metrics' ? operator : isPublicRoute(url) ? undefined : tenant.token
      const [mediaType] = bodyMediaTypes(route.schema)
      const withBody = method === 'POST' || method === 'PUT' || method === 'PATCH'
      const res = await app.inject({
        method: method as 'GET',
        url: `${path}?${UNKNOWN}=1`,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(withBody ? { 'content-type': mediaType } : {})
        },
        ...(withBody ? { payload: mediaType === 'application/json' ? '{}' : '\n' } : {})
      })
      const label = `${method} ${url}`
      // GraphQL's GET answers 405 (this path answers POST only) before anything is read.
      if (route.config?.methodNotAllowed === true) {
        t.equal(res.statusCode, 405, `${label}: 405`)
        continue
      }
      if (route.config?.anyQuery === true) {
        ignored++
        t.ok(url.startsWith('/docs') || url.startsWith('/dashboard'), `${label}: only pages and assets ignore it`)
        t.ok(res.statusCode < 400, `${label}: a page or asset ignores it (${res.statusCode})`)
        continue
      }
      refused++
      t.equal(res.statusCode, 400, `${label}: 400 (${res.body.slice(0, 200)})`)
      if (method === 'HEAD') continue
      const body = res.statusCode === 400 ? res.json() : {}
      t.same(
        [body.code, (body.errors ?? []).map((e: { code: string; attr: string }) => [e.code, e.attr])],
        ['invalid_request', [['unexpected_field', UNKNOWN]]],
        `${label}: unexpected_field at ${UNKNOWN}`
      )
    }
  }
  t.ok(refused > 40, `${refused} route methods refuse it`)
  t.ok(ignored > 3, `${ignored} pages and assets ignore it`)

  t.test('a declared parameter is taken, and an unknown one beside it is named alone', async (t) => {
    const headers = { authorization: `Bearer ${tenant.token}` }
    const ok = await app.inject({ url: '/v1/data-import/import-jobs/?limit=5', headers })
    t.equal(ok.statusCode, 200, ok.body)
    const both = await app.inject({ url: '/v1/data-import/import-jobs/?limit=5&Limit=6&state=OPEN', headers })
    t.same(
      both.json().errors.map((e: { code: string; attr: string }) => [e.code, e.attr]),
      [['unexpected_field', 'Limit']]
    )
  })

  t.test('authentication still comes first', async (t) => {
    const res = await app.inject({ url: `/v1/data-import/import-jobs/?${UNKNOWN}=1` })
    t.equal(res.statusCode, 401)
  })

  t.test('an unknown path is still 404, whatever its query', async (t) => {
    const res = await app.inject({ url: `/v1/data-import/nothing-here/?${UNKNOWN}=1`, headers: {} })
    t.equal(res.statusCode, 404)
  })
})

import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on a route that answers 405 instead of serving its method (not listed in `Allow`). */
    methodNotAllowed?: boolean
  }
  interface FastifyInstance {
    /**
     * Adds, for every path registered so far, a route answering the methods the path does not
     * serve with 405 `method_not_allowed` and `Allow`. Called once, after every other route.
     */
    answerOtherMethods(): void
  }
}

/** The methods Fastify routes by default; a path serving some of them answers the rest with 405. */
const METHODS: HTTPMethods[] = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT']

export function methodNotAllowed(allow: string[]): AppError {
  return new AppError(405, 'method_not_allowed', `This path answers ${allow.join(', ')} only.`, [], {}, { allow: allow.join(', ') })
}

/** A route handler (or hook) that refuses the request with 405 and the given `Allow`. */
export function refuseMethod(allow: string[]) {
  return async function refuseMethod(_request: FastifyRequest, _reply: FastifyReply): Promise<never> {
    throw methodNotAllowed(allow)
  }
}

/**
 * 405 with `Allow` on every known path (unknown paths keep 404 `route_not_found`). The routes of
 * each path are recorded as they are registered; `answerOtherMethods` then adds one hidden route
 * per path for the methods it lacks, so the router itself tells 405 from 404.
 */
export default fp(async function methodsPlugin(app: FastifyInstance) {
  const routesByUrl = new Map<string, RouteOptions[]>()
  app.addHook('onRoute', function recordRoute(route) {
    if (route.config?.methodNotAllowed === true) return
    const routes = routesByUrl.get(route.url) ?? []
    routes.push(route)
    routesByUrl.set(route.url, routes)
  })

  app.decorate('answerOtherMethods', function answerOtherMethods() {
    for (const [url, routes] of routesByUrl) {
      // Read now: a route's config may have been marked by a later onRoute hook (GET /graphql).
      const served = new Set(routes.filter((r) => r.config?.methodNotAllowed !== true).flatMap((r) => [r.method].flat()))
      if (served.has('GET')) served.add('HEAD')
      const allow = METHODS.filter((m) => served.has(m))
      const others = METHODS.filter((m) => !served.has(m))
      if (allow.length === 0 || others.length === 0) continue
      // Marked routes keep their own method but answer 405 (their handler was replaced).
      const missing = others.filter((m) => !routes.some((r) => [r.method].flat().includes(m)))
      if (missing.length === 0) continue
      app.route({
        method: missing,
        url,
        exposeHeadRoute: false,
        config: { methodNotAllowed: true },
        schema: { hide: true },
        handler: refuseMethod(allow)
      })
    }
    routesByUrl.clear()
  })
}, { name: 'methods' })

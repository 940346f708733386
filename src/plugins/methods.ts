import { METHODS as NODE_METHODS, ServerResponse, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { CODE } from '../../schemas/error-codes.js'
import { answer, type AppError } from '../errors.js'

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

/**
 * Every method Node's HTTP parser accepts (TRACE, QUERY, PROPFIND, CONNECT, …): a path serving some
 * of them answers the rest with 405.
 */
const METHODS = [...NODE_METHODS].sort() as HTTPMethods[]

export function methodNotAllowed(allow: string[]): AppError {
  const methods = allow.join(', ')
  return answer(CODE.method_not_allowed, [], { headers: { allow: methods } }, { methods })
}

/** A route hook (or handler) that refuses the request with 405 and the given `Allow`. */
export function refuseMethod(allow: string[]) {
  return async function refuseMethod(_request: FastifyRequest, _reply: FastifyReply): Promise<never> {
    throw methodNotAllowed(allow)
  }
}

/**
 * 405 with `Allow` on every known path (unknown paths keep 404 `route_not_found`). The routes of
 * each path are recorded as they are registered; `answerOtherMethods` then adds one hidden route
 * per path for the methods it lacks, so the router itself tells 405 from 404. The refusal is an
 * onRequest hook: it comes before a body is read, so a QUERY or PATCH with a body (of any type,
 * or still arriving) is 405, never 400 or 415.
 */
export default fp(
  async function methodsPlugin(app: FastifyInstance) {
    // Fastify routes only some methods; the router must know every other one to find the path (405)
    // rather than nothing (404). No route here serves them, so none takes a body. QUERY is one of
    // Fastify's, with a body it parses (and a Content-Type it demands) before any hook could answer
    // an unknown path with 404: here it takes none either.
    for (const method of METHODS) {
      if (!app.supportedMethods.includes(method)) app.addHttpMethod(method)
    }
    app.addHttpMethod('QUERY', { overrideExisting: true })
    // Node hands a CONNECT request to the server's 'connect' event, never to the request handler:
    // it is routed like any other request here, answered, and its connection closed.
    app.server.on('connect', function answerConnect(request: IncomingMessage, socket: Socket) {
      socket.on('error', () => socket.destroy())
      const response = new ServerResponse(request)
      response.shouldKeepAlive = false
      response.assignSocket(socket)
      response.on('finish', () => {
        response.detachSocket(socket)
        socket.end()
      })
      app.routing(request, response)
    })

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
        const served = new Set(
          routes.filter((r) => r.config?.methodNotAllowed !== true).flatMap((r) => [r.method].flat())
        )
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
          onRequest: refuseMethod(allow),
          handler: refuseMethod(allow)
        })
      }
      routesByUrl.clear()
    })
  },
  { name: 'methods' }
)

import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { projectRoot } from '../paths.js'

/** Where the migration dashboard is served; its files are under `${DASHBOARD_PREFIX}/assets/`. */
export const DASHBOARD_PREFIX = '/dashboard'

/**
 * The dashboard's Content-Security-Policy: scripts, styles and requests to this server only, no
 * inline script or style (uPlot sizes its elements through the CSSOM, which a policy does not
 * restrict), and never inside a frame.
 */
export const DASHBOARD_CSP =
  "default-src 'self'; base-uri 'self'; connect-src 'self'; form-action 'self'; " +
  "frame-ancestors 'none'; img-src 'self'; object-src 'none'; script-src 'self'; style-src 'self'"

/** Every answer on a dashboard path (405 and 404 included) carries the policy. */
const DASHBOARD_PATH = /^\/dashboard(?:[/?#]|$)/

interface StaticFile {
  body: Buffer
  type: string
  etag: string
}

const require = createRequire(import.meta.url)
const folder = join(projectRoot, 'src', 'dashboard')

/**
 * The assets by name: the page's own files, and uPlot's as its package ships them. The page's
 * script is the folder's JavaScript modules (`dashboard.js` imports the others), each served by
 * its name.
 */
const ASSETS: Record<string, { path: () => string; type: string }> = {
  'dashboard.css': { path: () => join(folder, 'dashboard.css'), type: 'text/css; charset=utf-8' },
  'favicon.svg': { path: () => join(folder, 'favicon.svg'), type: 'image/svg+xml' },
  'uPlot.iife.min.js': {
    path: () => require.resolve('uplot/dist/uPlot.iife.min.js'),
    type: 'text/javascript; charset=utf-8'
  },
  'uPlot.min.css': { path: () => require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css; charset=utf-8' }
}

function staticFile(path: string, type: string): StaticFile {
  const body = readFileSync(path)
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` }
}

/** Whether an `If-None-Match` header names this entity tag (or is `*`). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim()
    return t === '*' || t === etag || t === `W/${etag}`
  })
}

/**
 * Always revalidated (`no-cache`) with an entity tag: a deploy is seen at once, and an unchanged
 * file costs a 304 with no body. The files are small and the page is loaded once and left open.
 */
function send(request: FastifyRequest, reply: FastifyReply, file: StaticFile) {
  reply.header('cache-control', 'no-cache').header('etag', file.etag).type(file.type)
  if (matches(request.headers['if-none-match'], file.etag)) return reply.code(304).send()
  return reply.send(file.body)
}

/**
 * The migration dashboard (`GET /dashboard`): a static page whose script signs in with an API key
 * through `obtainToken` and reads everything else through `POST /graphql`, as any client would.
 * Loading it needs no token: it holds no data. Files are read once, at start.
 */
export default fp(
  async function dashboardPlugin(app: FastifyInstance) {
    const page = staticFile(join(folder, 'index.html'), 'text/html; charset=utf-8')
    const modules = readdirSync(folder)
      .filter((name) => name.endsWith('.js'))
      .map((name) => [name, { path: () => join(folder, name), type: 'text/javascript; charset=utf-8' }] as const)
    const assets = [...modules, ...Object.entries(ASSETS)].map(
      ([name, { path, type }]) => [name, staticFile(path(), type)] as const
    )

    app.addHook('onRequest', async function dashboardHeaders(request, reply) {
      if (!DASHBOARD_PATH.test(request.url)) return
      reply.header('content-security-policy', DASHBOARD_CSP)
      reply.header('x-content-type-options', 'nosniff')
      reply.header('referrer-policy', 'no-referrer')
    })

    // Not API operations: hidden from the OpenAPI document. `/dashboard/` is the same route
    // (the router ignores a trailing slash).
    // A page and its assets: a query string (a bookmark's, a cache buster) is ignored.
    app.get(
      DASHBOARD_PREFIX,
      { schema: { hide: true }, config: { anyQuery: true } },
      async function dashboardPage(request, reply) {
        return send(request, reply, page)
      }
    )
    for (const [name, file] of assets) {
      app.get(
        `${DASHBOARD_PREFIX}/assets/${name}`,
        { schema: { hide: true }, config: { anyQuery: true } },
        async function dashboardAsset(request, reply) {
          return send(request, reply, file)
        }
      )
    }
  },
  { name: 'dashboard' }
)

import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildSchema, parse, validate } from 'graphql'
import { graphqlSchema } from '../schemas/graphql.js'
import { projectRoot } from '../src/paths.js'
import { DASHBOARD_CSP } from '../src/plugins/dashboard.js'
import { buildTestApp } from './helpers/app.js'

/**
 * The dashboard's files as the plugin serves them (no browser: see dashboard-browser.test.ts),
 * and static checks of the page and its script.
 */

const folder = join(projectRoot, 'src', 'dashboard')
const html = readFileSync(join(folder, 'index.html'), 'utf8')
const script = readFileSync(join(folder, 'dashboard.js'), 'utf8')

const ASSETS: Array<[string, RegExp]> = [
  ['/dashboard/assets/dashboard.js', /^text\/javascript; charset=utf-8$/],
  ['/dashboard/assets/dashboard.css', /^text\/css; charset=utf-8$/],
  ['/dashboard/assets/favicon.svg', /^image\/svg\+xml$/],
  ['/dashboard/assets/uPlot.iife.min.js', /^text\/javascript; charset=utf-8$/],
  ['/dashboard/assets/uPlot.min.css', /^text\/css; charset=utf-8$/]
]

t.test('the page and its assets are served without a token, with their policy', async (t) => {
  const { app } = await buildTestApp(t)
  for (const url of ['/dashboard', '/dashboard/']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200, `GET ${url}`)
    t.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    t.equal(res.headers['content-security-policy'], DASHBOARD_CSP)
    t.equal(res.headers['x-content-type-options'], 'nosniff')
    t.equal(res.headers['referrer-policy'], 'no-referrer')
    t.equal(res.headers['cache-control'], 'no-cache')
    t.ok(res.headers['x-request-id'], "and the app's own headers")
    t.equal(res.body, html, 'the page as written')
  }
  for (const [url, type] of ASSETS) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200, `GET ${url}`)
    t.match(res.headers['content-type'], type)
    t.equal(res.headers['content-security-policy'], DASHBOARD_CSP)
    t.equal(res.headers['cache-control'], 'no-cache')
    t.ok(res.rawPayload.length > 100, `${url}: ${res.rawPayload.length} bytes`)
  }
  const uplot = await app.inject({ url: '/dashboard/assets/uPlot.iife.min.js' })
  t.match(uplot.body, /var uPlot=/, "uPlot's browser build, from its package")
})

t.test('an entity tag makes revalidation cheap; HEAD, other methods and unknown assets', async (t) => {
  const { app } = await buildTestApp(t)
  const first = await app.inject({ url: '/dashboard/assets/dashboard.css' })
  const etag = first.headers.etag as string
  t.match(etag, /^"[A-Za-z0-9_-]+"$/)
  const again = await app.inject({ url: '/dashboard/assets/dashboard.css', headers: { 'if-none-match': etag } })
  t.equal(again.statusCode, 304, 'unchanged: 304')
  t.equal(again.body, '')
  t.equal(again.headers.etag, etag)
  t.equal(
    (await app.inject({ url: '/dashboard/assets/dashboard.css', headers: { 'if-none-match': '"other"' } })).statusCode,
    200
  )

  const head = await app.inject({ method: 'HEAD', url: '/dashboard' })
  t.equal(head.statusCode, 200)
  t.equal(head.body, '')

  for (const method of ['POST', 'PUT', 'DELETE'] as const) {
    const res = await app.inject({
      method,
      url: '/dashboard',
      headers: { 'content-type': 'application/json' },
      payload: '{}'
    })
    t.equal(res.statusCode, 405, `${method} /dashboard`)
    t.equal(res.headers.allow, 'GET, HEAD')
    t.equal(res.json().code, 'method_not_allowed')
    t.equal(res.headers['content-security-policy'], DASHBOARD_CSP, 'with the policy too')
  }
  const missing = await app.inject({ url: '/dashboard/assets/nothing.js' })
  t.equal(missing.statusCode, 404)
  t.equal(missing.json().errors[0].code, 'route_not_found')
  t.notOk(
    (await app.inject({ url: '/docs' })).headers['content-security-policy'] === DASHBOARD_CSP,
    'other pages keep their own policy'
  )
  t.equal((await app.inject({ url: '/healthz' })).headers['content-security-policy'], undefined, 'and the API none')
})

t.test('the page needs nothing inline and nothing from another host', async (t) => {
  const references = [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]!)
  t.same(references.sort(), ASSETS.map(([url]) => url).sort(), 'it refers to the served assets only')
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script')
  t.notMatch(html, /<style|\sstyle=|\son[a-z]+=/i, 'no inline style or handler')
  t.notMatch(html + script, /https?:\/\//, 'no absolute URL')
})

t.test('the script builds the DOM without parsing HTML, keeps no key, and uses the public API only', async (t) => {
  t.notMatch(
    script,
    /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/,
    'no HTML parsing or evaluation'
  )
  t.notMatch(script, /localStorage/, 'nothing in localStorage')
  const stored = [...script.matchAll(/sessionStorage\.setItem\((.*)\)$/gm)].map((m) => m[1])
  t.same(stored, ['STORAGE_KEY, JSON.stringify(session)'], 'one thing is stored: the session')
  t.match(
    script,
    /const session = \{ token: payload\.token, refreshToken: payload\.refreshToken, expiresAt: [^}]+\}/,
    'which is the token, the refresh token and the expiry'
  )

  // Every GraphQL document of the script is valid against the service's schema.
  const schema = buildSchema(graphqlSchema)
  const documents = [...script.matchAll(/const (Q_[A-Z_]+) = [`']([^`']+)[`']/g)]
  t.ok(documents.length >= 6, `${documents.length} documents`)
  for (const [, name, text] of documents) {
    t.same(
      validate(schema, parse(text!)).map((e) => e.message),
      [],
      `${name} is valid`
    )
  }
})

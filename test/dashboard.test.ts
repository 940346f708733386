import t, { type Test } from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { buildSchema, parse, validate } from 'graphql'
import ts from 'typescript'
import { graphqlSchema } from '../schemas/graphql.js'
import { projectRoot } from '../src/paths.js'
import { DASHBOARD_CSP } from '../src/plugins/dashboard.js'
import { buildTestApp } from './helpers/app.js'

/**
 * The dashboard's files as the plugin serves them (no browser: see dashboard-browser.test.ts),
 * and checks of the page and of the script's modules as served.
 */

const folder = join(projectRoot, 'src', 'dashboard')
const html = readFileSync(join(folder, 'index.html'), 'utf8')
/** The script's modules: every `.js` file of the folder. */
const moduleFiles = readdirSync(folder).filter((name) => name.endsWith('.js'))

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
  for (const name of moduleFiles) {
    const res = await app.inject({ url: `/dashboard/assets/${name}` })
    t.equal(res.statusCode, 200, `GET /dashboard/assets/${name}`)
    t.equal(res.headers['content-type'], 'text/javascript; charset=utf-8')
    t.equal(res.headers['content-security-policy'], DASHBOARD_CSP)
    t.equal(res.headers['cache-control'], 'no-cache')
    t.match(res.headers.etag, /^"[A-Za-z0-9_-]+"$/)
    t.equal(res.body, readFileSync(join(folder, name), 'utf8'), `${name} as written`)
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
  for (const url of [
    '/dashboard/assets/nothing.js',
    '/dashboard/assets/index.html',
    '/dashboard/assets/../dashboard.js',
    '/dashboard/assets/%2e%2e%2fpaths.ts'
  ]) {
    const missing = await app.inject({ url })
    t.equal(missing.statusCode, 404, `${url}: 404`)
    t.equal(missing.json().errors[0].code, 'route_not_found')
  }
  t.notOk(
    (await app.inject({ url: '/docs' })).headers['content-security-policy'] === DASHBOARD_CSP,
    'other pages keep their own policy'
  )
  t.equal((await app.inject({ url: '/healthz' })).headers['content-security-policy'], undefined, 'and the API none')
})

/** A served module's text, parsed (TypeScript's parser reads JavaScript). */
function parsed(name: string, text: string) {
  return ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
}

/** Every node of a parsed module. */
function nodes(source: ts.SourceFile): ts.Node[] {
  const all: ts.Node[] = []
  const visit = (node: ts.Node): void => {
    all.push(node)
    ts.forEachChild(node, visit)
  }
  visit(source)
  return all
}

/**
 * The script as the browser gets it: the entry module the page names, and every module it
 * imports, each fetched from the server (a module that is not served fails here).
 */
async function servedModules(t: Test, app: FastifyInstance): Promise<Map<string, ts.SourceFile>> {
  const modules = new Map<string, ts.SourceFile>()
  const pending = ['/dashboard/assets/dashboard.js']
  while (pending.length > 0) {
    const url = pending.shift()!
    if (modules.has(url)) continue
    const res = await app.inject({ url })
    t.equal(`${res.statusCode} ${res.headers['content-type']}`, '200 text/javascript; charset=utf-8', `GET ${url}`)
    const source = parsed(url, res.body)
    modules.set(url, source)
    const imports: string[] = []
    for (const node of nodes(source)) {
      const specifier =
        (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier
          ? node.moduleSpecifier
          : ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword
            ? node.arguments[0]
            : undefined
      if (specifier) imports.push(ts.isStringLiteral(specifier) ? specifier.text : specifier.getText(source))
    }
    for (const specifier of imports) {
      const target = new URL(specifier, `http://localhost${url}`)
      if (target.origin === 'http://localhost' && specifier.startsWith('./')) pending.push(target.pathname)
      else t.fail(`${url} imports ${specifier}: a module of its own folder is expected`)
    }
  }
  return modules
}

t.test('the page needs nothing inline and nothing from another host', async (t) => {
  const { app } = await buildTestApp(t)
  const page = (await app.inject({ url: '/dashboard' })).body
  const references = [...page.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]!)
  t.same(references.sort(), ASSETS.map(([url]) => url).sort(), 'it refers to the served assets only')
  t.notMatch(page, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script')
  t.notMatch(page, /<style|\sstyle=|\son[a-z]+=/i, 'no inline style or handler')
  t.notMatch(page, /https?:\/\//, 'no absolute URL')

  const modules = await servedModules(t, app)
  t.same(
    [...modules.keys()].sort(),
    moduleFiles.map((name) => `/dashboard/assets/${name}`).sort(),
    "the entry module's imports are the folder's modules, every one of them"
  )
  for (const [url, source] of modules) {
    // Every string, and every part of a template.
    const absolute = nodes(source).filter(
      (node) =>
        (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) &&
        (node.text.includes('http://') || node.text.includes('https://'))
    )
    t.same(
      absolute.map((node) => node.getText(source)),
      [],
      `${url}: no absolute URL`
    )
  }
})

/** Names whose use would parse HTML or evaluate a string. */
const HTML_OR_EVAL = new Set([
  'innerHTML',
  'outerHTML',
  'insertAdjacentHTML',
  'setHTMLUnsafe',
  'parseHTMLUnsafe',
  'createContextualFragment',
  'DOMParser',
  'write',
  'writeln',
  'eval',
  'Function',
  'localStorage'
])

t.test('the script builds the DOM without parsing HTML, keeps no key, and uses the public API only', async (t) => {
  const { app } = await buildTestApp(t)
  const modules = await servedModules(t, app)
  const schema = buildSchema(graphqlSchema)
  const documents: string[] = []
  const stores: string[] = []
  for (const [url, source] of modules) {
    const used: string[] = []
    for (const node of nodes(source)) {
      // An identifier, a property name, or a property named by a string (`element['innerHTML']`).
      const name = ts.isIdentifier(node)
        ? node.text
        : ts.isElementAccessExpression(node) && ts.isStringLiteralLike(node.argumentExpression)
          ? node.argumentExpression.text
          : undefined
      if (name && HTML_OR_EVAL.has(name)) {
        used.push(`${name} (line ${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1})`)
      }
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        node.expression.name.text === 'setItem'
      ) {
        stores.push(
          `${node.expression.expression.getText(source)}.setItem(${node.arguments.map((a) => a.getText(source)).join(', ')})`
        )
      }
      if (ts.isStringLiteralLike(node) && ['query ', 'mutation '].some((k) => node.text.trimStart().startsWith(k))) {
        documents.push(node.text)
      }
    }
    t.same(used, [], `${url}: no HTML parsing or evaluation, nothing in localStorage`)
  }
  // What it stores is checked in the browser (dashboard-browser.test.ts: the token, its refresh
  // token and its expiry, never the key); here, that nothing else writes to storage.
  t.same(stores, ['sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session))'], 'one thing is stored: the session')

  // Every GraphQL document of the script is valid against the service's schema.
  t.ok(documents.length >= 10, `${documents.length} documents`)
  for (const text of documents) {
    const document = parse(text)
    const name = document.definitions.map((d) => ('name' in d ? d.name?.value : undefined)).join()
    t.same(
      validate(schema, document).map((e) => e.message),
      [],
      `${name} is valid`
    )
  }
})

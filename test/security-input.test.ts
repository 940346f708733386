import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { codes, exampleAccount, importedSetup } from './helpers/accounts.js'
import { tableCounts } from './helpers/database.js'
import { asOperator, gql, operatorToken } from './helpers/graphql.js'
import { concreteUrl, expectErrorShape, postImportBodies, routeRecorder } from './helpers/security.js'

/** A payment vendor on loopback that knows no instruction (404), and records the paths it was asked. */
async function startVendor(t: Test) {
  const paths: string[] = []
  const server = createServer(function vendor(req, res) {
    paths.push(req.url ?? '')
    res.writeHead(404, { 'content-type': 'application/json' }).end('{}')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths }
}

/** Strings an attacker tries: SQL, traversal (plain and encoded), NUL, very long, unusual Unicode. */
const NASTY: Record<string, string> = {
  'sql or': "' OR 1=1 --",
  'sql drop': '"; drop table accounts; --',
  traversal: '../../etc/passwd',
  'encoded traversal': '%2e%2e%2f',
  nul: 'a\u0000b',
  'very long': 'x'.repeat(20_000),
  unicode: 'Zoë 🚀 \u202eevil\u202c ☃ 中文',
  // eslint-disable-next-line no-template-curly-in-string -- a hostile string, not a template
  template: '${jndi:ldap://x}{{7*7}}<script>alert(1)</script>'
}

/** Dot paths of every string leaf of a JSON value. */
function stringPaths(value: unknown, prefix = ''): string[] {
  if (typeof value === 'string') return [prefix]
  if (value === null || typeof value !== 'object') return []
  return Object.entries(value).flatMap(([k, v]) => stringPaths(v, prefix ? `${prefix}.${k}` : k))
}

function setPath(target: any, path: string, value: unknown): any {
  const keys = path.split('.')
  let node = target
  for (const key of keys.slice(0, -1)) node = node[key]
  node[keys.at(-1)!] = value
  return target
}

/** The example account under a number not imported yet (validate would answer `account_already_imported`). */
const freshAccount = () => exampleAccount({ external_account_number: 'EXT-SEC-1' })

const getPath = (target: any, path: string): unknown => path.split('.').reduce((node, key) => node?.[key], target)

/** Never a 500: a normal answer, or a 4xx in the shape. */
function expectHandled(t: Test, res: LightMyRequestResponse, label: string): void {
  t.not(res.statusCode, 500, `${label}: not a server error`)
  if (res.statusCode >= 400) expectErrorShape(t, res, label)
  else t.ok(res.statusCode >= 200 && res.statusCode < 300, `${label}: a success (${res.statusCode})`)
}

/** An entry at the field or at one of its parents (a JSON value reports at the value). */
const reportsAt = (res: LightMyRequestResponse, path: string) =>
  (res.json().errors as Array<{ attr: string | null }>).some(
    (e) => e.attr !== null && (e.attr === path || path.startsWith(e.attr + '.'))
  )

t.test('hostile strings', async (t) => {
  const routes = routeRecorder()
  const vendor = await startVendor(t)
  const setup = await importedSetup(t, {
    onRoute: routes.collect,
    env: { PAYMENT_VENDORS: `ACMEPAY=${vendor.url}`, PAYMENT_VENDOR_RETRIES: '0' }
  })
  const { app, database, client } = setup
  const headers = { authorization: `Token ${setup.tenant.token}` }
  const tablesOf = async () => Object.keys(await tableCounts(database)).sort()
  const tables = await tablesOf()

  t.test('in every string field of the account body: validate answers normally and stores nothing', async (t) => {
    const before = await tableCounts(database)
    const paths = stringPaths(freshAccount())
    t.ok(paths.length > 30, `string fields found (${paths.length})`)
    for (const path of paths) {
      for (const [name, value] of Object.entries(NASTY)) {
        const res = await client.validate(setPath(freshAccount(), path, value))
        const label = `${path} ${name}`
        expectHandled(t, res, label)
        if (res.statusCode === 400) {
          t.equal(res.json().code, 'account_failed_validation', `${label}: account_failed_validation`)
        }
        if (name === 'nul' || name === 'very long') {
          t.ok(res.statusCode === 400 && reportsAt(res, path), `${label}: refused at its attr`)
        }
      }
    }
    t.same(await tableCounts(database), before, 'validate wrote nothing')
    // Free text is data, not code: stored and echoed exactly.
    for (const path of [
      'customers.0.given_name',
      'billing_address.street_address',
      'ledgers.0.historical_statement_transactions.0.note'
    ]) {
      for (const name of ['sql or', 'sql drop', 'traversal', 'unicode', 'template']) {
        const res = await client.validate(setPath(freshAccount(), path, NASTY[name]))
        t.equal(res.statusCode, 200, `${path} ${name}: accepted`)
        t.equal(getPath(res.json(), path), NASTY[name], `${path} ${name}: echoed as sent`)
      }
    }
  })

  t.test('in every path segment and query parameter of the GET endpoints', async (t) => {
    const before = await tableCounts(database)
    const gets = routes.protected().filter((r) => r.method === 'GET' && r.url.startsWith('/v1/data-import/'))
    t.equal(
      gets.length,
      15,
      'the GET endpoints (the three lists, status, summary, failures, failure summary, timeline, error codes; jobs, a job, its results, failed lines and unprocessed lines; reconciliation totals)'
    )
    const raw = [
      '../../etc/passwd',
      '..%2f..%2fetc%2fpasswd',
      '%2e%2e%2f',
      '%2e%2e',
      '%00',
      '%ZZ',
      '%',
      'x'.repeat(5000)
    ]
    for (const route of gets) {
      const names = [...route.url.matchAll(/:(\w+)/g)].map((m) => m[1]!)
      for (const param of names) {
        const others = { supplier: 'ACME_ENERGY', external: 'EXT-000123', id: '00000000-0000-4000-8000-000000000000' }
        for (const [name, value] of Object.entries(NASTY)) {
          const url = concreteUrl(route.url, { ...others, [param]: value })
          const res = await app.inject({ url, headers })
          const label = `${route.url} :${param} ${name}`
          expectHandled(t, res, label)
          if (name === 'very long') {
            t.equal(res.statusCode, 414, `${label}: 414`)
            t.same(
              [res.json().code, codes(res)],
              ['invalid_request', [['max_length', null]]],
              `${label}: max_length at null`
            )
            t.notMatch(res.body, /xxxxxxxxxx/, `${label}: the URL is not echoed`)
          } else if (name === 'nul' && param === 'external') {
            t.same(
              [res.statusCode, res.json().code, codes(res)],
              [400, 'invalid_request', [['invalid', null]]],
              `${label}: invalid`
            )
          } else {
            t.equal(res.statusCode, 404, `${label}: nothing found`)
            t.equal(res.json().code, 'not_found', `${label}: not_found`)
          }
          t.ok(res.headers['x-request-id'], `${label}: X-Request-Id`)
        }
        for (const value of raw) {
          const url = route.url
            .replace(`:${param}`, value)
            .replace(/:(\w+)/g, (_m, n: 'supplier' | 'external' | 'id') => others[n])
          const res = await app.inject({ url, headers })
          const label = `${route.url} :${param} raw ${value.slice(0, 20)}`
          expectHandled(t, res, label)
          t.ok(res.headers['x-request-id'], `${label}: X-Request-Id`)
          if (value === '%ZZ' || value === '%') {
            t.same(
              [res.statusCode, res.json().code, codes(res)],
              [400, 'invalid_request', [['invalid', null]]],
              `${label}: a bad URL`
            )
          }
        }
      }
      if (route.url.endsWith('-account-import-processes/:supplier/')) {
        const base = concreteUrl(route.url, { supplier: 'ACME_ENERGY' })
        for (const [name, value] of Object.entries(NASTY)) {
          const q = encodeURIComponent(value)
          for (const query of [`limit=${q}`, `after=${q}`, `${q}=1`, `limit=1&after=${q}`]) {
            const res = await app.inject({ url: `${base}?${query}`, headers })
            expectHandled(t, res, `${route.url}?${query.slice(0, 30)} (${name})`)
            if (query.startsWith('limit=1&')) {
              t.equal(
                res.statusCode,
                name === 'nul' || name === 'very long' ? 400 : 200,
                `${name}: after is a plain value`
              )
            }
          }
        }
      }
    }
    t.same(await tableCounts(database), before, 'reads changed nothing')
  })

  t.test('as external account numbers: staged as plain data, read back through the path', async (t) => {
    const before = await tableCounts(database)
    let staged = 0
    for (const [name, external] of Object.entries(NASTY)) {
      const res = await client.stage(exampleAccount({ external_account_number: external }))
      expectHandled(t, res, `stage ${name}`)
      if (name === 'nul' || name === 'very long') {
        t.equal(res.statusCode, 400, `${name}: refused`)
        t.ok(reportsAt(res, 'external_account_number'), `${name}: at external_account_number`)
        continue
      }
      t.equal(res.statusCode, 201, `${name}: staged`)
      staged++
      const status = await client.status(external)
      t.equal(status.statusCode, 200, `${name}: its status is found through the percent-encoded path`)
      t.equal(status.json().status, 'UNKNOWN', `${name}: staged, not created`)
    }
    const after = await tableCounts(database)
    t.equal(after.import_processes, before.import_processes! + staged, 'one import process per staged account')
    t.equal(after.accounts, before.accounts, 'no account created')
    const pending = await client.list('pending')
    const externals = pending.json().map((p: { external_account_number: string }) => p.external_account_number)
    for (const [name, external] of Object.entries(NASTY)) {
      if (name !== 'nul' && name !== 'very long') t.ok(externals.includes(external), `${name}: listed exactly as sent`)
    }
    t.same(await tablesOf(), tables, 'every table is still there')
  })

  t.test('in every string field of the post-import bodies', async (t) => {
    const bodies = postImportBodies(setup.ledgerNumber)
    const posts = routes.protected().filter((r) => r.method === 'POST' && bodies[r.url])
    t.equal(posts.length, Object.keys(bodies).length, 'every post-import endpoint with a body in the security helpers')
    const untouched = [
      'accounts',
      'organisations',
      'api_keys',
      'import_suppliers',
      'import_processes',
      'customers',
      'supply_points',
      'ledgers'
    ]
    const before = await tableCounts(database)
    for (const route of posts) {
      const full = { ...setup.ref, ...bodies[route.url] }
      for (const path of stringPaths(full)) {
        for (const [name, value] of Object.entries(NASTY)) {
          const payload = setPath(structuredClone(full), path, value)
          const res = await app.inject({ method: 'POST', url: route.url, headers, payload })
          const label = `${route.url} ${path} ${name}`
          expectHandled(t, res, label)
          if (name === 'nul') t.ok(res.statusCode === 400 && reportsAt(res, path), `${label}: refused at its attr`)
        }
      }
    }
    // The reference goes to the vendor as one percent-encoded path segment: no traversal of its API.
    t.ok(vendor.paths.length >= 6, `the vendor was asked (${vendor.paths.length})`)
    for (const path of vendor.paths) {
      t.match(path, /^\/payment-instructions\/[^/?#]+$/, `one segment: ${path.slice(0, 60)}`)
    }
    t.ok(
      vendor.paths.includes('/payment-instructions/..%2F..%2Fetc%2Fpasswd'),
      'a traversal reference stays inside its segment'
    )
    const after = await tableCounts(database)
    for (const table of untouched) t.equal(after[table], before[table], `${table}: unchanged`)
    t.same(await tablesOf(), tables, 'every table is still there')
  })

  t.test('document paths that leave their folder are refused with invalid_document_path', async (t) => {
    const before = await tableCounts(database)
    const traversals = [
      '../../etc/passwd',
      'letters/../../secret.pdf',
      '/../x.pdf',
      'a/./b.pdf',
      '..',
      '.',
      'a\\..\\b.pdf',
      '%2e%2e%2fetc/passwd',
      'a/%2e%2e/b.pdf',
      '%2E%2E/x',
      '.%2e/x',
      'a%2fb/../../c',
      '%252e%252e/x',
      'file:///etc/passwd',
      's3://other-bucket/x',
      '//evil/x',
      'a//b',
      'a/\u0000/b',
      'a/\n/b',
      ' / ',
      'C:\\x'
    ]
    for (const path of traversals) {
      const note = await setup.post('notes/create/', { notes: [{ document_paths: [{ document_path: path }] }] })
      t.equal(note.statusCode, 400, `note ${JSON.stringify(path)}: 400`)
      t.equal(note.json().code, 'invalid_request', `note ${JSON.stringify(path)}: invalid_request`)
      t.same(
        codes(note),
        [[path.includes('\u0000') ? 'invalid' : 'invalid_document_path', 'notes.0.document_paths.0.document_path']],
        `note ${JSON.stringify(path)}: at the path field`
      )
      const statement = await setup.post('historical-statements/create/', {
        statements: [
          {
            statement_id: 'ST-T',
            bill_period_from_date: '2025-01-01',
            bill_period_to_date: '2025-01-31',
            issued_date: '2025-02-03',
            gross_amount: '1.00',
            statement_path: path
          }
        ]
      })
      t.equal(statement.statusCode, 400, `statement ${JSON.stringify(path)}: 400`)
      t.same(
        codes(statement),
        [[path.includes('\u0000') ? 'invalid' : 'invalid_document_path', 'statements.0.statement_path']],
        `statement ${JSON.stringify(path)}: at the path field`
      )
    }
    t.same(await tableCounts(database), before, 'nothing written')
    const fine = await setup.post('notes/create/', {
      notes: [{ document_paths: [{ document_path: '/letters/2024/welcome..v2 100%.pdf' }] }]
    })
    t.equal(fine.statusCode, 201, 'a plain path with dots inside a name, and a lone %, is fine')
  })

  t.test('a supplier documentRoot hiding a traversal in percent-encoding is refused', async (t) => {
    const token = await operatorToken(app)
    for (const documentRoot of ['imports/%2e%2e', '%2E%2E/%2e%2e/x', 'a%2fb', '%252e%252e']) {
      const res = await gql(
        app,
        'mutation($r: String) { updateImportSupplier(input: {code: "ACME_ENERGY", documentRoot: $r}) { documentRoot } }',
        { r: documentRoot },
        token
      )
      t.equal(res.errors?.[0]?.extensions?.code, 'invalid', `${documentRoot}: invalid`)
    }
    const suppliers = await asOperator(app, '{ importSuppliers { code documentRoot } }')
    t.same(suppliers.importSuppliers, [{ code: 'ACME_ENERGY', documentRoot: '' }], 'unchanged')
  })
})

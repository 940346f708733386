import t from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { desc, gt } from 'drizzle-orm'
import { auditEvents } from '../drizzle/schema/index.js'
import { exampleAccount, importClient, importedSetup } from './helpers/accounts.js'
import { tableCounts } from './helpers/database.js'
import { createTenant } from './helpers/graphql.js'
import {
  concreteUrl,
  postImportBodies,
  routeRecorder,
  SHARED_GET_PATHS,
  UNREACHABLE_VENDOR
} from './helpers/security.js'

const NOWHERE = 'NOPE_ENERGY' // a supplier code nobody has

/**
 * Status, content type, Link and body: what a caller can see of an answer (the request id aside).
 * The supplier code the caller sent may be echoed (in a `detail`): it is replaced, so answers for
 * two codes compare.
 */
function visible(res: LightMyRequestResponse, sentSupplier?: string) {
  const body = sentSupplier ? res.body.split(sentSupplier).join('<supplier>') : res.body
  return { status: res.statusCode, type: res.headers['content-type'], link: res.headers.link, body }
}

t.test('organisation B learns nothing about, and changes nothing of, organisation A', async (t) => {
  const routes = routeRecorder()
  const a = await importedSetup(t, { onRoute: routes.collect, env: UNREACHABLE_VENDOR })
  const { app, database } = a
  // A second account of A, staged but not created; and some post-import data on the created one.
  t.equal((await a.client.stage(exampleAccount({ external_account_number: 'EXT-STAGED' }))).statusCode, 201)
  t.equal((await a.post('notes/create/', { notes: [{ body: 'A secret note' }] })).statusCode, 201)
  const b = await createTenant(app, 'Other', 'OTHER_ENERGY')
  const bHeaders = { authorization: `Token ${b.token}` }
  const asB = (method: 'GET' | 'POST', url: string, payload?: object) =>
    app.inject({ method, url, headers: bHeaders, ...(payload ? { payload } : {}) })

  // A job of A's, with a part, started: B's calls with its id must answer as for an id nobody has.
  const jobHeaders = { authorization: `Token ${a.tenant.token}` }
  const aJob = (
    await app.inject({
      method: 'POST',
      url: '/v1/data-import/import-jobs/',
      headers: jobHeaders,
      payload: { import_supplier: 'ACME_ENERGY', operations_team_name: 'Migrations' }
    })
  ).json().id as string
  await app.inject({
    method: 'PUT',
    url: `/v1/data-import/import-jobs/${aJob}/parts/1/`,
    headers: { ...jobHeaders, 'content-type': 'application/x-ndjson' },
    payload: '{"account": {}}\n'
  })
  const NO_JOB = '00000000-0000-4000-8000-000000000000'

  const before = await tableCounts(database)
  const lastAudit = (await app.db.select({ id: auditEvents.id }).from(auditEvents).orderBy(desc(auditEvents.id)))[0]!.id
  const endpoints = routes.protected().filter((e) => e.url.startsWith('/v1/data-import/'))
  const seen = new Set<string>()
  const bodies = postImportBodies(a.ledgerNumber)

  for (const external of ['EXT-000123', 'EXT-STAGED']) {
    for (const endpoint of endpoints) {
      const label = `${endpoint.method} ${endpoint.url} (${external})`
      if (SHARED_GET_PATHS.includes(endpoint.url)) {
        const asA = await app.inject({
          method: endpoint.method as 'GET',
          url: endpoint.url,
          headers: { authorization: `Token ${a.tenant.token}` }
        })
        const b = await app.inject({ method: endpoint.method as 'GET', url: endpoint.url, headers: bHeaders })
        t.same([b.statusCode, b.body], [200, asA.body], `${label}: the same answer for every organisation`)
        seen.add(`${endpoint.method} ${endpoint.url}`)
        continue
      }
      let foreign: LightMyRequestResponse
      let unknown: LightMyRequestResponse
      let own: LightMyRequestResponse | undefined
      if (endpoint.url.includes('/import-jobs/')) {
        const url = (id: string) => concreteUrl(endpoint.url, { id, part: '2' })
        const ndjson = endpoint.method === 'PUT' ? { 'content-type': 'application/x-ndjson' } : {}
        const payload =
          endpoint.method === 'PUT'
            ? '{"account": {}}\n'
            : endpoint.method === 'POST' && endpoint.url.endsWith('/import-jobs/')
              ? { import_supplier: 'ACME_ENERGY', operations_team_name: 'Migrations' }
              : endpoint.url.endsWith('/start/')
                ? { not_after: '2099-01-01T00:00:00Z' }
                : undefined
        const call = (id: string, supplier: string) =>
          app.inject({
            method: endpoint.method as 'GET',
            url: endpoint.url.endsWith('/import-jobs/')
              ? endpoint.method === 'GET' || endpoint.method === 'HEAD'
                ? `${endpoint.url}?import_supplier=${supplier}`
                : endpoint.url
              : url(id),
            headers: { ...bHeaders, ...ndjson },
            ...(payload === undefined
              ? {}
              : {
                  payload:
                    typeof payload === 'string' || !('import_supplier' in payload)
                      ? payload
                      : { ...payload, import_supplier: supplier }
                })
          })
        foreign = await call(aJob, 'ACME_ENERGY')
        unknown = await call(NO_JOB, NOWHERE)
        if (endpoint.method === 'GET' && !endpoint.url.endsWith('/import-jobs/')) {
          own = await app.inject({ method: 'GET', url: url(aJob), headers: jobHeaders })
        }
      } else if (endpoint.method === 'GET' || endpoint.method === 'HEAD') {
        const url = (supplier: string) => concreteUrl(endpoint.url, { supplier, external })
        foreign = await app.inject({ method: endpoint.method, url: url('ACME_ENERGY'), headers: bHeaders })
        unknown = await app.inject({ method: endpoint.method, url: url(NOWHERE), headers: bHeaders })
        own = await app.inject({
          method: endpoint.method,
          url: url('ACME_ENERGY'),
          headers: { authorization: `Token ${a.tenant.token}` }
        })
        if (endpoint.url.includes(':external')) {
          // B's own supplier with A's external number: as unknown as any other number.
          const mine = await app.inject({
            method: endpoint.method,
            url: concreteUrl(endpoint.url, { supplier: 'OTHER_ENERGY', external }),
            headers: bHeaders
          })
          const never = await app.inject({
            method: endpoint.method,
            url: concreteUrl(endpoint.url, { supplier: 'OTHER_ENERGY', external: 'EXT-NEVER' }),
            headers: bHeaders
          })
          t.same(visible(mine), visible(never), `${label}: A's external number under B's supplier reveals nothing`)
        }
        if (endpoint.url.endsWith('-account-import-processes/:supplier/') && endpoint.method === 'GET') {
          for (const query of ['?limit=1', '?after=A', '?limit=10&after=EXT-000123']) {
            const f = await asB('GET', url('ACME_ENERGY') + query)
            const u = await asB('GET', url(NOWHERE) + query)
            t.same(visible(f, 'ACME_ENERGY'), visible(u, NOWHERE), `${label}${query}: the same as an unknown supplier`)
            t.equal(f.statusCode, 404, `${label}${query}: 404`)
          }
        }
      } else if (endpoint.url.endsWith('/validate-account/') || endpoint.url.endsWith('/create-or-update/')) {
        const account = (supplier: string) =>
          exampleAccount({ import_supplier: supplier, external_account_number: external })
        foreign = await asB('POST', endpoint.url, account('ACME_ENERGY'))
        unknown = await asB('POST', endpoint.url, account(NOWHERE))
      } else if (endpoint.url.endsWith('/account-import-process/process/')) {
        for (const dry_run of [false, true]) {
          const create = (supplier: string) => ({
            external_account_number: external,
            import_supplier_code: supplier,
            operations_team_name: 'Migrations',
            dry_run
          })
          foreign = await asB('POST', endpoint.url, create('ACME_ENERGY'))
          unknown = await asB('POST', endpoint.url, create(NOWHERE))
          t.same(
            visible(foreign, 'ACME_ENERGY'),
            visible(unknown, NOWHERE),
            `${label} dry_run=${dry_run}: the same as an unknown supplier`
          )
        }
      } else if (endpoint.url.endsWith('/batches/')) {
        const batch = (supplier: string) => ({
          import_supplier: supplier,
          operations_team_name: 'Migrations',
          accounts: [
            {
              account: exampleAccount({ import_supplier: supplier, external_account_number: external }),
              notes: [{ body: 'x' }]
            }
          ]
        })
        foreign = await asB('POST', endpoint.url, batch('ACME_ENERGY'))
        unknown = await asB('POST', endpoint.url, batch(NOWHERE))
      } else if (endpoint.url.includes('/:supplier/')) {
        // A POST to a supplier's path (reconciliation): the supplier is in the URL.
        const url = (supplier: string) => concreteUrl(endpoint.url, { supplier })
        const payload = { accounts: [{ external_account_number: external, counts: { notes: 1 } }] }
        foreign = await asB('POST', url('ACME_ENERGY'), payload)
        unknown = await asB('POST', url(NOWHERE), payload)
        own = await app.inject({
          method: 'POST',
          url: url('ACME_ENERGY'),
          headers: { authorization: `Token ${a.tenant.token}` },
          payload
        })
      } else {
        const body = bodies[endpoint.url]
        if (!body) throw new Error(`no body for ${endpoint.url}: add one to postImportBodies`)
        foreign = await asB('POST', endpoint.url, {
          import_supplier: 'ACME_ENERGY',
          external_account_number: external,
          ...body
        })
        unknown = await asB('POST', endpoint.url, {
          import_supplier: NOWHERE,
          external_account_number: external,
          ...body
        })
      }
      seen.add(`${endpoint.method} ${endpoint.url}`)
      t.same(
        visible(foreign!, 'ACME_ENERGY'),
        visible(unknown!, NOWHERE),
        `${label}: the same answer as an unknown supplier`
      )
      t.ok(foreign!.statusCode === 404 || foreign!.statusCode === 400, `${label}: refused (${foreign!.statusCode})`)
      if (foreign!.statusCode === 404 && endpoint.method !== 'HEAD') {
        t.equal(foreign!.json().code, 'not_found', `${label}: not_found`)
        const entry = endpoint.url.includes('/import-jobs/:id/')
          ? 'import_job_does_not_exist'
          : 'import_process_does_not_exist'
        t.same(
          foreign!.json().errors.map((e: { code: string; attr: string | null }) => [e.code, e.attr]),
          [[entry, null]],
          `${label}: ${entry} at null`
        )
      }
      if (foreign!.statusCode === 400) {
        const attr = endpoint.url.endsWith('/process/') ? 'import_supplier_code' : 'import_supplier'
        t.ok(
          foreign!
            .json()
            .errors.some((e: { code: string; attr: string }) => e.code === 'does_not_exist' && e.attr === attr),
          `${label}: does_not_exist at ${attr}`
        )
        t.notMatch(
          foreign!.body,
          /account_already_imported|account_import_skipped|A-[0-9A-F]{8}/,
          `${label}: nothing of A's account`
        )
      }
      if (own && external === 'EXT-000123') {
        t.equal(own.statusCode, 200, `${label}: A itself gets its data (the test is meaningful)`)
      }
    }
  }

  t.same([...seen].sort(), endpoints.map((e) => `${e.method} ${e.url}`).sort(), 'every data-import endpoint was tried')
  // B's refused job actions are in the audit trail: B's own records, naming nothing of A's.
  const { audit_events: auditBefore, ...others } = before
  const { audit_events: auditAfter, ...othersAfter } = await tableCounts(database)
  t.same(othersAfter, others, 'no row of any other table was added or removed')
  const refusals = await app.db.select().from(auditEvents).where(gt(auditEvents.id, lastAudit))
  t.equal(refusals.length, auditAfter! - auditBefore!, 'only new audit records')
  t.ok(refusals.length > 0, "B's refused job actions are recorded")
  t.ok(
    refusals.every(
      (r) =>
        r.outcome === 'refused' &&
        r.actorOrganisation === 'Other' &&
        r.targetId === null &&
        r.targetOrganisationId === null
    ),
    "each refused, B's, without a target of A's"
  )
  // A's data is still all there, unchanged.
  const status = await a.client.status('EXT-000123')
  t.same(status.json(), { status: 'COMPLETED', service_account_number: a.serviceAccountNumber, latest_error: null })
  t.equal((await importClient(app, { ...a.tenant }).list('pending')).json().length, 1, 'A still has its staged account')
})

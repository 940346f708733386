import t from 'tap'
import { SECTION_COUNTS, SECTIONS } from '../schemas/sections.js'
import { LIST_LIMITS } from '../schemas/section-requests.js'
import { exampleAccount, importedSetup, TEAM } from './helpers/accounts.js'
import { gql } from './helpers/graphql.js'

/**
 * Every place that enumerates the post-import sections takes them from the one list: a section
 * added to it (with its folder) appears in each of these without another list to edit.
 */

const camel = (name: string) => name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())

t.test('each section appears in the routes, GraphQL, the account summary, reconciliation and the client', async (t) => {
  const { app, tenant, post, client } = await importedSetup(t)

  const listed = await gql(app, '{ sections { name label count countLabel path } }', {}, tenant.token)
  t.same(
    listed.data?.sections,
    SECTIONS.map((s) => ({
      name: s.name,
      label: s.label,
      count: camel(s.counted.name),
      countLabel: s.counted.label,
      path: s.path
    })),
    'the sections query: every section, in the order they run'
  )
  const anonymous = await gql(app, '{ sections { name } }')
  t.equal(anonymous.errors?.[0]?.extensions?.code, 'not_authenticated', 'sections: for signed-in tokens only')

  const types = await gql(
    app,
    `{ steps: __type(name: "FailureCountsByStep") { fields { name } }
       totals: __type(name: "ReconciliationTotals") { fields { name } } }`,
    {},
    tenant.token
  )
  t.same(
    types.data?.steps.fields.map((f: { name: string }) => f.name),
    ['validate', 'stage', 'create', ...SECTIONS.map((s) => camel(s.name))],
    'the failure summary has a count per section'
  )
  const totalsFields = types.data?.totals.fields.map((f: { name: string }) => f.name)
  for (const name of SECTION_COUNTS) t.ok(totalsFields.includes(camel(name)), `GraphQL totals: ${name}`)

  const openapi = (await app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, unknown> }
  for (const s of SECTIONS) {
    t.ok(openapi.paths[`/v1/data-import${s.path.replace(/\/$/, '')}`], `the API document has ${s.path}`)
    const answer = await post(s.path.slice(1), {})
    t.equal(answer.statusCode, 400, `${s.path} is routed (an empty request is refused by its schema)`)
  }

  const summary = await client.summary('EXT-000123')
  t.same(
    Object.keys(summary.json().counts),
    ['customers', 'supply_points', 'agreements', ...SECTION_COUNTS],
    "the account summary counts the account's own rows, then each section's"
  )
  const totals = await app.inject({
    url: '/v1/data-import/reconciliation/ACME_ENERGY/',
    headers: { authorization: `Token ${tenant.token}` }
  })
  for (const name of SECTION_COUNTS) t.not(totals.json()[name], undefined, `the supplier totals: ${name}`)
  const reconciled = await app.inject({
    method: 'POST',
    url: '/v1/data-import/reconciliation/ACME_ENERGY/',
    headers: { authorization: `Token ${tenant.token}` },
    payload: {
      accounts: [
        { external_account_number: 'EXT-000123', counts: Object.fromEntries(SECTION_COUNTS.map((n) => [n, 1000])) }
      ]
    }
  })
  t.same(
    reconciled.json().differences.map((d: { field: string }) => d.field),
    SECTION_COUNTS.map((name) => `counts.${name}`),
    'reconciliation compares every section count'
  )

  // A section's write is recorded with the section's name as the event's endpoint: by the
  // endpoint, and by a batch creating an account with the section.
  t.equal((await post('notes/create/', { notes: [{ body: 'By the endpoint.' }] })).statusCode, 201)
  const batch = await app.inject({
    method: 'POST',
    url: '/v1/data-import/batches/',
    headers: { authorization: `Token ${tenant.token}` },
    payload: {
      import_supplier: 'ACME_ENERGY',
      operations_team_name: TEAM,
      accounts: [{ account: exampleAccount({ external_account_number: 'S-1' }), notes: [{ body: 'By a batch.' }] }]
    }
  })
  t.equal(batch.statusCode, 200, batch.body)
  for (const external of ['EXT-000123', 'S-1']) {
    const events = await gql(
      app,
      'query($e: String!) { importProcessEvents(importSupplierCode: "ACME_ENERGY", externalAccountNumber: $e) { type detail } }',
      { e: external },
      tenant.token
    )
    const writes = events.data?.importProcessEvents.filter((e: { type: string }) => e.type === 'POST_IMPORT_WRITE')
    t.same(
      writes.map((e: { detail: { endpoint: string } }) => e.detail.endpoint),
      ['notes'],
      `${external}: the write's event names its section`
    )
  }

  // The client's list limits are the request schemas' (written out here, not read from the code).
  t.same(
    Object.fromEntries(LIST_LIMITS),
    { notes: 500, transactions: 1000, historical_agreements: 500, historical_statements: 1000 },
    "the client splits a list at its section's limit"
  )
})

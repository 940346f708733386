import t from 'tap'
import { exampleAccount, importClient, importSetup } from './helpers/accounts.js'
import { asOperator, createTenant, gql, operatorToken } from './helpers/graphql.js'

/**
 * The GraphQL side of failure records: the operator's lists, and the queries organisations
 * may run for their own suppliers only.
 */

const badPhone = (external: string) =>
  exampleAccount({
    external_account_number: external,
    customers: [{ ...exampleAccount().customers[0], landline: 'abcde' }]
  })

t.test('operator lists: organisations, API keys (never the key), operations teams', async (t) => {
  const { app, tenant } = await importSetup(t)
  await createTenant(app, 'Bravo', 'BRAVO')
  const data = await asOperator(
    app,
    '{ organisations { id name } apiKeys { id organisation createdAt revokedAt } operationsTeams { name } }'
  )
  t.same(
    data.organisations.map((o: any) => o.name),
    ['Acme', 'Bravo']
  )
  t.same(
    data.apiKeys.map((k: any) => k.organisation),
    ['Acme', 'Bravo']
  )
  t.equal(data.apiKeys[0].id, tenant.apiKeyId)
  t.match(data.apiKeys[0].createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
  t.equal(data.apiKeys[0].revokedAt, null)
  t.same(data.operationsTeams, [{ name: 'Migrations' }])
  const acme = await asOperator(app, '{ apiKeys(organisation: "Acme") { organisation } }')
  t.same(acme.apiKeys, [{ organisation: 'Acme' }], "one organisation's keys")
  const unknown = await gql(app, '{ apiKeys(organisation: "Nobody") { id } }', {}, await operatorToken(app))
  t.equal(unknown.errors?.[0]?.extensions?.code, 'not_found')
  const key = await gql(app, '{ apiKeys { key } }', {}, tenant.token)
  t.equal(key.status, 400, 'there is no key field to ask for')
})

t.test('organisations read progress, failures, the timeline and events of their own suppliers only', async (t) => {
  const setup = await importSetup(t)
  const { app, tenant, client } = setup
  const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
  await client.validate(badPhone('F-1'))
  await client.validate(badPhone('F-2'))
  await client.stage(exampleAccount({ external_account_number: 'F-3' }))
  await client.create('F-3', { team: 'nope' })
  await importClient(app, other).validate({ ...badPhone('O-1'), import_supplier: 'OTHER_ENERGY' })

  const suppliers = await gql(app, '{ importSuppliers { code organisation } }', {}, tenant.token)
  t.same(suppliers.data?.importSuppliers, [{ code: 'ACME_ENERGY', organisation: 'Acme' }], 'importSuppliers: its own')

  const query = `query($s: String!) {
    migrationProgress(importSupplierCode: $s) { staged pending failed failing }
    migrationFailureSummary(importSupplierCode: $s) { failingAccounts byStep { validate create historicalAgreements } byCode { step code accounts } }
    migrationFailures(importSupplierCode: $s) { externalAccountNumber step failedAt attempts httpStatus code errors { code attr } }
    migrationTimeline(importSupplierCode: $s, minutes: 5) { minute staged created failed }
    importProcessEvents(importSupplierCode: $s, externalAccountNumber: "F-3") { type }
  }`
  const own = await gql(app, query, { s: 'ACME_ENERGY' }, tenant.token)
  t.notOk(own.errors, JSON.stringify(own.errors))
  const data = own.data!
  t.same(data.migrationProgress, { staged: 1, pending: 1, failed: 1, failing: 3 })
  t.same(data.migrationFailureSummary, {
    failingAccounts: 3,
    byStep: { validate: 2, create: 1, historicalAgreements: 0 },
    byCode: [
      { step: 'validate', code: 'invalid_phone_number', accounts: 2 },
      { step: 'create', code: 'operations_team_name_does_not_exist', accounts: 1 }
    ]
  })
  t.same(
    data.migrationFailures.map((f: any) => [f.externalAccountNumber, f.step, f.httpStatus, f.attempts]),
    [
      ['F-1', 'validate', 400, 1],
      ['F-2', 'validate', 400, 1],
      ['F-3', 'create', 400, 1]
    ]
  )
  t.same(data.migrationFailures[0].errors, [{ code: 'invalid_phone_number', attr: 'customers.0.landline' }])
  t.equal(data.migrationTimeline.length, 5)
  t.same(
    data.migrationTimeline.reduce((n: number, m: any) => n + m.failed, 0),
    3
  )
  t.same(
    data.importProcessEvents.map((e: any) => e.type),
    ['STAGED', 'CREATE_ATTEMPTED', 'CREATE_FAILED']
  )

  const fields = [
    'migrationProgress { failing }',
    'migrationFailureSummary { failingAccounts }',
    'migrationFailures { externalAccountNumber }',
    'migrationTimeline { failed }',
    'reconciliation { accountsCreated }',
    'importProcessEvents(externalAccountNumber: "O-1") { type }'
  ]
  for (const supplier of ['OTHER_ENERGY', 'NO_SUCH']) {
    for (const field of fields) {
      const [name, rest] = [field.split(/[ (]/)[0]!, field.slice(field.split(/[ (]/)[0]!.length)]
      const args = rest.startsWith('(')
        ? rest.replace('(', `(importSupplierCode: "${supplier}", `)
        : `(importSupplierCode: "${supplier}")${rest}`
      const foreign = await gql(app, `{ ${name}${args} }`, {}, tenant.token)
      t.same(
        foreign.errors?.map((e) => e.extensions?.code),
        ['not_found'],
        `${supplier} ${name}: as if it did not exist`
      )
      t.notMatch(JSON.stringify(foreign.body), /O-1"|"failing":1/, 'nothing of it shown')
    }
  }
  const operator = await asOperator(
    app,
    'query($s: String!) { migrationFailures(importSupplierCode: $s) { externalAccountNumber } }',
    { s: 'OTHER_ENERGY' }
  )
  t.same(operator.migrationFailures, [{ externalAccountNumber: 'O-1' }], 'the operator sees every supplier')

  const paged = await gql(
    app,
    'query { migrationFailures(importSupplierCode: "ACME_ENERGY", first: 1, after: "F-1:validate", step: "validate") { externalAccountNumber } }',
    {},
    tenant.token
  )
  t.same(paged.data?.migrationFailures, [{ externalAccountNumber: 'F-2' }], 'first, after and step')
  const coded = await gql(
    app,
    'query { migrationFailures(importSupplierCode: "ACME_ENERGY", code: "operations_team_name_does_not_exist") { externalAccountNumber } }',
    {},
    tenant.token
  )
  t.same(coded.data?.migrationFailures, [{ externalAccountNumber: 'F-3' }], 'code')
  for (const args of ['first: 0', 'first: 10001', 'step: "nope"']) {
    const bad = await gql(
      app,
      `query { migrationFailures(importSupplierCode: "ACME_ENERGY", ${args}) { step } }`,
      {},
      tenant.token
    )
    t.equal(bad.errors?.[0]?.extensions?.code, 'invalid', args)
  }
  for (const minutes of [0, 10081]) {
    const bad = await gql(
      app,
      `query { migrationTimeline(importSupplierCode: "ACME_ENERGY", minutes: ${minutes}) { minute } }`,
      {},
      tenant.token
    )
    t.equal(bad.errors?.[0]?.extensions?.code, 'invalid', `minutes ${minutes}`)
  }
  for (const field of ['{ organisations { name } }', '{ apiKeys { id } }', '{ operationsTeams { name } }']) {
    const denied = await gql(app, field, {}, tenant.token)
    t.equal(denied.errors?.[0]?.extensions?.code, 'permission_denied', `${field}: operator only`)
  }
  // The team names are not listed for organisations, but one may check the name it will create accounts with.
  const teams = await gql(
    app,
    '{ yes: operationsTeamExists(name: "Migrations") no: operationsTeamExists(name: "Migration") }',
    {},
    tenant.token
  )
  t.same(teams.data, { yes: true, no: false })
  const anonymous = await gql(app, '{ operationsTeamExists(name: "Migrations") }', {})
  t.equal(anonymous.errors?.[0]?.extensions?.code, 'not_authenticated', 'not without a token')
})

t.test("one account's failure records, for its timeline on the dashboard", async (t) => {
  const { app, tenant, client } = await importSetup(t)
  await client.validate(badPhone('F-1'))
  await client.stage(badPhone('F-1'))
  await client.validate(badPhone('F-10'))
  await client.validate(badPhone('F-2'))
  const query = `query($a: String!) { migrationFailures(importSupplierCode: "ACME_ENERGY", externalAccountNumber: $a) {
    externalAccountNumber step code errors { code attr } } }`
  const one = await gql(app, query, { a: 'F-1' }, tenant.token)
  t.notOk(one.errors, JSON.stringify(one.errors))
  t.same(
    one.data?.migrationFailures.map((f: any) => [f.externalAccountNumber, f.step]),
    [
      ['F-1', 'validate'],
      ['F-1', 'stage']
    ],
    'every step of that account, and no other account (F-10 neither)'
  )
  const none = await gql(app, query, { a: 'F-3' }, tenant.token)
  t.same(none.data?.migrationFailures, [], 'an account without records: an empty list')
  const asOp = await asOperator(
    app,
    'query($a: String!) { migrationFailures(importSupplierCode: "ACME_ENERGY", externalAccountNumber: $a, step: "stage") { step } }',
    { a: 'F-1' }
  )
  t.same(asOp.migrationFailures, [{ step: 'stage' }], 'with the other filters, for the operator too')
})

t.test('the error catalogue: the same fixed texts for organisations and the operator', async (t) => {
  const { app, tenant } = await importSetup(t)
  const rest = await app.inject({
    url: '/v1/data-import/error-codes/',
    headers: { authorization: `Bearer ${tenant.token}` }
  })
  t.equal(rest.statusCode, 200)
  const document = '{ errorCodes { code status kind meaning steps } }'
  const own = await gql(app, document, {}, tenant.token)
  t.notOk(own.errors, JSON.stringify(own.errors))
  t.same(own.data?.errorCodes, rest.json(), "an organisation's token: GET error-codes/ as GraphQL")
  const operator = await asOperator(app, document)
  t.same(operator.errorCodes, rest.json(), "the operator's token: the same (GET error-codes/ refuses it)")
  const anonymous = await gql(app, document, {})
  t.equal(anonymous.errors?.[0]?.extensions?.code, 'not_authenticated', 'not without a token')
})

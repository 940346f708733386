import t from 'tap'
import { buildTestApp, TEST_OPERATOR_KEY } from './helpers/app.js'

/** The whole operator-to-client path over real HTTP (no inject). */
t.test('operator key → token → organisation, key, supplier, team → client token → scoped list', async (t) => {
  const { app } = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

  async function graphql(query: string, variables: Record<string, unknown>, token?: string) {
    const res = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query, variables })
    })
    t.equal(res.status, 200)
    const body = (await res.json()) as { data: any; errors?: unknown }
    t.notOk(body.errors, 'no GraphQL errors')
    return body.data
  }
  const obtain = async (key: string) =>
    (await graphql('mutation ObtainToken($k: String) { obtainToken(input: {APIKey: $k}) { token } }', { k: key }))
      .obtainToken.token as string

  const operator = await obtain(TEST_OPERATOR_KEY)
  for (const name of ['Acme', 'Globex']) {
    await graphql('mutation($n: String!) { createOrganisation(input: {name: $n}) { id name } }', { n: name }, operator)
  }
  const acmeKey = (
    await graphql('mutation { createApiKey(input: {organisation: "Acme"}) { id key organisation } }', {}, operator)
  ).createApiKey
  t.equal(acmeKey.organisation, 'Acme')
  const globexKey = (await graphql('mutation { createApiKey(input: {organisation: "Globex"}) { key } }', {}, operator))
    .createApiKey
  const supplier = (
    await graphql(
      'mutation { createImportSupplier(input: {code: "ACME_ENERGY", organisation: "Acme", documentRoot: "acme/"}) { code organisation status documentRoot sendMigrationEmails maxConcurrentProcessing } }',
      {},
      operator
    )
  ).createImportSupplier
  t.same(supplier, {
    code: 'ACME_ENERGY',
    organisation: 'Acme',
    status: 'Ongoing',
    documentRoot: 'acme',
    sendMigrationEmails: false,
    maxConcurrentProcessing: null
  })
  const team = (
    await graphql('mutation { createOperationsTeam(input: {name: "Migrations"}) { id name } }', {}, operator)
  ).createOperationsTeam
  t.equal(team.name, 'Migrations')

  const acme = await obtain(acmeKey.key)
  const list = await fetch(`${base}/v1/data-import/pending-account-import-processes/ACME_ENERGY/`, {
    headers: { authorization: `Token ${acme}` }
  })
  t.equal(list.status, 200)
  t.match(list.headers.get('x-request-id'), /\S+/)
  t.same(await list.json(), [])

  const globex = await obtain(globexKey.key)
  const foreign = await fetch(`${base}/v1/data-import/pending-account-import-processes/ACME_ENERGY/`, {
    headers: { authorization: `Token ${globex}` }
  })
  t.equal(foreign.status, 404, "another organisation's token gets 404 for Acme's supplier")
  t.equal(((await foreign.json()) as { code: string }).code, 'not_found')
})

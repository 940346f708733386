import t from 'tap'
import { sql } from 'drizzle-orm'
import { exampleAccount, importSetup, jobSettled, TEAM } from './helpers/accounts.js'
import { createTenant, gql, operatorToken } from './helpers/graphql.js'

/**
 * An import job's lines that are not JSON: their results are the contract's (step stage,
 * `invalid_request`, one entry `invalid` at null, no account number), and GraphQL's
 * `ImportJob.notJsonLines` names each with the parser's reason, which quotes nothing of the line.
 * A line that is JSON but no object fails alike and is not listed.
 */

type Setup = Awaited<ReturnType<typeof importSetup>>

const entry = (external: string) => JSON.stringify({ account: exampleAccount({ external_account_number: external }) })
const NOT_JSON = `query($id: ID!, $first: Int) { importJob(id: $id) { id notJsonLines(first: $first) { line reason } } }`

async function ran(setup: Setup, token: string, texts: string[]): Promise<string> {
  const headers = { authorization: `Bearer ${token}` }
  const res = await setup.app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/?import_supplier=ACME_ENERGY&operations_team_name=${TEAM}`,
    headers: { ...headers, 'content-type': 'application/x-ndjson' },
    payload: texts.map((text) => text + '\n').join('')
  })
  if (res.statusCode !== 202) throw new Error(`submit: ${res.body}`)
  const id = res.json().id as string
  await jobSettled(setup.app, token, id, { states: ['COMPLETED'] })
  return id
}

t.test('lines that are not JSON: listed with the reason, their results as the contract says', async (t) => {
  const setup = await importSetup(t)
  const { app, tenant } = setup
  const person = '{"account": {"first_name": "Jane", "last_name": Doe}}'
  const trailing = '{"account": {"external_account_number": "NJ-2"}}x'
  const id = await ran(setup, tenant.token, [entry('NJ-1'), 'not JSON', '42', '', person, trailing, '{"account": {'])

  const res = await gql(app, NOT_JSON, { id }, tenant.token)
  t.same(res.errors, undefined)
  t.same(res.data!.importJob.notJsonLines, [
    { line: 2, reason: "a value was expected at character 1, found 'n'" },
    { line: 5, reason: `a value was expected at character ${person.indexOf('Doe') + 1}, found 'D'` },
    { line: 6, reason: `more follows its JSON value: 'x' at character ${trailing.length}` },
    { line: 7, reason: 'it ends too soon: a property name in double quotes was expected at character 14' }
  ])
  t.notMatch(JSON.stringify(res.data), /Jane|Doe/, 'nothing of the lines quoted')
  const two = await gql(app, NOT_JSON, { id, first: 2 }, tenant.token)
  t.same(
    two.data!.importJob.notJsonLines.map((l: { line: number }) => l.line),
    [2, 5],
    'first: 2'
  )
  for (const first of [0, 101]) {
    const refused = await gql(app, NOT_JSON, { id, first }, tenant.token)
    t.equal(refused.errors?.[0]?.extensions?.code, 'invalid', `first: ${first} refused`)
  }

  // The results are the contract's, unchanged: no message of the service's own in them.
  const results = await app.inject({
    url: `/v1/data-import/import-jobs/${id}/results/?outcome=failed`,
    headers: { authorization: `Bearer ${tenant.token}` }
  })
  const failed = results.body
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
  t.same(failed[0], {
    line: 2,
    external_account_number: null,
    outcome: 'failed',
    service_account_number: null,
    step: 'stage',
    status: 400,
    code: 'invalid_request',
    errors: [{ code: 'invalid', attr: null }]
  })
  t.same(
    failed.map((r: { line: number }) => r.line),
    [2, 3, 5, 6, 7],
    'line 3 (JSON, no object) fails alike'
  )

  // The operator reads them too; another organisation sees no such job.
  const operator = await gql(app, NOT_JSON, { id }, await operatorToken(app))
  t.equal(operator.data!.importJob.notJsonLines.length, 4, "the operator's token")
  const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
  t.equal((await gql(app, NOT_JSON, { id }, other.token)).data!.importJob, null, "another organisation's token")

  // The input erased under the retention rules: the lines are still named, without a reason.
  await app.db.execute(sql`update import_jobs set input_erased_at = now() where id = ${id}::uuid`)
  await app.db.execute(sql`delete from import_job_lines where job_id = ${id}::uuid`)
  const erased = await gql(app, NOT_JSON, { id, first: 1 }, tenant.token)
  t.same(erased.data!.importJob.notJsonLines, [{ line: 2, reason: null }])
})

t.test('a job without such lines lists none, as does a job whose failures are others', async (t) => {
  const setup = await importSetup(t)
  const clean = await ran(setup, setup.tenant.token, [entry('OK-1'), ''])
  const other = await ran(setup, setup.tenant.token, [entry('OK-2'), '42'])
  for (const id of [clean, other]) {
    const res = await gql(setup.app, NOT_JSON, { id }, setup.tenant.token)
    t.same(res.data!.importJob.notJsonLines, [])
  }
})

import t, { type Test } from 'tap'
import { exampleAccount, importSetup, TEAM } from './helpers/accounts.js'
import { createTenant, gql, operatorToken, type Tenant } from './helpers/graphql.js'
import { waitFor } from './helpers/wait.js'

/**
 * Import jobs through GraphQL: `importJobs`, `importJob` and `cancelImportJob`. An organisation's
 * token reads and cancels its own jobs only (another's is as one that does not exist); the
 * operator's reads and cancels every job. Fields are the REST job object's keys in camelCase.
 */

type Setup = Awaited<ReturnType<typeof importSetup>>

const JOB_FIELDS = `id importSupplier state dryRun createdAt startedAt finishedAt notBefore notAfter cancelledReason
  failureCodes { code lines } lines { total done created alreadyImported wouldCreate failed notProcessed skippedBlank }
  ratePerSecond etaSeconds`

/** This process runs no jobs: started ones stay QUEUED. */
const NO_RUNNER = { IMPORT_JOB_WORKERS: '0' }

const entry = (external: string, changes: Record<string, unknown> = {}) =>
  JSON.stringify({ account: exampleAccount({ external_account_number: external, ...changes }) })
const lines = (...texts: string[]) => texts.map((text) => text + '\n').join('')

const camel = (key: string) => key.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())
/** The REST job object with its keys in camelCase, as GraphQL should give it. */
function camelJob(job: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(job).map(([key, value]) => [
      camel(key),
      key === 'lines' ? camelJob(value as Record<string, unknown>) : value
    ])
  )
}

function rest(setup: Setup, tenant: Tenant) {
  const headers = { authorization: `Bearer ${tenant.token}` }
  const url = (path: string) => `/v1/data-import/import-jobs/${path}`
  return {
    /** An OPEN job with one part of these lines. */
    async open(...texts: string[]): Promise<string> {
      const created = await setup.app.inject({
        method: 'POST',
        url: url(''),
        headers,
        payload: { import_supplier: tenant.supplier, operations_team_name: TEAM }
      })
      if (created.statusCode !== 201) throw new Error(`create: ${created.body}`)
      const id = created.json().id as string
      const part = await setup.app.inject({
        method: 'PUT',
        url: url(`${id}/parts/1/`),
        headers: { ...headers, 'content-type': 'application/x-ndjson' },
        payload: lines(...texts)
      })
      if (part.statusCode !== 200) throw new Error(`part: ${part.body}`)
      return id
    },
    /** A job of these lines, created and started. */
    async submit(...texts: string[]): Promise<string> {
      const res = await setup.app.inject({
        method: 'POST',
        url: url(`?import_supplier=${tenant.supplier}&operations_team_name=${TEAM}`),
        headers: { ...headers, 'content-type': 'application/x-ndjson' },
        payload: lines(...texts)
      })
      if (res.statusCode !== 202) throw new Error(`submit: ${res.body}`)
      return res.json().id as string
    },
    async get(id: string): Promise<Record<string, unknown>> {
      return (await setup.app.inject({ url: url(`${id}/`), headers })).json()
    },
    async list(query = ''): Promise<Array<Record<string, unknown>>> {
      return (await setup.app.inject({ url: url(query), headers })).json()
    }
  }
}

const errorCode = (res: Awaited<ReturnType<typeof gql>>) => res.errors?.[0]?.extensions?.code

async function fiveJobs(t: Test) {
  const setup = await importSetup(t, { env: NO_RUNNER })
  const acme = setup.tenant
  const other = await createTenant(setup.app, 'Other', 'OTHER_ENERGY')
  const acmeRest = rest(setup, acme)
  const otherRest = rest(setup, other)
  const open = await acmeRest.open(entry('A-1'), entry('A-2'))
  const queued = await acmeRest.submit(entry('A-3'), '', entry('A-4'))
  const foreign = await otherRest.submit(entry('O-1'))
  const foreignOpen = await otherRest.open(entry('O-2'))
  const latest = await acmeRest.submit(entry('A-5'))
  return { setup, acme, other, acmeRest, otherRest, ids: { open, queued, foreign, foreignOpen, latest } }
}

t.test("an organisation's token reads its own jobs, as the REST API gives them", async (t) => {
  const { setup, acme, acmeRest, ids } = await fiveJobs(t)
  const { app } = setup
  const ask = (query: string, variables: Record<string, unknown> = {}) => gql(app, query, variables, acme.token)

  const all = await ask(`{ importJobs { ${JOB_FIELDS} } }`)
  t.notOk(all.errors, JSON.stringify(all.errors))
  const restList = await acmeRest.list()
  t.equal(restList.length, 3)
  t.same(all.data!.importJobs, restList.map(camelJob), "every field, camelCase: the organisation's three jobs")
  t.same(
    all.data!.importJobs.map((job: { id: string }) => job.id),
    [ids.latest, ids.queued, ids.open],
    'newest first, none of the other organisation'
  )

  const one = await ask(`query($id: ID!) { importJob(id: $id) { ${JOB_FIELDS} } }`, { id: ids.queued })
  t.same(one.data!.importJob, camelJob(await acmeRest.get(ids.queued)), 'importJob: the REST job object')
  t.match(one.data!.importJob, {
    state: 'QUEUED',
    importSupplier: 'ACME_ENERGY',
    dryRun: false,
    lines: { total: 3, done: 0, skippedBlank: 0 },
    etaSeconds: null,
    createdAt: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    startedAt: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/
  })

  for (const [what, id] of [
    ["another organisation's job", ids.foreign],
    ['an id that is no job', '00000000-0000-4000-8000-000000000000'],
    ['an id that is not a UUID', 'not-a-job']
  ]) {
    const res = await ask('query($id: ID!) { importJob(id: $id) { id } }', { id })
    t.same([res.errors, res.data?.importJob], [undefined, null], `${what}: null, as the REST API's 404`)
  }

  const bySupplier = await ask('{ importJobs(importSupplierCode: "ACME_ENERGY") { id } }')
  t.equal(bySupplier.data!.importJobs.length, 3, 'its own supplier')
  for (const code of ['OTHER_ENERGY', 'NO_SUCH_ENERGY']) {
    const res = await ask('query($s: String) { importJobs(importSupplierCode: $s) { id } }', { s: code })
    t.equal(errorCode(res), 'not_found', `${code}: not_found`)
    t.equal(res.errors?.[0]?.message, `Import supplier ${code} does not exist.`, 'the same words for both')
    t.equal(res.data, null)
  }

  const queued = await ask('{ importJobs(state: "QUEUED") { id state } }')
  t.same(
    queued.data!.importJobs,
    [
      { id: ids.latest, state: 'QUEUED' },
      { id: ids.queued, state: 'QUEUED' }
    ],
    'state filters'
  )
  const open = await ask('{ importJobs(state: "OPEN") { id } }')
  t.same(open.data!.importJobs, [{ id: ids.open }])

  const first = await ask('{ importJobs(first: 1) { id } }')
  t.same(first.data!.importJobs, [{ id: ids.latest }], 'first: 1')
  const next = await ask('query($a: String) { importJobs(first: 2, after: $a) { id } }', { a: ids.latest })
  t.same(next.data!.importJobs, [{ id: ids.queued }, { id: ids.open }], 'after: the jobs after that one')
})

t.test('bad arguments are the GraphQL error invalid, and nothing is changed', async (t) => {
  const { setup, acme, acmeRest, ids } = await fiveJobs(t)
  const ask = (query: string, variables: Record<string, unknown> = {}) => gql(setup.app, query, variables, acme.token)
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['first 0', { first: 0 }, /first must be 1–10000/],
    ['first 10001', { first: 10_001 }, /first must be 1–10000/],
    ['an unknown state', { state: 'DONE' }, /state must be one of OPEN, QUEUED, RUNNING, PAUSED, COMPLETED, CANCELLED/],
    ['a state in lower case', { state: 'queued' }, /state must be one of/],
    ['after that is no job id', { after: "x' or 1=1 --" }, /after must be the id of a job/],
    ['a NUL in a string', { s: 'ACME\u0000' }, /well-formed Unicode/]
  ]
  for (const [what, variables, message] of cases) {
    const res = await ask(
      'query($first: Int, $state: String, $after: String, $s: String) { importJobs(first: $first, state: $state, after: $after, importSupplierCode: $s) { id } }',
      variables
    )
    t.equal(errorCode(res), 'invalid', what)
    t.match(res.errors?.[0]?.message, message, `${what}: says what is expected`)
    t.equal(res.data, null)
  }
  const wrongType = await ask('{ importJobs(first: "ten") { id } }')
  t.equal(wrongType.status, 400, 'a wrong type is a malformed document')
  const noId = await ask('mutation { cancelImportJob(input: {}) { id } }')
  t.equal(noId.status, 400, 'cancel without an id: a malformed document')
  t.equal((await acmeRest.get(ids.queued)).state, 'QUEUED', 'nothing was cancelled')
})

t.test("cancel: an organisation its own jobs only, the operator any organisation's", async (t) => {
  const { setup, acme, other, acmeRest, otherRest, ids } = await fiveJobs(t)
  const { app } = setup
  const CANCEL = `mutation($id: ID!) { cancelImportJob(input: {id: $id}) { ${JOB_FIELDS} } }`

  const foreign = await gql(app, CANCEL, { id: ids.foreign }, acme.token)
  t.equal(errorCode(foreign), 'not_found', "another organisation's job: not_found")
  t.same(foreign.data, { cancelImportJob: null })
  const none = await gql(app, CANCEL, { id: '00000000-0000-4000-8000-000000000000' }, acme.token)
  t.equal(errorCode(none), 'not_found', 'an id that is no job: not_found')
  t.equal(foreign.errors?.[0]?.message, none.errors?.[0]?.message, 'the same words for both')
  const restNone = await app.inject({
    url: `/v1/data-import/import-jobs/${ids.foreign}/`,
    headers: { authorization: `Bearer ${acme.token}` }
  })
  t.equal(restNone.statusCode, 404)
  t.same(
    restNone.json().errors,
    [{ detail: none.errors?.[0]?.message, code: 'import_job_does_not_exist', attr: null }],
    "the REST answer's entry: the same words as the GraphQL message"
  )
  t.equal(errorCode(await gql(app, CANCEL, { id: 'nope' }, acme.token)), 'not_found', 'an id that is not a UUID')
  t.equal((await otherRest.get(ids.foreign)).state, 'QUEUED', "the other organisation's job goes on")

  const cancelled = await gql(app, CANCEL, { id: ids.queued }, acme.token)
  t.notOk(cancelled.errors, JSON.stringify(cancelled.errors))
  const after = await acmeRest.get(ids.queued)
  t.same(cancelled.data!.cancelImportJob, camelJob(after), 'the cancelled job, as REST reads it now')
  t.match(after, {
    state: 'CANCELLED',
    cancelled_reason: 'cancelled',
    lines: { total: 3, done: 3, not_processed: 3 },
    finished_at: String
  })
  t.equal(cancelled.data!.cancelImportJob.cancelledReason, 'cancelled', 'cancelledReason: a person cancelled it')

  const again = await gql(app, CANCEL, { id: ids.queued }, acme.token)
  t.equal(errorCode(again), 'invalid', 'a cancelled job cannot be cancelled again')
  t.equal(again.errors?.[0]?.message, 'The import job is CANCELLED: it can no longer be cancelled.')
  t.equal((await acmeRest.get(ids.open)).state, 'OPEN', 'its other jobs are untouched')

  // The operator: every job, to read and to cancel.
  const op = await operatorToken(app)
  const everything = await gql(app, `{ importJobs { ${JOB_FIELDS} } }`, {}, op)
  t.notOk(everything.errors)
  t.same(
    everything.data!.importJobs.map((job: { id: string }) => job.id),
    [ids.latest, ids.foreignOpen, ids.foreign, ids.queued, ids.open],
    "the operator lists every organisation's jobs, newest first"
  )
  t.same(
    everything.data!.importJobs.find((job: { id: string }) => job.id === ids.foreign),
    camelJob(await otherRest.get(ids.foreign)),
    'with the same fields'
  )
  const ofOther = await gql(app, '{ importJobs(importSupplierCode: "OTHER_ENERGY") { id } }', {}, op)
  t.same(ofOther.data!.importJobs, [{ id: ids.foreignOpen }, { id: ids.foreign }], 'any supplier')
  const unknown = await gql(app, '{ importJobs(importSupplierCode: "NO_SUCH_ENERGY") { id } }', {}, op)
  t.equal(errorCode(unknown), 'not_found', 'an unknown supplier: not_found for the operator too')
  const read = await gql(app, 'query($id: ID!) { importJob(id: $id) { id importSupplier } }', { id: ids.foreign }, op)
  t.same(read.data!.importJob, { id: ids.foreign, importSupplier: 'OTHER_ENERGY' }, 'importJob of any organisation')

  const byOperator = await gql(app, CANCEL, { id: ids.foreignOpen }, op)
  t.notOk(byOperator.errors, JSON.stringify(byOperator.errors))
  t.match(byOperator.data!.cancelImportJob, { id: ids.foreignOpen, state: 'CANCELLED', lines: { notProcessed: 1 } })
  t.equal((await otherRest.get(ids.foreignOpen)).state, 'CANCELLED', 'the organisation sees it cancelled')
  t.equal(errorCode(await gql(app, CANCEL, { id: ids.foreignOpen }, op)), 'invalid', 'and not twice')
  t.equal((await otherRest.get(ids.foreign)).state, 'QUEUED', 'only the job named')
  t.ok(other.token)
})

t.test("a job that ran: its counts by outcome, rate and ETA as the REST API's", async (t) => {
  const setup = await importSetup(t)
  const acmeRest = rest(setup, setup.tenant)
  const bad = entry('R-3', { transfer_balance: 'x' })
  const id = await acmeRest.submit(entry('R-1'), '', bad, entry('R-2'), 'not JSON')
  const job = await waitFor(
    'the job completed',
    async () => {
      const job = await acmeRest.get(id)
      return job.state === 'COMPLETED' && job
    },
    { timeoutMs: 60_000 }
  )
  t.equal(job.state, 'COMPLETED')
  const res = await gql(
    setup.app,
    `query($id: ID!) { importJob(id: $id) { ${JOB_FIELDS} } }`,
    { id },
    setup.tenant.token
  )
  t.same(res.data!.importJob, camelJob(await acmeRest.get(id)))
  t.match(res.data!.importJob, {
    state: 'COMPLETED',
    finishedAt: String,
    lines: { total: 5, done: 5, created: 2, failed: 2, skippedBlank: 1, alreadyImported: 0, notProcessed: 0 },
    cancelledReason: null,
    notBefore: null,
    notAfter: null
  })
  t.same(
    res.data!.importJob.failureCodes,
    [
      { code: 'invalid', lines: 1 },
      { code: 'invalid_decimal', lines: 1 }
    ],
    'failureCodes: the codes of the failed lines, ties by code'
  )
})

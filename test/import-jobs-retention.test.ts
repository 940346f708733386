import t, { type Test } from 'tap'
import { sql } from 'drizzle-orm'
import { createRetentionService } from '../src/modules/retention/service.js'
import { exampleAccount, importSetup, jobSettled, TEAM } from './helpers/accounts.js'
import { rowsOf } from './helpers/database.js'
import { asOperator, createTenant, gql, operatorToken } from './helpers/graphql.js'

/**
 * A job's input is personal data: the retention erasure deletes it with the staged payloads,
 * STAGED_DATA_RETENTION_DAYS after the job finished or was cancelled (failed-lines then answers
 * 410 input_erased; the results stay, a cancelled job's not_processed lines included), and the
 * operator's eraseStagedData empties one pair's lines in every job of the supplier at once (a
 * line not yet run then fails with input_erased; failed-lines leaves erased lines out).
 */

type App = Awaited<ReturnType<typeof importSetup>>['app']

const headersOf = (token: string) => ({ authorization: `Bearer ${token}` })
const entry = (external: string, more: Record<string, unknown> = {}) =>
  JSON.stringify({ account: exampleAccount({ external_account_number: external }), ...more })
const invalid = (external: string) =>
  JSON.stringify({ account: exampleAccount({ external_account_number: external, transfer_balance: 'x' }) })
const ndjson = (lines: string[]) => lines.map((line) => line + '\n').join('')

const ERASE = `mutation($s: String!, $e: String!) {
  eraseStagedData(input: {importSupplierCode: $s, externalAccountNumber: $e}) { externalAccountNumber state }
}`

async function submit(app: App, token: string, text: string, supplier = 'ACME_ENERGY') {
  const res = await app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/?import_supplier=${supplier}&operations_team_name=${TEAM}`,
    headers: { ...headersOf(token), 'content-type': 'application/x-ndjson' },
    payload: text
  })
  if (res.statusCode !== 202) throw new Error(`submit: ${res.statusCode} ${res.body}`)
  return res.json().id as string
}

/** An OPEN job holding `text` as its one part (not started). */
async function openJob(app: App, token: string, text: string) {
  const created = await app.inject({
    method: 'POST',
    url: '/v1/data-import/import-jobs/',
    headers: headersOf(token),
    payload: { import_supplier: 'ACME_ENERGY', operations_team_name: TEAM }
  })
  const id = created.json().id as string
  const part = await app.inject({
    method: 'PUT',
    url: `/v1/data-import/import-jobs/${id}/parts/1/`,
    headers: { ...headersOf(token), 'content-type': 'application/x-ndjson' },
    payload: text
  })
  if (part.statusCode !== 200) throw new Error(`part: ${part.statusCode} ${part.body}`)
  return id
}

const get = (app: App, token: string, url: string) =>
  app.inject({ url: `/v1/data-import/import-jobs/${url}`, headers: headersOf(token) })

async function results(app: App, token: string, id: string) {
  return (await get(app, token, `${id}/results/`)).body
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
}

async function lineCount(app: App, id: string): Promise<number> {
  const [row] = rowsOf<{ n: number }>(
    await app.db.execute(sql`select count(*)::int as n from import_job_lines where job_id = ${id}::uuid`)
  )
  return row!.n
}

/** A job started while its supplier is Paused and cancelled before any line ran: every line not_processed. */
async function cancelledJob(t: Test, app: App, token: string, text: string) {
  const id = await openJob(app, token, text)
  await setStatus(app, 'Paused')
  const started = await app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/${id}/start/`,
    headers: headersOf(token)
  })
  t.equal(started.json().state, 'PAUSED')
  const res = await app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/${id}/cancel/`,
    headers: headersOf(token)
  })
  t.equal(res.json().state, 'CANCELLED')
  await setStatus(app, 'Ongoing')
  return id
}

const setStatus = (app: App, status: string) =>
  asOperator(
    app,
    'mutation($c: String!, $s: ImportSupplierStatus!) { updateImportSupplier(input: {code: $c, status: $s}) { code } }',
    { c: 'ACME_ENERGY', s: status }
  )

t.test('the input of a job finished or cancelled past the period is erased; its results stay', async (t) => {
  const { app, tenant } = await importSetup(t, { env: { STAGED_DATA_RETENTION_DAYS: '30' } })
  const token = tenant.token

  // Done: two created, one failed.
  const done = await submit(app, token, ndjson([entry('R-1'), invalid('R-2'), entry('R-3')]))
  await jobSettled(app, token, done)
  // Cancelled before it ran: every line not_processed.
  const cancelled = await cancelledJob(t, app, token, ndjson([entry('R-4'), entry('R-5'), entry('R-6'), entry('R-7')]))
  // Finished within the period.
  const recent = await submit(app, token, ndjson([invalid('R-8')]))
  await jobSettled(app, token, recent)
  // The other two finished 31 days ago.
  await app.db.execute(sql`update import_jobs set finished_at = now() - interval '31 days'
    where id in (${done}::uuid, ${cancelled}::uuid)`)

  const before = {
    done: await results(app, token, done),
    cancelled: await results(app, token, cancelled),
    jobs: (await get(app, token, '')).json()
  }
  t.same(
    before.cancelled.map((r: { outcome: string }) => r.outcome),
    ['not_processed', 'not_processed', 'not_processed', 'not_processed']
  )
  t.equal((await get(app, token, `${done}/failed-lines/`)).body, ndjson([invalid('R-2')]))

  const retention = createRetentionService(app.db, { retentionDays: 30, linesBatchSize: 3 })
  t.same(await retention.eraseJobInputs(), { jobs: 2, lines: 7 }, 'two jobs, their seven lines, three at a time')
  t.equal(await lineCount(app, done), 0, 'no line of the finished job left')
  t.equal(await lineCount(app, cancelled), 0, 'no line of the cancelled job left')
  t.equal(await lineCount(app, recent), 1, 'the job within the period keeps its input')

  const erased = await get(app, token, `${done}/failed-lines/`)
  t.equal(erased.statusCode, 410)
  t.equal(erased.json().code, 'input_erased')
  t.equal((await get(app, token, `${cancelled}/failed-lines/`)).statusCode, 410)
  t.equal((await get(app, token, `${recent}/failed-lines/`)).body, ndjson([invalid('R-8')]), 'kept')

  t.same(await results(app, token, done), before.done, 'the results of the finished job stay')
  t.same(await results(app, token, cancelled), before.cancelled, "the cancelled job's lines stay not_processed")
  t.same((await get(app, token, '')).json(), before.jobs, 'the jobs read as before')

  t.same(await retention.eraseJobInputs(), { jobs: 0, lines: 0 }, 'a second run finds nothing left')
  const [marks] = rowsOf<{ erased: number }>(
    await app.db.execute(sql`select count(*)::int as erased from import_jobs where input_erased_at is not null`)
  )
  t.equal(marks!.erased, 2)

  // The server's own run (STAGED_DATA_RETENTION_DAYS=30) erases the third once its period is over.
  await app.db.execute(sql`update import_jobs set finished_at = now() - interval '31 days' where id = ${recent}::uuid`)
  t.same(await app.retention.eraseJobInputs(), { jobs: 1, lines: 1 })
  t.equal((await get(app, token, `${recent}/failed-lines/`)).statusCode, 410)
})

t.test('a run stopped between batches leaves the job marked; the next run deletes the rest', async (t) => {
  const { app, tenant } = await importSetup(t)
  const id = await submit(app, tenant.token, ndjson(['', '', '', '', '']))
  await jobSettled(app, tenant.token, id)
  let batches = 0
  const retention = createRetentionService(app.db, { retentionDays: 0, linesBatchSize: 2 })
  const first = await retention.eraseJobInputs({ shouldStop: () => ++batches > 1 })
  t.same(first, { jobs: 1, lines: 2 }, 'one batch of two lines')
  t.equal((await get(app, tenant.token, `${id}/failed-lines/`)).statusCode, 410, 'answers 410 from the start')
  t.same(await retention.eraseJobInputs(), { jobs: 0, lines: 3 })
  t.equal(await lineCount(app, id), 0)
})

t.test("eraseStagedData empties the pair's lines in every job of the supplier at once", async (t) => {
  const { app, tenant } = await importSetup(t)
  const token = tenant.token
  const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
  const op = await operatorToken(app)
  const erase = (s: string, e: string) => gql(app, ERASE, { s, e }, op)

  const doneLines = [entry('E-1'), invalid('E-2'), invalid('E-9'), 'E-2 is not JSON']
  const done = await submit(app, token, ndjson(doneLines))
  await jobSettled(app, token, done)
  const cancelled = await cancelledJob(t, app, token, ndjson([entry('E-2'), entry('E-4')]))
  const open = await openJob(
    app,
    token,
    ndjson([entry('E-2'), entry('E-3', { notes: [{ body: 'Hi' }] }), entry('E-5')])
  )
  const foreign = await submit(app, other.token, ndjson([invalid('E-2')]), 'OTHER_ENERGY')
  await jobSettled(app, other.token, foreign)

  const before = { done: await results(app, token, done), cancelled: await results(app, token, cancelled) }
  t.equal((await get(app, token, `${done}/failed-lines/`)).body, ndjson(doneLines.slice(1)))

  // E-2 was never staged (its account is invalid): no process, but lines in three jobs.
  const res = await erase('ACME_ENERGY', 'E-2')
  t.equal(res.errors?.[0]?.extensions?.code, 'not_found')
  t.match(res.errors?.[0]?.message, /Its 3 lines in import jobs were erased\./)
  // E-3 only in the open job; E-1 imported: its process and its line.
  t.match((await erase('ACME_ENERGY', 'E-3')).errors?.[0]?.message, /Its 1 line in import jobs was erased\./)
  t.same((await erase('ACME_ENERGY', 'E-1')).data, {
    eraseStagedData: { externalAccountNumber: 'E-1', state: 'IMPORTED' }
  })
  const [event] = rowsOf<{ detail: unknown }>(
    await app.db.execute(sql`select e.detail from import_events e join import_processes p on p.id = e.import_process_id
      where p.external_account_number = 'E-1' and e.type = 'STAGED_DATA_ERASED'`)
  )
  t.same(event!.detail, { payloadErased: true, jobLinesErased: 1 })

  const texts = rowsOf<{ external: string | null; text: string; foreign: boolean }>(
    await app.db.execute(sql`select l.external_account_number as external, l.text, j.organisation_id <> (
        select organisation_id from import_jobs where id = ${done}::uuid) as foreign
      from import_job_lines l join import_jobs j on j.id = l.job_id order by j.created_at, l.idx`)
  )
  t.same(
    texts.filter((line) => line.text === '').map((line) => line.external),
    ['E-1', 'E-2', 'E-2', 'E-2', 'E-3'],
    "the pairs' lines in the supplier's jobs are empty"
  )
  t.ok(
    texts.some((line) => line.foreign && line.text === invalid('E-2')),
    "another organisation's supplier's line naming E-2 is kept"
  )
  t.ok(
    texts.some((line) => line.text === 'E-2 is not JSON'),
    'a line whose number is unknown (not JSON) is kept'
  )

  t.equal(
    (await get(app, token, `${done}/failed-lines/`)).body,
    ndjson([invalid('E-9'), 'E-2 is not JSON']),
    'failed lines leave the erased one out'
  )
  t.same(await results(app, token, done), before.done, 'results stay')
  t.same(await results(app, token, cancelled), before.cancelled, "the cancelled job's lines stay not_processed")
  t.equal(
    (await get(app, other.token, `${foreign}/failed-lines/`)).body,
    ndjson([invalid('E-2')]),
    "the other supplier's job keeps its line"
  )

  // The open job, started now: its erased lines fail with input_erased and nothing of them runs.
  const started = await app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/${open}/start/`,
    headers: headersOf(token)
  })
  t.equal(started.statusCode, 202)
  t.match(await jobSettled(app, token, open), {
    state: 'COMPLETED',
    lines: { total: 3, done: 3, created: 1, failed: 2 }
  })
  t.same(
    (await results(app, token, open)).map((r: Record<string, unknown>) => [
      r.line,
      r.outcome,
      r.external_account_number,
      r.status,
      r.code
    ]),
    [
      [1, 'failed', 'E-2', 410, 'input_erased'],
      [2, 'failed', 'E-3', 410, 'input_erased'],
      [3, 'created', 'E-5', null, null]
    ]
  )
  const [counts] = rowsOf<{ processes: number; notes: number }>(
    await app.db.execute(sql`select (select count(*)::int from import_processes
        where external_account_number in ('E-2', 'E-3')) as processes, (select count(*)::int from notes) as notes`)
  )
  t.same(counts, { processes: 0, notes: 0 }, 'the erased lines staged nothing')
  t.equal((await get(app, token, `${open}/failed-lines/`)).body, '', 'no failed line left to give back')
})

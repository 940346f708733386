import t from 'tap'
import { sql } from 'drizzle-orm'
import { exampleAccount, importSetup, TEAM } from './helpers/accounts.js'
import { rowsOf } from './helpers/database.js'
import { createTenant, type Tenant } from './helpers/graphql.js'

/**
 * Import jobs, before they run: create, parts (whole lines, replaced when sent again, limits),
 * start (line numbering, the organisation's limit), read, list, cancel; a refusal stores nothing.
 */

type Setup = Awaited<ReturnType<typeof importSetup>>

function jobsClient(setup: Setup, tenant: Tenant = setup.tenant) {
  const headers = { authorization: `Bearer ${tenant.token}` }
  const url = (path: string) => `/v1/data-import/import-jobs/${path}`
  return {
    create: (body: unknown = { import_supplier: tenant.supplier, operations_team_name: TEAM }) =>
      setup.app.inject({ method: 'POST', url: url(''), headers, payload: body as object }),
    createAndStart: (lines: string, query = `import_supplier=${tenant.supplier}&operations_team_name=${TEAM}`) =>
      setup.app.inject({
        method: 'POST',
        url: url(`?${query}`),
        headers: { ...headers, 'content-type': 'application/x-ndjson' },
        payload: lines
      }),
    part: (id: string, part: number | string, lines: string, contentType = 'application/x-ndjson') =>
      setup.app.inject({
        method: 'PUT',
        url: url(`${id}/parts/${part}/`),
        headers: { ...headers, 'content-type': contentType },
        payload: lines
      }),
    start: (id: string, window?: Record<string, unknown>) =>
      setup.app.inject({
        method: 'POST',
        url: url(`${id}/start/`),
        headers,
        ...(window === undefined ? {} : { payload: window })
      }),
    cancel: (id: string) => setup.app.inject({ method: 'POST', url: url(`${id}/cancel/`), headers }),
    get: (id: string) => setup.app.inject({ method: 'GET', url: url(`${id}/`), headers }),
    list: (query = '') => setup.app.inject({ method: 'GET', url: url(query), headers }),
    results: (id: string, query = '') =>
      setup.app.inject({ method: 'GET', url: url(`${id}/results/${query}`), headers }),
    failedLines: (id: string) => setup.app.inject({ method: 'GET', url: url(`${id}/failed-lines/`), headers })
  }
}

const entry = (external: string) => JSON.stringify({ account: exampleAccount({ external_account_number: external }) })
const lines = (...texts: string[]) => texts.map((text) => text + '\n').join('')
const errorsOf = (res: { json(): unknown }) =>
  ((res.json() as { errors: Array<{ code: string; attr: string | null }> }).errors ?? []).map((e) => [e.code, e.attr])

async function counts(setup: Setup) {
  const [row] = rowsOf<{ jobs: number; parts: number; lines: number }>(
    await setup.app.db.execute(sql`select (select count(*)::int from import_jobs) as jobs,
      (select count(*)::int from import_job_parts) as parts, (select count(*)::int from import_job_lines) as lines`)
  )
  return row!
}

const WHOLE_SECONDS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/

/** This process runs no jobs: started ones stay QUEUED, as the tests of the states before running need. */
const NO_RUNNER = { IMPORT_JOB_WORKERS: '0' }

t.test('a job is created OPEN, takes parts, starts QUEUED with its lines numbered in part order', async (t) => {
  const setup = await importSetup(t, { env: NO_RUNNER })
  const jobs = jobsClient(setup)
  const created = await jobs.create()
  t.equal(created.statusCode, 201, created.body)
  const job = created.json()
  t.match(job, {
    import_supplier: 'ACME_ENERGY',
    state: 'OPEN',
    dry_run: false,
    started_at: null,
    finished_at: null,
    not_before: null,
    not_after: null,
    cancelled_reason: null,
    failure_codes: [],
    lines: { total: 0, done: 0 },
    rate_per_second: 0,
    eta_seconds: null
  })

  // Part 2 before part 1; part 1 sent twice (the second replaces the first); \r\n and a blank line.
  const two = await jobs.part(job.id, 2, lines(entry('A-3'), '', entry('A-4')))
  t.same(two.json(), { part: 2, lines: 3, bytes: Buffer.byteLength(lines(entry('A-3'), '', entry('A-4'))) })
  t.equal((await jobs.part(job.id, 1, lines('junk', 'junk', 'junk', 'junk'))).statusCode, 200)
  const one = await jobs.part(job.id, 1, `${entry('A-1')}\r\n${entry('A-2')}\n`)
  t.equal(one.statusCode, 200, one.body)
  t.equal(one.json().lines, 2)
  t.equal((await jobs.get(job.id)).json().lines.total, 5, 'the replaced part counts once')
  t.equal((await counts(setup)).lines, 5, "the replaced upload's lines are gone")

  const started = await jobs.start(job.id)
  t.equal(started.statusCode, 202, started.body)
  t.match(started.json(), { state: 'QUEUED', lines: { total: 5 } })
  // UTC, whole seconds, as every date-time of the API.
  t.match(started.json(), { created_at: WHOLE_SECONDS, started_at: WHOLE_SECONDS, finished_at: null })
  const numbered = rowsOf<{ line: number; external: string | null; text: string }>(
    await setup.app.db.execute(sql`select p.line_offset + l.idx as line, l.external_account_number as external, l.text
      from import_job_parts p join import_job_lines l on l.upload_id = p.upload_id order by 1`)
  )
  t.same(
    numbered.map((row) => [row.line, row.external, row.text === '' ? '' : 'entry']),
    [
      [1, 'A-1', 'entry'],
      [2, 'A-2', 'entry'],
      [3, 'A-3', 'entry'],
      [4, null, ''],
      [5, 'A-4', 'entry']
    ],
    'the \\r before \\n is dropped'
  )

  const late = await jobs.part(job.id, 3, lines(entry('A-5')))
  t.equal(late.statusCode, 400)
  t.same(errorsOf(late), [['import_job_not_open', null]])
  t.equal((await counts(setup)).lines, 5, 'a part after start stores nothing')
  const again = await jobs.start(job.id)
  t.equal(again.statusCode, 400)
  t.same(errorsOf(again), [['import_job_not_open', null]])
})

t.test('bad parts are refused whole and store nothing', async (t) => {
  const setup = await importSetup(t, { env: { BODY_LIMIT_BYTES: '4096', IMPORT_JOB_MAX_LINES: '3' } })
  const jobs = jobsClient(setup)
  const job = (await jobs.create()).json()

  const partial = await jobs.part(job.id, 1, `${entry('A-1')}\n{"account":`)
  t.equal(partial.statusCode, 400)
  t.match(partial.json(), { code: 'invalid_request' })
  t.same(errorsOf(partial), [['incomplete_line', null]])

  const empty = await jobs.part(job.id, 1, '')
  t.same(errorsOf(empty), [['incomplete_line', null]], 'an empty part holds no whole line')

  const tooBig = await jobs.part(job.id, 1, lines(...Array.from({ length: 3 }, () => 'x'.repeat(2000))))
  t.equal(tooBig.statusCode, 413)
  t.match(tooBig.json(), { code: 'payload_too_large' })

  const notUtf8 = await setup.app.inject({
    method: 'PUT',
    url: `/v1/data-import/import-jobs/${job.id}/parts/1/`,
    headers: { authorization: `Bearer ${setup.tenant.token}`, 'content-type': 'application/x-ndjson' },
    payload: Buffer.from([0x7b, 0xff, 0x7d, 0x0a])
  })
  t.equal(notUtf8.statusCode, 400)
  t.same(errorsOf(notUtf8), [['invalid', null]])

  t.equal((await jobs.part(job.id, 1, lines('a', 'b'))).statusCode, 200)
  const over = await jobs.part(job.id, 2, lines('c', 'd'))
  t.equal(over.statusCode, 413)
  t.same(errorsOf(over), [['too_many_lines', null]])
  t.equal((await jobs.part(job.id, 1, lines('a', 'b', 'c'))).statusCode, 200, 'replacing a part counts it once')

  for (const part of [0, 10001, 'x']) {
    const res = await jobs.part(job.id, part, lines('a'))
    t.equal(res.statusCode, 400, `part ${part}`)
    t.same(
      errorsOf(res).map(([, attr]) => attr),
      ['part'],
      `part ${part}: its attr`
    )
  }
  // Only a part number written as the plain integer: another spelling of 1 is not part 1.
  for (const part of ['1.0', '+1', '%2B1', '01', '1e0', '0x1', '%201', '1%20']) {
    const res = await jobs.part(job.id, part, lines('z'))
    t.equal(res.statusCode, 400, `part ${part}: 400`)
    t.match(res.json(), { code: 'invalid_request' }, `part ${part}: the error shape`)
    t.same(errorsOf(res), [['invalid', 'part']], `part ${part}: invalid at part`)
  }
  const json = await jobs.part(job.id, 2, lines('a'), 'application/json')
  t.equal(json.statusCode, 415, json.body)
  t.match(json.json(), { code: 'unsupported_media_type', errors: [] })
  t.match(json.json().detail, /application\/x-ndjson/, 'the 415 names what a part takes')
  t.notMatch(json.json().detail, /application\/json/, 'and not what it does not')

  t.same(await counts(setup), { jobs: 1, parts: 1, lines: 3 }, 'only the good part is stored')
})

t.test('a create names both media types it takes when sent another', async (t) => {
  const setup = await importSetup(t)
  const res = await setup.app.inject({
    method: 'POST',
    url: '/v1/data-import/import-jobs/',
    headers: { authorization: `Bearer ${setup.tenant.token}`, 'content-type': 'text/csv' },
    payload: 'a,b\n'
  })
  t.equal(res.statusCode, 415, res.body)
  t.match(res.json().detail, /application\/json[\s\S]*application\/x-ndjson/, res.json().detail)
  const validate = await setup.app.inject({
    method: 'POST',
    url: '/v1/data-import/validate-account/',
    headers: { authorization: `Bearer ${setup.tenant.token}`, 'content-type': 'application/x-ndjson' },
    payload: '{}\n'
  })
  t.equal(validate.statusCode, 415, validate.body)
  t.match(validate.json().detail, /application\/json/, 'an account route takes JSON')
  t.notMatch(validate.json().detail, /ndjson/, 'and only JSON')
})

t.test('whole-request checks of a create store nothing; unknown and foreign jobs are 404', async (t) => {
  const setup = await importSetup(t)
  const jobs = jobsClient(setup)
  const other = await createTenant(setup.app, 'Other', 'OTHER_ENERGY')
  const theirs = jobsClient(setup, other)

  const unknown = await jobs.create({ import_supplier: 'NOPE', operations_team_name: 'Nobody' })
  t.equal(unknown.statusCode, 400)
  t.same(errorsOf(unknown), [
    ['does_not_exist', 'import_supplier'],
    ['operations_team_name_does_not_exist', 'operations_team_name']
  ])
  const foreign = await jobs.create({ import_supplier: 'OTHER_ENERGY', operations_team_name: TEAM })
  t.same(errorsOf(foreign), [['does_not_exist', 'import_supplier']])
  const missing = await jobs.create({ import_supplier: 'ACME_ENERGY' })
  t.equal(missing.statusCode, 400)
  t.same(
    errorsOf(missing).map(([, attr]) => attr),
    ['operations_team_name']
  )
  const oneCall = await jobs.createAndStart(lines(entry('A-1')), `import_supplier=NOPE&operations_team_name=${TEAM}`)
  t.equal(oneCall.statusCode, 400)
  t.same(errorsOf(oneCall), [['does_not_exist', 'import_supplier']])
  const oneCallPartial = await jobs.createAndStart(entry('A-1'))
  t.same(errorsOf(oneCallPartial), [['incomplete_line', null]])
  t.same(await counts(setup), { jobs: 0, parts: 0, lines: 0 }, 'nothing stored by any refusal')

  const job = (await jobs.create()).json()
  for (const res of [
    await theirs.get(job.id),
    await theirs.part(job.id, 1, lines('a')),
    await theirs.start(job.id),
    await theirs.cancel(job.id),
    await theirs.results(job.id),
    await theirs.failedLines(job.id),
    await jobs.get('00000000-0000-0000-0000-000000000000'),
    await jobs.get('not-a-job')
  ]) {
    t.equal(res.statusCode, 404, res.body)
    t.same(errorsOf(res), [['import_job_does_not_exist', null]])
  }
  t.same((await theirs.list()).json(), [], "another organisation's list does not hold it")
  const foreignList = await theirs.list('?import_supplier=ACME_ENERGY')
  t.equal(foreignList.statusCode, 404)
})

t.test('the one-call form creates and starts a job of one part', async (t) => {
  const setup = await importSetup(t, { env: NO_RUNNER })
  const jobs = jobsClient(setup)
  const res = await jobs.createAndStart(lines(entry('A-1'), entry('A-2')))
  t.equal(res.statusCode, 202, res.body)
  t.match(res.json(), { state: 'QUEUED', lines: { total: 2 } })
})

t.test('an organisation has at most IMPORT_JOBS_PER_ORGANISATION jobs going at once', async (t) => {
  const setup = await importSetup(t, { env: { ...NO_RUNNER, IMPORT_JOBS_PER_ORGANISATION: '2' } })
  const jobs = jobsClient(setup)
  const ids: string[] = []
  for (let i = 0; i < 3; i++) {
    const job = (await jobs.create()).json()
    await jobs.part(job.id, 1, lines(entry(`A-${i}`)))
    ids.push(job.id)
  }
  t.equal((await jobs.start(ids[0]!)).statusCode, 202)
  t.equal((await jobs.start(ids[1]!)).statusCode, 202)
  const third = await jobs.start(ids[2]!)
  t.equal(third.statusCode, 429)
  t.match(third.json(), { code: 'too_many_jobs' })
  t.ok(Number(third.headers['retry-after']) > 0, 'Retry-After says when to ask again')
  t.equal((await jobs.get(ids[2]!)).json().state, 'OPEN', 'the refused job stays OPEN')
  t.equal((await jobs.cancel(ids[0]!)).statusCode, 200)
  t.equal((await jobs.start(ids[2]!)).statusCode, 202, 'a cancelled job frees its place')
})

t.test('cancel: lines not begun are not_processed; a finished job cannot be cancelled', async (t) => {
  const setup = await importSetup(t, { env: NO_RUNNER })
  const jobs = jobsClient(setup)
  const job = (await jobs.create()).json()
  await jobs.part(job.id, 1, lines(entry('A-1'), '', entry('A-2')))
  await jobs.start(job.id)
  const cancelled = await jobs.cancel(job.id)
  t.equal(cancelled.statusCode, 200)
  t.match(cancelled.json(), { state: 'CANCELLED', lines: { total: 3, done: 3, not_processed: 3 } })
  t.match(cancelled.json(), { finished_at: WHOLE_SECONDS, cancelled_reason: 'cancelled' }, 'a person cancelled it')
  const results = await jobs.results(job.id)
  t.equal(results.headers['content-type'], 'application/x-ndjson; charset=utf-8')
  t.same(
    results.body
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line)),
    [1, 2, 3].map((line) => ({
      line,
      external_account_number: line === 1 ? 'A-1' : line === 3 ? 'A-2' : null,
      outcome: 'not_processed',
      service_account_number: null,
      step: null,
      status: null,
      code: null,
      errors: null
    }))
  )
  t.equal((await jobs.failedLines(job.id)).body, '', 'no failed lines')
  const again = await jobs.cancel(job.id)
  t.equal(again.statusCode, 400)
  t.same(errorsOf(again), [['import_job_not_cancellable', null]])
})

t.test('the list: newest first, filtered, paged with Link', async (t) => {
  const setup = await importSetup(t)
  const jobs = jobsClient(setup)
  const ids: string[] = []
  for (let i = 0; i < 3; i++) ids.push((await jobs.create()).json().id)
  await jobs.cancel(ids[0]!)
  const all = await jobs.list()
  t.same(
    all.json().map((job: { id: string }) => job.id),
    [...ids].reverse()
  )
  const page = await jobs.list('?limit=2')
  t.same(
    page.json().map((job: { id: string }) => job.id),
    [ids[2], ids[1]]
  )
  t.equal(page.headers.link, `</v1/data-import/import-jobs/?limit=2&after=${ids[1]}>; rel="next"`)
  const next = await jobs.list(`?limit=2&after=${ids[1]}`)
  t.same(
    next.json().map((job: { id: string }) => job.id),
    [ids[0]]
  )
  t.notOk(next.headers.link)
  t.same(
    (await jobs.list('?state=CANCELLED')).json().map((job: { id: string }) => job.id),
    [ids[0]]
  )
  t.equal((await jobs.list('?import_supplier=ACME_ENERGY')).json().length, 3)
  t.equal((await jobs.list('?state=DONE')).statusCode, 400)
})

t.test('a part that would take the job past IMPORT_JOB_MAX_BYTES is refused whole', async (t) => {
  const setup = await importSetup(t, { env: { ...NO_RUNNER, IMPORT_JOB_MAX_BYTES: '2048' } })
  const jobs = jobsClient(setup)
  const job = (await jobs.create()).json()
  t.equal((await jobs.part(job.id, 1, lines('x'.repeat(1500)))).statusCode, 200)
  const over = await jobs.part(job.id, 2, lines('y'.repeat(600)))
  t.equal(over.statusCode, 413)
  t.match(over.json(), { code: 'payload_too_large' })
  t.same(errorsOf(over), [['job_too_large', null]])
  t.same(await counts(setup), { jobs: 1, parts: 1, lines: 1 }, 'the refused part left nothing')
  t.equal((await jobs.get(job.id)).json().lines.total, 1)
})

t.test('an OPEN job never started is cancelled after a day, a PAUSED one after 30 days', async (t) => {
  const setup = await importSetup(t, { env: NO_RUNNER })
  const jobs = jobsClient(setup)
  const open = (await jobs.create()).json()
  const fresh = (await jobs.create()).json()
  const paused = (await jobs.create()).json()
  await jobs.part(paused.id, 1, lines(entry('A-1')))
  await jobs.start(paused.id)
  await setup.app.db.execute(sql`update import_jobs set state_changed_at = now() - interval '25 hours'
    where id in (${open.id}::uuid, ${fresh.id}::uuid)`)
  await setup.app.db.execute(sql`update import_jobs set state_changed_at = now() - interval '23 hours'
    where id = ${fresh.id}::uuid`)
  // The supplier paused all that time (its status set straight in the table: the operator's mutation would pause the other jobs too).
  await setup.app.db.execute(sql`update import_suppliers set status = 'Paused' where code = 'ACME_ENERGY'`)
  await setup.app.db.execute(sql`update import_jobs set state = 'PAUSED', state_changed_at = now() - interval '31 days'
    where id = ${paused.id}::uuid`)
  // What the runners do every few seconds, done once here (this app runs none).
  const { createImportJobsRepository } = await import('../src/modules/import-jobs/repository.js')
  await createImportJobsRepository(setup.app.db).settleStates()
  t.match((await jobs.get(open.id)).json(), { state: 'CANCELLED', cancelled_reason: 'never_started' }, 'a day OPEN')
  t.match((await jobs.get(fresh.id)).json(), { state: 'OPEN', cancelled_reason: null }, 'less than a day OPEN')
  t.match(
    (await jobs.get(paused.id)).json(),
    { state: 'CANCELLED', cancelled_reason: 'paused_too_long', lines: { not_processed: 1 } },
    '30 days PAUSED'
  )
})

/** A date-time `seconds` from now, in UTC whole seconds. */
const fromNow = (seconds: number) =>
  new Date(Math.floor(Date.now() / 1000 + seconds) * 1000).toISOString().slice(0, 19) + 'Z'

t.test('a start window: kept in UTC whole seconds, the job QUEUED until then and not counted till then', async (t) => {
  const setup = await importSetup(t, { env: { ...NO_RUNNER, IMPORT_JOBS_PER_ORGANISATION: '1' } })
  const jobs = jobsClient(setup)
  const ids: string[] = []
  for (let i = 0; i < 4; i++) {
    const job = (await jobs.create()).json()
    await jobs.part(job.id, 1, lines(entry(`W-${i}`)))
    ids.push(job.id)
  }
  // An hour ahead, written in another zone with a fraction of a second: UTC, whole seconds.
  const inAnHour = new Date(Math.floor(Date.now() / 1000 + 3600) * 1000)
  const local = new Date(inAnHour.getTime() + 2 * 3600_000).toISOString().slice(0, 19) + '.750+02:00'
  const scheduled = await jobs.start(ids[0]!, { not_before: local, not_after: null })
  t.equal(scheduled.statusCode, 202, scheduled.body)
  t.match(scheduled.json(), {
    state: 'QUEUED',
    not_before: inAnHour.toISOString().slice(0, 19) + 'Z',
    not_after: null,
    started_at: WHOLE_SECONDS
  })
  // The limit is 1: the job waiting for its window does not count, nor is it refused by it.
  const now = await jobs.start(ids[1]!)
  t.equal(now.statusCode, 202, 'a job waiting for its window is not counted')
  t.match(now.json(), { not_before: null, not_after: null })
  const second = await jobs.start(ids[2]!, { not_before: fromNow(7200), not_after: fromNow(9000) })
  t.equal(second.statusCode, 202, 'a job with a window ahead is started whatever the limit')
  t.match(second.json(), { state: 'QUEUED', not_before: fromNow(7200).slice(0, 14), not_after: String })
  const busy = await jobs.start(ids[3]!, { not_before: fromNow(-60) })
  t.equal(busy.statusCode, 429, 'a not_before in the past is now: it counts, and the limit is reached')
  t.match((await jobs.get(ids[3]!)).json(), { state: 'OPEN', not_before: null, started_at: null })
  t.equal((await jobs.cancel(ids[1]!)).statusCode, 200)
  const past = await jobs.start(ids[3]!, { not_before: fromNow(-60), not_after: fromNow(600) })
  t.equal(past.statusCode, 202, past.body)
  const body = past.json()
  t.ok(
    Date.parse(body.not_before) >= Date.parse(body.started_at) - 1000 && Date.parse(body.not_before) <= Date.now(),
    'a not_before in the past is stored as now'
  )
  t.equal(body.not_after, fromNow(600).slice(0, 15) + body.not_after.slice(15), 'not_after as given')
})

t.test('a bad start window is refused with its error, the job left OPEN', async (t) => {
  const setup = await importSetup(t, { env: NO_RUNNER })
  const jobs = jobsClient(setup)
  const job = (await jobs.create()).json()
  await jobs.part(job.id, 1, lines(entry('B-1')))
  const cases: Array<[string, Record<string, unknown>, Array<[string, string | null]>]> = [
    ['not_before more than 7 days ahead', { not_before: fromNow(7 * 86400 + 120) }, [['invalid', 'not_before']]],
    [
      'not_after before not_before',
      { not_before: fromNow(3600), not_after: fromNow(1800) },
      [['start_date_later_than_end_date', 'not_after']]
    ],
    [
      'not_after equal to not_before',
      { not_before: fromNow(3600), not_after: fromNow(3600) },
      [['start_date_later_than_end_date', 'not_after']]
    ],
    [
      'not_after in the past, no not_before',
      { not_after: fromNow(-10) },
      [['start_date_later_than_end_date', 'not_after']]
    ],
    [
      'not_after before a not_before in the past (taken as now)',
      { not_before: fromNow(-3600), not_after: fromNow(-1800) },
      [['start_date_later_than_end_date', 'not_after']]
    ],
    [
      'both wrong',
      { not_before: fromNow(8 * 86400), not_after: fromNow(3600) },
      [
        ['start_date_later_than_end_date', 'not_after'],
        ['invalid', 'not_before']
      ]
    ],
    ['a malformed date-time', { not_before: '2026-13-01T00:00:00Z' }, [['invalid_datetime', 'not_before']]],
    ['a date-time without an offset', { not_after: '2030-01-01T00:00:00' }, [['invalid_datetime', 'not_after']]],
    ['a date, not a date-time', { not_before: '2030-01-01' }, [['invalid_datetime', 'not_before']]],
    ['a number', { not_after: 1 }, [['invalid_datetime', 'not_after']]],
    ['an unknown key', { not_before: fromNow(60), starts: 'now' }, [['unexpected_field', 'starts']]]
  ]
  for (const [what, window, expected] of cases) {
    const res = await jobs.start(job.id, window)
    t.equal(res.statusCode, 400, what)
    t.match(res.json(), { code: 'invalid_request' }, what)
    t.same(errorsOf(res), expected, what)
    t.match(
      (await jobs.get(job.id)).json(),
      { state: 'OPEN', started_at: null, not_before: null },
      `${what}: still OPEN`
    )
  }
  const started = await jobs.start(job.id, { not_before: null, not_after: null })
  t.equal(started.statusCode, 202, 'both null: at once, without end')
  t.match(started.json(), { state: 'QUEUED', not_before: null, not_after: null })
  const again = await jobs.start(job.id, { not_after: fromNow(3600) })
  t.same(errorsOf(again), [['import_job_not_open', null]], 'a window on a job that is not OPEN')
  t.match((await jobs.get(job.id)).json(), { state: 'QUEUED', not_after: null }, 'the job unchanged')
})

t.test('the one-call form takes the window as query parameters; a bad one stores nothing', async (t) => {
  const setup = await importSetup(t, { env: NO_RUNNER })
  const jobs = jobsClient(setup)
  const settings = `import_supplier=${setup.tenant.supplier}&operations_team_name=${TEAM}`
  const before = await counts(setup)
  for (const [what, query, expected] of [
    [
      'not_after not after not_before',
      `&not_before=${fromNow(600)}&not_after=${fromNow(300)}`,
      [['start_date_later_than_end_date', 'not_after']]
    ],
    ['malformed', '&not_before=tomorrow', [['invalid_datetime', 'not_before']]],
    [
      'an offset whose + was not encoded (a space)',
      `&not_before=${fromNow(600).replace('Z', '+00:00')}`,
      [['invalid_datetime', 'not_before']]
    ]
  ] as const) {
    const res = await jobs.createAndStart(lines(entry('Q-1')), settings + query)
    t.equal(res.statusCode, 400, what)
    t.same(errorsOf(res), expected, what)
    t.same(await counts(setup), before, `${what}: nothing stored`)
  }
  const offset = encodeURIComponent(fromNow(600).replace('Z', '+00:00'))
  const res = await jobs.createAndStart(
    lines(entry('Q-1')),
    `${settings}&not_before=${offset}&not_after=${fromNow(1200)}`
  )
  t.equal(res.statusCode, 202, res.body)
  t.match(res.json(), { state: 'QUEUED', not_before: fromNow(600).slice(0, 14), not_after: WHOLE_SECONDS })
  const json = await jobs.create({
    import_supplier: setup.tenant.supplier,
    operations_team_name: TEAM
  })
  t.equal(json.statusCode, 201)
})

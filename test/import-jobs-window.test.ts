import t from 'tap'
import { sql } from 'drizzle-orm'
import { exampleAccount, importSetup, jobSettled, TEAM } from './helpers/accounts.js'
import { rowsOf } from './helpers/database.js'
import { createImportJobsRepository } from '../src/modules/import-jobs/repository.js'
import { MAX_CHUNK_FAILURES } from '../src/modules/import-jobs/runner.js'

/**
 * The runner and a job's start window: a scheduled job waits, runs inside its window, and ends
 * CANCELLED (`window_ended`) with the lines it never began `not_processed`, which
 * `unprocessed-lines/` hands back to run as a new job; a window that closes while the job waits;
 * a job whose window opens while its organisation is at its limit waits its turn. And a chunk
 * that keeps failing: its lines fail with `server_error` after a few runs, and the job goes on.
 */

type App = Awaited<ReturnType<typeof importSetup>>['app']

const headersOf = (token: string) => ({ authorization: `Bearer ${token}` })
const entry = (external: string) => JSON.stringify({ account: exampleAccount({ external_account_number: external }) })
const ndjson = (texts: string[]) => texts.map((text) => text + '\n').join('')
/** A date-time `seconds` from now, in UTC whole seconds. */
const fromNow = (seconds: number) =>
  new Date(Math.floor(Date.now() / 1000 + seconds) * 1000).toISOString().slice(0, 19) + 'Z'

async function submit(app: App, token: string, text: string, query = '') {
  const res = await app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/?import_supplier=ACME_ENERGY&operations_team_name=${TEAM}${query}`,
    headers: { ...headersOf(token), 'content-type': 'application/x-ndjson' },
    payload: text
  })
  if (res.statusCode !== 202) throw new Error(`submit: ${res.statusCode} ${res.body}`)
  return res.json()
}

const read = async (app: App, token: string, id: string) =>
  (await app.inject({ url: `/v1/data-import/import-jobs/${id}/`, headers: headersOf(token) })).json()

async function results(app: App, token: string, id: string) {
  const res = await app.inject({ url: `/v1/data-import/import-jobs/${id}/results/`, headers: headersOf(token) })
  return res.body
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { line: number; outcome: string; code: string | null; status: number | null })
}

const unprocessed = (app: App, token: string, id: string) =>
  app.inject({ url: `/v1/data-import/import-jobs/${id}/unprocessed-lines/`, headers: headersOf(token) })

t.test(
  'a scheduled job waits, runs in its window, ends window_ended; its unprocessed lines run as a new job',
  async (t) => {
    const { app, tenant } = await importSetup(t)
    // More lines than a window of a few seconds fits: storing results takes at least 0.4 s a time here.
    await app.db.execute(
      sql.raw(
        `create function slow() returns trigger language plpgsql as $$ begin perform pg_sleep(0.4); return null; end $$`
      )
    )
    await app.db.execute(
      sql.raw(`create trigger slow after insert on import_job_results for each statement execute function slow()`)
    )
    const lines = Array.from({ length: 900 }, (_, i) => entry(`WIN-${i + 1}`))
    // Uploaded first, then started with a window that opens 3 s later.
    const made = await app.inject({
      method: 'POST',
      url: '/v1/data-import/import-jobs/',
      headers: headersOf(tenant.token),
      payload: { import_supplier: 'ACME_ENERGY', operations_team_name: TEAM }
    })
    const id = made.json().id as string
    const part = await app.inject({
      method: 'PUT',
      url: `/v1/data-import/import-jobs/${id}/parts/1/`,
      headers: { ...headersOf(tenant.token), 'content-type': 'application/x-ndjson' },
      payload: ndjson(lines)
    })
    t.equal(part.statusCode, 200, part.body)
    const notBefore = fromNow(3)
    const notAfter = new Date(Date.parse(notBefore) + 3000).toISOString().slice(0, 19) + 'Z'
    const started = await app.inject({
      method: 'POST',
      url: `/v1/data-import/import-jobs/${id}/start/`,
      headers: headersOf(tenant.token),
      payload: { not_before: notBefore, not_after: notAfter }
    })
    const job = started.json()
    t.match(job, { state: 'QUEUED', not_before: notBefore, not_after: notAfter, lines: { total: 900, done: 0 } })
    await new Promise((resolve) => setTimeout(resolve, 1000))
    t.match(await read(app, tenant.token, job.id), { state: 'QUEUED', lines: { done: 0 } }, 'it waits for its window')

    const ended = await jobSettled(app, tenant.token, job.id, { timeoutMs: 120_000, intervalMs: 100 })
    t.match(ended, { state: 'CANCELLED', cancelled_reason: 'window_ended', failure_codes: [] })
    t.ok(Date.parse(ended.finished_at) >= Date.parse(notAfter), 'ended once its window had passed')
    const { created, not_processed: notProcessed, failed, done, total } = ended.lines
    t.ok(created > 0, `it ran inside its window (${created} created)`)
    t.ok(notProcessed > 0, `lines not begun are not_processed (${notProcessed})`)
    t.same([failed, done, created + notProcessed], [0, total, total])
    const [first] = rowsOf<{ at: string }>(
      await app.db.execute(sql`select min(at) as at from import_events where type = 'CREATED'`)
    )
    t.ok(new Date(first!.at).getTime() >= Date.parse(notBefore), 'no line began before not_before')

    const all = await results(app, tenant.token, job.id)
    t.same(
      all.map((r) => r.outcome),
      [...Array(created).fill('created'), ...Array(notProcessed).fill('not_processed')],
      'the lines run in order: those begun, then those not'
    )
    const rest = await unprocessed(app, tenant.token, job.id)
    t.equal(rest.statusCode, 200)
    t.equal(rest.headers['content-type'], 'application/x-ndjson; charset=utf-8')
    t.equal(rest.body, ndjson(lines.slice(created)), 'exactly the lines not begun, unchanged, in line order')

    const second = await submit(app, tenant.token, rest.body)
    const finished = await jobSettled(app, tenant.token, second.id, { timeoutMs: 120_000, intervalMs: 100 })
    t.match(finished, {
      state: 'COMPLETED',
      cancelled_reason: null,
      lines: { total: notProcessed, created: notProcessed, failed: 0 }
    })
    const [accounts] = rowsOf<{ n: number }>(await app.db.execute(sql`select count(*)::int as n from accounts`))
    t.equal(accounts!.n, 900, 'every account of the file, once')
    t.equal((await unprocessed(app, tenant.token, second.id)).body, '', 'a completed job has no unprocessed lines')
  }
)

t.test('a window that closes while the job waits: every line not_processed, blank ones too', async (t) => {
  const { app, tenant } = await importSetup(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const lines = [entry('C-1'), '', entry('C-2')]
  const job = await submit(app, tenant.token, ndjson(lines), `&not_before=${fromNow(3600)}&not_after=${fromNow(7200)}`)
  const repo = createImportJobsRepository(app.db)
  // The supplier is Paused: a job waiting for its window stays QUEUED; once the window opens it is PAUSED.
  await app.db.execute(sql`update import_suppliers set status = 'Paused' where code = 'ACME_ENERGY'`)
  await repo.settleStates()
  t.match(await read(app, tenant.token, job.id), { state: 'QUEUED' }, 'waiting for its window, not PAUSED')
  await app.db.execute(sql`update import_jobs set not_before = now() - interval '1 minute' where id = ${job.id}::uuid`)
  await repo.settleStates()
  t.match(await read(app, tenant.token, job.id), { state: 'PAUSED', cancelled_reason: null }, 'its window open: PAUSED')
  await app.db.execute(sql`update import_jobs set not_after = now() - interval '1 second' where id = ${job.id}::uuid`)
  await repo.settleStates()
  t.match(await read(app, tenant.token, job.id), {
    state: 'CANCELLED',
    cancelled_reason: 'window_ended',
    lines: { total: 3, done: 3, not_processed: 3 }
  })
  t.equal((await unprocessed(app, tenant.token, job.id)).body, ndjson(lines), 'every line, the blank one included')
  await app.db.execute(sql`update import_jobs set input_erased_at = now() where id = ${job.id}::uuid`)
  const erased = await unprocessed(app, tenant.token, job.id)
  t.equal(erased.statusCode, 410, 'the input erased: 410')
  t.match(erased.json(), { code: 'input_erased' })
  const foreign = await app.inject({
    url: `/v1/data-import/import-jobs/00000000-0000-4000-8000-000000000000/unprocessed-lines/`,
    headers: headersOf(tenant.token)
  })
  t.equal(foreign.statusCode, 404)
})

t.test('a job whose window opens while its organisation is at its limit waits for a place', async (t) => {
  const { app, tenant } = await importSetup(t, { env: { IMPORT_JOB_WORKERS: '0', IMPORT_JOBS_PER_ORGANISATION: '1' } })
  const repo = createImportJobsRepository(app.db)
  const now = await submit(app, tenant.token, ndjson([entry('L-1')]))
  const later = await submit(app, tenant.token, ndjson([entry('L-2')]), `&not_before=${fromNow(3600)}`)
  const claimed = await repo.claim('test:1', 30, 1)
  t.equal(claimed?.id, now.id, 'the job without a window runs')
  await app.db.execute(
    sql`update import_jobs set not_before = now() - interval '1 second' where id = ${later.id}::uuid`
  )
  await app.db.execute(
    sql`update import_jobs set claimed_until = now() - interval '1 second' where id = ${now.id}::uuid`
  )
  t.equal((await repo.claim('test:2', 30, 1))?.id, now.id, 'its window open, the organisation at its limit: it waits')
  await app.db.execute(sql`update import_jobs set state = 'COMPLETED', claimed_by = null where id = ${now.id}::uuid`)
  t.equal((await repo.claim('test:3', 30, 1))?.id, later.id, 'a place free: it runs')
})

t.test(
  'a chunk that fails on every run: after a few, its lines one at a time; the one that fails gets server_error',
  async (t) => {
    const { app, tenant } = await importSetup(t)
    // A result the database refuses for one account, every time (a fault of the service's own).
    await app.db.execute(
      sql.raw(`create function poison() returns trigger language plpgsql as $$
    begin
      if new.external_account_number = 'POISON-1' and new.outcome <> 'failed' then raise exception 'poisoned'; end if;
      return new;
    end $$`)
    )
    await app.db.execute(
      sql.raw(`create trigger poison before insert on import_job_results for each row execute function poison();`)
    )
    const lines = [entry('S-1'), entry('S-2'), entry('POISON-1'), entry('S-3'), '']
    const job = await submit(app, tenant.token, ndjson(lines))
    const ended = await jobSettled(app, tenant.token, job.id, { timeoutMs: 120_000, intervalMs: 100 })
    t.match(ended, {
      state: 'COMPLETED',
      lines: { total: 5, created: 3, failed: 1, skipped_blank: 1 },
      failure_codes: [{ code: 'server_error', lines: 1 }]
    })
    t.same(
      (await results(app, tenant.token, job.id)).map((r) => [r.line, r.outcome, r.code, r.status]),
      [
        [1, 'created', null, null],
        [2, 'created', null, null],
        [3, 'failed', 'server_error', 500],
        [4, 'created', null, null],
        [5, 'skipped_blank', null, null]
      ]
    )
    const [row] = rowsOf<{ chunk_failures: number }>(
      await app.db.execute(sql`select chunk_failures from import_jobs where id = ${job.id}::uuid`)
    )
    t.equal(row!.chunk_failures, 0, `counted to ${MAX_CHUNK_FAILURES}, then cleared with the chunk`)
  }
)

import t from 'tap'
import { existsSync, readFileSync, writeFileSync, appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { exampleAccount, jobSettled, TEAM } from './helpers/accounts.js'
import { asOperator } from './helpers/graphql.js'
import { clientInBackground, migrationServer, runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'
import { waitFor } from './helpers/wait.js'
import type { Job } from '../src/cli/migrate/jobs.js'

/**
 * The client and an import job's second round: submit with a start window in local time (shown
 * in UTC, the job waiting for it), a job's failure codes with their meanings and the GB hint for
 * generated accounts, a cancelled job's reason and unprocessed lines, job ids by a prefix of 8,
 * `--out -`, a submit of a file that changed since its job started, and the progress of a
 * followed job: no rate of 0 while it runs its first lines, and the figures of its summary.
 */

type Server = Awaited<ReturnType<typeof migrationServer>>

const get = (server: Server, path: string) =>
  server.app.inject({ url: `/v1/data-import/${path}`, headers: { authorization: `Token ${server.tenant.token}` } })
const entry = (external: string) => JSON.stringify({ account: exampleAccount({ external_account_number: external }) })

async function submitted(server: Server, lines: string[]): Promise<Job> {
  const res = await server.app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/?import_supplier=ACME_ENERGY&operations_team_name=${TEAM}`,
    headers: { authorization: `Token ${server.tenant.token}`, 'content-type': 'application/x-ndjson' },
    payload: lines.map((line) => line + '\n').join('')
  })
  if (res.statusCode !== 202) throw new Error(`submit: ${res.statusCode} ${res.body}`)
  return res.json() as Job
}

/** `2026-11-28T23:00:00+02:00` for a time in UTC whole seconds. */
const inZone = (utc: string, hours: number) =>
  new Date(Date.parse(utc) + hours * 3600_000).toISOString().slice(0, 16) + `+0${hours}:00`

t.test('submit --not-before/--not-after in local time: the window in UTC, the job waiting for it', async (t) => {
  const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const dir = tempDir(t)
  const file = join(dir, 'accounts.ndjson')
  writeFileSync(file, [entry('T-1'), entry('T-2')].join('\n') + '\n')
  const env = { AMIS_API_KEY: server.tenant.apiKey }
  const from = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 2 * 3600_000).toISOString().slice(0, 19) + 'Z'
  const to = new Date(Date.parse(from) + 3600_000).toISOString().slice(0, 19) + 'Z'
  const noOffset = await runClient(
    ['submit', file, '--url', server.url, '--team', TEAM, '--not-before', '2026-11-28 22:00'],
    env
  )
  t.equal(noOffset.code, 2, 'a time without its UTC offset is a usage error')
  t.match(
    noOffset.stderr,
    /--not-before "2026-11-28 22:00" has no UTC offset: add one, e\.g\. 2026-11-28T22:00[+-]\d\d:\d\d/
  )
  t.notOk(existsSync(`${file}.job.json`), 'nothing made')

  const run = await runClient(
    [
      'submit',
      file,
      '--url',
      server.url,
      '--team',
      TEAM,
      '--not-before',
      inZone(from, 2),
      '--not-after',
      inZone(to, 2)
    ],
    env
  )
  t.equal(run.code, 0, run.stderr)
  const [job] = (await get(server, 'import-jobs/')).json() as Job[]
  t.match(job, { state: 'QUEUED', not_before: from, not_after: to })
  t.match(run.stderr, `Started job ${job!.id}: 2 lines, QUEUED, waiting for its window: starts at ${from} UTC\n`)
  t.match(run.stderr, `Window: from ${from}, no line begun from ${to} (UTC)\n`)

  const shown = await runClient(['job', job!.id.slice(0, 8), '--url', server.url], env)
  t.equal(shown.code, 0, shown.stderr)
  t.match(shown.stdout, `Job ${job!.id} of ACME_ENERGY: QUEUED, waiting for its window\n`)
  t.match(shown.stdout, new RegExp(`\\n {2}window: +from ${from}, no line begun from ${to} \\(UTC\\)\\n`))
  t.match(shown.stdout, new RegExp(`\\n {2}starts at: +${from} UTC \\(in 1h 5\\dm\\)\\n`))

  // Item 4: the file changed after its job started.
  appendFileSync(file, entry('T-3') + '\n' + entry('T-4') + '\n')
  const again = await runClient(['submit', file, '--url', server.url, '--team', TEAM], env)
  t.equal(again.code, 1)
  t.match(
    again.stderr,
    `error: ${file} changed since job ${job!.id} (QUEUED) was uploaded from it: the job holds its first 2 lines, and the 2 lines after them are not in the job. Nothing was sent. To send them: tail -c +`
  )
  const tail = /tail -c \+(\d+) /.exec(again.stderr)![1]!
  t.equal(
    readFileSync(file)
      .subarray(Number(tail) - 1)
      .toString(),
    entry('T-3') + '\n' + entry('T-4') + '\n',
    'the command given picks out exactly the new lines'
  )
  t.match(again.stderr, `remove ${file}.job.json and run the same command again (a new job of the whole file`)
  t.equal(((await get(server, 'import-jobs/')).json() as Job[]).length, 1, 'no job made')
})

t.test('a job id by a unique prefix of 8; --out - is standard output; unprocessed-lines', async (t) => {
  const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const dir = tempDir(t)
  const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }
  const lines = [entry('U-1'), '', entry('U-2')]
  const job = await submitted(server, lines)
  const prefix = job.id.slice(0, 8)

  const cancel = await runClient(['cancel', prefix, '--url', server.url], env)
  t.equal(cancel.code, 0, cancel.stderr)
  t.match(cancel.stdout, `Job ${job.id} of ACME_ENERGY: CANCELLED\n`)
  t.match(cancel.stdout, /\n {2}cancelled: +a person cancelled it \(cancelled\)\n/)
  t.match(
    cancel.stdout,
    `\nThe lines never run, to submit as a new job: npm run migrate -- unprocessed-lines ${job.id}\n`
  )

  const unprocessed = await runClient(['unprocessed-lines', prefix, '--url', server.url], env)
  t.equal(unprocessed.code, 0, unprocessed.stderr)
  const name = `job-${job.id}.unprocessed-lines.ndjson`
  t.equal(
    unprocessed.stdout,
    `Wrote the 3 lines job ${job.id} never ran to ${name}: submit that file as a new job: npm run migrate -- submit ${name} --team …\n`
  )
  t.equal(readFileSync(join(dir, name), 'utf8'), lines.map((l) => l + '\n').join(''))

  const out = await runClient(['results', prefix, '--url', server.url, '--out', '-'], env)
  t.equal(out.code, 0, out.stderr)
  t.same(
    out.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).outcome),
    ['not_processed', 'not_processed', 'not_processed'],
    'the results on standard output'
  )
  t.equal(out.stderr, `Wrote 3 lines of job ${job.id} (results) to standard output\n`)
  t.notOk(existsSync(join(dir, '-')), 'no file named -')

  const short = await runClient(['job', job.id.slice(0, 7), '--url', server.url], env)
  t.equal(short.code, 2)
  t.match(short.stderr, 'give the whole id or its first 8 characters or more')
  // Two jobs whose ids begin alike.
  const open = async () =>
    (
      await server.app.inject({
        method: 'POST',
        url: '/v1/data-import/import-jobs/',
        headers: { authorization: `Token ${server.tenant.token}` },
        payload: { import_supplier: 'ACME_ENERGY', operations_team_name: TEAM }
      })
    ).json() as Job
  const a = await open()
  const b = await open()
  for (const [id, to] of [
    [a.id, 'abcdef01-0000-4000-8000-000000000001'],
    [b.id, 'abcdef01-0000-4000-8000-000000000002']
  ] as const) {
    await server.app.db.execute(sql`update import_jobs set id = ${to}::uuid where id = ${id}::uuid`)
  }
  const both = await runClient(['job', 'abcdef01', '--url', server.url], env)
  t.equal(both.code, 2)
  t.match(
    both.stderr,
    'abcdef01 is the start of 2 job ids (abcdef01-0000-4000-8000-000000000002, abcdef01-0000-4000-8000-000000000001): give more of it'
  )
  const none = await runClient(['job', '12345678', '--url', server.url], env)
  t.equal(none.code, 1)
  t.match(none.stderr, 'no import job whose id starts with 12345678')
})

t.test(
  'why lines failed: each code with its meaning; all GB codes from generate: how to generate GB ones',
  async (t) => {
    const server = await migrationServer(t)
    await asOperator(
      server.app,
      'mutation($input: UpdateImportSupplierInput!) { updateImportSupplier(input: $input) { code } }',
      { input: { code: 'ACME_ENERGY', supplyPointChecks: 'GB' } }
    )
    const generated = await runClient(['generate', '4', '--seed', 'gb-hint'], {})
    const lines = generated.stdout.trim().split('\n')
    const job = await jobSettled<Job>(server.app, server.tenant.token, (await submitted(server, lines)).id, {
      intervalMs: 100
    })
    t.ok(job.lines.failed > 0, `generated accounts without GB identifiers fail (${job.lines.failed})`)
    t.same(
      job.failure_codes.map((f) => f.code),
      ['invalid_mpan'],
      'every failure is invalid_mpan'
    )
    const env = { AMIS_API_KEY: server.tenant.apiKey }
    const shown = await runClient(['job', job.id, '--url', server.url], env)
    t.equal(shown.code, 0, shown.stderr)
    t.match(
      shown.stdout,
      `Why lines failed (a line counts once for each code it holds):\n  invalid_mpan  ${job.lines.failed} line${job.lines.failed === 1 ? '' : 's'}: An ELECTRICITY supply point's identifier is not a 13-digit MPAN core`
    )
    t.match(
      shown.stdout,
      'these accounts came from generate without --gb-identifiers. Generate the file again with --gb-identifiers'
    )
  }
)

t.test('following: no rate of 0 while the first lines run; the last progress line is the summary', async (t) => {
  const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const job = await submitted(server, [entry('F-1'), entry('F-2'), entry('F-3')])
  // What a runner does, told by the job's row: it runs the first lines, then ends.
  await server.app.db.execute(sql`update import_jobs set state = 'RUNNING' where id = ${job.id}::uuid`)
  const env = { AMIS_API_KEY: server.tenant.apiKey }
  const { run, done } = clientInBackground(['job', job.id, '--url', server.url, '--follow'], env, {
    pollIntervalMs: 100
  })
  await waitFor('the client shows the first lines running', () => run.stderr.includes('running the first lines'), {
    timeoutMs: 30_000,
    seen: () => run.stderr
  })
  t.match(run.stderr, 'progress: 0/3 lines done, 0 created, 0 failed, RUNNING, running the first lines\n')
  t.notMatch(run.stderr, '0.0/s', 'no rate of 0')
  await server.app.db.execute(sql`update import_jobs set state = 'COMPLETED', done = 3, created = 2,
    already_imported = 1, finished_at = now() where id = ${job.id}::uuid`)
  await done
  t.match(run.stderr, 'progress: 3/3 lines done, 2 created, 1 already imported, 0 failed, COMPLETED\n')
  t.match(run.stdout, /\n {2}created: +2\n {2}already imported: +1\n/, 'the summary gives the same figures')
})

t.test('a line that is not JSON: job, results and failed-lines say so with the reason', async (t) => {
  const server = await migrationServer(t)
  const dir = tempDir(t)
  const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }
  const job = await jobSettled(
    server.app,
    server.tenant.token,
    (await submitted(server, [entry('J-1'), 'not JSON', entry('J-2'), '42'])).id,
    { intervalMs: 100 }
  )
  t.match(job, { state: 'COMPLETED', lines: { created: 2, failed: 2 } })
  const said = "Line 2 is not JSON: a value was expected at character 1, found 'n'\n"

  const shown = await runClient(['job', job.id, '--url', server.url], env)
  t.equal(shown.code, 0, shown.stderr)
  t.match(shown.stdout, said, 'the job')
  t.notMatch(shown.stdout, 'Line 4 is not JSON', 'a line that is JSON but no object is not called so')

  const results = await runClient(['results', job.id, '--failed', '--url', server.url], env)
  t.equal(results.code, 0, results.stderr)
  t.match(
    results.stdout,
    `Wrote the results of 2 failed lines of job ${job.id} to job-${job.id}.failed-results.ndjson\n${said}`
  )
  const written = readFileSync(join(dir, `job-${job.id}.failed-results.ndjson`), 'utf8')
    .trim()
    .split('\n')
  t.same(JSON.parse(written[0]!).errors, [{ code: 'invalid', attr: null }], 'the file holds the results as they are')

  const out = await runClient(['results', job.id, '--url', server.url, '--out', '-'], env)
  t.equal(out.code, 0, out.stderr)
  t.equal(out.stdout.trim().split('\n').length, 4, 'standard output holds the results only')
  t.match(out.stderr, said, 'what the line is goes beside them')

  const lines = await runClient(['failed-lines', job.id, '--url', server.url], env)
  t.equal(lines.code, 0, lines.stderr)
  t.match(lines.stdout, said, 'failed-lines')
  t.equal(readFileSync(join(dir, `job-${job.id}.failed-lines.ndjson`), 'utf8'), 'not JSON\n42\n')

  const followed = await runClient(['job', job.id, '--follow', '--url', server.url], env)
  t.match(followed.stdout, said, "a followed job's summary")
})

t.test('a window that ends first: said while it runs; a cancelled job counts the lines it ran', async (t) => {
  const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const lines = Array.from({ length: 100 }, (_, i) => entry(`E-${i + 1}`))
  const job = await submitted(server, lines)
  // What a runner does, told by the job's row: 10 lines in the last 10 s (1 line/s, 90 left), its window ending in 20 s.
  await server.app.db.execute(sql`update import_jobs set state = 'RUNNING', done = 10, created = 10,
      not_after = date_trunc('second', now()) + interval '20 seconds',
      progress = jsonb_build_array(jsonb_build_array((extract(epoch from now()) * 1000)::bigint - 10000, 0),
        jsonb_build_array((extract(epoch from now()) * 1000)::bigint, 10))
    where id = ${job.id}::uuid`)
  const held = (await get(server, `import-jobs/${job.id}/`)).json() as Job
  const env = { AMIS_API_KEY: server.tenant.apiKey }
  const shown = await runClient(['job', job.id, '--url', server.url], env)
  t.match(
    shown.stdout,
    new RegExp(`\\n {2}rate: +1\\.0 lines/s, ETA 1m \\d\\ds: its window ends first, at ${held.not_after} UTC\\n`)
  )

  const { run, done } = clientInBackground(['job', job.id, '--url', server.url, '--follow'], env, {
    pollIntervalMs: 100
  })
  await waitFor('the client warns of the window end', () => run.stderr.includes('window ends'), {
    timeoutMs: 30_000,
    seen: () => run.stderr
  })
  t.match(
    run.stderr,
    `job ${job.id}: running; at this rate its window ends (${held.not_after} UTC) before every line has begun: the lines not begun by then will be not processed (npm run migrate -- unprocessed-lines ${job.id} gives them once it has ended)\n`
  )
  await server.app.db.execute(sql`update import_jobs set state = 'CANCELLED', cancelled_reason = 'window_ended',
      finished_at = now() where id = ${job.id}::uuid`)
  await done
  t.match(
    run.stderr,
    'progress: 10/100 lines done, 10 created, 0 failed, CANCELLED, 90 not processed\n',
    'the bar: lines run'
  )
  t.match(
    run.stdout,
    /\n {2}lines: +10 of 100 run\n {2}created: +10\n {2}failed: +0\n {2}not processed: +90 \(its window ended/
  )
})

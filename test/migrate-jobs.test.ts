import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { exampleAccount, jobSettled, TEAM } from './helpers/accounts.js'
import { buildTestApp } from './helpers/app.js'
import { rowsOf } from './helpers/database.js'
import { faultyProxy } from './helpers/fault-proxy.js'
import { asOperator } from './helpers/graphql.js'
import {
  clientInBackground,
  generated,
  inputFile,
  migrationServer,
  runClient,
  type ClientRun
} from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'
import { waitFor } from './helpers/wait.js'
import { renderJob, type Job } from '../src/cli/migrate/jobs.js'
import { projectRoot } from '../src/paths.js'

/**
 * Import jobs from the migration client, as a person runs it: submit a generated file and follow
 * it to the end, download its results and failed lines, read the results with report (each
 * outcome counted as what it is), resume an upload that stopped part-way (only the missing parts
 * are sent again), and Ctrl-C while following (the job goes on); submit
 * waiting while the organisation has its most jobs going; cancel; the list of jobs; files a job
 * cannot take (a bare account, two suppliers), refused before anything is made.
 */

type Server = Awaited<ReturnType<typeof migrationServer>>

/** `npm run --silent migrate -- …` in the project, as the docs tell a person to run it; in a process group of its own. */
function npmMigrate(argv: string[], env: Record<string, string>) {
  const child = spawn('npm', ['run', '--silent', 'migrate', '--', ...argv], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true
  })
  const run: ClientRun = { code: -1, stdout: '', stderr: '' }
  child.stdout.on('data', (d: Buffer) => {
    run.stdout += d.toString()
  })
  child.stderr.on('data', (d: Buffer) => {
    run.stderr += d.toString()
  })
  const done = new Promise<ClientRun>((resolve) =>
    child.on('close', (code) => {
      run.code = code ?? -1
      resolve(run)
    })
  )
  return { child, run, done }
}

/** `npm run migrate -- generate N …` into `dir/name`; the file's lines. */
async function generatedFile(dir: string, name: string, argv: string[]): Promise<string[]> {
  const run = await runClient(['generate', ...argv], {})
  if (run.code !== 0) throw new Error(run.stderr)
  writeFileSync(join(dir, name), run.stdout)
  return run.stdout.split('\n').slice(0, -1)
}

const get = (server: Server, path: string) =>
  server.app.inject({
    url: `/v1/data-import/${path}`,
    headers: { authorization: `Token ${server.tenant.token}` }
  })

const jobsOf = async (server: Server) => (await get(server, 'import-jobs/')).json() as Array<{ id: string }>

async function parts(server: Server, id: string) {
  return rowsOf<{ part: number; upload_id: string; lines: number }>(
    await server.app.db.execute(
      sql`select part, upload_id::text, lines from import_job_parts where job_id = ${id}::uuid order by part`
    )
  )
}

/** A job of `lines` made and started through the service's one-call form (as another client would). */
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

const cancelled = (server: Server, id: string) =>
  server.app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/${id}/cancel/`,
    headers: { authorization: `Token ${server.tenant.token}` }
  })

const entry = (external: string, account: Record<string, unknown> = {}) =>
  JSON.stringify({ account: exampleAccount({ external_account_number: external, ...account }) })

const stateOf = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as { job_id: string; started: boolean }

const readLinesOf = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1)

t.test('submit --follow runs a generated file to the end; results and failed lines are downloaded', async (t) => {
  // This server runs no jobs: the client follows the job QUEUED until another process runs it.
  const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const dir = tempDir(t)
  const lines = await generatedFile(dir, 'accounts.ndjson', ['12', '--seed', 'jobs-follow', '--invalid-share', '0.25'])
  // The same accounts from the generator itself, which says which it made invalid.
  const made = generated(12, 'jobs-follow', { invalidShare: 0.25, postImportShare: 0.5 })
  t.same(
    made.map((m) => JSON.stringify(m.line)),
    lines,
    'the generator made the same file'
  )
  const bad = made.flatMap((m, i) => (m.invalid ? [i] : []))
  const file = join(dir, 'accounts.ndjson')
  const env = { AMIS_API_KEY: server.tenant.apiKey }
  const { child, run, done } = npmMigrate(['submit', file, '--url', server.url, '--team', TEAM, '--follow'], env)
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL')
  })
  await waitFor(
    'the client shows the job QUEUED (or exits)',
    () => run.stderr.includes('progress: 0/12 lines done, 0 created, 0 failed, QUEUED\n') || child.exitCode !== null,
    { timeoutMs: 60_000 }
  )
  const runner = await buildTestApp(t, { database: server.database })
  await runner.app.ready()
  await done
  const [job] = await jobsOf(server)
  const id = job!.id
  t.match(run.stderr, new RegExp(`^Created job ${id} for .*accounts\\.ndjson \\(ACME_ENERGY\\): \\S+ kB in 1 part; `))
  t.match(run.stderr, new RegExp(`Uploaded 1 part of job ${id}`))
  t.match(run.stderr, new RegExp(`Started job ${id}: 12 lines, QUEUED\\n`))
  t.match(run.stderr, new RegExp(`Following job ${id} \\(Ctrl-C stops following; the job goes on in the service\\)\\n`))
  t.match(run.stderr, new RegExp(`\\njob ${id}: queued: it runs when a worker of the service is free\\n`))
  t.match(
    run.stderr,
    new RegExp(`\\njob ${id}: completed\\nprogress: 12/12 lines done, \\d+ created, \\d+ failed, COMPLETED\\n`)
  )
  const failed = (await get(server, `import-jobs/${id}/`)).json().lines.failed as number
  t.ok(failed > 0 && failed < 12, `some lines failed (${failed})`)
  t.equal(run.code, 1, 'a line failed: exit 1')
  t.match(
    run.stdout,
    new RegExp(
      `^Job ${id} of ACME_ENERGY: COMPLETED\\n {2}lines: +12 of 12 done\\n {2}created: +${12 - failed}\\n {2}failed: +${failed}\\n {2}time: `
    )
  )
  t.match(run.stdout, new RegExp(`\\nFailed lines' results .*: npm run migrate -- results ${id} --failed\\n`))
  t.match(
    run.stdout,
    new RegExp(`\\nThe failed input lines, to fix and submit as a new job: npm run migrate -- failed-lines ${id}\\n`)
  )
  t.match(JSON.parse(readFileSync(`${file}.job.json`, 'utf8')), {
    job_id: id,
    started: true,
    parts: [{ acknowledged: true }]
  })

  // The results, to a file named after the job in the folder the command was typed in; never overwritten.
  const here = { ...env, INIT_CWD: dir }
  const results = await runClient(['results', id, '--url', server.url], here)
  t.equal(results.code, 0, results.stderr)
  t.equal(results.stdout, `Wrote the results of 12 lines of job ${id} to job-${id}.results.ndjson\n`)
  const entries = readLinesOf(join(dir, `job-${id}.results.ndjson`)).map((l) => JSON.parse(l))
  t.same(
    entries.map((e) => e.line),
    Array.from({ length: 12 }, (_, i) => i + 1),
    'one result per input line, in order'
  )
  t.same(
    entries.map((e) => e.external_account_number),
    lines.map((l) => JSON.parse(l).account.external_account_number)
  )
  t.equal(entries.filter((e) => e.outcome === 'created').length, 12 - failed)
  const again = await runClient(['results', id, '--url', server.url, '--failed'], here)
  t.equal(again.stdout, `Wrote the results of ${failed} failed lines of job ${id} to job-${id}.failed-results.ndjson\n`)
  const second = await runClient(['results', id, '--url', server.url], here)
  t.match(second.stdout, new RegExp(`to job-${id}\\.results-2\\.ndjson\\n$`), 'a default name taken moves on')
  const taken = await runClient(['results', id, '--url', server.url, '--out', 'accounts.ndjson'], here)
  t.equal(taken.code, 2)
  t.equal(taken.stderr, 'error: accounts.ndjson exists already: give another --out, or move that one away\n')
  t.equal(readFileSync(file, 'utf8'), lines.join('\n') + '\n', 'the file given is left as it was')

  // The failed input lines, exactly as they are in the input.
  const failedLines = await runClient(['failed-lines', id, '--url', server.url, '--out', 'to-fix.ndjson'], here)
  t.equal(failedLines.code, 0, failedLines.stderr)
  t.match(
    failedLines.stdout,
    new RegExp(`^Wrote the ${failed} failed lines of job ${id} to to-fix\\.ndjson: fix them there`)
  )
  t.same(
    readLinesOf(join(dir, 'to-fix.ndjson')),
    bad.map((i) => lines[i]),
    'the bad lines of the input'
  )
  t.equal(bad.length, failed)

  // submit again for the same file: it ran already, nothing is sent and no job made.
  const resubmit = await runClient(['submit', 'accounts.ndjson', '--url', server.url, '--team', TEAM], here)
  t.equal(resubmit.code, 1)
  t.match(resubmit.stderr, new RegExp(`^Job ${id} of accounts\\.ndjson\\.job\\.json ran already: nothing sent`))
  t.equal((await jobsOf(server)).length, 1)

  // Once the input is erased under the retention rules, failed-lines says so and writes nothing.
  await server.app.db.execute(sql`update import_jobs set input_erased_at = now() where id = ${id}::uuid`)
  const erased = await runClient(['failed-lines', id, '--url', server.url], here)
  t.equal(erased.code, 1)
  t.match(erased.stderr, new RegExp(`^error: the input of job ${id} was erased under the service's retention rules`))
  t.match(erased.stderr, new RegExp(`npm run migrate -- results ${id} --failed`))
  t.notOk(existsSync(join(dir, `job-${id}.failed-lines.ndjson`)), 'no file')
})

t.test('report reads a job’s results: each outcome counted as what it is, only failed lines as failures', async (t) => {
  // This server runs no jobs until the runner below starts: the first job is cancelled before it begins.
  const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const dir = tempDir(t)
  const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }
  const never = await submitted(server, [entry('NP-1'), entry('NP-2')])
  t.equal((await cancelled(server, never.id)).statusCode, 200)
  const runner = await buildTestApp(t, { database: server.database })
  await runner.app.ready()
  const first = await submitted(server, [entry('JR-1')])
  t.equal((await jobSettled(server.app, server.tenant.token, first.id)).state, 'COMPLETED')
  // Line 1 was imported by the first job, line 3 is blank, line 4 is not JSON, line 5 has a bad postcode.
  const badPostcode = { billing_address: { ...exampleAccount().billing_address, postal_code: 'nope' } }
  const input = [entry('JR-1'), entry('JR-2'), '', 'not JSON', entry('JR-3', badPostcode)]
  writeFileSync(join(dir, 'second.ndjson'), input.map((line) => line + '\n').join(''))
  const second = await submitted(server, input)
  t.match(await jobSettled(server.app, server.tenant.token, second.id), {
    state: 'COMPLETED',
    lines: { total: 5, created: 1, already_imported: 1, failed: 2, skipped_blank: 1 }
  })
  const id = second.id
  t.equal((await runClient(['results', id, '--url', server.url], env)).code, 0)
  t.same(
    readLinesOf(join(dir, `job-${id}.results.ndjson`)).map((l) => JSON.parse(l).outcome),
    ['already_imported', 'created', 'skipped_blank', 'failed', 'failed']
  )

  const report = await runClient(['report', `job-${id}.results.ndjson`], env)
  t.equal(report.code, 0, report.stderr)
  t.match(
    report.stdout,
    new RegExp(
      `^Job results job-${id}\\.results\\.ndjson\\n {2}lines: +5 \\(1 blank\\)\\n {2}created: +1\\n {2}already imported: +1\\n {2}failed: +2 \\(stage 2\\)\\n`
    ),
    'already imported and blank lines are not failures'
  )
  t.match(report.stdout, /\n {2}step +code +lines {2}meaning\n/)
  t.match(report.stdout, /\n {2}stage +invalid_postcode +1 {2}\S/)
  t.match(
    report.stdout,
    /\nFailing lines by error code \(line numbers of the job's input; --code <code> lists every line of one code\):\n(?: {2}\S+ +[45]\n){2}/
  )
  t.match(
    report.stdout,
    new RegExp(`\\nThe failed input lines, to fix and submit as a new job: npm run migrate -- failed-lines ${id}\\n$`)
  )
  t.notMatch(report.stdout, /retry-failed|already completed|not processed/)

  // The failed lines of the file that was submitted, by the results' line numbers.
  const out = await runClient(
    ['report', `job-${id}.results.ndjson`, '--input', 'second.ndjson', '--failed-lines', 'fix.ndjson'],
    env
  )
  t.equal(out.code, 0, out.stderr)
  t.equal(readFileSync(join(dir, 'fix.ndjson'), 'utf8'), [input[3], input[4]].join('\n') + '\n')

  // Only the failed results, and a cancelled job's lines never begun.
  t.equal((await runClient(['results', id, '--url', server.url, '--failed'], env)).code, 0)
  const failedOnly = await runClient(['report', `job-${id}.failed-results.ndjson`], env)
  t.equal(failedOnly.code, 0, failedOnly.stderr)
  t.match(failedOnly.stdout, /^Job results \S+\n {2}lines: +2\n {2}created: +0\n {2}failed: +2 \(stage 2\)\n/)
  t.equal((await runClient(['results', never.id, '--url', server.url], env)).code, 0)
  const notProcessed = await runClient(['report', `job-${never.id}.results.ndjson`], env)
  t.equal(notProcessed.code, 0, notProcessed.stderr)
  t.equal(
    notProcessed.stdout,
    `Job results job-${never.id}.results.ndjson\n  lines:         2\n  created:       0\n  failed:        0\n  not processed: 2 (the job was cancelled before them)\n`
  )

  // An outcome neither kind of file has, and a file mixing a run's report with a job's results.
  writeFileSync(join(dir, 'odd.ndjson'), '{"line":1,"external_account_number":"X","outcome":"exploded"}\n')
  const odd = await runClient(['report', 'odd.ndjson'], env)
  t.equal(odd.code, 2)
  t.match(odd.stderr, /^error: line 1 of odd\.ndjson has the outcome "exploded", which neither a migration report/)
  writeFileSync(
    join(dir, 'mixed.ndjson'),
    readFileSync(join(dir, `job-${id}.results.ndjson`), 'utf8') +
      '{"line":6,"external_account_number":"JR-4","outcome":"already_completed","service_account_number":"A-1"}\n'
  )
  const mixed = await runClient(['report', 'mixed.ndjson'], env)
  t.equal(mixed.code, 2)
  t.match(
    mixed.stderr,
    /^error: mixed\.ndjson mixes the lines of a migration report \(line 6\) and of a job's results \(line 1\)\n$/
  )
})

t.test('an upload that stopped part-way, run again, sends only the parts the service does not hold', async (t) => {
  const server = await migrationServer(t)
  const dir = tempDir(t)
  const lines = await generatedFile(dir, 'accounts.ndjson', ['10', '--seed', 'jobs-resume'])
  const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }
  // The service refuses part 3 whatever is tried (as if it went away while it was sent).
  const refusing = await faultyProxy(t, server.url, (_n, req) =>
    req.method === 'PUT' && /\/parts\/3\/$/.test(req.url ?? '') ? 'fail' : undefined
  )
  const args = ['submit', 'accounts.ndjson', '--team', TEAM, '--part-size', '8kB', '--max-attempts', '2']
  const first = await runClient([...args, '--url', refusing.url], env)
  t.equal(first.code, 1)
  const [job] = await jobsOf(server)
  const id = job!.id
  t.match(
    first.stderr,
    /\nerror: part 3 could not be sent: .*\(server_error\)\. 2 of \d+ parts are on the service: run the same command again to send the rest\n$/
  )
  const state = JSON.parse(readFileSync(join(dir, 'accounts.ndjson.job.json'), 'utf8'))
  const count = state.parts.length as number
  t.ok(count >= 4, `several parts (${count})`)
  t.same(
    state.parts.map((p: { acknowledged: boolean }) => p.acknowledged),
    Array.from({ length: count }, (_, i) => i < 2),
    'the state file holds the parts the service took'
  )
  const held = await parts(server, id)
  t.same(
    held.map((p) => p.part),
    [1, 2],
    'the service holds parts 1 and 2'
  )
  t.equal((await get(server, `import-jobs/${id}/`)).json().state, 'OPEN', 'not started')

  // The same command again (through a proxy that passes everything): parts 3… only, once each, then the start.
  const proxy = await faultyProxy(t, server.url)
  const second = await runClient([...args, '--url', proxy.url, '--follow'], env, { pollIntervalMs: 100 })
  t.equal(second.code, 0, second.stderr)
  t.match(
    second.stderr,
    new RegExp(
      `^Continuing job ${id} \\(from accounts\\.ndjson\\.job\\.json\\): 2 of ${count} parts on the service already, sending the other ${count - 2}\\n`
    )
  )
  const puts = Object.entries(proxy.paths).filter(([path]) => path.includes('/parts/'))
  t.same(
    puts,
    Array.from({ length: count - 2 }, (_, i) => [`/v1/data-import/import-jobs/${id}/parts/${i + 3}/`, 1]),
    'only the missing parts were sent, once each'
  )
  t.equal(proxy.paths[`/v1/data-import/import-jobs/${id}/start/`], 1)
  const after = await parts(server, id)
  t.same(
    after.slice(0, 2).map((p) => p.upload_id),
    held.map((p) => p.upload_id),
    'parts 1 and 2 are the first upload'
  )
  t.equal(
    after.reduce((sum, p) => sum + p.lines, 0),
    10
  )
  t.match(
    second.stdout,
    new RegExp(
      `^Job ${id} of ACME_ENERGY: COMPLETED\\n {2}lines: +10 of 10 done\\n {2}created: +10\\n {2}failed: +0\\n`
    )
  )
  const created = await runClient(['results', id, '--url', server.url], env)
  t.equal(created.code, 0)
  t.same(
    readLinesOf(join(dir, `job-${id}.results.ndjson`)).map((l) => JSON.parse(l).external_account_number),
    lines.map((l) => JSON.parse(l).account.external_account_number),
    'every line once, in the order of the file'
  )
  t.equal((await jobsOf(server)).length, 1, 'one job')
})

t.test('Ctrl-C while following stops following, never the job', async (t) => {
  // This server runs no jobs: the job waits, QUEUED, while the client follows it.
  const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const dir = tempDir(t)
  await generatedFile(dir, 'accounts.ndjson', ['5', '--seed', 'jobs-ctrl-c'])
  const env = { AMIS_API_KEY: server.tenant.apiKey }
  const { child, run, done } = npmMigrate(
    ['submit', join(dir, 'accounts.ndjson'), '--url', server.url, '--team', TEAM, '--follow'],
    env
  )
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL')
  })
  await waitFor(
    'the client follows the job (or exits)',
    () => run.stderr.includes('Following job') || child.exitCode !== null,
    {
      timeoutMs: 60_000
    }
  )
  // A terminal's Ctrl-C goes to the whole process group (npm and the client).
  process.kill(-child.pid!, 'SIGINT')
  await done
  const [job] = await jobsOf(server)
  const id = job!.id
  t.equal(run.code, 1, run.stderr)
  t.match(run.stderr, /\nSIGINT: stopping the client; the job is not cancelled \(again to quit at once\)\n/)
  t.match(
    run.stderr,
    new RegExp(
      `\\nStopped following job ${id}; the job goes on in the service \\(QUEUED, 0 of 5 lines done\\)\\. Follow it again: npm run migrate -- job ${id} --follow\\n$`
    )
  )
  t.equal((await get(server, `import-jobs/${id}/`)).json().state, 'QUEUED', 'not cancelled')

  // Another server process on the same database runs it to the end.
  const other = await buildTestApp(t, { database: server.database })
  await other.app.ready()
  const followed = await runClient(['job', id, '--url', server.url, '--follow'], env, { pollIntervalMs: 100 })
  t.equal(followed.code, 0, followed.stderr)
  t.match(
    followed.stdout,
    new RegExp(`^Job ${id} of ACME_ENERGY: COMPLETED\\n {2}lines: +5 of 5 done\\n {2}created: +5\\n`)
  )
  const shown = await runClient(['job', id, '--url', server.url], env)
  t.match(shown.stdout, new RegExp(`^Job ${id} of ACME_ENERGY: COMPLETED\\n`))
})

t.test(
  'submit while the organisation has its most jobs going waits and starts the job once one ended; Ctrl-C while waiting leaves it OPEN',
  async (t) => {
    // One job going at most; no runner here, so started jobs stay QUEUED.
    const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0', IMPORT_JOBS_PER_ORGANISATION: '1' } })
    const dir = tempDir(t)
    for (const name of ['first', 'second', 'third']) {
      await generatedFile(dir, `${name}.ndjson`, ['3', '--seed', `jobs-busy-${name}`])
    }
    const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }
    const args = (name: string) => ['submit', `${name}.ndjson`, '--url', server.url, '--team', TEAM]
    const first = await runClient(args('first'), env)
    t.equal(first.code, 0, first.stderr)
    const firstId = stateOf(join(dir, 'first.ndjson.job.json')).job_id
    t.equal((await get(server, `import-jobs/${firstId}/`)).json().state, 'QUEUED')

    // The service's 429 says to ask again in 10 s; the client waits what it says (made 1 s here, to be quick).
    const retryAfters: Array<string | null> = []
    const quick: typeof fetch = async (input, init) => {
      const answer = await fetch(input, init)
      if (answer.status !== 429 || !String(input).endsWith('/start/')) return answer
      retryAfters.push(answer.headers.get('retry-after'))
      const headers = new Headers(answer.headers)
      headers.set('retry-after', '1')
      return new Response(answer.body, { status: answer.status, headers })
    }
    const second = clientInBackground(args('second'), env, { fetch: quick })
    await waitFor(
      'the second client waits to start (or exits)',
      () => second.run.stderr.includes('Your organisation has') || second.run.code !== -1,
      { timeoutMs: 60_000 }
    )
    const secondId = stateOf(join(dir, 'second.ndjson.job.json')).job_id
    t.match(
      second.run.stderr,
      new RegExp(
        `\\nUploaded 1 part of job ${secondId} \\([^)]+\\)\\nYour organisation has the most import jobs going at once that the service allows: waiting 1s to start job ${secondId} \\(Ctrl-C stops waiting; the job stays uploaded, OPEN: run the same command again to start it\\)\\n`
      )
    )
    t.equal(second.run.code, -1, 'still waiting')
    t.ok(retryAfters.length > 0 && retryAfters.every((r) => r === '10'), `the service's Retry-After: ${retryAfters}`)
    t.equal((await get(server, `import-jobs/${secondId}/`)).json().state, 'OPEN', 'uploaded, not started')

    // The first job cancelled, the waiting submit starts its job.
    const cancel = await runClient(['cancel', firstId, '--url', server.url], env)
    t.equal(cancel.code, 0, cancel.stderr)
    await second.done
    t.equal(second.run.code, 0, second.run.stderr)
    t.match(second.run.stderr, new RegExp(`\\nStarted job ${secondId}: 3 lines, QUEUED\\n$`))
    t.equal(
      second.run.stdout,
      `Job ${secondId} started (QUEUED): the service runs it; nothing more is needed from this terminal.\nFollow it: npm run migrate -- job ${secondId} --follow\n`
    )
    t.equal((await get(server, `import-jobs/${secondId}/`)).json().state, 'QUEUED')
    t.equal(stateOf(join(dir, 'second.ndjson.job.json')).started, true)

    // The third waits the service's own 10 s, and Ctrl-C stops the wait: the job stays uploaded, OPEN.
    const stop = new AbortController()
    const third = clientInBackground(args('third'), env, { signal: stop.signal })
    await waitFor(
      'the third client waits to start (or exits)',
      () => third.run.stderr.includes('Your organisation has') || third.run.code !== -1,
      { timeoutMs: 60_000 }
    )
    const thirdId = stateOf(join(dir, 'third.ndjson.job.json')).job_id
    t.match(
      third.run.stderr,
      new RegExp(
        `\\nYour organisation has the most import jobs going at once that the service allows: waiting 10s to start job ${thirdId} \\(Ctrl-C stops waiting; the job stays uploaded, OPEN: run the same command again to start it\\)\\n$`
      )
    )
    stop.abort()
    await third.done
    t.equal(third.run.code, 1)
    t.match(
      third.run.stderr,
      new RegExp(
        `\\(Ctrl-C stops waiting; [^\\n]+\\)\\nJob ${thirdId} is uploaded but not started\\. Run the same command again to start it \\(within a day: an OPEN job is cancelled after that\\)\\n$`
      )
    )
    t.equal(third.run.stdout, '')
    t.match((await get(server, `import-jobs/${thirdId}/`)).json(), { state: 'OPEN', lines: { total: 3 } })
    t.equal(stateOf(join(dir, 'third.ndjson.job.json')).started, false)

    // Run again once there is room: nothing sent again, the job started.
    t.equal((await cancelled(server, secondId)).statusCode, 200)
    const again = await runClient(args('third'), env)
    t.equal(again.code, 0, again.stderr)
    t.equal(
      again.stderr,
      `Continuing job ${thirdId} (from third.ndjson.job.json): 1 of 1 part on the service already, sending none\nStarted job ${thirdId}: 3 lines, QUEUED\n`
    )
    t.same(
      ((await get(server, 'import-jobs/')).json() as Job[]).map((j) => [j.id, j.state]),
      [
        [thirdId, 'QUEUED'],
        [secondId, 'CANCELLED'],
        [firstId, 'CANCELLED']
      ]
    )
  }
)

t.test('cancel prints the cancelled job; an unknown id and a finished job are refused', async (t) => {
  const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const env = { AMIS_API_KEY: server.tenant.apiKey }
  const queued = await submitted(server, [entry('C-1'), entry('C-2'), entry('C-3')])
  const toRun = await submitted(server, [entry('C-4')])

  const cancel = await runClient(['cancel', queued.id, '--url', server.url], env)
  t.equal(cancel.code, 0, cancel.stderr)
  t.equal(cancel.stderr, '')
  const held = (await get(server, `import-jobs/${queued.id}/`)).json() as Job
  t.match(held, { state: 'CANCELLED', lines: { total: 3, not_processed: 3 } })
  t.equal(cancel.stdout, renderJob(held), 'the job as `job` shows it')
  t.match(
    cancel.stdout,
    new RegExp(
      `^Job ${queued.id} of ACME_ENERGY: CANCELLED\\n {2}lines: +0 of 3 run\\n {2}created: +0\\n {2}failed: +0\\n {2}not processed: +3 \\(the job was cancelled before they began\\)\\n {2}cancelled: +a person cancelled it \\(cancelled\\)\\n {2}created at: +${held.created_at}\\n {2}started at: +${held.started_at}\\n {2}finished at: +${held.finished_at} \\(\\d+s\\)\\nThe lines never run, to submit as a new job: npm run migrate -- unprocessed-lines ${queued.id}\\n$`
    )
  )

  // A job that is not this organisation's, or none at all: the same answer.
  const unknown = '00000000-0000-4000-8000-000000000000'
  const notFound = await runClient(['cancel', unknown, '--url', server.url], env)
  t.equal(notFound.code, 1)
  t.equal(notFound.stdout, '')
  t.equal(
    notFound.stderr,
    `error: no import job ${unknown} at ${server.url} for this API key (jobs are seen only by the organisation that made them): check the id (npm run migrate -- jobs lists yours) and --url\n`
  )

  // Another server process on the same database runs the other job to the end.
  const runner = await buildTestApp(t, { database: server.database })
  await runner.app.ready()
  const done = await jobSettled(server.app, server.tenant.token, toRun.id, { states: ['COMPLETED'] })
  t.match(done, { state: 'COMPLETED', lines: { created: 1 } })
  const finished = await runClient(['cancel', toRun.id, '--url', server.url], env)
  t.equal(finished.code, 1)
  t.equal(finished.stdout, '')
  t.equal(
    finished.stderr,
    `error: job ${toRun.id} was not cancelled: Invalid request: The import job is COMPLETED: it can no longer be cancelled (import_job_not_cancellable)\n`
  )
  t.equal((await get(server, `import-jobs/${toRun.id}/`)).json().state, 'COMPLETED', 'still COMPLETED')
  const again = await runClient(['cancel', queued.id, '--url', server.url], env)
  t.equal(again.code, 1)
  t.equal(
    again.stderr,
    `error: job ${queued.id} was not cancelled: Invalid request: The import job is CANCELLED: it can no longer be cancelled (import_job_not_cancellable)\n`
  )
})

t.test('jobs lists the newest jobs first, --limit and --state narrow it, and says when there are none', async (t) => {
  const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const env = { AMIS_API_KEY: server.tenant.apiKey }
  const jobs = (...more: string[]) => runClient(['jobs', '--url', server.url, ...more], env)
  const none = await jobs()
  t.equal(none.code, 0, none.stderr)
  t.equal(none.stdout, 'No import jobs.\n')

  const made: Job[] = []
  for (let i = 1; i <= 3; i++) {
    made.push(
      await submitted(
        server,
        Array.from({ length: i * 4 }, (_, n) => entry(`L-${i}-${n}`))
      )
    )
  }
  t.equal((await cancelled(server, made[1]!.id)).statusCode, 200)
  const at = (job: Job) => job.created_at.slice(0, 19).replace('T', ' ')
  const header = 'ID                                    SUPPLIER     STATE      DONE  CREATED  FAILED  CREATED AT (UTC)'
  const row = (job: Job, state: string, done: string) =>
    `${job.id}  ACME_ENERGY  ${state.padEnd(9)}  ${done.padEnd(4)}  0        0       ${at(job)}`
  const all = await jobs()
  t.equal(all.code, 0, all.stderr)
  t.equal(all.stderr, '')
  t.equal(
    all.stdout,
    [
      header,
      row(made[2]!, 'QUEUED', '0/12'),
      row(made[1]!, 'CANCELLED', '8/8'),
      row(made[0]!, 'QUEUED', '0/4'),
      ''
    ].join('\n')
  )

  const newest = await jobs('--limit', '1')
  t.equal(newest.code, 0, newest.stderr)
  t.equal(
    newest.stdout,
    [
      'ID                                    SUPPLIER     STATE   DONE  CREATED  FAILED  CREATED AT (UTC)',
      `${made[2]!.id}  ACME_ENERGY  QUEUED  0/12  0        0       ${at(made[2]!)}`,
      '(newest 1 shown; --limit <n> shows more)',
      ''
    ].join('\n')
  )
  const three = await jobs('--limit', '3')
  t.equal(three.stdout, all.stdout, 'no "more" line when the limit holds them all')

  const queued = await jobs('--state', 'queued')
  t.equal(queued.code, 0, queued.stderr)
  t.equal(
    queued.stdout,
    [
      'ID                                    SUPPLIER     STATE   DONE  CREATED  FAILED  CREATED AT (UTC)',
      `${made[2]!.id}  ACME_ENERGY  QUEUED  0/12  0        0       ${at(made[2]!)}`,
      `${made[0]!.id}  ACME_ENERGY  QUEUED  0/4   0        0       ${at(made[0]!)}`,
      ''
    ].join('\n')
  )
  const completed = await jobs('--state', 'COMPLETED')
  t.equal(completed.code, 0, completed.stderr)
  t.equal(completed.stdout, 'No import jobs in state COMPLETED.\n')
  const ofSupplier = await jobs('--state', 'COMPLETED', '--supplier', 'ACME_ENERGY')
  t.equal(ofSupplier.stdout, 'No import jobs in state COMPLETED of ACME_ENERGY.\n')
})

t.test('submit refuses a file with a bare account: exit 2, no job made', async (t) => {
  const server = await migrationServer(t, { env: { IMPORT_JOB_WORKERS: '0' } })
  const dir = tempDir(t)
  inputFile(dir, 'accounts.ndjson', [
    entry('B-1'),
    '',
    exampleAccount({ external_account_number: 'B-2' }),
    entry('B-3')
  ])
  const run = await runClient(['submit', 'accounts.ndjson', '--url', server.url, '--team', TEAM], {
    AMIS_API_KEY: server.tenant.apiKey,
    INIT_CWD: dir
  })
  t.equal(run.code, 2)
  t.equal(run.stdout, '')
  t.equal(
    run.stderr,
    'error: line 3 of accounts.ndjson is an account on its own: a job\'s lines are batch entries, {"account": {…}, "notes": […], …}. Write each account as {"account": …} (the batch mode, npm run migrate -- accounts.ndjson --team …, takes either form)\n'
  )
  t.same(await jobsOf(server), [], 'no job on the service')
  t.notOk(existsSync(join(dir, 'accounts.ndjson.job.json')), 'no upload state')
})

t.test('submit refuses a file naming two import suppliers: exit 2, no job made', async (t) => {
  const server = await migrationServer(t)
  await asOperator(
    server.app,
    'mutation { createImportSupplier(input: {code: "ACME_WATER", organisation: "Acme"}) { code } }'
  )
  const dir = tempDir(t)
  const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }
  // Both the organisation's, or one of them another's (or nobody's): the file is refused all the same.
  for (const other of ['ACME_WATER', 'NOBODYS_SUPPLIER']) {
    inputFile(dir, `${other}.ndjson`, [entry('S-1'), entry('S-2', { import_supplier: other }), entry('S-3')])
    const run = await runClient(['submit', `${other}.ndjson`, '--url', server.url, '--team', TEAM], env)
    t.equal(run.code, 2)
    t.equal(run.stdout, '')
    t.equal(
      run.stderr,
      `error: ${other}.ndjson names the import suppliers ACME_ENERGY, ${other}: a job is of one supplier. Split the file by supplier (or name one with --supplier <code>: the other supplier's lines fail)\n`
    )
    t.same(await jobsOf(server), [], 'no job on the service')
    t.notOk(existsSync(join(dir, `${other}.ndjson.job.json`)), 'no upload state')
  }

  // As the message says: with --supplier the job is of that supplier, and the other supplier's line fails.
  const chosen = await runClient(
    ['submit', 'ACME_WATER.ndjson', '--url', server.url, '--team', TEAM, '--supplier', 'ACME_ENERGY', '--follow'],
    env,
    { pollIntervalMs: 100 }
  )
  t.equal(chosen.code, 1, chosen.stderr)
  const [job] = (await get(server, 'import-jobs/')).json() as Job[]
  t.match(job, { import_supplier: 'ACME_ENERGY', state: 'COMPLETED', lines: { total: 3, created: 2, failed: 1 } })
  t.match(
    chosen.stdout,
    new RegExp(
      `^Job ${job!.id} of ACME_ENERGY: COMPLETED\\n {2}lines: +3 of 3 done\\n {2}created: +2\\n {2}failed: +1\\n`
    )
  )
})

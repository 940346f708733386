import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { TEAM } from './helpers/accounts.js'
import { buildTestApp } from './helpers/app.js'
import { rowsOf } from './helpers/database.js'
import { faultyProxy } from './helpers/fault-proxy.js'
import { generated, migrationServer, runClient, type ClientRun } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'
import { projectRoot } from '../src/paths.js'

/**
 * Import jobs from the migration client, as a person runs it: submit a generated file and follow
 * it to the end, download its results and failed lines, resume an upload that stopped part-way
 * (only the missing parts are sent again), and Ctrl-C while following (the job goes on).
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

/** Waits (at most a minute) until `ready` holds or the child exits. */
async function until(ready: () => boolean, child: { exitCode: number | null }) {
  const deadline = Date.now() + 60_000
  while (!ready() && Date.now() < deadline && child.exitCode === null) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

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
  await until(() => run.stderr.includes('progress: 0/12 lines done, 0 created, 0 failed, QUEUED\n'), child)
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
  await until(() => run.stderr.includes('Following job'), child)
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

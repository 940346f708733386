import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot } from '../src/paths.js'
import { clientArgs, generated, inputFile, migrationServer, readReport, runClient } from './helpers/migrate.js'
import { checkMigrated } from './helpers/migrate-expect.js'
import { tempDir } from './helpers/temp-dir.js'
import { faultyProxy } from './helpers/fault-proxy.js'
import { nodeArgs } from './helpers/entry.js'
import { waitFor } from './helpers/wait.js'

t.test(
  'a server answering 429 and 500 for a while, dropping connections and losing answers, is ridden out',
  async (t) => {
    const { url, tenant, client } = await migrationServer(t)
    const dir = tempDir(t)
    const lines = generated(20, 'proxy').map((l) => l.line as any)
    const file = inputFile(dir, 'accounts.ndjson', lines)
    let calls = 0
    let creates = 0
    let notes = 0
    const { url: proxyUrl, seen } = await faultyProxy(t, url, (n, req) => {
      if (n <= 2) return n === 1 ? 'throttle' : 'fail' // the token request
      if (!req.url?.startsWith('/v1/')) return undefined
      // Then the first data-import calls (four in flight at once) get 429 and 500 by turns.
      if (++calls <= 14) return calls % 2 === 1 ? 'throttle' : 'fail'
      if (calls === 20 || calls === 40) return 'drop'
      // The first creates and notes are done by the server but their answers are lost: retried, nothing twice.
      if (req.url?.includes('/process/') && ++creates <= 3) return 'lose-answer'
      if (req.url?.includes('/notes/') && ++notes <= 3) return 'lose-answer'
      return undefined
    })
    const reportPath = join(dir, 'report.ndjson')
    const run = await runClient(clientArgs(file, proxyUrl, reportPath, '--concurrency', '4', '--max-attempts', '10'), {
      AMIS_API_KEY: tenant.apiKey
    })
    t.equal(run.code, 0, run.stdout + run.stderr)
    t.match(run.stdout, /created: +20\n {2}already completed: +0\n {2}failed: +0\n/)
    t.equal(seen.throttle, 8)
    t.equal(seen.fail, 8)
    t.equal(seen.drop, 2)
    t.equal(seen['lose-answer'], 6)
    const retried = /retried: +429 (\d+), 5xx (\d+), network (\d+)/.exec(run.stdout)!
    t.equal(Number(retried[1]), 8, 'every 429 waited out')
    t.equal(Number(retried[2]), 8 + 6, 'every 5xx retried')
    t.equal(Number(retried[3]), 2, 'every dropped connection retried')
    t.ok(readReport(reportPath).every((r) => r.outcome === 'created' && /^A-/.test(r.service_account_number ?? '')))
    t.equal((await client.list('imported')).json().length, 20)
    await checkMigrated(t, () => client, lines)
  }
)

t.test(
  'the service away for longer than the retries last: the client waits for /readyz and loses no account',
  async (t) => {
    const { url, tenant, client } = await migrationServer(t)
    const dir = tempDir(t)
    const lines = generated(20, 'outage', { postImportShare: 0 }).map((l) => l.line as any)
    const file = inputFile(dir, 'accounts.ndjson', lines)
    // After the fifth create the service is away for 3 s: every request (/readyz too) has its connection dropped.
    let creates = 0
    let downUntil = 0
    const { url: proxyUrl, seen } = await faultyProxy(t, url, (_n, req) => {
      if (Date.now() < downUntil) return 'drop'
      if (req.url?.includes('/process/') && ++creates === 5) {
        downUntil = Date.now() + 3000
        return 'drop'
      }
      return undefined
    })
    const reportPath = join(dir, 'report.ndjson')
    // Two attempts 250-500 ms apart would give up at once without the wait.
    const run = await runClient(clientArgs(file, proxyUrl, reportPath, '--concurrency', '2', '--max-attempts', '2'), {
      AMIS_API_KEY: tenant.apiKey
    })
    t.equal(run.code, 0, run.stdout + run.stderr)
    t.ok(seen.drop > 2, `the service was away (${seen.drop} requests dropped)`)
    t.match(run.stderr, /is not answering: waiting up to 300 s for it \(GET \/readyz every second\)\n/)
    t.match(run.stderr, /is back after \d+ s: carrying on\n/)
    t.match(run.stdout, /created: +20\n {2}already completed: +0\n {2}failed: +0\n/)
    t.match(run.stdout, /waited for the service: +1 time, \d+s in all\n/)
    t.equal((await client.list('imported')).json().length, 20)

    // Away for longer than --wait: the run stops, says why, and how to carry on.
    const more = inputFile(
      dir,
      'more.ndjson',
      generated(10, 'outage-2', { postImportShare: 0 }).map((l) => l.line)
    )
    creates = 0
    downUntil = 0
    const { url: secondProxy } = await faultyProxy(t, url, (_n, req) => {
      if (downUntil > 0) return 'drop'
      if (req.url?.includes('/process/') && ++creates === 3) {
        downUntil = 1
        return 'drop'
      }
      return undefined
    })
    const gaveUp = await runClient(
      clientArgs(more, secondProxy, join(dir, 'more-report.ndjson'), '--concurrency', '1', '--wait', '2'),
      { AMIS_API_KEY: tenant.apiKey }
    )
    t.equal(gaveUp.code, 1)
    t.match(
      gaveUp.stdout,
      /: stopped, http:\/\/127\.0\.0\.1:\d+ did not answer for 2 s \(GET \/readyz\)\n {2}accounts: +3\n/
    )
    t.match(gaveUp.stdout, /Run again with --resume to carry on/)
    t.match(
      readReport(join(dir, 'more-report.ndjson')).find((r) => r.outcome === 'failed'),
      { step: 'create', status: 0, code: 'service_unreachable' }
    )
  }
)

t.test('a client killed half-way and started again with --resume completes the rest, nothing twice', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const lines = generated(40, 'resume').map((l) => l.line as any)
  const file = inputFile(dir, 'accounts.ndjson', lines)
  const firstReport = join(dir, 'first.ndjson')

  const child = spawn(
    process.execPath,
    [...nodeArgs('src/cli/migrate/index.ts'), ...clientArgs(file, url, firstReport, '--concurrency', '2')],
    {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? '', AMIS_API_KEY: tenant.apiKey },
      stdio: ['ignore', 'pipe', 'pipe']
    }
  )
  let output = ''
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString()
  })
  child.stderr.on('data', (d: Buffer) => {
    output += d.toString()
  })
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(signal ?? code))
  )
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })

  // Kill it as soon as some accounts are done (the report is written as each one finishes).
  const done = () => (existsSync(firstReport) ? readFileSync(firstReport, 'utf8').split('\n').length - 1 : 0)
  await waitFor('8 accounts reported (or the client exits)', () => done() >= 8 || child.exitCode !== null, {
    timeoutMs: 40_000,
    intervalMs: 20
  })
  child.kill('SIGKILL')
  t.equal(await exited, 'SIGKILL', output)
  const before = done()
  t.ok(before >= 8 && before < 40, `killed half-way (${before} of 40 reported)`)

  const secondReport = join(dir, 'second.ndjson')
  const run = await runClient(clientArgs(file, url, secondReport, '--resume', '--concurrency', '4'), {
    AMIS_API_KEY: tenant.apiKey
  })
  t.equal(run.code, 0, run.stdout)
  const report = readReport(secondReport)
  t.equal(report.length, 40)
  const completed = report.filter((r) => r.outcome === 'already_completed').length
  t.ok(
    completed >= before,
    `the ${before} accounts done before were not created again (${completed} already completed)`
  )
  t.equal(report.filter((r) => r.outcome === 'created').length, 40 - completed)
  t.match(run.stdout, new RegExp(`created: +${40 - completed}\\n  already completed: +${completed}\\n  failed: +0\\n`))

  // One account per line, each with exactly its notes and transactions.
  const imported = (await client.list('imported')).json() as Array<{ external_account_number: string }>
  t.same(
    imported.map((r) => r.external_account_number),
    lines.map((l) => l.account.external_account_number).sort()
  )
  await checkMigrated(t, () => client, lines)
})

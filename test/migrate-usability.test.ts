import t from 'tap'
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { exampleAccount, TEAM } from './helpers/accounts.js'
import { TEST_OPERATOR_KEY } from './helpers/app.js'
import { faultyProxy } from './helpers/fault-proxy.js'
import { generated, inputFile, migrationServer, readReport, runClient, type ClientRun } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'
import { projectRoot } from '../src/paths.js'

/**
 * The migration client as a person meets it: the wrong key, a resume after a part-done run, finding
 * the lines that failed, and a service that is not where the client looks for it.
 */

const args = (file: string, url: string, ...more: string[]) => [
  file,
  '--url',
  url,
  '--team',
  TEAM,
  '--batch-size',
  '1',
  ...more
]

/** `npm run --silent migrate -- …` in the project, as the docs tell a person to run it. */
function npmMigrate(argv: string[], env: Record<string, string>): Promise<ClientRun> {
  const child = spawn('npm', ['run', '--silent', 'migrate', '--', ...argv], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const run: ClientRun = { code: -1, stdout: '', stderr: '' }
  child.stdout.on('data', (d: Buffer) => {
    run.stdout += d.toString()
  })
  child.stderr.on('data', (d: Buffer) => {
    run.stderr += d.toString()
  })
  return new Promise((resolve) =>
    child.on('close', (code) => {
      run.code = code ?? -1
      resolve(run)
    })
  )
}

/** Paths the client asked for under the data-import API. */
const dataImportPaths = (paths: Record<string, number>) => Object.keys(paths).filter((p) => p.startsWith('/v1/'))

t.test('the operator key is refused by the pre-flight in one line, before anything is sent', async (t) => {
  const { url, client } = await migrationServer(t)
  const { url: proxyUrl, paths } = await faultyProxy(t, url)
  const dir = tempDir(t)
  const file = inputFile(
    dir,
    'accounts.ndjson',
    generated(3, 'operator-key', { postImportShare: 0 }).map((l) => l.line)
  )
  for (const more of [[], ['--validate-only']]) {
    const run = await runClient(args(file, proxyUrl, '--report', join(dir, `r${more.length}.ndjson`), ...more), {
      AMIS_API_KEY: TEST_OPERATOR_KEY
    })
    t.equal(run.code, 2, `a usage mistake ${more.join(' ')}`)
    t.equal(run.stdout, '')
    t.equal(
      run.stderr,
      "error: AMIS_API_KEY holds the service operator's key, which cannot import accounts: set it to an organisation API key (an operator makes one with npm run admin -- create-api-key <organisation>). Nothing was sent.\n",
      'one line that says which key is needed'
    )
  }
  t.same(dataImportPaths(paths), [], 'no data-import endpoint was called')
  t.notOk(existsSync(join(dir, 'r0.ndjson')) || existsSync(join(dir, 'r1.ndjson')), 'no report')
  t.same((await client.list('all')).json(), [])
})

t.test('--resume skips the lines an earlier report shows completed; --resend-history sends them again', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const lines = generated(10, 'skip-completed').map((l) => l.line as any)
  const external = (i: number) => lines[i].account.external_account_number as string
  const badPostcode = {
    account: exampleAccount({
      external_account_number: 'BAD-POSTCODE',
      billing_address: { ...exampleAccount().billing_address, postal_code: 'nope' }
    })
  }
  const env = { AMIS_API_KEY: tenant.apiKey, INIT_CWD: dir }
  // The first run migrates five lines (the third fails), as if stopped part-way through the file.
  inputFile(dir, 'accounts.ndjson', [lines[0], lines[1], badPostcode, lines[3], lines[4]])
  const first = await runClient(args('accounts.ndjson', url), env)
  t.equal(first.code, 1, first.stdout + first.stderr)
  t.match(first.stdout, /created: +4\n/)

  // The whole file; line 2 now holds another account than the report says (it was edited).
  inputFile(dir, 'accounts.ndjson', [lines[0], lines[5], badPostcode, ...lines.slice(3, 5), ...lines.slice(6)])
  const { url: proxyUrl, paths } = await faultyProxy(t, url)
  const resumed = await runClient(args('accounts.ndjson', proxyUrl, '--resume'), env)
  t.equal(resumed.code, 1, resumed.stdout + resumed.stderr)
  t.match(
    resumed.stderr,
    /^Migrating 6 accounts of accounts\.ndjson \(3 lines skipped: completed in accounts\.ndjson\.report\.ndjson\); report: accounts\.ndjson\.report-2\.ndjson\n/
  )
  t.match(resumed.stderr, /progress: 6\/6 accounts done, 1 failed, [\d.]+\/s\n$/, 'progress counts this run only')
  t.match(
    resumed.stdout,
    /\n {2}accounts: +6\n {2}created: +5\n {2}already completed: +0\n {2}failed: +1 \(stage 1\)\n/,
    'the counts (and so the rate) are of the lines processed in this run'
  )
  t.match(
    resumed.stdout,
    /\n {2}skipped: +3 lines completed in an earlier run \(nothing sent; --resend-history sends their post-import data again\)\n/
  )
  t.match(resumed.stdout, /\n {2}time: +\S+ \([\d.]+ accounts\/s\)\n/)
  const second = readReport(join(dir, 'accounts.ndjson.report-2.ndjson'))
  t.same(
    second.map((r) => [r.line, r.outcome]).sort((a, b) => Number(a[0]) - Number(b[0])),
    [
      [2, 'created'],
      [3, 'failed'],
      [6, 'created'],
      [7, 'created'],
      [8, 'created'],
      [9, 'created']
    ],
    'completed lines are left out; the failed and the edited line are sent'
  )
  for (const i of [0, 3, 4]) {
    t.same(
      Object.keys(paths).filter((p) => p.includes(external(i))),
      [],
      `nothing sent for ${external(i)}, completed before`
    )
  }

  // Resumed again: everything completed is skipped, the bad line is tried again.
  const again = await runClient(args('accounts.ndjson', url, '--resume'), env)
  t.match(
    again.stderr,
    /^Migrating 1 accounts of accounts\.ndjson \(8 lines skipped: completed in accounts\.ndjson\.report\.ndjson and accounts\.ndjson\.report-2\.ndjson\); /
  )
  t.same(
    readReport(join(dir, 'accounts.ndjson.report-3.ndjson')).map((r) => r.line),
    [3]
  )

  // --resend-history: today's behaviour, every line is checked and its post-import data sent again.
  const resend = await runClient(args('accounts.ndjson', url, '--resume', '--resend-history'), env)
  t.equal(resend.code, 1)
  t.match(resend.stdout, /\n {2}accounts: +9\n {2}created: +0\n {2}already completed: +8\n/)
  t.notMatch(resend.stdout, /skipped/)
  t.equal(readReport(join(dir, 'accounts.ndjson.report-4.ndjson')).length, 9)
  t.equal((await client.list('imported')).json().length, 9, 'the edited line 2 added one account')

  const alone = await runClient(args('accounts.ndjson', url, '--resend-history'), env)
  t.equal(alone.code, 2)
  t.equal(alone.stderr, 'error: --resend-history goes with --resume (see npm run migrate -- --help)\n')
})

t.test('migrate report names the failing lines; --code lists them all; --failed-lines writes them out', async (t) => {
  const { url, tenant } = await migrationServer(t)
  const dir = tempDir(t)
  const good = generated(4, 'failed-lines', { postImportShare: 0 }).map((l) => l.line as any)
  const bad = (n: number) => ({
    account: exampleAccount({
      external_account_number: `BAD-${n}`,
      billing_address: { ...exampleAccount().billing_address, postal_code: 'nope' }
    })
  })
  // Lines 2-14 have a bad postcode, line 16 is not JSON.
  const input = [good[0], ...Array.from({ length: 13 }, (_, i) => bad(i + 1)), good[1], 'not JSON', good[2], good[3]]
  const file = inputFile(dir, 'accounts.ndjson', input)
  const text = readFileSync(file, 'utf8').split('\n')
  const env = { AMIS_API_KEY: tenant.apiKey, INIT_CWD: dir }
  const run = await runClient(['accounts.ndjson', '--url', url, '--validate-only'], env)
  t.equal(run.code, 1)

  const report = await runClient(['report', 'accounts.ndjson.report.ndjson'], env)
  t.equal(report.code, 0, report.stderr)
  t.match(
    report.stdout,
    /\nFailing lines by error code \(line numbers of accounts\.ndjson; --code <code> lists every line of one code\):\n {2}invalid_postcode +2, 3, 4, 5, 6, 7, 8, 9, 10, 11 … and 3 more\n {2}invalid_json +16\n/
  )

  const one = await runClient(['report', 'accounts.ndjson.report.ndjson', '--code', 'invalid_postcode'], env)
  t.equal(one.code, 0, one.stderr)
  t.match(one.stdout, /\nLines failing with invalid_postcode \(13\): 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14\n/)
  const typo = await runClient(['report', 'accounts.ndjson.report.ndjson', '--code', 'invalid_postcod'], env)
  t.equal(typo.code, 0)
  t.match(typo.stdout, /\nNo line failed with invalid_postcod \(the report's codes: invalid_json, invalid_postcode\)\n/)

  const out = await runClient(['report', 'accounts.ndjson.report.ndjson', '--failed-lines', 'to-fix.ndjson'], env)
  t.equal(out.code, 0, out.stderr)
  t.match(out.stdout, /\nWrote the 14 failed lines of accounts\.ndjson to to-fix\.ndjson/)
  t.equal(
    readFileSync(join(dir, 'to-fix.ndjson'), 'utf8'),
    [...text.slice(1, 14), text[15]].join('\n') + '\n',
    'the original lines, in their order'
  )
  const taken = await runClient(['report', 'accounts.ndjson.report.ndjson', '--failed-lines', 'to-fix.ndjson'], env)
  t.equal(taken.code, 2, 'never overwritten')
  t.match(taken.stderr, /^error: to-fix\.ndjson exists already/)

  const json = await runClient(
    ['report', 'accounts.ndjson.report.ndjson', '--code', 'invalid_json', '--failed-lines', 'json.ndjson'],
    env
  )
  t.equal(json.code, 0, json.stderr)
  t.equal(readFileSync(join(dir, 'json.ndjson'), 'utf8'), 'not JSON\n', 'with --code, only that code’s lines')

  // A report under another name: the input is named with --input.
  writeFileSync(join(dir, 'renamed.ndjson'), readFileSync(join(dir, 'accounts.ndjson.report.ndjson')))
  const unnamed = await runClient(['report', 'renamed.ndjson', '--failed-lines', 'x.ndjson'], env)
  t.equal(unnamed.code, 2)
  t.match(unnamed.stderr, /^error: .*--input <file>/)
  const named = await runClient(
    ['report', 'renamed.ndjson', '--input', 'accounts.ndjson', '--failed-lines', 'x.ndjson'],
    env
  )
  t.equal(named.code, 0, named.stderr)
  t.equal(readFileSync(join(dir, 'x.ndjson'), 'utf8'), readFileSync(join(dir, 'to-fix.ndjson'), 'utf8'))
})

t.test('no service at the URL: the error points at --url and AMIS_URL', async (t) => {
  const dir = tempDir(t)
  const file = inputFile(
    dir,
    'accounts.ndjson',
    generated(1, 'no-service').map((l) => l.line)
  )
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const closedUrl = `http://127.0.0.1:${(closed.address() as { port: number }).port}`
  await new Promise<void>((resolve) => closed.close(() => resolve()))
  // Through npm run, with the URL from AMIS_URL, as a person sets it once in their shell.
  const direct = await npmMigrate([file, '--team', TEAM, '--max-attempts', '1'], {
    AMIS_API_KEY: 'amk_any',
    AMIS_URL: closedUrl
  })
  t.equal(direct.code, 1)
  t.match(
    direct.stderr,
    new RegExp(
      `^error: network_error: No answer from ${closedUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: ECONNREFUSED[^\\n]*\\. Is the service running there\\? Set --url or AMIS_URL to its address\\.\\n$`
    )
  )
})

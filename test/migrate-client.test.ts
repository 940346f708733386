import t from 'tap'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { projectRoot } from '../src/paths.js'
import { exampleAccount, importClient } from './helpers/accounts.js'
import { tokenFor } from './helpers/graphql.js'
import { clientArgs, generated, inputFile, migrationServer, readReport, runClient } from './helpers/migrate.js'
import { checkMigrated } from './helpers/migrate-expect.js'
import { tempDir } from './helpers/temp-dir.js'
import { waitFor } from './helpers/wait.js'

/**
 * A payment vendor on loopback that knows every CARD instruction whose reference starts with `pi_`.
 * It answers nothing before `holdMs` after its first call, so a run lasts at least that long.
 */
async function paymentVendor(t: Parameters<typeof migrationServer>[0], holdMs: number): Promise<string> {
  let firstCall: number | undefined
  const vendor = createServer((req, res) => {
    firstCall ??= Date.now()
    const reference = decodeURIComponent(req.url?.replace('/payment-instructions/', '') ?? '')
    const found = reference.startsWith('pi_')
    setTimeout(
      () => {
        res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' })
        res.end(
          found ? JSON.stringify({ reference, type: 'CARD', status: 'ACTIVE', details: { last4: '4242' } }) : '{}'
        )
      },
      Math.max(0, firstCall + holdMs - Date.now())
    )
  })
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => vendor.close(() => resolve())))
  return `http://127.0.0.1:${(vendor.address() as { port: number }).port}`
}

t.test('generated accounts with post-import data migrate end to end', async (t) => {
  // Tokens of two seconds: the client renews them (before expiry, and once on a 401) as it goes.
  // The vendor holds its first answers for 2.5 s, so the run outlives the first token however
  // fast the machine is: every worker soon waits on a payment instruction, and work remains.
  const vendorUrl = await paymentVendor(t, 2500)
  const { url, app, tenant } = await migrationServer(t, {
    env: { PAYMENT_VENDORS: `ACMEPAY=${vendorUrl}`, PAYMENT_VENDOR_TIMEOUT_MS: '10000', TOKEN_TTL_SECONDS: '2' }
  })
  const freshClient = async () => importClient(app, { ...tenant, token: await tokenFor(app, tenant.apiKey) })
  const dir = tempDir(t)
  const lines = generated(50, 'end-to-end', { paymentVendor: 'ACMEPAY' }).map((l) => l.line as any)
  const file = inputFile(dir, 'accounts.ndjson', lines)
  const env = { AMIS_API_KEY: tenant.apiKey }

  const run = await runClient(clientArgs(file, url, join(dir, 'report.ndjson'), '--concurrency', '4'), env)
  t.equal(run.code, 0, run.stderr + run.stdout)
  t.match(run.stdout, new RegExp(`^Migration of ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} against ${url}\n`))
  t.match(run.stdout, /\n {2}accounts: +50\n {2}created: +50\n {2}already completed: +0\n {2}failed: +0\n/)
  t.match(
    run.stdout,
    /post-import sent: +notes \d+, transactions \d+, historical_agreements \d+, historical_billing_documents \d+, historical_statements \d+, payment_instruction \d+\n/
  )
  t.match(run.stdout, /retried: +429 0, 5xx 0, network 0, in progress 0; tokens obtained \d+\n/)
  t.ok(Number(/tokens obtained (\d+)/.exec(run.stdout)![1]) >= 2, 'short-lived tokens were renewed')
  t.match(run.stdout, /\nReport: .*report\.ndjson\n$/)
  t.match(
    run.stderr,
    /progress: 50\/50 accounts done, 0 failed, [\d.]+\/s\n$/,
    'plain progress lines when not on a terminal'
  )

  const report = readReport(join(dir, 'report.ndjson'))
  t.equal(report.length, 50)
  t.same(
    report.map((r) => r.line).sort((a, b) => a - b),
    Array.from({ length: 50 }, (_, i) => i + 1)
  )
  for (const entry of report) {
    const line = lines[entry.line - 1]
    t.equal(entry.outcome, 'created')
    t.equal(entry.external_account_number, line.account.external_account_number)
    t.match(entry.service_account_number, /^A-[0-9A-F]{8}$/)
    t.equal(entry.post_import?.notes, line.notes.length)
    t.equal(entry.post_import?.transactions, line.transactions?.length)
  }
  await checkMigrated(t, freshClient, lines)
  t.ok(
    lines.some((l) => l.payment_instruction),
    'some have a payment instruction'
  )

  // Again without --resume: every account is already imported, and nothing is sent.
  const again = await runClient(clientArgs(file, url, join(dir, 'again.ndjson')), env)
  t.equal(again.code, 1)
  t.match(again.stdout, /failed: +50 \(stage 50\)/)
  t.match(again.stdout, /50 accounts were already imported: with --resume they are not created again/)
  t.match(readReport(join(dir, 'again.ndjson'))[0], {
    outcome: 'failed',
    step: 'stage',
    status: 400,
    code: 'account_already_imported',
    errors: [{ code: 'account_already_imported', attr: 'external_account_number' }]
  })

  // With --resume: every account is already completed; its post-import data is sent again and changes nothing.
  const resumed = await runClient(clientArgs(file, url, join(dir, 'resumed.ndjson'), '--resume'), env)
  t.equal(resumed.code, 0, resumed.stdout)
  t.match(resumed.stdout, /created: +0\n {2}already completed: +50\n {2}failed: +0\n/)
  t.ok(
    readReport(join(dir, 'resumed.ndjson')).every((r) => r.outcome === 'already_completed' && r.service_account_number)
  )
  await checkMigrated(t, freshClient, lines)
})

t.test('bad lines are reported with their reasons and the run carries on', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const good = generated(6, 'bad-lines', { postImportShare: 0 }).map((l) => l.line as any)
  const badPostcode = exampleAccount({
    external_account_number: 'BAD-POSTCODE',
    billing_address: { ...exampleAccount().billing_address, postal_code: 'nope' }
  })
  const file = inputFile(dir, 'mixed.ndjson', [
    good[0],
    'this is not JSON',
    '[1, 2, 3]',
    { account: badPostcode },
    '',
    { account: good[1].account, comments: ['kept?'] },
    { account: good[2].account, notes: 'not a list' },
    // Created, then its notes are refused: the account is reported failed at its notes.
    { account: good[3].account, notes: [{ body: 'fine' }, { is_pinned: true }] },
    '{"account": {"external_account_number": "CUT-OFF", "import_supplier": "ACME_',
    good[4].account, // a bare account is a line too
    { account: exampleAccount({ external_account_number: 'NO-SUCH-SUPPLIER', import_supplier: 'NOPE' }) },
    good[5]
  ])
  const reportPath = join(dir, 'report.ndjson')
  const run = await runClient(clientArgs(file, url, reportPath, '--concurrency', '1'), { AMIS_API_KEY: tenant.apiKey })
  t.equal(run.code, 1, 'non-zero: some accounts failed')
  t.match(
    run.stdout,
    /accounts: +11\n {2}created: +3\n {2}already completed: +0\n {2}failed: +8 \(read 5, stage 2, notes 1\)\n/
  )
  t.match(
    run.stdout,
    /top error codes: +invalid_json 2, invalid_line 2, does_not_exist 1, invalid_postcode 1, note_body_or_document_path_not_found 1, unexpected_field 1\n/
  )

  const byLine = new Map(readReport(reportPath).map((r) => [r.line, r]))
  t.equal(byLine.size, 11, 'one entry per non-blank line')
  t.match(byLine.get(1), { outcome: 'created', external_account_number: good[0].account.external_account_number })
  t.match(byLine.get(2), {
    outcome: 'failed',
    step: 'read',
    code: 'invalid_json',
    external_account_number: null,
    errors: [{ code: 'invalid_json', attr: null }]
  })
  t.match(byLine.get(3), { outcome: 'failed', step: 'read', code: 'invalid_line' })
  t.match(byLine.get(4), {
    outcome: 'failed',
    step: 'stage',
    status: 400,
    code: 'account_failed_validation',
    external_account_number: 'BAD-POSTCODE',
    service_account_number: null,
    errors: [{ code: 'invalid_postcode', attr: 'billing_address.postal_code' }]
  })
  t.notOk(byLine.has(5), 'blank lines are skipped')
  t.match(byLine.get(6), {
    step: 'read',
    code: 'unexpected_field',
    errors: [{ code: 'unexpected_field', attr: 'comments' }]
  })
  t.match(byLine.get(7), { step: 'read', code: 'invalid_line', errors: [{ attr: 'notes' }] })
  t.match(byLine.get(8), {
    outcome: 'failed',
    step: 'notes',
    status: 400,
    code: 'invalid_request',
    service_account_number: /^A-/,
    errors: [{ code: 'note_body_or_document_path_not_found', attr: 'notes.1' }]
  })
  t.match(byLine.get(9), { step: 'read', code: 'invalid_json', external_account_number: 'CUT-OFF' })
  t.match(byLine.get(10), { outcome: 'created' })
  t.match(byLine.get(11), { step: 'stage', errors: [{ code: 'does_not_exist', attr: 'import_supplier' }] })
  t.match(byLine.get(12), { outcome: 'created' })

  t.equal((await client.status(good[3].account.external_account_number)).json().status, 'COMPLETED')
  t.equal(
    (await client.summary(good[3].account.external_account_number)).json().counts.notes,
    0,
    'the notes request was all or nothing'
  )
  t.equal((await client.status(good[1].account.external_account_number)).statusCode, 404, 'a bad line sends nothing')
})

t.test('--dry-run creates nothing', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const lines = generated(10, 'dry-run', { invalidShare: 0.1 })
  const file = inputFile(
    dir,
    'accounts.ndjson',
    lines.map((l) => l.line)
  )
  const run = await runClient(clientArgs(file, url, join(dir, 'report.ndjson'), '--dry-run'), {
    AMIS_API_KEY: tenant.apiKey
  })
  t.equal(run.code, 1, 'the invalid account fails')
  t.match(run.stdout, /^Dry run of /)
  t.match(run.stdout, /accounts: +10\n {2}would be created: +9\n {2}failed: +1 \(stage 1\)\n/)
  t.notMatch(run.stdout, /post-import sent/)
  const report = readReport(join(dir, 'report.ndjson'))
  t.equal(report.filter((r) => r.outcome === 'would_create').length, 9)
  t.ok(report.every((r) => r.service_account_number === null))
  t.same((await client.list('imported')).json(), [], 'no account was created')
  for (const { line, invalid } of lines) {
    if (invalid) continue
    t.same((await client.status((line as any).account.external_account_number)).json(), {
      status: 'UNKNOWN',
      service_account_number: '',
      latest_error: null
    })
  }
})

t.test('a progress bar on a terminal; Ctrl-C stops taking lines', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const file = inputFile(
    dir,
    'accounts.ndjson',
    generated(6, 'terminal', { postImportShare: 0 }).map((l) => l.line)
  )
  const run = await runClient(
    clientArgs(file, url, join(dir, 'report.ndjson'), '--concurrency', '2'),
    { AMIS_API_KEY: tenant.apiKey },
    { tty: true, columns: 100 }
  )
  t.equal(run.code, 0, run.stdout)
  // eslint-disable-next-line no-control-regex -- the terminal's escape sequence is what is checked
  t.match(run.stderr, /\r\x1b\[2K100% \[#{40}\] 6\/6 · 0 failed · [\d.]+\/s\n$/, 'the bar ends full, on its own line')
  t.notMatch(run.stderr, /progress: /)

  // Stopped before the first line: nothing is sent, the summary says so, and the exit code is 1.
  const stop = new AbortController()
  stop.abort()
  const other = inputFile(
    dir,
    'other.ndjson',
    generated(3, 'stopped').map((l) => l.line)
  )
  const stopped = await runClient(
    clientArgs(other, url, join(dir, 'stopped.ndjson')),
    { AMIS_API_KEY: tenant.apiKey },
    { signal: stop.signal }
  )
  t.equal(stopped.code, 1)
  t.match(stopped.stdout, /: stopped, interrupted\n {2}accounts: +0\n/)
  t.match(stopped.stdout, /Run again with --resume to carry on/)
  t.equal((await client.list('imported')).json().length, 6)
})

t.test('Ctrl-C under npm run finishes the accounts in flight and reports them, as it does run directly', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const file = inputFile(
    dir,
    'accounts.ndjson',
    generated(200, 'ctrl-c', { postImportShare: 0 }).map((l) => l.line)
  )
  const report = join(dir, 'report.ndjson')
  // The command the README gives, in a process group of its own: a terminal's Ctrl-C goes to the whole group.
  const child = spawn(
    'npm',
    ['run', '--silent', 'migrate', '--', ...clientArgs(file, url, report, '--concurrency', '2')],
    {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', AMIS_API_KEY: tenant.apiKey },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true
    }
  )
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString()
  })
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString()
  })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL')
  })
  const done = () => (existsSync(report) ? readFileSync(report, 'utf8').split('\n').length - 1 : 0)
  await waitFor('5 accounts reported (or the client exits)', () => done() >= 5 || child.exitCode !== null, {
    timeoutMs: 60_000,
    intervalMs: 20
  })
  process.kill(-child.pid!, 'SIGINT')
  t.equal(await exited, 1, stderr)
  t.match(stderr, /SIGINT: finishing the accounts in flight/)
  t.match(stdout, /: stopped, interrupted\n/, 'the summary is printed')
  t.match(stdout, /Run again with --resume to carry on/)
  const lines = readReport(report)
  t.ok(lines.length >= 5 && lines.length < 200, `stopped part-way (${lines.length} of 200)`)
  const created = lines.filter((l) => l.outcome === 'created').length
  t.equal((await client.list('imported')).json().length, created, 'every account created is in the report')
  t.match(stdout, new RegExp(`accounts: +${lines.length}\n`))
})

t.test('usage errors and a refused key stop before any account is sent', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const file = inputFile(
    dir,
    'accounts.ndjson',
    generated(2, 'usage').map((l) => l.line)
  )
  const cases: Array<[string[], Record<string, string>, RegExp]> = [
    [[file, '--url', url], { AMIS_API_KEY: tenant.apiKey }, /^error: no operations team/],
    [[file, '--url', url, '--team', 'Migrations'], {}, /^error: no API key: set AMIS_API_KEY/],
    [
      [file, '--team', 'Migrations', '--concurrency', '0'],
      { AMIS_API_KEY: 'k' },
      /^error: --concurrency must be a whole number from 1 to 256/
    ],
    [
      [file, '--team', 'Migrations', '--url', 'ftp://x'],
      { AMIS_API_KEY: 'k' },
      /^error: --url must be an http\(s\) URL/
    ],
    [[file, 'second.ndjson', '--team', 'Migrations'], { AMIS_API_KEY: 'k' }, /^error: give one input file/],
    [[file, '--team', 'Migrations', '--seed', '1'], { AMIS_API_KEY: 'k' }, /^error: migrate does not take --seed/]
  ]
  for (const [argv, env, message] of cases) {
    const run = await runClient(argv, env)
    t.equal(run.code, 2, argv.join(' '))
    t.match(run.stderr, message)
  }
  const refused = await runClient(clientArgs(file, url, join(dir, 'r.ndjson')), { AMIS_API_KEY: 'amk_wrong' })
  t.equal(refused.code, 1)
  t.match(refused.stderr, /^error: authentication_failed: .+ \(check AMIS_API_KEY\)\n$/)
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const closedUrl = `http://127.0.0.1:${(closed.address() as { port: number }).port}`
  await new Promise<void>((resolve) => closed.close(() => resolve()))
  const unreachable = await runClient(clientArgs(file, closedUrl, join(dir, 'r.ndjson'), '--max-attempts', '2'), {
    AMIS_API_KEY: tenant.apiKey
  })
  t.equal(unreachable.code, 1)
  t.match(unreachable.stderr, /^error: network_error: No answer from http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/)
  const missing = await runClient(clientArgs(join(dir, 'nope.ndjson'), url, join(dir, 'r.ndjson')), {
    AMIS_API_KEY: tenant.apiKey
  })
  t.equal(missing.code, 2, 'a missing input file is a usage mistake')
  t.match(missing.stderr, /^error: \S+nope\.ndjson: no such file\n$/)
  const unknown = await runClient([file, '--bogus'], {})
  t.equal(unknown.code, 2)
  t.equal(unknown.stderr, 'error: unknown option --bogus (see npm run migrate -- --help)\n', 'one line in plain words')
  const noReportFolder = await runClient(clientArgs(file, url, join(dir, 'no-such-folder', 'r.ndjson')), {
    AMIS_API_KEY: tenant.apiKey
  })
  t.equal(noReportFolder.code, 2)
  t.match(noReportFolder.stderr, /^error: cannot write \S+r\.ndjson: no such folder\n$/)
  t.same((await client.list('all')).json(), [], 'nothing was sent')
  const help = await runClient(['--help'], {})
  t.equal(help.code, 0)
  t.match(
    help.stdout,
    /^Account Migration Import Service — migration client\n\nUsage:\n {2}npm run migrate -- <file.ndjson> --team/
  )
})

import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot } from '../src/paths.js'
import { exampleAccount } from './helpers/accounts.js'
import { clientArgs, generated, inputFile, migrationServer, readReport, runClient } from './helpers/migrate.js'
import { checkMigrated } from './helpers/migrate-expect.js'
import { tempDir } from './helpers/temp-dir.js'
import { faultyProxy } from './helpers/fault-proxy.js'
import { nodeArgs } from './helpers/entry.js'
import { waitFor } from './helpers/wait.js'

/**
 * The migration client in its default mode: many accounts per `POST batches/`. The same report,
 * resume, retries and exit codes as account by account (test/migrate-client.test.ts), without a
 * validate call.
 */

t.test('accounts with post-import data migrate in batches; a second run changes nothing', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const lines = generated(30, 'batches').map((l) => l.line as any)
  const file = inputFile(dir, 'accounts.ndjson', lines)
  const counted = await faultyProxy(t, url)
  const env = { AMIS_API_KEY: tenant.apiKey }

  const run = await runClient(clientArgs(file, counted.url, join(dir, 'report.ndjson'), '--batch-size', '7'), env)
  t.equal(run.code, 0, run.stdout + run.stderr)
  t.match(run.stdout, /\n {2}accounts: +30\n {2}created: +30\n {2}already completed: +0\n {2}failed: +0\n/)
  t.match(run.stdout, /post-import sent: +notes \d+, transactions \d+/)
  t.equal(counted.paths['/v1/data-import/batches/'], 5, '30 accounts in 5 batches of at most 7')
  t.notOk(
    Object.keys(counted.paths).some((p) => p.includes('validate')),
    'no validate call'
  )
  t.notOk(
    Object.keys(counted.paths).some((p) => p.includes('/process/') || p.includes('/notes/')),
    'no single-account call'
  )
  const report = readReport(join(dir, 'report.ndjson'))
  t.equal(report.length, 30)
  for (const line of lines) {
    const entry = report.find((r) => r.external_account_number === line.account.external_account_number)!
    t.match(entry, { outcome: 'created', service_account_number: /^A-[0-9A-F]{8}$/ })
    t.equal(entry.post_import?.notes, line.notes?.length)
  }
  await checkMigrated(t, () => client, lines)

  // Again: every account is already imported; its post-import data is sent again and changes nothing.
  const again = await runClient(clientArgs(file, url, join(dir, 'again.ndjson'), '--batch-size', '100'), env)
  t.equal(again.code, 0, again.stdout)
  t.match(again.stdout, /created: +0\n {2}already completed: +30\n {2}failed: +0\n/)
  await checkMigrated(t, () => client, lines)
})

t.test('bad lines, bad accounts and bad sections are reported per line; the run carries on', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const good = generated(4, 'batch-bad', { postImportShare: 0 }).map((l) => l.line as any)
  const file = inputFile(dir, 'mixed.ndjson', [
    good[0],
    'this is not JSON',
    {
      account: exampleAccount({
        external_account_number: 'BAD-POSTCODE',
        billing_address: { ...exampleAccount().billing_address, postal_code: 'nope' }
      })
    },
    { account: good[1].account, notes: [{ body: 'fine' }, { is_pinned: true }] },
    { account: exampleAccount({ external_account_number: 'NO-SUCH-SUPPLIER', import_supplier: 'NOPE' }) },
    { account: good[2].account, notes: Array.from({ length: 600 }, (_, i) => ({ body: `note ${i}` })) },
    good[3]
  ])
  const reportPath = join(dir, 'report.ndjson')
  const run = await runClient(clientArgs(file, url, reportPath, '--batch-size', '10'), { AMIS_API_KEY: tenant.apiKey })
  t.equal(run.code, 1)
  t.match(
    run.stdout,
    /accounts: +7\n {2}created: +3\n {2}already completed: +0\n {2}failed: +4 \(read 1, stage 2, notes 1\)\n/
  )
  const byLine = new Map(readReport(reportPath).map((r) => [r.line, r]))
  t.match(byLine.get(2), { step: 'read', code: 'invalid_json' })
  t.match(byLine.get(3), {
    outcome: 'failed',
    step: 'stage',
    status: 400,
    code: 'account_failed_validation',
    errors: [{ code: 'invalid_postcode', attr: 'billing_address.postal_code' }]
  })
  t.match(byLine.get(4), {
    outcome: 'failed',
    step: 'notes',
    status: 400,
    service_account_number: /^A-/,
    errors: [{ code: 'note_body_or_document_path_not_found', attr: 'notes.1' }]
  })
  t.match(
    byLine.get(5),
    { outcome: 'failed', step: 'stage', errors: [{ code: 'does_not_exist', attr: 'import_supplier' }] },
    'another supplier: its own batch, refused as a whole'
  )
  t.match(
    byLine.get(6),
    { outcome: 'created', post_import: { notes: 600 } },
    '600 notes: too many for one request, sent account by account'
  )
  t.equal((await client.summary(good[2].account.external_account_number)).json().counts.notes, 600)
  t.match(byLine.get(7), { outcome: 'created' })
})

t.test('--dry-run in batches creates nothing', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const lines = generated(10, 'batch-dry', { invalidShare: 0.1 })
  const file = inputFile(
    dir,
    'accounts.ndjson',
    lines.map((l) => l.line)
  )
  const run = await runClient(clientArgs(file, url, join(dir, 'report.ndjson'), '--dry-run', '--batch-size', '100'), {
    AMIS_API_KEY: tenant.apiKey
  })
  t.equal(run.code, 1)
  t.match(run.stdout, /accounts: +10\n {2}would be created: +9\n {2}failed: +1 \(stage 1\)\n/)
  t.same((await client.list('imported')).json(), [], 'no account was created')
})

t.test('a batch larger than the body limit is split until it fits', async (t) => {
  const { url, tenant, client } = await migrationServer(t, { env: { BODY_LIMIT_BYTES: '40000' } })
  const dir = tempDir(t)
  const lines = generated(24, 'batch-split', { postImportShare: 0 }).map((l) => l.line as any)
  const file = inputFile(dir, 'accounts.ndjson', lines)
  const counted = await faultyProxy(t, url)
  const run = await runClient(clientArgs(file, counted.url, join(dir, 'report.ndjson'), '--batch-size', '24'), {
    AMIS_API_KEY: tenant.apiKey
  })
  t.equal(run.code, 0, run.stdout)
  t.match(run.stdout, /created: +24\n/)
  t.ok(
    counted.paths['/v1/data-import/batches/']! > 2,
    `split into smaller batches (${counted.paths['/v1/data-import/batches/']} requests)`
  )
  await checkMigrated(t, () => client, lines)
})

t.test('429, 500, dropped connections and lost answers of batches are ridden out, nothing twice', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const lines = generated(20, 'batch-proxy').map((l) => l.line as any)
  const file = inputFile(dir, 'accounts.ndjson', lines)
  let batches = 0
  const { url: proxyUrl } = await faultyProxy(t, url, (_n, req) => {
    if (!req.url?.includes('/batches/')) return undefined
    return (['throttle', 'fail', 'drop', 'lose-answer'] as const)[batches++]
  })
  const run = await runClient(
    clientArgs(file, proxyUrl, join(dir, 'report.ndjson'), '--batch-size', '5', '--max-attempts', '10'),
    { AMIS_API_KEY: tenant.apiKey }
  )
  t.equal(run.code, 0, run.stdout + run.stderr)
  const [, created, completed] = /created: +(\d+)\n {2}already completed: +(\d+)\n {2}failed: +0\n/.exec(run.stdout)!
  t.equal(
    Number(created) + Number(completed),
    20,
    `every account done (${created} created, ${completed} found created by an answer that was lost)`
  )
  t.match(run.stdout, /retried: +429 1, 5xx 2, network 1/)
  await checkMigrated(t, () => client, lines)
})

t.test('batch entries answered 503 (the database lost mid-batch) are sent again: every account created', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const lines = generated(20, 'batch-entries-503').map((l) => l.line as any)
  const file = inputFile(dir, 'accounts.ndjson', lines)
  let batches = 0
  const { url: proxyUrl, seen } = await faultyProxy(t, url, (_n, req) => {
    if (!req.url?.includes('/batches/')) return undefined
    // The first batch answered so three times running, then passed on.
    return ++batches <= 3 ? 'entries-unavailable' : undefined
  })
  const run = await runClient(
    clientArgs(file, proxyUrl, join(dir, 'report.ndjson'), '--batch-size', '10', '--concurrency', '1'),
    { AMIS_API_KEY: tenant.apiKey }
  )
  t.equal(run.code, 0, run.stdout + run.stderr)
  t.equal(seen['entries-unavailable'], 3)
  t.match(run.stdout, /created: +20\n {2}already completed: +0\n {2}failed: +0\n/)
  t.match(run.stdout, /retried: +429 0, 5xx 3, network 0/)
  await checkMigrated(t, () => client, lines)
})

t.test('a client killed half-way and started again completes the rest, nothing twice', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const lines = generated(60, 'batch-resume').map((l) => l.line as any)
  const file = inputFile(dir, 'accounts.ndjson', lines)
  const firstReport = join(dir, 'first.ndjson')
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs('src/cli/migrate/index.ts'),
      ...clientArgs(file, url, firstReport, '--batch-size', '5', '--concurrency', '1')
    ],
    {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? '', AMIS_API_KEY: tenant.apiKey },
      stdio: ['ignore', 'pipe', 'pipe']
    }
  )
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)))
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  const done = () => (existsSync(firstReport) ? readFileSync(firstReport, 'utf8').split('\n').length - 1 : 0)
  await waitFor('10 accounts reported (or the client exits)', () => done() >= 10 || child.exitCode !== null, {
    timeoutMs: 60_000,
    intervalMs: 20
  })
  child.kill('SIGKILL')
  t.equal(await exited, 'SIGKILL')
  const before = done()
  t.ok(before >= 10 && before < 60, `killed half-way (${before} of 60 reported)`)

  const run = await runClient(clientArgs(file, url, join(dir, 'second.ndjson'), '--resume', '--batch-size', '5'), {
    AMIS_API_KEY: tenant.apiKey
  })
  t.equal(run.code, 0, run.stdout)
  const report = readReport(join(dir, 'second.ndjson'))
  t.equal(report.length, 60)
  t.ok(
    report.filter((r) => r.outcome === 'already_completed').length >= before,
    'what was done before is not created again'
  )
  await checkMigrated(t, () => client, lines)
})

import t from 'tap'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { meaningOf } from '../schemas/error-codes.js'
import { exampleAccount, TEAM } from './helpers/accounts.js'
import { asOperator } from './helpers/graphql.js'
import { generated, inputFile, migrationServer, readReport, runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'

/**
 * The migration client around a run: reports never overwritten, re-running only the failed
 * lines, summarising a report, validating only, and the checks that stop a run that cannot work.
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

t.test(
  'each run writes its own report; --retry-failed re-runs exactly the failed lines with their line numbers',
  async (t) => {
    const { url, tenant, client } = await migrationServer(t)
    const dir = tempDir(t)
    const good = generated(5, 'retry', { postImportShare: 0 }).map((l) => l.line as any)
    const badPostcode = exampleAccount({
      external_account_number: 'FIX-ME-1',
      billing_address: { ...exampleAccount().billing_address, postal_code: 'nope' }
    })
    inputFile(dir, 'accounts.ndjson', [good[0], badPostcode, good[1], good[2], 'not JSON', good[3]])
    const env = { AMIS_API_KEY: tenant.apiKey, INIT_CWD: dir }

    const first = await runClient(args('accounts.ndjson', url), env)
    t.equal(first.code, 1)
    t.match(
      first.stderr,
      /^Migrating 6 accounts of accounts\.ndjson; report: accounts\.ndjson\.report\.ndjson\n/,
      'where the report goes is said at the start'
    )
    t.match(first.stdout, /Report: accounts\.ndjson\.report\.ndjson\n/)
    t.match(
      first.stdout,
      /Every failure by step and code: npm run migrate -- report accounts\.ndjson\.report\.ndjson\n/
    )
    t.match(
      first.stdout,
      /Run only the 2 failed accounts again \(after fixing them\): the same command with --retry-failed accounts\.ndjson\.report\.ndjson\n/
    )
    const firstReport = readFileSync(join(dir, 'accounts.ndjson.report.ndjson'), 'utf8')

    // The input is fixed in place: the same lines, now good.
    const fixed = { ...badPostcode, billing_address: exampleAccount().billing_address }
    writeFileSync(
      join(dir, 'accounts.ndjson'),
      [good[0], fixed, good[1], good[2], good[4], good[3]].map((l) => JSON.stringify(l)).join('\n') + '\n'
    )
    const retry = await runClient(args('accounts.ndjson', url, '--retry-failed', 'accounts.ndjson.report.ndjson'), env)
    t.equal(retry.code, 0, retry.stdout + retry.stderr)
    t.match(retry.stderr, /^Migrating 2 accounts of accounts\.ndjson; report: accounts\.ndjson\.report-2\.ndjson\n/)
    t.equal(
      readFileSync(join(dir, 'accounts.ndjson.report.ndjson'), 'utf8'),
      firstReport,
      'the first report is untouched'
    )
    const second = readReport(join(dir, 'accounts.ndjson.report-2.ndjson'))
    t.same(
      second.map((r) => [r.line, r.outcome]).sort(),
      [
        [2, 'created'],
        [5, 'created']
      ],
      'only the failed lines, by their line numbers in the file'
    )
    t.equal((await client.list('imported')).json().length, 6)

    // Nothing failed in the second report: nothing to retry. A report given by name is never overwritten.
    const none = await runClient(args('accounts.ndjson', url, '--retry-failed', 'accounts.ndjson.report-2.ndjson'), env)
    t.equal(none.code, 0)
    t.equal(none.stderr, 'accounts.ndjson.report-2.ndjson has no failed lines: nothing to retry\n')
    const taken = await runClient(args('accounts.ndjson', url, '--report', 'accounts.ndjson.report.ndjson'), env)
    t.equal(taken.code, 2)
    t.match(
      taken.stderr,
      /^error: the report \S+accounts\.ndjson\.report\.ndjson exists already: give another --report, or move that one away\n$/
    )
    t.equal(readFileSync(join(dir, 'accounts.ndjson.report.ndjson'), 'utf8'), firstReport)
    t.notOk(existsSync(join(dir, 'accounts.ndjson.report-3.ndjson')))

    // A report of another file is noticed before its lines are sent.
    const other = inputFile(
      dir,
      'other.ndjson',
      generated(6, 'other', { postImportShare: 0 }).map((l) => l.line)
    )
    const wrong = await runClient(
      args(
        other,
        url,
        '--retry-failed',
        join(dir, 'accounts.ndjson.report.ndjson'),
        '--report',
        join(dir, 'wrong.ndjson')
      ),
      env
    )
    t.equal(wrong.code, 1)
    t.match(
      wrong.stdout,
      /stopped, line 2 is "SYN\w+-0000002" but the report says "FIX-ME-1": was the report made from another file\?/
    )
    t.equal(readReport(join(dir, 'wrong.ndjson')).length, 0)
  }
)

t.test('--validate-only stores no account; migrate report lists every code the summary leaves out', async (t) => {
  const { url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const file = inputFile(
    dir,
    'accounts.ndjson',
    generated(60, 'validate-only', { invalidShare: 0.8 }).map((l) => l.line)
  )
  const run = await runClient([file, '--url', url, '--validate-only', '--report', join(dir, 'report.ndjson')], {
    AMIS_API_KEY: tenant.apiKey
  })
  t.equal(run.code, 1, 'invalid accounts fail')
  t.match(
    run.stdout,
    /^Validation of \S+ against \S+\n {2}accounts: +60\n {2}valid: +(\d+)\n {2}failed: +\d+ \(validate \d+\)\n/
  )
  const report = readReport(join(dir, 'report.ndjson'))
  t.ok(report.every((r) => r.outcome === 'valid' || (r.outcome === 'failed' && r.step === 'validate')))
  t.same((await client.list('all')).json(), [], 'nothing of the accounts is stored')

  const codes = new Set(report.flatMap((r) => (r.errors ?? []).map((e) => e.code)))
  t.ok(codes.size > 8, `more codes (${codes.size}) than the summary shows`)
  t.match(run.stdout, new RegExp(`top error codes: .+, \\+${codes.size - 8} more\\n`))

  const summary = await runClient(['report', join(dir, 'report.ndjson')], {})
  t.equal(summary.code, 0)
  t.match(summary.stdout, /^Report \S+report\.ndjson\n {2}accounts: +60\n {2}valid: +\d+\n/)
  t.match(summary.stdout, /\n {2}step +code +accounts {2}meaning\n/)
  for (const code of codes) {
    const meaning = (meaningOf(code) ?? 'no meaning').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    t.match(
      summary.stdout,
      new RegExp(`\\n {2}validate +${code} +\\d+ {2}${meaning}\\n`),
      `${code}, with what it means`
    )
  }
  const notReport = await runClient(['report', file], {})
  t.equal(notReport.code, 2)
  t.match(notReport.stderr, /^error: line 1 of \S+ is not a line of a migration report\n$/)
})

t.test('a wrong team or a supplier that is not Ongoing stops the run before anything is sent', async (t) => {
  const { app, url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const file = inputFile(
    dir,
    'accounts.ndjson',
    generated(3, 'preflight', { postImportShare: 0 }).map((l) => l.line)
  )
  const env = { AMIS_API_KEY: tenant.apiKey }

  const team = await runClient([file, '--url', url, '--team', 'Migration', '--report', join(dir, 'a.ndjson')], env)
  t.equal(team.code, 1)
  t.equal(
    team.stderr,
    'error: operations team "Migration" does not exist: check --team (an operator lists the teams with npm run admin -- list-teams)\nNothing was sent.\n'
  )
  t.notOk(existsSync(join(dir, 'a.ndjson')), 'no report')

  const foreign = inputFile(
    dir,
    'foreign.ndjson',
    generated(2, 'foreign', { supplier: 'SOMEONE_ELSE' }).map((l) => l.line)
  )
  const notOurs = await runClient([foreign, '--url', url, '--team', TEAM, '--report', join(dir, 'b.ndjson')], env)
  t.equal(notOurs.code, 1)
  t.match(
    notOurs.stderr,
    /^error: import supplier SOMEONE_ELSE is not your organisation's \(yours: ACME_ENERGY\): is this the right file and API key\?\n/
  )

  await asOperator(app, 'mutation { updateImportSupplier(input: { code: "ACME_ENERGY", status: Paused }) { code } }')
  const paused = await runClient([file, '--url', url, '--team', TEAM, '--report', join(dir, 'c.ndjson')], env)
  t.equal(paused.code, 1)
  t.match(
    paused.stderr,
    /^error: the migration of import supplier ACME_ENERGY is Paused: nothing can be imported until an operator sets it to Ongoing \(npm run admin -- update-supplier ACME_ENERGY --status Ongoing\)\n/
  )
  t.same((await client.list('all')).json(), [], 'nothing was sent')
})

t.test('a supplier paused during the run stops it at the first account refused for it', async (t) => {
  const { app, url, tenant, client } = await migrationServer(t)
  const dir = tempDir(t)
  const file = inputFile(
    dir,
    'accounts.ndjson',
    generated(30, 'paused', { postImportShare: 0 }).map((l) => l.line)
  )
  let creates = 0
  // The operator pauses the migration just before the client's third create.
  const pausing: typeof fetch = async (input, init) => {
    if (String(input).endsWith('/process/') && ++creates === 3) {
      await asOperator(
        app,
        'mutation { updateImportSupplier(input: { code: "ACME_ENERGY", status: Paused }) { code } }'
      )
    }
    return fetch(input, init)
  }
  const run = await runClient(
    [file, '--url', url, '--team', TEAM, '--batch-size', '1', '--concurrency', '1', '--report', join(dir, 'r.ndjson')],
    { AMIS_API_KEY: tenant.apiKey },
    { fetch: pausing }
  )
  t.equal(run.code, 1)
  t.match(
    run.stdout,
    /: stopped, The migration of import supplier ACME_ENERGY is Paused \(import_supplier_migration_not_ongoing\)\n {2}accounts: +3\n {2}created: +2\n/
  )
  t.match(run.stdout, /Run again with --resume to carry on/)
  t.equal(readReport(join(dir, 'r.ndjson')).length, 3, 'no account after the refused one was sent')
  t.equal((await client.list('imported')).json().length, 2)
})

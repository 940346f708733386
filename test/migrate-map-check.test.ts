import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { exampleAccount, TEAM } from './helpers/accounts.js'
import { inputFile, migrationServer, runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'
import { entryChecker } from '../src/cli/migrate/map/schema-check.js'

/**
 * `map check` as a person runs it on lines a mapping made: each line checked here against the
 * service's published schemas, the rest dry-run on the service as an import job, and every
 * failure printed in the source's terms (file, row, field, column), grouped by code with what the
 * code means; exit 1 when anything fails. The sources file is written here by hand, as `map`
 * writes it.
 */

const TRANSACTION = {
  transaction_id: 'T-1',
  transaction_date: '2026-10-15',
  amount: '12.50',
  type: 'CHARGE',
  reason: 'IMPORTED_CHARGE'
}

/** A batch entry of the example account numbered `external`, with `changes` to the account and the entry's other keys. */
function entry(external: string, account: Record<string, unknown> = {}, more: Record<string, unknown> = {}) {
  return { account: exampleAccount({ external_account_number: external, ...account }), ...more }
}

/** A sources file as `map` writes it: its header, then one line per output line. */
function sourcesFile(path: string, header: Record<string, unknown>, lines: Array<Record<string, unknown>>) {
  writeFileSync(
    path,
    [{ kind: 'sources', mapping: 'mapping.sql', extract: 'extract', ...header }, ...lines]
      .map((l) => JSON.stringify(l))
      .join('\n') + '\n'
  )
}

const COLUMNS = {
  'account.external_account_number': { file: 'accounts.csv', column: 'acct_no' },
  'account.metadata[].key': { file: 'accounts.csv', column: 'tag' },
  'transactions[].amount': { file: 'transactions.csv', column: 'amount' }
}
const FILES = {
  'accounts.csv': { rows_read: 4, rows_used: 4, rejected: [], orphans: [], repeated_keys: [] },
  'transactions.csv': { rows_read: 5, rows_used: 5, rejected: [], orphans: [], repeated_keys: [] }
}

t.test('map check: the schema check here, the dry run there, each failure in the source terms', async (t) => {
  const server = await migrationServer(t)
  const dir = tempDir(t)
  const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }
  inputFile(dir, 'lines.ndjson', [
    entry('SRC-1', {}, { transactions: [TRANSACTION] }),
    // Too many decimal places: the published schema refuses it, so the service is never asked.
    entry(
      'SRC-2',
      {},
      { transactions: [TRANSACTION, { ...TRANSACTION, transaction_id: 'T-2', amount: '1.123456789012' }] }
    ),
    // Two metadata entries with one key: a rule of the service, which only the dry run finds.
    entry('SRC-3', {
      metadata: [
        { key: 'tariff', value: 'A' },
        { key: 'tariff', value: 'B' }
      ]
    }),
    entry('SRC-4')
  ])
  sourcesFile(join(dir, 'lines.ndjson.sources.ndjson'), { files: FILES, columns: COLUMNS }, [
    { line: 1, account: 'SRC-1', rows: { 'accounts.csv': [2], 'transactions.csv': [2] } },
    { line: 2, account: 'SRC-2', rows: { 'accounts.csv': [3], 'transactions.csv': [3, 4] } },
    { line: 3, account: 'SRC-3', rows: { 'accounts.csv': [4] } },
    { line: 4, account: 'SRC-4', rows: { 'accounts.csv': [5], 'transactions.csv': [] } }
  ])
  const run = await runClient(['map', 'check', '--lines', 'lines.ndjson', '--url', server.url, '--team', TEAM], env, {
    pollIntervalMs: 100
  })
  t.equal(run.code, 1, `a line failed: exit 1 ${run.stderr}`)
  t.match(run.stdout, /schema check: +3 passed, 1 failed/)
  t.match(run.stdout, /dry run \(accounts\): +2 would be created, 1 failed\n/)
  t.match(run.stdout, /max_decimal_places: 1 line\n/, 'the local check names the service code')
  t.match(
    run.stdout,
    /line 2, account SRC-2 \(schema check, transactions\)\n +transactions\.1\.amount ← transactions\.csv, column amount, rows 3, 4\n/,
    'the field, the column it came from and the rows of that file'
  )
  t.match(run.stdout, /metadata_has_duplicate_keys: 1 line\n/)
  t.match(
    run.stdout,
    /line 3, account SRC-3 \(dry run, stage\)\n +account\.metadata\.1\.key ← accounts\.csv, column tag, row 4\n/,
    "the service's failure, at its line of the mapping's output"
  )
  t.match(run.stdout, /2 lines failed: fix the extract or the mapping, and check again/)
  t.notMatch(run.stdout, /SRC-1|SRC-4/, 'the lines that pass are not listed')
})

t.test('map check: every line would be created, exit 0; an orphan row the mapping left out, exit 1', async (t) => {
  const server = await migrationServer(t)
  const dir = tempDir(t)
  const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }
  inputFile(dir, 'good.ndjson', [entry('OK-1', {}, { transactions: [TRANSACTION] }), entry('OK-2')])
  const good = await runClient(['map', 'check', '--lines', 'good.ndjson', '--url', server.url, '--team', TEAM], env, {
    pollIntervalMs: 100
  })
  t.equal(good.code, 0, `nothing failed: exit 0 ${good.stderr}`)
  t.match(good.stdout, /dry run \(accounts\): +2 would be created, 0 failed\n/)
  t.match(good.stdout, /Nothing failed: every line would be created\./)
  t.notMatch(good.stdout, /Failures by error code/, 'no failures listed')

  // The same lines, with a sources file that says the mapping left rows out: exit 1, each named.
  const files = {
    ...FILES,
    'transactions.csv': { ...FILES['transactions.csv'], orphans: [{ row: 7, key: 'GONE-9' }] },
    'accounts.csv': { ...FILES['accounts.csv'], rejected: [{ line: 5, reason: 'expected 9 columns, found 8' }] }
  }
  sourcesFile(join(dir, 'other.sources.ndjson'), { files, columns: COLUMNS }, [
    { line: 1, account: 'OK-1', rows: { 'accounts.csv': [2], 'transactions.csv': [2] } },
    { line: 2, account: 'OK-2', rows: { 'accounts.csv': [3] } }
  ])
  const left = await runClient(
    [
      'map',
      'check',
      '--lines',
      'good.ndjson',
      '--sources',
      'other.sources.ndjson',
      '--url',
      server.url,
      '--team',
      TEAM
    ],
    env,
    { pollIntervalMs: 100 }
  )
  t.equal(left.code, 1, 'source rows left out: exit 1')
  t.match(left.stdout, /Source rows the mapping left out:\n/)
  t.match(left.stdout, /accounts\.csv: 1 row rejected \(line 5: expected 9 columns, found 8\)/)
  t.match(left.stdout, /transactions\.csv: 1 orphan row, no such account \(row 7: GONE-9\)/)
  t.match(left.stdout, /0 lines failed, 2 source rows left out/)
})

t.test(
  'map check: no line passes the schema check, nothing is sent; a section problem the dry run would not see',
  async (t) => {
    const server = await migrationServer(t)
    const dir = tempDir(t)
    const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }
    inputFile(dir, 'bad.ndjson', [
      entry('BAD-1', {}, { notes: [{ body: '   ' }] }),
      { account: exampleAccount({ external_account_number: 'BAD-2' }), tariff: 'E7' },
      'not json at all'
    ])
    const run = await runClient(['map', 'check', '--lines', 'bad.ndjson', '--url', server.url, '--team', TEAM], env)
    t.equal(run.code, 1)
    t.match(run.stdout, /schema check: +0 passed, 3 failed/)
    t.match(run.stdout, /dry run \(accounts\): +not run \(no line passed the schema check\)/)
    t.match(
      run.stdout,
      /line 1, account BAD-1 \(schema check, notes\)\n +notes\.0\.body\n/,
      'a blank note, which a dry run never checks'
    )
    t.match(
      run.stdout,
      /unexpected_field: 1 line\n[\s\S]*line 2, account BAD-2 \(schema check, stage\)\n +tariff\n/,
      'a key the entry does not have, at the entry'
    )
    t.match(
      run.stdout,
      /invalid: 1 line\n[\s\S]*line 3 \(schema check, stage\)\n +\(the whole line\)\n/,
      'a line that is not JSON'
    )
    const jobs = await server.app.inject({
      url: '/v1/data-import/import-jobs/',
      headers: { authorization: `Token ${server.tenant.token}` }
    })
    t.same(jobs.json(), [], 'no job was made')
  }
)

t.test("the local check's codes and attrs are the service's own, for the account and a section", async (t) => {
  const server = await migrationServer(t)
  const document = (await server.app.inject({ url: '/openapi.json' })).json()
  const check = entryChecker(document)
  const headers = { authorization: `Token ${server.tenant.token}` }
  const pairs = (errors: Array<{ code: string; attr: string | null }>) =>
    errors.map((e) => `${e.code} ${e.attr}`).sort()
  // Schema problems only: the validate endpoint's business rules are the dry run's to find.
  const accounts: Array<Record<string, unknown>> = [
    { ledgers: [{ ...exampleAccount().ledgers[0], ledger_balance: '1.123456789012' }] },
    { ledgers: [{ ...exampleAccount().ledgers[0], ledger_balance: 'twelve' }] },
    { account_type: 'PALACE', communication_preference: 7 },
    { billing_address: { ...exampleAccount().billing_address, postal_code: null, town: 'Bristol' } },
    { customers: [{ ...exampleAccount().customers[0], given_name: 42, nickname: 'Ada' }] }
  ]
  for (const changes of accounts) {
    const account = exampleAccount({ external_account_number: 'EQ-1', ...changes })
    const served = await server.app.inject({
      method: 'POST',
      url: '/v1/data-import/validate-account/',
      headers,
      payload: account
    })
    t.equal(served.statusCode, 400, JSON.stringify(changes))
    const [local, ...more] = check({ account })
    t.same(more, [])
    t.equal(local?.code, served.json().code, 'the top code')
    t.same(pairs(local?.errors ?? []), pairs(served.json().errors), `${JSON.stringify(changes)}: the same problems`)
  }
  const notes = [
    { body: 'fine', created_at: 'last Tuesday' },
    { body: 'x'.repeat(10_001) },
    { body: 'ok', colour: 'red' }
  ]
  const served = await server.app.inject({
    method: 'POST',
    url: '/v1/data-import/notes/create/',
    headers,
    payload: { import_supplier: 'ACME_ENERGY', external_account_number: 'EQ-1', notes }
  })
  t.equal(served.statusCode, 400)
  const [local] = check({ account: exampleAccount({ external_account_number: 'EQ-1' }), notes })
  t.equal(local?.step, 'notes')
  t.same(pairs(local?.errors ?? []), pairs(served.json().errors), 'the notes endpoint says the same')
})

import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { exampleAccount, TEAM } from './helpers/accounts.js'
import { inputFile, migrationServer, runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'

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
  t.match(run.stdout, /dry run: +2 would be created, 1 failed \(job /)
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

import t from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { legacyExtract } from './helpers/extract.js'
import { runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'
import { readSources } from '../src/cli/migrate/map/index.js'

/**
 * `map` on a legacy-style extract (test/helpers/extract.ts): Windows-1252, CRLF, DD/MM/YYYY, £
 * amounts with separators and parentheses, a note over two lines, a UTF-8 file with a byte-order
 * mark; every faulty row accounted for by file and row, the lines and their sources right.
 */

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))

t.test('the lines: encodings, line ends, dates, amounts, a note over two lines', async (t) => {
  const dir = tempDir(t)
  legacyExtract(dir)
  const run = await runClient(['map', 'mapping.sql', '--out', 'lines.ndjson', '--go-on'], { INIT_CWD: dir })
  t.equal(run.code, 0, run.stderr)
  const [a1, a2, a2again, a5, ...more] = lines(join(dir, 'lines.ndjson'))
  t.same(more, [], 'one line per account row read, the rejected ones left out')
  t.same(a1.account, {
    external_account_number: 'A-1',
    import_supplier: 'ACME_ENERGY',
    transfer_balance: 1234.56,
    customers: [{ given_name: 'Ann O’Neil' }],
    supply_addresses: [{ customer_at_supply_address_from_date: '2020-02-01' }]
  })
  t.same(a1.transactions, [{ transaction_date: '2024-01-01', amount: 1000 }], '"£1,000.00" is 1000')
  t.same(
    a1.notes,
    [{ body: 'first line\nsecond line' }, { body: 'a "quoted" word' }],
    'a quoted field over two lines (CRLF inside becomes LF), a quoted quote'
  )
  t.equal(a2.account.transfer_balance, -12.5, '"(12.50)" is -12.50')
  t.equal(a2again.account.external_account_number, 'A-2', 'a repeated account number still makes its line')
  t.same(a5.notes, [{ body: 'café' }], 'the UTF-8 file read as UTF-8 (its byte-order mark wins over the header)')
  t.same(a5.transactions, [{ transaction_date: '2024-01-03', amount: -7.25 }])
  t.notOk('transactions' in a2, 'an account without transactions has no transactions field (a null is left out)')
})

t.test('every source row accounted for: the summary by file, exit 1 unless --go-on', async (t) => {
  const dir = tempDir(t)
  legacyExtract(dir)
  const run = await runClient(['map', 'mapping.sql', '--out', 'lines.ndjson'], { INIT_CWD: dir })
  t.equal(run.code, 1, 'rejected rows, an orphan and a repeated key: exit 1')
  t.match(run.stderr, /^file +read +used +rejected +orphans +repeats +unused\n/)
  t.match(run.stderr, /\naccounts\.csv +7 +4 +3 +- +1 +0\n/)
  t.match(run.stderr, /\ntransactions\.csv +3 +2 +0 +1 +- +0\n/)
  t.match(run.stderr, /\nnotes\.csv +3 +3 +0 +0 +- +0\n/)
  t.match(run.stderr, /\n {2}accounts\.csv row 4: rejected, too few columns: Expected Number of Columns: 4 Found: 3\n/)
  t.match(run.stderr, /\n {2}accounts\.csv row 6: rejected, no account number \(account_number is blank\)\n/)
  t.match(run.stderr, /\n {2}accounts\.csv row 7: rejected, a byte not defined in windows-1252 \(0x81\)/)
  t.match(run.stderr, /\n {2}accounts\.csv rows 3, 5: account A-2 more than once\n/)
  t.match(run.stderr, /\n {2}transactions\.csv row 3: account A-9 is not in the accounts file\n/)
  t.match(run.stderr, /\n {2}lines 2, 3: the mapping gives account A-2 more than one line\n/)
  t.match(run.stderr, /\n4 lines written to lines\.ndjson \(sources: lines\.ndjson\.sources\.ndjson\)\n/)
  t.match(run.stderr, /problems above: fix the extract or the mapping, or pass --go-on/)
  t.ok(existsSync(join(dir, 'lines.ndjson')), 'the lines are written all the same')
  t.notMatch(run.stderr, /\n {4}at /, 'no stack trace')

  const goOn = await runClient(['map', 'mapping.sql', '--out', 'lines.ndjson', '--go-on'], { INIT_CWD: dir })
  t.equal(goOn.code, 0, '--go-on: exit 0')
  t.match(goOn.stderr, /problems above: going on \(--go-on\)/)
})

t.test('the sources file: every line names the file and row of each row it was made from', async (t) => {
  const dir = tempDir(t)
  legacyExtract(dir)
  const run = await runClient(['map', 'mapping.sql', '--out', 'lines.ndjson', '--go-on'], { INIT_CWD: dir })
  t.equal(run.code, 0, run.stderr)
  const [header, ...sourceLines] = lines(join(dir, 'lines.ndjson.sources.ndjson'))
  t.match(header, {
    kind: 'sources',
    mapping: 'mapping.sql',
    extract: 'extract',
    files: {
      'accounts.csv': {
        table: 'accounts',
        rows_read: 7,
        rows_used: 4,
        rejected: [
          { line: 4, reason: /^too few columns/ },
          { line: 6, reason: /blank/ },
          { line: 7, reason: /0x81/ }
        ],
        rejected_count: 3,
        repeated_keys: [{ key: 'A-2', rows: [3, 5] }],
        repeated_key_count: 1
      },
      'transactions.csv': { orphans: [{ row: 3, key: 'A-9' }], orphan_count: 1 },
      'notes.csv': { rows_read: 3, rows_used: 3, rejected_count: 0 }
    }
  })
  t.same(sourceLines, [
    { line: 1, account: 'A-1', rows: { 'accounts.csv': [2], 'transactions.csv': [2], 'notes.csv': [2, 4] } },
    { line: 2, account: 'A-2', rows: { 'accounts.csv': [3, 5] } },
    { line: 3, account: 'A-2', rows: { 'accounts.csv': [3, 5] } },
    // Row 8 although DuckDB read it 6th: rows 4 (rejected by the reader), 6 and 7 came before it.
    // Its note is row 3 although it starts on the file's 4th line: a quoted line break adds no row.
    { line: 4, account: 'A-5', rows: { 'accounts.csv': [8], 'transactions.csv': [4], 'notes.csv': [3] } }
  ])
  t.match(header.columns, {
    'account.external_account_number': { file: 'accounts.csv', column: 'account_number' },
    'account.transfer_balance': { file: 'accounts.csv', column: 'balance' },
    'account.customers[].given_name': { file: 'accounts.csv', column: 'name' },
    'transactions[].amount': { file: 'transactions.csv', column: 'amount' },
    'transactions[].transaction_date': { file: 'transactions.csv', column: 'date' },
    'notes[].body': { file: 'notes.csv', column: 'note' }
  })
  t.notOk('account.import_supplier' in header.columns, 'a constant has no source column')

  const sources = await readSources(join(dir, 'lines.ndjson.sources.ndjson'))
  t.equal(sources.header.kind, 'sources')
  t.same((await sources.byLine(4))?.rows, { 'accounts.csv': [8], 'transactions.csv': [4], 'notes.csv': [3] })
  t.same((await sources.byLine(1))?.account, 'A-1', 'an earlier line after a later one')
  t.equal(await sources.byLine(99), undefined)
})

import t from 'tap'
import { rowsFileOf, type SourcesHeader } from '../../src/cli/migrate/map/source-terms.js'

/** A failing field made of several columns (or none) names the rows of one file, not of every file. */

const file = (table: string) => ({ table }) as SourcesHeader['files'][string]
const header = {
  kind: 'sources',
  mapping: 'mapping.sql',
  extract: 'extract',
  files: { 'accounts.csv': file('accounts'), 'transactions.csv': file('transactions'), 'notes.csv': file('notes') },
  columns: {
    'account.external_account_number': { file: 'accounts.csv', column: 'account_number' },
    'account.ledgers[].historical_statement_transactions[].amount': { file: 'transactions.csv', column: 'amount' },
    'account.ledgers[].historical_statement_transactions[].transaction_id': { file: 'transactions.csv', column: 'id' },
    'notes[].body': { file: 'notes.csv', column: 'note' }
  }
} as SourcesHeader

t.test("the file of the field's neighbours, else the accounts file", async (t) => {
  t.equal(rowsFileOf(header, 'account.ledgers.0.historical_statement_transactions.3.type'), 'transactions.csv')
  t.equal(rowsFileOf(header, 'notes.1.created_at'), 'notes.csv')
  t.equal(rowsFileOf(header, 'account.transfer_balance'), 'accounts.csv', 'beside fields of the accounts file')
  t.equal(rowsFileOf(header, 'account.ledgers.0.ledger_code'), 'accounts.csv', 'no neighbour with a column')
  t.equal(rowsFileOf(header, null), 'accounts.csv', 'the whole line')
  t.equal(rowsFileOf(undefined, 'notes.1.body'), undefined)
})

t.test("the mapping's summary fits 80 columns: a long file name and millions of rows", async (t) => {
  const { renderMapSummary } = await import('../../src/cli/migrate/map/summary.js')
  const f = (table: string, n: number) => ({
    table,
    rows_read: n,
    rows_used: n,
    rejected: [],
    rejected_count: 1_234_567,
    orphans: [],
    orphan_count: 1_234_567,
    repeated_keys: [],
    repeated_key_count: 1_234_567
  })
  const text = renderMapSummary(
    {
      files: { 'accounts.csv': f('accounts', 1_000_000), 'supply_addresses.csv': f('supply_addresses', 10_000_000) },
      lines: 1_000_000,
      repeated_lines: [],
      problems: 0
    },
    { out: 'lines.ndjson', goOn: false }
  )
  const table = text.split('\n\n')[0]!.split('\n')
  t.ok(Math.max(...table.map((l) => l.length)) <= 80, `widest ${Math.max(...table.map((l) => l.length))}`)
})

import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import iconv from 'iconv-lite'

/**
 * A legacy-style extract made for the mapping tests, as an old billing system writes one:
 * Windows-1252 with CRLF line ends, DD/MM/YYYY dates, "£1,234.56" and "(12.50)" amounts; and its
 * faults, each at a known row (a spreadsheet's numbering, the header is row 1): a row with a
 * missing column, a repeated account number, a blank one, a byte Windows-1252 does not define, an
 * orphan transaction; a notes file in UTF-8 with a byte-order mark, with a note over two lines.
 */
export const LEGACY_MAPPING = `-- The test extract.
-- extract: extract
-- encoding: windows-1252
-- accounts: accounts.csv key account_number
-- table transactions: transactions.csv key account_number
-- table notes: notes.csv key account_number

CREATE MACRO uk_date(x) AS strftime(strptime(trim(x), '%d/%m/%Y'), '%Y-%m-%d');
CREATE MACRO amount(x) AS CAST(
  CASE WHEN trim(x) LIKE '(%)' THEN '-' ELSE '' END || regexp_replace(trim(x), '[£,() ]', '', 'g')
  AS DECIMAL(18, 2));

SELECT
  a.account_number AS account_key,
  json_object(
    'account', json_object(
      'external_account_number', a.account_number,
      'import_supplier', 'ACME_ENERGY',
      'transfer_balance', amount(a.balance),
      'customers', [json_object('given_name', a.name)],
      'supply_addresses', [json_object('customer_at_supply_address_from_date', uk_date(a.opened))]
    ),
    'transactions', (
      SELECT to_json(list(json_object('transaction_date', uk_date(t.date), 'amount', amount(t.amount)) ORDER BY t.source_row))
      FROM transactions t WHERE t.account_number = a.account_number),
    'notes', (
      SELECT to_json(list(json_object('body', n.note) ORDER BY n.source_row))
      FROM notes n WHERE n.account_number = a.account_number)
  ) AS entry
FROM accounts a
ORDER BY a.source_row;
`

const crlf = (rows: string[]) => rows.map((r) => r + '\r\n').join('')

export const LEGACY_FILES = {
  // Rows: 2 A-1, 3 A-2, 4 A-3 (a column missing), 5 A-2 again, 6 blank key, 7 A-4 (byte 0x81), 8 A-5.
  'accounts.csv': Buffer.concat([
    iconv.encode(
      crlf([
        'account_number,name,opened,balance',
        'A-1,Ann O’Neil,01/02/2020,"£1,234.56"',
        'A-2,Bob,03/04/2021,(12.50)',
        'A-3,Cy,05/06/2022',
        'A-2,Bob again,07/08/2023,£0.00',
        ' ,Nobody,01/01/2020,£1.00'
      ]),
      'windows-1252'
    ),
    Buffer.from('A-4,Di\x81x,01/01/2020,\xa32.00\r\n', 'latin1'),
    iconv.encode(crlf(['A-5,Ed,09/10/2024,£3.00']), 'windows-1252')
  ]),
  // Rows: 2 A-1, 3 A-9 (no such account), 4 A-5.
  'transactions.csv': iconv.encode(
    crlf(['account_number,date,amount', 'A-1,01/01/2024,"£1,000.00"', 'A-9,02/01/2024,£5.00', 'A-5,03/01/2024,(7.25)']),
    'windows-1252'
  ),
  // UTF-8 with a byte-order mark although the header says windows-1252: the mark wins.
  // Rows: 2 A-1 (over two lines), 3 A-5, 4 A-1.
  'notes.csv': Buffer.concat([
    Buffer.from([0xef, 0xbb, 0xbf]),
    Buffer.from(
      crlf([
        'account_number,created,note',
        'A-1,01/01/2024,"first line\r\nsecond line"',
        'A-5,02/01/2024,café',
        'A-1,03/01/2024,"a ""quoted"" word"'
      ]),
      'utf8'
    )
  ])
}

/** Writes the mapping (as `mapping.sql`, or the text given) and the extract in `dir`; the mapping's path. */
export function legacyExtract(
  dir: string,
  mapping = LEGACY_MAPPING,
  files: Record<string, Buffer | string> = LEGACY_FILES
): string {
  mkdirSync(join(dir, 'extract'), { recursive: true })
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, 'extract', name), content)
  writeFileSync(join(dir, 'mapping.sql'), mapping)
  return join(dir, 'mapping.sql')
}

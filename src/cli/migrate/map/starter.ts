/**
 * `map init`: the starter mapping for the documented extract layout (docs/extract-layout.md) and
 * a small sample extract in the style of an old billing system's: Windows-1252, CRLF line ends,
 * DD/MM/YYYY dates, amounts such as "£1,234.56" and "(12.50)", a note over two lines.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import iconv from 'iconv-lite'
import { MapError } from './errors.js'

export const STARTER_MAPPING = `-- A mapping: from the extract (one CSV file per entity, every row keyed by the old system's
-- account number; docs/extract-layout.md) to batch entries, one line per account.
-- The comment lines below declare the extract (its folder, encoding and delimiter, then its
-- files); the rest is DuckDB SQL. Each declared file is a
-- table of text columns (named as in its first line) plus source_row, its row number.
-- The last statement gives one row per account: account_key (the old account number) and
-- entry (the batch entry as JSON). Empty cells are NULL, and a field whose value is NULL is left
-- out of the entry.
--
-- extract: extract
-- encoding: windows-1252
-- delimiter: ,
-- accounts: accounts.csv key account_number
-- table customers: customers.csv key account_number
-- table supply_addresses: supply_addresses.csv key account_number
-- table meter_points: meter_points.csv key account_number
-- table agreements: agreements.csv key account_number
-- table balances: balances.csv key account_number
-- table transactions: transactions.csv key account_number
-- table notes: notes.csv key account_number
-- table statements: statements.csv key account_number
-- table bills: bills.csv key account_number

-- Your import supplier's code.
CREATE MACRO import_supplier() AS 'ACME_ENERGY';

-- 31/10/2025 → 2025-10-31.
CREATE MACRO uk_date(x) AS strftime(strptime(trim(x), '%d/%m/%Y'), '%Y-%m-%d');
-- 31/10/2025 14:05 → 2025-10-31T14:05:00Z (read as UTC).
CREATE MACRO uk_time(x) AS strftime(strptime(trim(x), '%d/%m/%Y %H:%M'), '%Y-%m-%dT%H:%M:00Z');
-- "£1,234.56" → 1234.56; "(12.50)" → -12.50.
CREATE MACRO amount(x) AS CAST(
  CASE WHEN trim(x) LIKE '(%)' THEN '-' ELSE '' END || regexp_replace(trim(x), '[£,() ]', '', 'g')
  AS DECIMAL(18, 2));
-- An empty list is left out, not sent as [].
CREATE MACRO json_list(l) AS CASE WHEN len(l) > 0 THEN to_json(l) END;

-- The old system's transaction codes.
CREATE TABLE transaction_types (code VARCHAR, type VARCHAR);
INSERT INTO transaction_types VALUES ('CHG', 'CHARGE'), ('CRD', 'CREDIT'), ('PAY', 'PAYMENT'), ('RFD', 'REPAYMENT');

-- One transaction as the service takes it (type: its code looked up in transaction_types).
-- Balances count payments and credits up, charges and repayments down (a balance above zero is
-- in the customer's favour).
CREATE MACRO transaction_json(t, type) AS json_object(
  'transaction_id', t.transaction_id,
  'transaction_date', uk_date(t.date),
  'type', type,
  'amount', amount(t.amount),
  'payment_type', t.payment_method,
  'reference', t.reference,
  'note', t.description);

-- Each list below is built once for all accounts (GROUP BY) and joined to its parent: every file
-- is read a few times whatever its size, where a subquery per account would read it per account.

-- Transactions by balance row: up to the last statement historical, later ones current.
CREATE VIEW transaction_lists AS
SELECT b.source_row AS balance_row,
  list(transaction_json(t, tt.type) ORDER BY t.source_row)
    FILTER (WHERE strptime(trim(t.date), '%d/%m/%Y') <= strptime(trim(b.last_statement_date), '%d/%m/%Y')) AS historical,
  list(transaction_json(t, tt.type) ORDER BY t.source_row)
    FILTER (WHERE strptime(trim(t.date), '%d/%m/%Y') > strptime(trim(b.last_statement_date), '%d/%m/%Y')) AS current
FROM transactions t
JOIN balances b ON b.account_number = t.account_number AND upper(trim(b.ledger)) = upper(trim(t.ledger))
LEFT JOIN transaction_types tt ON tt.code = upper(trim(t.type_code))
GROUP BY b.source_row;

CREATE VIEW ledger_lists AS
SELECT b.account_number,
  json_list(list(json_object(
    'ledger_code', upper(trim(b.ledger)),
    'ledger_balance', amount(b.balance),
    'last_statement_balance', amount(b.last_statement_balance),
    'last_statement_closing_date', uk_date(b.last_statement_date),
    'historical_statement_transactions', json_list(x.historical),
    'current_statement_transactions', json_list(x.current)
  ) ORDER BY b.source_row)) AS ledgers,
  sum(amount(b.balance)) AS transfer_balance
FROM balances b LEFT JOIN transaction_lists x ON x.balance_row = b.source_row
GROUP BY b.account_number;

CREATE VIEW agreement_lists AS
SELECT account_number, mpxn, json_list(list(json_object(
    'effective_from', uk_date(from_date),
    'tariff_code', tariff_code
  ) ORDER BY source_row)) AS agreements
FROM agreements GROUP BY account_number, mpxn;

CREATE VIEW supply_point_lists AS
SELECT m.account_number, m.address_id, json_list(list(json_object(
    'identifier', m.mpxn,
    'supply_type', upper(trim(m.fuel)),
    'supply_start_date', uk_date(m.supply_start),
    'agreements', g.agreements
  ) ORDER BY m.source_row)) AS supply_points
FROM meter_points m LEFT JOIN agreement_lists g ON g.account_number = m.account_number AND g.mpxn = m.mpxn
GROUP BY m.account_number, m.address_id;

CREATE VIEW supply_address_lists AS
SELECT s.account_number, json_list(list(json_object(
    'customer_at_supply_address_from_date', uk_date(s.moved_in),
    'supply_address', json_object(
      'street_address', s.street,
      'locality', s.town,
      'administrative_area', s.county,
      'postal_code', s.postcode,
      'country', 'GB'),
    'supply_points', p.supply_points
  ) ORDER BY s.source_row)) AS supply_addresses
FROM supply_addresses s LEFT JOIN supply_point_lists p ON p.account_number = s.account_number AND p.address_id = s.address_id
GROUP BY s.account_number;

CREATE VIEW customer_lists AS
SELECT account_number, json_list(list(json_object(
    'title', title,
    'given_name', first_name,
    'family_name', last_name,
    'email', email,
    'landline', phone,
    'portfolio_roles', CASE WHEN role = 'Primary' THEN ['ADMIN'] ELSE ['BILL_PAYER'] END
  ) ORDER BY source_row)) AS customers
FROM customers GROUP BY account_number;

CREATE VIEW note_lists AS
SELECT account_number, json_list(list(json_object(
    'created_at', uk_time(created),
    'body', replace(note, chr(13), '')
  ) ORDER BY source_row)) AS notes
FROM notes GROUP BY account_number;

CREATE VIEW statement_lists AS
SELECT account_number, json_list(list(json_object(
    'statement_id', statement_id,
    'bill_period_from_date', uk_date(period_from),
    'bill_period_to_date', uk_date(period_to),
    'issued_date', uk_date(issued),
    'gross_amount', amount(total)
  ) ORDER BY source_row)) AS historical_statements
FROM statements GROUP BY account_number;

CREATE VIEW bill_lists AS
SELECT account_number, json_object(
    'ledger_code', 'ENERGY',
    'billing_document_type', 'PERIOD_BASED',
    'historical_billing_documents', to_json(list(json_object(
      'billing_document_identifier', bill_id,
      'billing_document_type', 'PERIOD_BASED',
      'issued_date', uk_date(issued),
      'bill_period_from_date', uk_date(period_from),
      'bill_period_to_date', uk_date(period_to)
    ) ORDER BY source_row))) AS historical_billing_documents
FROM bills GROUP BY account_number;

SELECT
  a.account_number AS account_key,
  json_object(
    'account', json_object(
      'external_account_number', a.account_number,
      'import_supplier', import_supplier(),
      'account_type', upper(trim(a.account_type)),
      'billing_address', json_object(
        'street_address', a.billing_street,
        'locality', a.billing_town,
        'administrative_area', a.billing_county,
        'postal_code', a.billing_postcode,
        'country', 'GB'),
      'communication_preference', CASE upper(trim(a.communication)) WHEN 'POST' THEN 'PRINT' ELSE 'ONLINE' END,
      'customers', c.customers,
      'supply_addresses', s.supply_addresses,
      'ledgers', l.ledgers,
      'transfer_balance', l.transfer_balance
    ),
    'notes', n.notes,
    'historical_statements', st.historical_statements,
    'historical_billing_documents', bl.historical_billing_documents
  ) AS entry
FROM accounts a
LEFT JOIN customer_lists c ON c.account_number = a.account_number
LEFT JOIN supply_address_lists s ON s.account_number = a.account_number
LEFT JOIN ledger_lists l ON l.account_number = a.account_number
LEFT JOIN note_lists n ON n.account_number = a.account_number
LEFT JOIN statement_lists st ON st.account_number = a.account_number
LEFT JOIN bill_lists bl ON bl.account_number = a.account_number
ORDER BY a.source_row;
`

/** The sample extract, as the old system would write it (before encoding). */
export const SAMPLE_EXTRACT: Record<string, string[][]> = {
  'accounts.csv': [
    [
      'account_number',
      'account_type',
      'billing_street',
      'billing_town',
      'billing_county',
      'billing_postcode',
      'communication'
    ],
    ['100001', 'Domestic', '12 Harbour Row', 'Bristol', 'Avon', 'BS1 5TY', 'Email'],
    ['100002', 'Domestic', 'Flat 3, 8 Mill Lane', 'Leeds', '', 'LS1 4AP', 'Post'],
    ['100003', 'Business', 'Unit 7, Canal Works', 'Manchester', 'Greater Manchester', 'M1 2AB', 'Email']
  ],
  'customers.csv': [
    ['account_number', 'title', 'first_name', 'last_name', 'email', 'phone', 'role'],
    ['100001', 'Ms', 'Ada', 'Lovelace', 'ada.lovelace@mailbox.org', '0117 496 0123', 'Primary'],
    ['100002', 'Mr', 'Seán', 'O’Brien', 'sean.obrien@fastmail.com', '', 'Primary'],
    ['100002', 'Mrs', 'Niamh', 'O’Brien', '', '', 'Joint'],
    ['100003', '', 'Priya', 'Shah', 'accounts@canalworks.co.uk', '0161 496 0456', 'Primary']
  ],
  'supply_addresses.csv': [
    ['account_number', 'address_id', 'street', 'town', 'county', 'postcode', 'moved_in'],
    ['100001', '1', '12 Harbour Row', 'Bristol', 'Avon', 'BS1 5TY', '01/03/2021'],
    ['100002', '1', 'Flat 3, 8 Mill Lane', 'Leeds', '', 'LS1 4AP', '15/07/2022'],
    ['100003', '1', 'Unit 7, Canal Works', 'Manchester', 'Greater Manchester', 'M1 2AB', '01/01/2020']
  ],
  'meter_points.csv': [
    ['account_number', 'address_id', 'mpxn', 'fuel', 'supply_start'],
    ['100001', '1', '1900012345678', 'Electricity', '01/03/2021'],
    ['100001', '1', '7412369850', 'Gas', '01/03/2021'],
    ['100002', '1', '1900087654321', 'Electricity', '15/07/2022'],
    ['100003', '1', '1900011223344', 'Electricity', '01/01/2020']
  ],
  'agreements.csv': [
    ['account_number', 'mpxn', 'tariff_code', 'from_date'],
    ['100001', '1900012345678', 'E-1R-FIX-24', '01/03/2021'],
    ['100001', '7412369850', 'G-1R-FIX-24', '01/03/2021'],
    ['100002', '1900087654321', 'E-1R-VAR', '15/07/2022'],
    ['100003', '1900011223344', 'E-2R-BUS', '01/01/2020'],
    ['100003', '1900011223344', 'E-2R-BUS-25', '01/01/2025']
  ],
  'balances.csv': [
    ['account_number', 'ledger', 'balance', 'last_statement_balance', 'last_statement_date'],
    ['100001', 'ENERGY', '(5.94)', '(40.50)', '30/09/2025'],
    ['100002', 'ENERGY', '£25.00', '£0.00', '31/08/2025'],
    ['100003', 'ENERGY', '(£1,184.56)', '£50.00', '30/09/2025']
  ],
  'transactions.csv': [
    [
      'account_number',
      'ledger',
      'transaction_id',
      'date',
      'type_code',
      'amount',
      'payment_method',
      'reference',
      'description'
    ],
    ['100001', 'ENERGY', 'T-1001', '15/09/2025', 'CHG', '£90.50', '', '', 'September usage'],
    ['100001', 'ENERGY', 'T-1002', '20/09/2025', 'PAY', '£50.00', 'DD_REGULAR_COLLECTION', 'DD-20250920', ''],
    ['100001', 'ENERGY', 'T-1003', '31/10/2025', 'CHG', '£84.56', '', '', 'October usage'],
    ['100001', 'ENERGY', 'T-1004', '05/11/2025', 'PAY', '£119.12', 'DD_REGULAR_COLLECTION', 'DD-20251105', ''],
    ['100002', 'ENERGY', 'T-2001', '10/09/2025', 'CRD', '£25.00', '', '', 'Goodwill credit'],
    ['100003', 'ENERGY', 'T-3001', '31/10/2025', 'CHG', '£1,234.56', '', '', 'October supply']
  ],
  'notes.csv': [
    ['account_number', 'created', 'note'],
    ['100001', '02/03/2021 09:15', 'Welcome pack sent.'],
    ['100002', '16/07/2022 14:05', 'Customer asked for paper bills.\r\nJoint account holder added.'],
    ['100003', '02/01/2020 11:30', 'Business account: invoices to the accounts team.']
  ],
  'statements.csv': [
    ['account_number', 'statement_id', 'period_from', 'period_to', 'issued', 'total'],
    ['100001', 'S-1001', '01/09/2025', '30/09/2025', '02/10/2025', '£90.50'],
    ['100003', 'S-3001', '01/09/2025', '30/09/2025', '03/10/2025', '£1,050.00']
  ],
  'bills.csv': [
    ['account_number', 'bill_id', 'issued', 'period_from', 'period_to'],
    ['100001', 'B-1001', '02/10/2025', '01/09/2025', '30/09/2025']
  ]
}

/** One CSV row: a field with a comma, a quote or a line break is quoted. */
export function csvRow(cells: string[]): string {
  return cells.map((c) => (/[",\r\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c)).join(',') + '\r\n'
}

/** Writes `<dir>/mapping.sql` and `<dir>/extract/*.csv`; refuses to overwrite anything. Returns the files written. */
export function writeStarter(dir: string): string[] {
  const files = [join(dir, 'mapping.sql'), ...Object.keys(SAMPLE_EXTRACT).map((name) => join(dir, 'extract', name))]
  const taken = files.filter((f) => existsSync(f))
  if (taken.length > 0) {
    throw new MapError(
      `${taken.join(', ')} ${taken.length === 1 ? 'exists' : 'exist'} already: nothing written (map init never overwrites)`
    )
  }
  mkdirSync(join(dir, 'extract'), { recursive: true })
  writeFileSync(files[0]!, STARTER_MAPPING)
  for (const [name, rows] of Object.entries(SAMPLE_EXTRACT)) {
    writeFileSync(join(dir, 'extract', name), iconv.encode(rows.map(csvRow).join(''), 'windows-1252'))
  }
  return files
}

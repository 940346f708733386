/**
 * Realistic examples: the example account (a domestic customer with an ENERGY ledger whose
 * balances reconcile; the file `docs/examples/account.json`, which people send with the CLI and
 * curl) and one request of every endpoint for it. The API documentation shows them, and the tests
 * and benchmarks start from the same account.
 */
import account from '../docs/examples/account.json' with { type: 'json' }
import { CODE, ERROR_CODES, formatDetail } from './error-codes.js'
import { SECTIONS, type SectionListing } from './sections.js'

export const EXAMPLE_ACCOUNT: Readonly<Record<string, unknown>> = account

/** The example account as a fresh, mutable copy. */
export function exampleAccount(): Record<string, unknown> {
  return structuredClone(EXAMPLE_ACCOUNT)
}

const ref = { import_supplier: 'ACME_ENERGY', external_account_number: 'EXT-000123' }

/**
 * A value as the documentation shows it: without its blank strings (the example account sends one
 * to show it is omitted; the documentation need not), and its decimals with a fraction as decimal
 * strings (the account sends JSON numbers to show they are taken; the document's schemas list only
 * the JSON numbers every validator checks exactly, whole ones).
 */
function documented(value: unknown): unknown {
  if (typeof value === 'number' && !Number.isInteger(value)) return String(value)
  if (Array.isArray(value)) return value.map(documented)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== '')
      .map(([k, v]) => [k, documented(v)])
  )
}
const DOCUMENTED_ACCOUNT = documented(EXAMPLE_ACCOUNT)

/** A direct debit payment, in the batch entry's and the transactions endpoint's examples. */
const PAYMENT_EXAMPLE = {
  transaction_id: 'PAY-20261102',
  transaction_date: '2026-11-02',
  amount: '45.00',
  type: 'PAYMENT',
  reference: 'DD-20261102',
  payment_type: 'DD_REGULAR_COLLECTION'
}

/** A batch entry: the example account, with a note and a payment. */
const BATCH_ENTRY = {
  account: DOCUMENTED_ACCOUNT,
  notes: [{ body: 'Moved from the legacy CRM.' }],
  transactions: [PAYMENT_EXAMPLE]
}

/**
 * One request body per endpoint (by path, without a trailing slash); the payment instruction's is
 * `paymentInstructionExample`, because its vendors are the configuration's.
 */
export const REQUEST_EXAMPLES: Record<string, unknown> = {
  // A section may bring its own (its line in schemas/sections.ts): the account reference is added.
  ...Object.fromEntries(
    SECTIONS.flatMap((section: SectionListing) =>
      section.example
        ? [
            [
              `/v1/data-import${section.path.replace(/\/$/, '')}`,
              { import_supplier: 'ACME_ENERGY', external_account_number: 'EXT-000123', ...section.example }
            ]
          ]
        : []
    )
  ),
  '/v1/data-import/validate-account': DOCUMENTED_ACCOUNT,
  '/v1/data-import/account-import-process/create-or-update': DOCUMENTED_ACCOUNT,
  '/v1/data-import/account-import-process/process': {
    external_account_number: 'EXT-000123',
    import_supplier_code: 'ACME_ENERGY',
    operations_team_name: 'Migrations',
    dry_run: false
  },
  '/v1/data-import/import-jobs': {
    import_supplier: 'ACME_ENERGY',
    operations_team_name: 'Migrations',
    dry_run: false
  },
  '/v1/data-import/import-jobs/{id}/start': {
    not_before: '2026-11-28T22:00:00Z',
    not_after: '2026-11-29T06:00:00Z'
  },
  '/v1/data-import/notes/create': {
    ...ref,
    notes: [
      {
        body: 'Customer asked for paper bills until March.',
        created_at: '2026-09-12T09:30:00Z',
        is_pinned: true,
        unpin_at: '2027-03-31T00:00:00Z'
      },
      { document_paths: [{ document_path: 'letters/2026-09-welcome.pdf' }] }
    ]
  },
  '/v1/data-import/transactions/create': {
    ...ref,
    transactions: [
      PAYMENT_EXAMPLE,
      {
        transaction_id: 'CHG-20261105',
        transaction_date: '2026-11-05',
        amount: '12.50',
        type: 'CHARGE',
        reason: 'METER_READING_FEE'
      }
    ]
  },
  '/v1/data-import/historical-agreements/create': {
    ...ref,
    agreements: [
      {
        supply_point_identifier: '1200012345678',
        tariff_code: 'E-1R-VAR-19-01-01',
        effective_from: '2019-01-01',
        effective_to: '2021-03-01'
      }
    ]
  },
  '/v1/data-import/historical-billing-documents/create': {
    ...ref,
    ledger_code: 'ENERGY',
    ledger_number: 'L-0A1B2C3D',
    billing_document_type: 'ITEM_BASED',
    historical_billing_documents: [
      {
        billing_document_identifier: 'BILL-2025-01',
        billing_document_type: 'ITEM_BASED',
        issued_date: '2025-02-01',
        transactions: [{ transaction_id: 'B-2025-01', transaction_date: '2025-01-31', amount: '40.00', type: 'CHARGE' }]
      }
    ]
  },
  '/v1/data-import/historical-statements/create': {
    ...ref,
    statements: [
      {
        statement_id: 'ST-2025-01',
        bill_period_from_date: '2025-01-01',
        bill_period_to_date: '2025-01-31',
        issued_date: '2025-02-03',
        number: 'INV-1',
        gross_amount: '53.50',
        statement_path: 'statements/2025/01.pdf'
      }
    ]
  },
  '/v1/data-import/reconciliation/{supplier}': {
    accounts: [
      {
        external_account_number: 'EXT-000123',
        ledgers: [{ ledger_code: 'ENERGY', balance: '-42.50' }],
        counts: { transactions: 12, notes: 2, historical_statements: 1, billing_documents: 1 }
      },
      { external_account_number: 'EXT-000124', counts: { transactions: 3 } }
    ]
  },
  '/v1/data-import/batches': {
    import_supplier: 'ACME_ENERGY',
    operations_team_name: 'Migrations',
    accounts: [BATCH_ENTRY]
  }
}

/** The lines of an import job (a part, or the body of the one-call create): one batch entry per line. */
export const JOB_LINES_EXAMPLE = JSON.stringify(BATCH_ENTRY) + '\n'

/**
 * The payment instruction's example, naming the first configured vendor (`vendor` is an enum of the
 * configured codes, so a fixed code would be refused by every other configuration); none when no
 * vendor is configured, as then no request is valid.
 */
export function paymentInstructionExample(vendorCodes: readonly string[]): Record<string, unknown> | undefined {
  const vendor = vendorCodes[0]
  return vendor === undefined ? undefined : { ...ref, vendor, reference: 'pm_1Nx2yZ', type: 'DIRECT_DEBIT' }
}

/** The error body, as validate answers a payload with problems. */
export const ERROR_EXAMPLE = {
  detail: ERROR_CODES.account_failed_validation.detail,
  code: CODE.account_failed_validation,
  errors: [
    {
      detail: formatDetail(CODE.invalid_phone_number, { phone: 'abcde' }),
      code: CODE.invalid_phone_number,
      attr: 'customers.0.landline'
    },
    {
      detail: formatDetail(CODE.invalid_postcode, { postcode: 'BS1 5T', country: 'GB' }),
      code: CODE.invalid_postcode,
      attr: 'billing_address.postal_code'
    }
  ]
}

import t from 'tap'
import type { BillingDocumentsRequest } from '../../schemas/billing-documents.js'
import type { Transaction } from '../../schemas/transactions.js'
import { AppError, entry } from '../../src/errors.js'
import { planBillingDocuments, type PlacedTransaction } from '../../src/modules/billing-documents/service.js'
import { ruleContext } from '../../src/rules/context.js'

/**
 * Historical billing documents planned for a ledger without a database (the endpoint and batches
 * share planBillingDocuments): the document rows, their transactions, and the refusal of a
 * transaction the ledger already has.
 */

const TODAY = '2026-11-24'
const ledger = { id: 'ledger-1', ledgerNumber: 'L-0A1B2C3D' }

const charge = (id: string): Transaction => ({
  transaction_id: id,
  transaction_date: '2026-03-01',
  type: 'CHARGE',
  amount: '10.00'
})
const supplyCharge = (id: string): Transaction => ({
  transaction_id: id,
  transaction_date: '2026-03-31',
  type: 'SUPPLY_CHARGE',
  product_code: 'STANDARD',
  amount: '26.25',
  line_items: [
    {
      rate_band: 'DAY',
      start_date: '2026-03-01',
      end_date: '2026-03-31',
      number_of_units: '100',
      price_per_unit: '0.25',
      net_amount: '25.00',
      units: ['1.00', '2.00']
    }
  ],
  tax_items: [{ amount: '1.25', tax_type: 'VAT', value_taxed: '25.00', rate: '0.05', unit_type: 'PROPORTION' }]
})

const request = (changes: Partial<BillingDocumentsRequest> = {}): BillingDocumentsRequest => ({
  import_supplier: 'ACME_ENERGY',
  external_account_number: 'EXT-1',
  ledger_code: 'ENERGY',
  ledger_number: ledger.ledgerNumber,
  billing_document_type: 'PERIOD_BASED',
  historical_billing_documents: [
    {
      billing_document_identifier: 'D-1',
      billing_document_type: 'PERIOD_BASED',
      issued_date: '2026-04-02',
      bill_period_from_date: '2026-03-01',
      bill_period_to_date: '2026-03-31',
      transactions: [supplyCharge('S-1'), charge('C-1')]
    },
    {
      billing_document_identifier: 'D-2',
      billing_document_type: 'PERIOD_BASED',
      issued_date: '2026-05-02',
      bill_period_from_date: '2026-04-01',
      bill_period_to_date: '2026-04-30'
    }
  ],
  additional_historical_transactions: [charge('C-2')],
  ...changes
})

/** Each transaction with the path its problems are reported at, in request order (as the service places them). */
function placedOf(r: BillingDocumentsRequest): PlacedTransaction[] {
  return [
    ...r.historical_billing_documents.flatMap((doc, i) =>
      (doc.transactions ?? []).map((transaction, n) => ({
        transaction,
        path: `historical_billing_documents.${i}.transactions.${n}`
      }))
    ),
    ...(r.additional_historical_transactions ?? []).map((transaction, n) => ({
      transaction,
      path: `additional_historical_transactions.${n}`
    }))
  ]
}

function plan(r: BillingDocumentsRequest, known: string[] = [], ctx = ruleContext([], TODAY)) {
  return planBillingDocuments(r, placedOf(r), ledger, new Set(known), ctx)
}

function refusal(run: () => unknown) {
  try {
    run()
  } catch (err) {
    if (!(err instanceof AppError)) throw err
    return { status: err.statusCode, errors: err.errors.map((e) => [e.code, e.attr]) }
  }
  throw new Error('not refused')
}

t.test('period-based documents: one finalised row each, with its period, on the ledger', async (t) => {
  const p = plan(request())
  t.equal(p.documents.length, 2)
  t.match(p.documents[0], {
    ledgerId: 'ledger-1',
    identifier: 'D-1',
    type: 'PERIOD_BASED',
    issuedDate: '2026-04-02',
    billPeriodFrom: '2026-03-01',
    billPeriodTo: '2026-03-31',
    finalized: true
  })
  t.match(p.documents[1], { identifier: 'D-2', billPeriodFrom: '2026-04-01', billPeriodTo: '2026-04-30' })
  t.not(p.documents[0]!.id, p.documents[1]!.id)
  t.strictSame(p.detail, {
    ledger_number: 'L-0A1B2C3D',
    billing_document_type: 'PERIOD_BASED',
    billing_documents: 2,
    transactions: 3
  })
})

t.test('item-based documents have no period', async (t) => {
  const p = plan(
    request({
      billing_document_type: 'ITEM_BASED',
      historical_billing_documents: [
        {
          billing_document_identifier: 'D-9',
          billing_document_type: 'ITEM_BASED',
          issued_date: '2026-04-02',
          transactions: [charge('C-9')]
        }
      ],
      additional_historical_transactions: undefined
    })
  )
  t.match(p.documents, [{ identifier: 'D-9', type: 'ITEM_BASED', billPeriodFrom: null, billPeriodTo: null }])
  t.equal(p.detail.billing_document_type, 'ITEM_BASED')
  t.equal(p.detail.transactions, 1)
})

t.test(
  "transactions: a document's belong to it, the additional ones to none; historical, on no statement",
  async (t) => {
    const p = plan(request())
    const [d1] = p.documents
    t.strictSame(
      p.rows.transactions.map((r) => [r.transactionId, r.billingDocumentId]),
      [
        ['S-1', d1!.id],
        ['C-1', d1!.id],
        ['C-2', undefined]
      ]
    )
    t.ok(
      p.rows.transactions.every(
        (r) => r.ledgerId === 'ledger-1' && r.statementId === null && r.source === 'BILLING_DOCUMENT'
      )
    )
    const s1 = p.rows.transactions[0]!
    t.match(p.rows.lineItems, [
      { transactionId: s1.id, position: 0, rateBand: 'DAY', netAmount: '25.00', units: ['1.00', '2.00'] }
    ])
    t.match(p.rows.taxItems, [{ transactionId: s1.id, position: 0, amount: '1.25', unitType: 'PROPORTION' }])
  }
)

t.test(
  'transaction_already_exists: a transaction id the ledger has; nothing planned (errors in attr order)',
  async (t) => {
    t.strictSame(
      refusal(() => plan(request(), ['C-1', 'C-2'])),
      {
        status: 400,
        errors: [
          ['transaction_already_exists', 'additional_historical_transactions.0.transaction_id'],
          ['transaction_already_exists', 'historical_billing_documents.0.transactions.1.transaction_id']
        ]
      }
    )
    t.equal(plan(request(), ['C-3', 'S-10']).rows.transactions.length, 3, 'other ids on the ledger do not matter')
  }
)

t.test('problems found before (in ctx) refuse the plan, together with its own', async (t) => {
  const ctx = ruleContext([], TODAY)
  ctx.errors.push(
    entry('billing_document_type_mismatch', 'historical_billing_documents.1.billing_document_type', 'Found before.')
  )
  t.strictSame(
    refusal(() => plan(request(), ['S-1'], ctx)),
    {
      status: 400,
      errors: [
        ['transaction_already_exists', 'historical_billing_documents.0.transactions.0.transaction_id'],
        ['billing_document_type_mismatch', 'historical_billing_documents.1.billing_document_type']
      ]
    }
  )
})

import t from 'tap'
import { createServer } from 'node:http'
import { Big } from '../src/decimal.js'
import { daysFromToday, importedSetup } from './helpers/accounts.js'

/**
 * The example account imported, then every post-import endpoint driven through its good path:
 * the account summary's counts and ledger balance must match what was sent, to the penny.
 */
t.test('every post-import endpoint on the example account, reconciled in the summary', async (t) => {
  // A payment vendor on loopback that knows one active card instruction.
  const vendor = createServer((req, res) => {
    const found = req.url === '/payment-instructions/CARD-REF-1'
    res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' })
    res.end(
      found
        ? JSON.stringify({
            reference: 'CARD-REF-1',
            type: 'CARD',
            status: 'ACTIVE',
            details: { last4: '4242', expiry: '2029-01' }
          })
        : '{}'
    )
  })
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => vendor.close(() => resolve())))
  const vendorUrl = `http://127.0.0.1:${(vendor.address() as { port: number }).port}`
  const { client, post, ledgerNumber, serviceAccountNumber } = await importedSetup(t, {
    env: { PAYMENT_VENDORS: `ACMEPAY=${vendorUrl}` }
  })
  const summary = async () => (await client.summary('EXT-000123')).json()

  const before = await summary()
  t.equal(before.ledgers[0].balance, '6.26')

  const requests: Array<[string, Record<string, unknown>]> = []
  const send = async (path: string, body: Record<string, unknown>) => {
    requests.push([path, body])
    return post(path, body)
  }
  const noteRes = await send('notes/create/', {
    notes: [{ body: 'Moved from the legacy CRM.' }, { document_paths: [{ document_path: 'letters/welcome.pdf' }] }]
  })
  t.equal(noteRes.statusCode, 201, noteRes.body)

  // Money that moved during the migration window: 0.10 × 7 credits, a charge, a payment, a repayment.
  const sent = [
    ...Array.from({ length: 7 }, (_, i) => ({
      transaction_id: `W-C${i}`,
      transaction_date: daysFromToday(-1),
      amount: 0.1,
      type: 'CREDIT'
    })),
    { transaction_id: 'W-CH', transaction_date: daysFromToday(-1), amount: '19.99', type: 'CHARGE' },
    {
      transaction_id: 'W-PAY',
      transaction_date: daysFromToday(-1),
      amount: 50,
      type: 'PAYMENT',
      reference: 'DD-1',
      payment_type: 'DD_REGULAR_COLLECTION'
    },
    {
      transaction_id: 'W-REP',
      transaction_date: daysFromToday(-1),
      amount: '3.33',
      type: 'REPAYMENT',
      reference: 'R-1',
      payment_type: 'BACS'
    }
  ]
  const txRes = await send('transactions/create/', { transactions: sent })
  t.equal(txRes.statusCode, 201, txRes.body)
  const expected = new Big('6.26').plus('0.7').minus('19.99').plus('50').minus('3.33')

  const agreementRes = await send('historical-agreements/create/', {
    agreements: [
      {
        supply_point_identifier: '1200012345678',
        tariff_code: 'E-1R-OLD-19',
        effective_from: '2019-01-01',
        effective_to: '2021-03-01'
      }
    ]
  })
  t.equal(agreementRes.statusCode, 201, agreementRes.body)

  const billingRes = await send('historical-billing-documents/create/', {
    ledger_code: 'ENERGY',
    ledger_number: ledgerNumber,
    billing_document_type: 'ITEM_BASED',
    historical_billing_documents: [
      {
        billing_document_identifier: 'BILL-1',
        billing_document_type: 'ITEM_BASED',
        issued_date: '2025-02-01',
        transactions: [{ transaction_id: 'B-1', transaction_date: '2025-01-31', amount: '40.00', type: 'CHARGE' }]
      }
    ],
    additional_historical_transactions: [
      {
        transaction_id: 'B-2',
        transaction_date: '2025-02-10',
        amount: '40.00',
        type: 'PAYMENT',
        reference: 'DD-0',
        payment_type: 'DD_REGULAR_COLLECTION'
      }
    ]
  })
  t.equal(billingRes.statusCode, 201, billingRes.body)

  const statementRes = await send('historical-statements/create/', {
    statements: [
      {
        statement_id: 'ST-1',
        bill_period_from_date: '2025-01-01',
        bill_period_to_date: '2025-01-31',
        issued_date: '2025-02-01',
        gross_amount: '40.00',
        statement_path: '/statements/st-1.pdf'
      }
    ]
  })
  t.equal(statementRes.statusCode, 201, statementRes.body)

  const paymentRes = await send('payment-instruction/create/', {
    vendor: 'ACMEPAY',
    reference: 'CARD-REF-1',
    type: 'CARD'
  })
  t.equal(paymentRes.statusCode, 201, paymentRes.body)
  t.same(paymentRes.json(), { service_account_number: serviceAccountNumber, reference: 'CARD-REF-1' })

  const after = await summary()
  t.same(after.counts, {
    customers: 1,
    supply_points: 1,
    agreements: 2,
    historical_agreements: 1,
    notes: 2,
    transactions: 4 + sent.length + 2,
    historical_statements: 1,
    billing_documents: 1,
    payment_instructions: 1
  })
  t.equal(after.ledgers[0].balance, expected.toFixed(2), 'historical documents and statements leave the balance alone')
  t.equal(after.ledgers[0].balance, '33.64')
  t.equal(after.latest_event.type, 'POST_IMPORT_WRITE')

  // Every endpoint is safe to retry: repeating them all changes nothing.
  for (const [path, body] of requests) {
    const res = await post(path, body)
    t.equal(res.statusCode, 201, `${path} again: ${res.body}`)
  }
  t.same((await summary()).counts, after.counts)
  t.equal((await summary()).ledgers[0].balance, '33.64')
})

import t from 'tap'
import { asc, eq } from 'drizzle-orm'
import {
  billingDocuments,
  ledgerTransactions,
  ledgers,
  transactionLineItems,
  transactionTaxItems
} from '../drizzle/schema/index.js'
import { formatDecimal } from '../src/decimal.js'
import { codes, daysFromToday, exampleAccount, importClient, importedSetup } from './helpers/accounts.js'
import { tableCounts } from './helpers/database.js'
import { asOperator, createTenant } from './helpers/graphql.js'

const PATH = 'historical-billing-documents/create/'
const EVENTS =
  'query($s: String!, $e: String!) { importProcessEvents(importSupplierCode: $s, externalAccountNumber: $e) { type detail } }'

/** A SUPPLY_CHARGE whose amount is its line's net amount plus its tax (44 + 9.24). */
const supplyCharge = (id: string, changes: Record<string, unknown> = {}) => ({
  transaction_id: id,
  transaction_date: '2025-03-31',
  type: 'SUPPLY_CHARGE',
  amount: '53.24',
  product_code: 'E-1R-FIX-24-04-01',
  display_note: 'March electricity',
  line_items: [
    {
      rate_band: 'CONSUMPTION_STANDARD',
      start_date: '2025-03-01',
      end_date: '2025-03-31',
      number_of_units: 4,
      net_amount: 44,
      price_per_unit: 11,
      units: [4, 8]
    }
  ],
  tax_items: [{ amount: 9.24, tax_type: 'VAT', value_taxed: 44, rate: 0.21, unit_type: 'PROPORTION' }],
  ...changes
})
const charge = (id: string, amount: unknown = '-10.5', changes: Record<string, unknown> = {}) => ({
  transaction_id: id,
  transaction_date: '2025-02-01',
  type: 'CHARGE',
  amount,
  reason: 'LEGACY_ADJUSTMENT',
  ...changes
})
const payment = (id: string, changes: Record<string, unknown> = {}) => ({
  transaction_id: id,
  transaction_date: '2025-04-10',
  type: 'PAYMENT',
  amount: 53.24,
  reference: 'DD-202504',
  payment_type: 'DD_REGULAR_COLLECTION',
  ...changes
})
const itemDoc = (identifier: string, transactions: unknown[] = [], changes: Record<string, unknown> = {}) => ({
  billing_document_identifier: identifier,
  billing_document_type: 'ITEM_BASED',
  issued_date: '2025-04-02',
  transactions,
  ...changes
})
const periodDoc = (identifier: string, transactions: unknown[] = [], changes: Record<string, unknown> = {}) => ({
  billing_document_identifier: identifier,
  billing_document_type: 'PERIOD_BASED',
  issued_date: '2025-04-02',
  bill_period_from_date: '2025-03-01',
  bill_period_to_date: '2025-03-31',
  transactions,
  ...changes
})

t.test('historical billing documents', async (t) => {
  const { app, database, client, post, ledgerNumber } = await importedSetup(t)
  const db = database.db
  const counts = () => tableCounts(database)
  const summary = async (external = 'EXT-000123') => {
    const res = await client.summary(external)
    if (res.statusCode !== 200) throw new Error('summary failed: ' + res.body)
    return res.json()
  }
  const energy = (body: Record<string, unknown>): Record<string, any> => ({
    ledger_code: 'ENERGY',
    ledger_number: ledgerNumber,
    ...body
  })

  // A second account with an ENERGY and a DEPOSIT ledger, and a third one staged but never created.
  const second = exampleAccount({ external_account_number: 'EXT-000124' })
  second.ledgers.push({ ledger_code: 'DEPOSIT', ledger_balance: '0' })
  t.equal((await client.stage(second)).statusCode, 201)
  const created = await client.create('EXT-000124')
  t.equal(created.statusCode, 201, created.body)
  const ledgerOf = (code: string) =>
    (created.json().ledgers as Array<{ ledger_code: string; ledger_number: string }>).find(
      (l) => l.ledger_code === code
    )!.ledger_number
  const secondEnergy = ledgerOf('ENERGY')
  const secondDeposit = ledgerOf('DEPOSIT')
  t.equal((await client.stage(exampleAccount({ external_account_number: 'EXT-000125' }))).statusCode, 201)
  const postFor = (external: string, fields: Record<string, unknown>) =>
    post(PATH, { ...fields, external_account_number: external })

  t.test('schema problems: 400 invalid_request, one body, before anything else', async (t) => {
    const before = await counts()
    const res = await post(
      PATH,
      energy({
        billing_document_type: 'MONTHLY',
        historical_billing_documents: [
          itemDoc('I-1', [supplyCharge('S-1', { reason: 'X' }), payment('P-1', { amount: 0 })], {
            bill_period_from_date: '2025-03-01'
          }),
          { ...periodDoc('I-2'), bill_period_from_date: undefined, bill_period_to_date: null },
          itemDoc('x'.repeat(65), [], { billing_document_type: 'WEEKLY', issued_date: '2025-02-30' })
        ],
        additional_historical_transactions: [{ ...charge('A-1'), type: 'REFUND' }]
      })
    )
    t.equal(res.statusCode, 400, res.body)
    t.equal(res.json().code, 'invalid_request')
    t.same(codes(res), [
      ['invalid_choice', 'additional_historical_transactions.0.type'],
      ['invalid_choice', 'billing_document_type'],
      ['unexpected_field', 'historical_billing_documents.0.bill_period_from_date'],
      ['unexpected_field', 'historical_billing_documents.0.transactions.0.reason'],
      ['min_value', 'historical_billing_documents.0.transactions.1.amount'],
      ['required', 'historical_billing_documents.1.bill_period_from_date'],
      ['null', 'historical_billing_documents.1.bill_period_to_date'],
      ['invalid_choice', 'historical_billing_documents.2.billing_document_type']
    ])
    const wrongBranch = await post(
      PATH,
      energy({
        billing_document_type: 'ITEM_BASED',
        historical_billing_documents: [itemDoc('y'.repeat(65), [], { issued_date: '2025-02-30' })]
      })
    )
    t.same(codes(wrongBranch), [
      ['max_length', 'historical_billing_documents.0.billing_document_identifier'],
      ['invalid_date', 'historical_billing_documents.0.issued_date']
    ])
    const empty = await post(PATH, { billing_document_type: 'ITEM_BASED', historical_billing_documents: [] })
    t.same(codes(empty), [
      ['min_items', 'historical_billing_documents'],
      ['required', 'ledger_code'],
      ['required', 'ledger_number']
    ])
    const unknownPair = await postFor(
      'EXT-NOPE',
      energy({ billing_document_type: 'ITEM_BASED', historical_billing_documents: [] })
    )
    t.equal(unknownPair.statusCode, 400, 'a schema problem wins over an unknown pair')
    t.same(await counts(), before, 'nothing stored')
  })

  t.test("404: unknown pair, staged but not created, another organisation's supplier", async (t) => {
    const body = energy({
      billing_document_type: 'ITEM_BASED',
      historical_billing_documents: [
        itemDoc('I-1', [], {
          billing_document_type: 'PERIOD_BASED',
          bill_period_from_date: '2025-03-01',
          bill_period_to_date: '2025-03-31'
        })
      ]
    })
    const unknown = await postFor('EXT-NOPE', body)
    t.equal(unknown.statusCode, 404, unknown.body)
    t.equal(unknown.json().code, 'not_found')
    t.same(codes(unknown), [['import_process_does_not_exist', null]], 'a 404 wins over rule problems')
    const notCreated = await postFor('EXT-000125', body)
    t.equal(notCreated.statusCode, 404)
    t.same(codes(notCreated), [['account_not_found', null]])

    // The other organisation has the pair staged: Acme's token still cannot see it.
    const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
    t.equal((await importClient(app, other).stage(exampleAccount({ import_supplier: 'OTHER_ENERGY' }))).statusCode, 201)
    const foreign = await post(PATH, { ...body, import_supplier: 'OTHER_ENERGY' })
    t.equal(foreign.statusCode, 404)
    t.same(codes(foreign), [['import_process_does_not_exist', null]])
    const unknownSupplier = await post(PATH, { ...body, import_supplier: 'NO_SUCH_SUPPLIER' })
    t.same([unknownSupplier.statusCode, codes(unknownSupplier)], [404, [['import_process_does_not_exist', null]]])
  })

  t.test('400 import_supplier_migration_not_ongoing on a Paused supplier, before rule problems', async (t) => {
    await asOperator(app, 'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: Paused}) { code } }')
    t.teardown(() =>
      asOperator(app, 'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: Ongoing}) { code } }')
    )
    const before = await counts()
    const res = await post(
      PATH,
      energy({ billing_document_type: 'ITEM_BASED', historical_billing_documents: [itemDoc('I-1'), itemDoc('I-1')] })
    )
    t.equal(res.statusCode, 400, res.body)
    t.equal(res.json().code, 'invalid_request')
    t.same(codes(res), [['import_supplier_migration_not_ongoing', 'import_supplier']])
    const valid = await post(
      PATH,
      energy({ billing_document_type: 'ITEM_BASED', historical_billing_documents: [itemDoc('I-1')] })
    )
    t.same(codes(valid), [['import_supplier_migration_not_ongoing', 'import_supplier']], 'a valid request too')
    t.same(await counts(), before, 'nothing stored')
  })

  t.test('ledger_not_found: code and number must name one ledger of the account', async (t) => {
    const before = await counts()
    const cases: Array<[string, string, string]> = [
      ['EXT-000123', 'ENERGY', 'L-00000000'],
      ['EXT-000123', 'DEPOSIT', ledgerNumber],
      ['EXT-000123', 'ENERGY', secondEnergy], // another account's ledger
      ['EXT-000124', 'ENERGY', secondDeposit], // the account's other ledger
      ['EXT-000124', 'energy', secondEnergy]
    ]
    for (const [external, code, number] of cases) {
      const res = await postFor(external, {
        ledger_code: code,
        ledger_number: number,
        billing_document_type: 'ITEM_BASED',
        historical_billing_documents: [itemDoc('I-1')]
      })
      t.equal(res.statusCode, 400, `${external} ${code} ${number}`)
      t.same(codes(res), [['ledger_not_found', 'ledger_number']], `${external} ${code} ${number}`)
    }
    const withOthers = await post(PATH, {
      ledger_code: 'ENERGY',
      ledger_number: 'L-00000000',
      billing_document_type: 'ITEM_BASED',
      historical_billing_documents: [
        itemDoc('I-1', [charge('H-1')]),
        itemDoc('I-1', [], {
          billing_document_type: 'PERIOD_BASED',
          bill_period_from_date: '2025-03-01',
          bill_period_to_date: '2025-03-31'
        })
      ]
    })
    t.same(
      codes(withOthers),
      [
        ['duplicate_billing_document_identifiers', 'historical_billing_documents.1.billing_document_identifier'],
        ['billing_document_type_mismatch', 'historical_billing_documents.1.billing_document_type'],
        ['ledger_not_found', 'ledger_number']
      ],
      'listed with the other rule problems; no ledger to look transaction ids up in'
    )
    t.same(await counts(), before, 'nothing stored')
  })

  t.test('every rule problem in one body, sorted, and nothing stored', async (t) => {
    const before = await counts()
    const res = await post(
      PATH,
      energy({
        billing_document_type: 'PERIOD_BASED',
        historical_billing_documents: [
          periodDoc('D-1', [supplyCharge('S-1', { amount: '53.25' }), payment('H-1')]),
          itemDoc('D-1', [charge('S-1'), charge('F-1', 5, { transaction_date: daysFromToday(1) })]),
          periodDoc(
            'D-2',
            [
              supplyCharge('S-2', {
                amount: '54.50',
                line_items: [{ ...supplyCharge('').line_items[0], net_amount: 45 }],
                tax_items: [{ ...supplyCharge('').tax_items[0], amount: '9.50' }]
              })
            ],
            { bill_period_from_date: '2025-05-01', bill_period_to_date: '2025-04-30' }
          ),
          periodDoc('D-3', [], { bill_period_from_date: '2025-04-30', bill_period_to_date: '2025-04-30' })
        ],
        additional_historical_transactions: [charge('S-2'), charge('C-2'), charge('S-1'), charge('A-1')]
      })
    )
    t.equal(res.statusCode, 400, res.body)
    t.equal(res.json().code, 'invalid_request')
    t.same(codes(res), [
      ['duplicate_transaction_ids', 'additional_historical_transactions.0.transaction_id'],
      ['transaction_already_exists', 'additional_historical_transactions.1.transaction_id'],
      ['duplicate_transaction_ids', 'additional_historical_transactions.2.transaction_id'],
      [
        'ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount',
        'historical_billing_documents.0.transactions.0.amount'
      ],
      ['transaction_already_exists', 'historical_billing_documents.0.transactions.1.transaction_id'],
      ['duplicate_billing_document_identifiers', 'historical_billing_documents.1.billing_document_identifier'],
      ['billing_document_type_mismatch', 'historical_billing_documents.1.billing_document_type'],
      ['duplicate_transaction_ids', 'historical_billing_documents.1.transactions.0.transaction_id'],
      ['transaction_in_future', 'historical_billing_documents.1.transactions.1.transaction_date'],
      ['start_date_later_than_end_date', 'historical_billing_documents.2.bill_period_to_date'],
      ['incorrect_line_item_net_amount', 'historical_billing_documents.2.transactions.0.line_items.0.net_amount'],
      ['incorrect_tax_amount', 'historical_billing_documents.2.transactions.0.tax_items.0.amount']
    ])
    t.same(await counts(), before, 'a rejected request stores nothing')
  })

  t.test('a transaction rule inside a document alone', async (t) => {
    const res = await post(
      PATH,
      energy({
        billing_document_type: 'ITEM_BASED',
        historical_billing_documents: [
          itemDoc('I-1'),
          itemDoc('I-2', [charge('K-1'), supplyCharge('S-1', { amount: 53.23 })])
        ]
      })
    )
    t.equal(res.statusCode, 400)
    t.same(codes(res), [
      [
        'ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount',
        'historical_billing_documents.1.transactions.1.amount'
      ]
    ])
  })

  t.test('transaction_already_exists for ids already on the ledger (H-1, C-2)', async (t) => {
    const before = await counts()
    const res = await post(
      PATH,
      energy({
        billing_document_type: 'ITEM_BASED',
        historical_billing_documents: [itemDoc('I-1', [charge('K-1'), charge('C-2')])],
        additional_historical_transactions: [charge('H-1')]
      })
    )
    t.equal(res.statusCode, 400)
    t.same(codes(res), [
      ['transaction_already_exists', 'additional_historical_transactions.0.transaction_id'],
      ['transaction_already_exists', 'historical_billing_documents.0.transactions.1.transaction_id']
    ])
    t.same(await counts(), before, 'nothing stored')
  })

  // The import of the example account's ENERGY ledger, used by the retry tests below. B-1 has units of
  // 16 significant digits: stored and compared exactly.
  const b1 = (changes: Record<string, unknown> = {}) =>
    supplyCharge('B-1', {
      line_items: [{ ...supplyCharge('').line_items[0], units: ['123456789012.3456', 0.5] }],
      ...changes
    })
  const itemRequest = energy({
    billing_document_type: 'ITEM_BASED',
    historical_billing_documents: [
      itemDoc('INV-1', [b1(), charge('B-2', '-10.5', { note: 'legacy reversal' })]),
      itemDoc('INV-2', [], { issued_date: '2025-05-02' })
    ],
    additional_historical_transactions: [
      payment('B-3'),
      { transaction_id: 'B-4', transaction_date: '2025-01-15', type: 'CREDIT', amount: 12, display_note: 'Goodwill' }
    ]
  })

  t.test('ITEM_BASED: documents stored finalised with their transactions; the balance does not change', async (t) => {
    const before = await counts()
    const summaryBefore = await summary()
    const res = await post(PATH, itemRequest)
    t.equal(res.statusCode, 201, res.body)
    t.equal(res.body, '', 'an empty body')
    const after = await counts()
    const changed = Object.fromEntries(
      Object.keys(after)
        .filter((k) => after[k] !== before[k])
        .map((k) => [k, after[k]! - before[k]!])
    )
    t.same(
      changed,
      {
        billing_documents: 2,
        ledger_transactions: 4,
        transaction_line_items: 1,
        transaction_tax_items: 1,
        import_events: 1
      },
      'exactly these rows were added'
    )

    const [ledger] = await db.select().from(ledgers).where(eq(ledgers.ledgerNumber, ledgerNumber))
    const docs = await db
      .select()
      .from(billingDocuments)
      .where(eq(billingDocuments.ledgerId, ledger!.id))
      .orderBy(asc(billingDocuments.identifier))
    t.same(
      docs.map((d) => [d.identifier, d.type, d.issuedDate, d.billPeriodFrom, d.billPeriodTo, d.finalized]),
      [
        ['INV-1', 'ITEM_BASED', '2025-04-02', null, null, true],
        ['INV-2', 'ITEM_BASED', '2025-05-02', null, null, true]
      ]
    )
    const txs = await db
      .select()
      .from(ledgerTransactions)
      .where(eq(ledgerTransactions.source, 'BILLING_DOCUMENT'))
      .orderBy(asc(ledgerTransactions.transactionId))
    const documentOf = (id: string | null) => docs.find((d) => d.id === id)?.identifier ?? null
    t.same(
      txs.map((x) => [
        x.transactionId,
        x.ledgerId === ledger!.id,
        x.type,
        x.transactionDate,
        formatDecimal(x.amount),
        documentOf(x.billingDocumentId),
        x.statementId,
        x.note
      ]),
      [
        ['B-1', true, 'SUPPLY_CHARGE', '2025-03-31', '53.24', 'INV-1', null, null],
        ['B-2', true, 'CHARGE', '2025-02-01', '-10.50', 'INV-1', null, 'legacy reversal'],
        ['B-3', true, 'PAYMENT', '2025-04-10', '53.24', null, null, null],
        ['B-4', true, 'CREDIT', '2025-01-15', '12.00', null, null, null]
      ]
    )
    t.match(txs[2], { reference: 'DD-202504', paymentType: 'DD_REGULAR_COLLECTION' })
    t.match(txs[3], { displayNote: 'Goodwill' })
    const [line] = await db
      .select()
      .from(transactionLineItems)
      .where(eq(transactionLineItems.transactionId, txs[0]!.id))
    t.same(
      [
        line!.rateBand,
        formatDecimal(line!.numberOfUnits),
        formatDecimal(line!.netAmount),
        formatDecimal(line!.pricePerUnit),
        line!.units!.map(formatDecimal)
      ],
      ['CONSUMPTION_STANDARD', '4.00', '44.00', '11.00', ['123456789012.3456', '0.50']]
    )
    const [tax] = await db.select().from(transactionTaxItems).where(eq(transactionTaxItems.transactionId, txs[0]!.id))
    t.same(
      [formatDecimal(tax!.amount), tax!.taxType, formatDecimal(tax!.rate), tax!.unitType],
      ['9.24', 'VAT', '0.21', 'PROPORTION']
    )

    const summaryAfter = await summary()
    t.equal(summaryAfter.ledgers[0].balance, '6.26', 'historical transactions leave the balance')
    t.equal(summaryAfter.ledgers[0].balance, summaryBefore.ledgers[0].balance)
    t.equal(summaryAfter.counts.billing_documents, 2)
    t.equal(summaryAfter.counts.transactions, summaryBefore.counts.transactions + 4)
    t.equal(summaryAfter.counts.transactions, 8, 'four imported with the account, four with the documents')
    const events = (await asOperator(app, EVENTS, { s: 'ACME_ENERGY', e: 'EXT-000123' })).importProcessEvents as Array<{
      type: string
      detail: any
    }>
    t.match(events.at(-1), {
      type: 'POST_IMPORT_WRITE',
      detail: {
        endpoint: 'historical_billing_documents',
        ledger_number: ledgerNumber,
        billing_documents: 2,
        transactions: 4
      }
    })
  })

  t.test('an exact retry returns 201 and writes nothing; order and decimal spelling do not matter', async (t) => {
    const before = await counts()
    const retry = await post(PATH, itemRequest)
    t.equal(retry.statusCode, 201, retry.body)
    t.equal(retry.body, '')
    const respelt = {
      ...itemRequest,
      historical_billing_documents: [
        itemDoc('INV-2', [], { issued_date: '2025-05-02' }),
        itemDoc('INV-1', [
          charge('B-2', -10.5, { note: 'legacy reversal' }),
          b1({ amount: '53.240', tax_items: [{ ...supplyCharge('').tax_items[0], rate: '0.2100' }] })
        ])
      ],
      additional_historical_transactions: [
        {
          transaction_id: 'B-4',
          transaction_date: '2025-01-15',
          type: 'CREDIT',
          amount: '12.00',
          display_note: 'Goodwill'
        },
        payment('B-3', { amount: '53.2400' })
      ]
    }
    const reordered = await post(PATH, respelt)
    t.equal(reordered.statusCode, 201, reordered.body)
    t.same(await counts(), before, 'no rows and no event')
  })

  t.test('a different request on an imported ledger: ledger_has_finalized_billing_documents', async (t) => {
    const before = await counts()
    const [inv1, inv2] = itemRequest.historical_billing_documents as Array<ReturnType<typeof itemDoc>>
    const [b3, b4] = itemRequest.additional_historical_transactions as unknown[]
    const variants: Array<[string, Record<string, unknown>]> = [
      ['a new document', { historical_billing_documents: [inv1, inv2, itemDoc('INV-3', [charge('B-9')])] }],
      ['a document less', { historical_billing_documents: [inv1] }],
      [
        'an amount off by 10⁻¹⁰',
        {
          historical_billing_documents: [
            itemDoc('INV-1', [b1(), charge('B-2', '-10.5000000001', { note: 'legacy reversal' })]),
            inv2
          ]
        }
      ],
      [
        'a unit off by 10⁻⁴',
        {
          historical_billing_documents: [
            itemDoc('INV-1', [
              b1({ line_items: [{ ...supplyCharge('').line_items[0], units: ['123456789012.3455', 0.5] }] }),
              charge('B-2', '-10.5', { note: 'legacy reversal' })
            ]),
            inv2
          ]
        }
      ],
      [
        'another tax type',
        {
          historical_billing_documents: [
            itemDoc('INV-1', [
              b1({ tax_items: [{ ...supplyCharge('').tax_items[0], tax_type: 'CCL' }] }),
              charge('B-2', '-10.5', { note: 'legacy reversal' })
            ]),
            inv2
          ]
        }
      ],
      ['another note', { historical_billing_documents: [itemDoc('INV-1', [b1(), charge('B-2', '-10.5')]), inv2] }],
      [
        'a transaction in another document',
        {
          historical_billing_documents: [
            itemDoc('INV-1', [b1()]),
            itemDoc('INV-2', [charge('B-2', '-10.5', { note: 'legacy reversal' })], { issued_date: '2025-05-02' })
          ]
        }
      ],
      ['another issued date', { historical_billing_documents: [inv1, { ...inv2, issued_date: '2025-05-03' }] }],
      ['an additional transaction less', { additional_historical_transactions: [b3] }],
      ['no additional transactions', { additional_historical_transactions: undefined }],
      [
        'a document transaction sent as additional',
        {
          historical_billing_documents: [itemDoc('INV-1', [b1()]), inv2],
          additional_historical_transactions: [b3, b4, charge('B-2', '-10.5', { note: 'legacy reversal' })]
        }
      ]
    ]
    for (const [name, changes] of variants) {
      const res = await post(PATH, { ...itemRequest, ...changes })
      t.equal(res.statusCode, 400, name)
      t.same(codes(res), [['ledger_has_finalized_billing_documents', 'ledger_number']], name)
    }
    const periodRetry = await post(PATH, {
      ...itemRequest,
      billing_document_type: 'PERIOD_BASED',
      historical_billing_documents: [periodDoc('INV-1')]
    })
    t.same(codes(periodRetry), [['ledger_has_finalized_billing_documents', 'ledger_number']], 'whatever the type')
    const withRuleProblem = await post(PATH, { ...itemRequest, historical_billing_documents: [inv1, inv2, inv2] })
    t.same(
      codes(withRuleProblem),
      [
        ['duplicate_billing_document_identifiers', 'historical_billing_documents.2.billing_document_identifier'],
        ['ledger_has_finalized_billing_documents', 'ledger_number']
      ],
      'listed with the other rule problems; stored transaction ids are not reported again'
    )
    t.same(await counts(), before, 'nothing stored')
  })

  t.test('PERIOD_BASED: the bill period is stored; from may equal to', async (t) => {
    const before = await summary('EXT-000124')
    const request = {
      ledger_code: 'ENERGY',
      ledger_number: secondEnergy,
      billing_document_type: 'PERIOD_BASED',
      historical_billing_documents: [
        periodDoc('BILL-1', [supplyCharge('P-1')]),
        periodDoc('BILL-2', [], {
          issued_date: '2025-05-01',
          bill_period_from_date: '2025-04-30',
          bill_period_to_date: '2025-04-30'
        })
      ]
    }
    const res = await postFor('EXT-000124', request)
    t.equal(res.statusCode, 201, res.body)
    const [ledger] = await db.select().from(ledgers).where(eq(ledgers.ledgerNumber, secondEnergy))
    const docs = await db
      .select()
      .from(billingDocuments)
      .where(eq(billingDocuments.ledgerId, ledger!.id))
      .orderBy(asc(billingDocuments.identifier))
    t.same(
      docs.map((d) => [d.identifier, d.type, d.issuedDate, d.billPeriodFrom, d.billPeriodTo, d.finalized]),
      [
        ['BILL-1', 'PERIOD_BASED', '2025-04-02', '2025-03-01', '2025-03-31', true],
        ['BILL-2', 'PERIOD_BASED', '2025-05-01', '2025-04-30', '2025-04-30', true]
      ]
    )
    const txs = await db.select().from(ledgerTransactions).where(eq(ledgerTransactions.ledgerId, ledger!.id))
    t.same(
      txs
        .filter((x) => x.source === 'BILLING_DOCUMENT')
        .map((x) => [x.transactionId, x.billingDocumentId, x.statementId]),
      [['P-1', docs[0]!.id, null]]
    )
    const after = await summary('EXT-000124')
    t.same(
      after.ledgers.map((l: any) => l.balance),
      before.ledgers.map((l: any) => l.balance),
      'balances unchanged'
    )
    t.same([after.counts.billing_documents, after.counts.transactions], [2, before.counts.transactions + 1])
    const counted = await counts()
    t.equal((await postFor('EXT-000124', request)).statusCode, 201, 'the retry')
    t.same(await counts(), counted, 'the retry writes nothing')
  })

  t.test('two different requests at once on one ledger: exactly one is stored', async (t) => {
    const request = (identifier: string) => ({
      ledger_code: 'DEPOSIT',
      ledger_number: secondDeposit,
      billing_document_type: 'ITEM_BASED',
      historical_billing_documents: [itemDoc(identifier, [charge(`${identifier}-T`)])]
    })
    const results = await Promise.all([postFor('EXT-000124', request('X-1')), postFor('EXT-000124', request('X-2'))])
    t.same(results.map((r) => r.statusCode).sort(), [201, 400], results.map((r) => r.body).join(' '))
    t.same(codes(results.find((r) => r.statusCode === 400)!), [
      ['ledger_has_finalized_billing_documents', 'ledger_number']
    ])
    const [ledger] = await db.select().from(ledgers).where(eq(ledgers.ledgerNumber, secondDeposit))
    const docs = await db.select().from(billingDocuments).where(eq(billingDocuments.ledgerId, ledger!.id))
    const txs = await db.select().from(ledgerTransactions).where(eq(ledgerTransactions.ledgerId, ledger!.id))
    t.equal(docs.length, 1)
    t.same(
      txs.map((x) => x.transactionId),
      [`${docs[0]!.identifier}-T`],
      "the winner's transaction only"
    )
  })
})

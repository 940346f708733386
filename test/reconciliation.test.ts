import t from 'tap'
import Big from 'big.js'
import { ledgerTransactions } from '../drizzle/schema/index.js'
import { REQUEST_EXAMPLES } from '../schemas/examples.js'
import { formatDecimal } from '../src/decimal.js'
import { signedAmount } from '../src/rules/transactions.js'
import { codes, exampleAccount, importClient, importedSetup } from './helpers/accounts.js'
import { tableCounts } from './helpers/database.js'
import { asOperator, createTenant } from './helpers/graphql.js'

const EXT = 'EXT-000123'
const SECTION_PATHS = [
  'notes/create',
  'transactions/create',
  'historical-agreements/create',
  'historical-billing-documents/create',
  'historical-statements/create'
]

t.test('reconciliation', async (t) => {
  const setup = await importedSetup(t)
  const { app, database, client, tenant, post, ledgerNumber } = setup
  const headers = { authorization: `Token ${tenant.token}` }
  const reconcile = (body: unknown, supplier = 'ACME_ENERGY', auth = headers) =>
    app.inject({
      method: 'POST',
      url: `/v1/data-import/reconciliation/${encodeURIComponent(supplier)}/`,
      headers: auth,
      payload: body as object
    })
  const totals = (supplier = 'ACME_ENERGY', auth = headers) =>
    app.inject({ method: 'GET', url: `/v1/data-import/reconciliation/${encodeURIComponent(supplier)}/`, headers: auth })

  // The example account, then each post-import section's example written to it.
  for (const path of SECTION_PATHS) {
    const example = { ...(REQUEST_EXAMPLES[`/v1/data-import/${path}`] as Record<string, unknown>) }
    if ('ledger_number' in example) example.ledger_number = ledgerNumber
    const res = await post(`${path}/`, example)
    t.equal(res.statusCode, 201, `${path}: ${res.body}`)
  }
  const summary = (await client.summary(EXT)).json()
  const balance: string = summary.ledgers[0].balance
  const held = {
    transactions: summary.counts.transactions,
    notes: summary.counts.notes,
    historical_agreements: summary.counts.historical_agreements,
    historical_statements: summary.counts.historical_statements,
    billing_documents: summary.counts.billing_documents,
    payment_instructions: summary.counts.payment_instructions
  }
  const fullEntry = { external_account_number: EXT, ledgers: [{ ledger_code: 'ENERGY', balance }], counts: held }

  t.test('an account with post-import data matches the account summary exactly', async (t) => {
    t.ok(held.transactions > 2 && held.notes >= 2, 'the sections were written')
    t.equal(held.billing_documents, 1)
    t.equal(held.historical_statements, 1)
    t.equal(held.historical_agreements, 1)
    // The example account's transactions, the two added, and the one inside the billing document.
    const rows = await database.db.select().from(ledgerTransactions)
    t.equal(held.transactions, rows.length, 'counts.transactions counts every transaction, billing documents included')
    const res = await reconcile({ accounts: [fullEntry] })
    t.equal(res.statusCode, 200, res.body)
    t.same(res.json(), { checked: 1, matching: 1, differences: [] })
  })

  t.test('balances compare as exact decimals', async (t) => {
    const exact = new Big(balance)
    const longer = exact.toFixed(10) // "6.2600000000"-style: trailing zeros carry no value
    const res = await reconcile({
      accounts: [
        { external_account_number: EXT, ledgers: [{ ledger_code: 'ENERGY', balance: longer }] },
        {
          external_account_number: EXT,
          ledgers: [{ ledger_code: 'ENERGY', balance: exact.plus('0.0000000001').toFixed() }]
        }
      ]
    })
    t.equal(res.statusCode, 200, res.body)
    t.same(res.json().matching, 1)
    t.same(res.json().differences, [
      {
        external_account_number: EXT,
        problem: 'balance_differs',
        field: 'ledgers.ENERGY.balance',
        expected: exact.plus('0.0000000001').toFixed(),
        actual: balance
      }
    ])
  })

  t.test('a balance may be a JSON number, compared exactly and answered as a decimal string', async (t) => {
    const exact = new Big(balance)
    t.ok(exact.c.length <= 15, `the held balance ${balance} fits a JSON number exactly`)
    const res = await reconcile({
      accounts: [
        { external_account_number: EXT, ledgers: [{ ledger_code: 'ENERGY', balance: Number(balance) }] },
        // 0.1 + 0.2 in binary floating point is 0.30000000000000004: the value sent is 0.3 exactly.
        { external_account_number: EXT, ledgers: [{ ledger_code: 'ENERGY', balance: 0.3 }] },
        { external_account_number: EXT, ledgers: [{ ledger_code: 'ENERGY', balance: -1e-10 }] }
      ]
    })
    t.equal(res.statusCode, 200, res.body)
    t.same(res.json(), {
      checked: 3,
      matching: 1,
      differences: [
        {
          external_account_number: EXT,
          problem: 'balance_differs',
          field: 'ledgers.ENERGY.balance',
          expected: '0.30',
          actual: balance
        },
        {
          external_account_number: EXT,
          problem: 'balance_differs',
          field: 'ledgers.ENERGY.balance',
          expected: '-0.0000000001',
          actual: balance
        }
      ]
    })
    const same = await reconcile({
      accounts: [{ external_account_number: EXT, ledgers: [{ ledger_code: 'ENERGY', balance: exact.toFixed(10) }] }]
    })
    t.same(same.json().matching, 1, 'the number and the string of the same value answer alike')
  })

  t.test('a later transaction: balance_differs and count_differs with expected and actual', async (t) => {
    const later = await post('transactions/create/', {
      transactions: [
        {
          transaction_id: 'PAY-A',
          transaction_date: '2026-11-06',
          amount: '0.10',
          type: 'CREDIT'
        },
        {
          transaction_id: 'PAY-B',
          transaction_date: '2026-11-06',
          amount: '0.20',
          type: 'CREDIT'
        }
      ]
    })
    t.equal(later.statusCode, 201, later.body)
    const res = await reconcile({ accounts: [fullEntry] })
    t.equal(res.statusCode, 200, res.body)
    const now = new Big(balance).plus('0.30')
    t.same(res.json(), {
      checked: 1,
      matching: 0,
      differences: [
        {
          external_account_number: EXT,
          problem: 'balance_differs',
          field: 'ledgers.ENERGY.balance',
          expected: balance,
          actual: now.toFixed(2)
        },
        {
          external_account_number: EXT,
          problem: 'count_differs',
          field: 'counts.transactions',
          expected: held.transactions,
          actual: held.transactions + 2
        }
      ]
    })
    // 0.10 + 0.20 added to the balance equals the old balance + "0.3" (no binary floating point).
    const matched = await reconcile({
      accounts: [
        {
          external_account_number: EXT,
          ledgers: [{ ledger_code: 'ENERGY', balance: new Big(balance).plus('0.3').toFixed() + '000' }],
          counts: { ...held, transactions: held.transactions + 2 }
        }
      ]
    })
    t.same(matched.json(), { checked: 1, matching: 1, differences: [] })
  })

  t.test('a ledger the account lacks differs with actual null; one not named is not compared', async (t) => {
    const res = await reconcile({
      accounts: [
        { external_account_number: EXT, ledgers: [{ ledger_code: 'GAS', balance: '0' }] },
        { external_account_number: EXT, ledgers: [] },
        { external_account_number: EXT, ledgers: [{ ledger_code: 'ENERGY' }] },
        { external_account_number: EXT }
      ]
    })
    t.same(res.json(), {
      checked: 4,
      matching: 3,
      differences: [
        {
          external_account_number: EXT,
          problem: 'balance_differs',
          field: 'ledgers.GAS.balance',
          expected: '0.00',
          actual: null
        }
      ]
    })
  })

  t.test('not_created, skipped, in request order', async (t) => {
    t.equal((await client.stage(exampleAccount({ external_account_number: 'STAGED-1' }))).statusCode, 201)
    t.equal((await client.stage(exampleAccount({ external_account_number: 'SKIP-1' }))).statusCode, 201)
    const skipped = await asOperator(
      app,
      'mutation { skipImportProcess(input: {importSupplierCode: "ACME_ENERGY", externalAccountNumber: "SKIP-1"}) { state } }'
    )
    t.notOk(skipped.errors, JSON.stringify(skipped.errors))
    const nothing = { field: null, expected: null, actual: null }
    const before = await tableCounts(database)
    const res = await reconcile({
      accounts: [
        { external_account_number: 'NEVER-1', counts: { notes: 1 } },
        { external_account_number: EXT, counts: { notes: held.notes + 5 } },
        { external_account_number: 'SKIP-1', ledgers: [{ ledger_code: 'ENERGY', balance: '1' }] },
        { external_account_number: 'STAGED-1' },
        { external_account_number: 'NEVER-1' }
      ]
    })
    t.equal(res.statusCode, 200, res.body)
    t.same(res.json(), {
      checked: 5,
      matching: 0,
      differences: [
        { external_account_number: 'NEVER-1', problem: 'not_created', ...nothing },
        {
          external_account_number: EXT,
          problem: 'count_differs',
          field: 'counts.notes',
          expected: held.notes + 5,
          actual: held.notes
        },
        { external_account_number: 'SKIP-1', problem: 'skipped', ...nothing },
        { external_account_number: 'STAGED-1', problem: 'not_created', ...nothing },
        { external_account_number: 'NEVER-1', problem: 'not_created', ...nothing }
      ]
    })
    t.same(await tableCounts(database), before, 'nothing written')
  })

  t.test('unknown and foreign suppliers: 404 as the other supplier-scoped reads', async (t) => {
    const other = await createTenant(app, 'Other', 'OTHER_SUPPLY')
    const otherHeaders = { authorization: `Token ${other.token}` }
    const expected = (await importClient(app, other).summary(EXT, 'ACME_ENERGY')).json()
    t.same(
      expected.errors.map((e: any) => e.code),
      ['import_process_does_not_exist']
    )
    const body = { accounts: [{ external_account_number: EXT }] }
    for (const [name, res] of [
      ['unknown POST', await reconcile(body, 'NO_SUCH')],
      ['unknown GET', await totals('NO_SUCH')],
      ['not a code POST', await reconcile(body, 'no such')],
      ['foreign POST', await reconcile(body, 'ACME_ENERGY', otherHeaders)],
      ['foreign GET', await totals('ACME_ENERGY', otherHeaders)]
    ] as const) {
      t.equal(res.statusCode, 404, name)
      t.same(res.json(), expected, `${name}: the same body`)
    }
    t.equal((await reconcile(body, 'OTHER_SUPPLY', otherHeaders)).statusCode, 200, 'its own supplier answers')
  })

  t.test('bad input: 400 with the attr', async (t) => {
    const entry = (changes: Record<string, unknown>) => ({ external_account_number: EXT, ...changes })
    const cases: Array<[string, unknown, Array<[string, string | null]>]> = [
      ['no entries', { accounts: [] }, [['min_items', 'accounts']]],
      ['10,001 entries', { accounts: Array.from({ length: 10001 }, () => entry({})) }, [['max_items', 'accounts']]],
      ['no accounts', {}, [['required', 'accounts']]],
      [
        'an entry without its number',
        { accounts: [entry({}), entry({}), entry({}), { counts: { notes: 1 } }] },
        [['required', 'accounts.3.external_account_number']]
      ],
      [
        'a balance as a JSON number of more than 15 significant digits',
        {
          accounts: [
            entry({}),
            entry({}),
            entry({}),
            entry({ ledgers: [{ ledger_code: 'ENERGY', balance: 0.1 + 0.2 }] })
          ]
        },
        [['max_digits', 'accounts.3.ledgers.0.balance']]
      ],
      [
        'a balance as a JSON number past its bounds',
        { accounts: [entry({ ledgers: [{ ledger_code: 'ENERGY', balance: 12345678901.5 }] })] },
        [['max_digits', 'accounts.0.ledgers.0.balance']]
      ],
      [
        'a balance that is neither a string nor a number',
        { accounts: [entry({ ledgers: [{ ledger_code: 'ENERGY', balance: true }] })] },
        [['invalid_decimal', 'accounts.0.ledgers.0.balance']]
      ],
      [
        'a balance that is not a decimal',
        { accounts: [entry({ ledgers: [{ ledger_code: 'ENERGY', balance: '1,50' }] })] },
        [['invalid_decimal', 'accounts.0.ledgers.0.balance']]
      ],
      [
        'a negative count',
        { accounts: [entry({ counts: { notes: -1 } })] },
        [['min_value', 'accounts.0.counts.notes']]
      ],
      [
        'a count that is not whole',
        { accounts: [entry({ counts: { transactions: 1.5 } })] },
        [['invalid', 'accounts.0.counts.transactions']]
      ],
      [
        'an unknown count',
        { accounts: [entry({ counts: { customers: 1 } })] },
        [['unexpected_field', 'accounts.0.counts.customers']]
      ],
      [
        'a ledger without its code',
        { accounts: [entry({ ledgers: [{ balance: '1.00' }] })] },
        [['required', 'accounts.0.ledgers.0.ledger_code']]
      ]
    ]
    for (const [name, body, expected] of cases) {
      const res = await reconcile(body)
      t.equal(res.statusCode, 400, `${name}: ${res.body.slice(0, 200)}`)
      t.same(codes(res), expected, name)
    }
    const at = await reconcile({
      accounts: Array.from({ length: 10000 }, (_, i) => ({ external_account_number: `N-${i}` }))
    })
    t.equal(at.statusCode, 200, '10,000 entries are fine')
    t.same([at.json().checked, at.json().differences.length], [10000, 10000])
  })

  t.test('supplier totals: exact sums over the created accounts', async (t) => {
    // Two more accounts, each given a credit of 19 significant digits: more than a binary floating
    // point number holds, so only an exact sum gives them back.
    for (const [external, amount] of [
      ['EXT-2', '999999999.1000000001'],
      ['EXT-3', '999999999.2000000003']
    ] as const) {
      t.equal((await client.stage(exampleAccount({ external_account_number: external }))).statusCode, 201)
      t.equal((await client.create(external)).statusCode, 201)
      const res = await app.inject({
        method: 'POST',
        url: '/v1/data-import/transactions/create/',
        headers,
        payload: {
          import_supplier: 'ACME_ENERGY',
          external_account_number: external,
          transactions: [{ transaction_id: 'X-1', transaction_date: '2026-11-06', amount, type: 'CREDIT' }]
        }
      })
      t.equal(res.statusCode, 201, res.body)
    }
    const balances = await Promise.all([EXT, 'EXT-2', 'EXT-3'].map(async (e) => (await client.summary(e)).json()))
    const balanceSum = balances.reduce((sum, s) => sum.plus(s.ledgers[0].balance), new Big(0))
    const transactions = await database.db.select().from(ledgerTransactions)
    const amountSum = transactions.reduce((sum, tx) => sum.plus(signedAmount(tx.type, tx.amount)), new Big(0))
    const sumOf = (name: string) => balances.reduce((n, s) => n + s.counts[name], 0)
    const res = await totals()
    t.equal(res.statusCode, 200, res.body)
    const body = res.json()
    t.same(body, {
      accounts_created: 3,
      accounts_skipped: 1,
      accounts_pending: 1,
      ledgers: [{ ledger_code: 'ENERGY', accounts: 3, balance_sum: body.ledgers[0].balance_sum }],
      transactions: { count: transactions.length, amount_sum: body.transactions.amount_sum },
      notes: sumOf('notes'),
      historical_agreements: 1,
      historical_statements: 1,
      billing_documents: 1,
      payment_instructions: 0
    })
    t.equal(body.ledgers[0].balance_sum, formatDecimal(balanceSum), 'balance_sum is the exact sum')
    t.equal(body.transactions.amount_sum, formatDecimal(amountSum), 'amount_sum is the exact signed sum')
    t.equal(
      new Big(balances[2].ledgers[0].balance).minus(balances[1].ledgers[0].balance).toFixed(),
      '0.1000000002',
      'balances held to ten decimal places'
    )
  })
})

import t from 'tap'
import Big from 'big.js'
import { ledgerTransactions } from '../drizzle/schema/index.js'
import { REQUEST_EXAMPLES } from '../schemas/examples.js'
import { formatDecimal } from '../src/decimal.js'
import { signedAmount } from '../src/rules/transactions.js'
import { codes, exampleAccount, importClient, importedSetup } from './helpers/accounts.js'
import { tableCounts } from './helpers/database.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { expectedSummary } from './helpers/migrate-expect.js'

const EXT = 'EXT-000123'
const SECTION_PATHS = [
  'notes/create',
  'transactions/create',
  'historical-agreements/create',
  'historical-billing-documents/create',
  'historical-statements/create'
]

/** What the test sent for one account, in the shape of a batch entry (`expectedSummary` counts it). */
interface SentLine {
  account: Record<string, any>
  notes?: unknown[]
  transactions?: Array<Record<string, any>>
  historical_agreements?: unknown[]
  historical_billing_documents?: { historical_billing_documents: Array<{ transactions?: unknown[] }> }
  historical_statements?: unknown[]
}

/** The counts a reconciliation compares, out of an account summary's (or an expected one's). */
const COMPARED = [
  'transactions',
  'notes',
  'historical_agreements',
  'historical_statements',
  'billing_documents',
  'payment_instructions'
] as const
const pick = (counts: Record<string, number>) =>
  Object.fromEntries(COMPARED.map((name) => [name, counts[name]])) as Record<(typeof COMPARED)[number], number>

/** Every transaction sent for an account: its ledgers', the ones added after, its billing documents'. */
function transactionsOf(line: SentLine): Array<{ type: string; amount: unknown }> {
  return [
    ...line.account.ledgers.flatMap((l: any) => [
      ...(l.current_statement_transactions ?? []),
      ...(l.historical_statement_transactions ?? [])
    ]),
    ...(line.transactions ?? []),
    ...(line.historical_billing_documents?.historical_billing_documents.flatMap((d: any) => d.transactions ?? []) ?? [])
  ]
}

/** The ENERGY balance sent, to every decimal place: the ledger's balance and the transactions added after. */
const exactBalanceOf = (line: SentLine) =>
  (line.transactions ?? []).reduce(
    (sum: Big, tx) => sum.plus(signedAmount(tx.type, tx.amount)),
    new Big(String(line.account.ledgers.find((l: any) => l.ledger_code === 'ENERGY').ledger_balance))
  )

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
  const sent: Record<string, any> = {}
  for (const path of SECTION_PATHS) {
    const example = { ...(REQUEST_EXAMPLES[`/v1/data-import/${path}`] as Record<string, unknown>) }
    if ('ledger_number' in example) example.ledger_number = ledgerNumber
    sent[path] = example
    const res = await post(`${path}/`, example)
    t.equal(res.statusCode, 201, `${path}: ${res.body}`)
  }
  // What was sent for each account, as one batch entry: the figures expected are counted from it
  // (never read back from the service). A subtest that sends more adds it here.
  const sentLines = new Map<string, SentLine>([
    [
      EXT,
      {
        account: exampleAccount(),
        notes: sent['notes/create'].notes,
        transactions: sent['transactions/create'].transactions,
        historical_agreements: sent['historical-agreements/create'].agreements,
        historical_billing_documents: sent['historical-billing-documents/create'],
        historical_statements: sent['historical-statements/create'].statements
      }
    ]
  ])
  const expected = expectedSummary(sentLines.get(EXT))
  const balance = expected.energyBalance
  const held = pick(expected.counts)
  const fullEntry = { external_account_number: EXT, ledgers: [{ ledger_code: 'ENERGY', balance }], counts: held }

  t.test('an account with post-import data matches the account summary exactly', async (t) => {
    // The example account's four transactions, the two added, and the one inside the billing document.
    t.same(
      held,
      {
        transactions: 7,
        notes: 2,
        historical_agreements: 1,
        historical_statements: 1,
        billing_documents: 1,
        payment_instructions: 0
      },
      'the figures counted from what was sent'
    )
    const rows = await database.db.select().from(ledgerTransactions)
    t.equal(held.transactions, rows.length, 'counts.transactions counts every transaction, billing documents included')
    const summary = (await client.summary(EXT)).json()
    t.same(pick(summary.counts), held, "the account summary's counts are the ones sent")
    t.equal(summary.ledgers[0].balance, balance, "the account summary's balance is the one sent")
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
    const laterTransactions = [
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
    const later = await post('transactions/create/', { transactions: laterTransactions })
    t.equal(later.statusCode, 201, later.body)
    const before = sentLines.get(EXT)!
    sentLines.set(EXT, { ...before, transactions: [...before.transactions!, ...laterTransactions] })
    const now = expectedSummary(sentLines.get(EXT))
    t.equal(now.counts.transactions, held.transactions + 2)
    const res = await reconcile({ accounts: [fullEntry] })
    t.equal(res.statusCode, 200, res.body)
    t.same(res.json(), {
      checked: 1,
      matching: 0,
      differences: [
        {
          external_account_number: EXT,
          problem: 'balance_differs',
          field: 'ledgers.ENERGY.balance',
          expected: balance,
          actual: now.energyBalance
        },
        {
          external_account_number: EXT,
          problem: 'count_differs',
          field: 'counts.transactions',
          expected: held.transactions,
          actual: now.counts.transactions
        }
      ]
    })
    // 0.10 + 0.20 added to the balance equals the old balance + "0.3" (no binary floating point).
    const matched = await reconcile({
      accounts: [
        {
          external_account_number: EXT,
          ledgers: [{ ledger_code: 'ENERGY', balance: new Big(balance).plus('0.3').toFixed() + '000' }],
          counts: pick(now.counts)
        }
      ]
    })
    t.same(matched.json(), { checked: 1, matching: 1, differences: [] })
  })

  t.test('several counts differ: one difference each, in the order the request names the counts', async (t) => {
    const summary = expectedSummary(sentLines.get(EXT))
    const counts = { payment_instructions: 7, notes: summary.counts.notes! + 3, historical_agreements: 9 }
    const res = await reconcile({ accounts: [{ external_account_number: EXT, counts }] })
    t.equal(res.statusCode, 200, res.body)
    t.same(
      res.json().differences.map((d: any) => [d.field, d.expected, d.actual]),
      [
        ['counts.payment_instructions', 7, summary.counts.payment_instructions],
        ['counts.notes', summary.counts.notes! + 3, summary.counts.notes],
        ['counts.historical_agreements', 9, summary.counts.historical_agreements]
      ]
    )
    const reversed = Object.fromEntries(Object.entries(counts).reverse())
    const back = await reconcile({ accounts: [{ external_account_number: EXT, counts: reversed }] })
    t.same(
      back.json().differences.map((d: any) => d.field),
      ['counts.historical_agreements', 'counts.notes', 'counts.payment_instructions']
    )
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
      const account = exampleAccount({ external_account_number: external })
      const transactions = [{ transaction_id: 'X-1', transaction_date: '2026-11-06', amount, type: 'CREDIT' }]
      t.equal((await client.stage(account)).statusCode, 201)
      t.equal((await client.create(external)).statusCode, 201)
      const res = await app.inject({
        method: 'POST',
        url: '/v1/data-import/transactions/create/',
        headers,
        payload: { import_supplier: 'ACME_ENERGY', external_account_number: external, transactions }
      })
      t.equal(res.statusCode, 201, res.body)
      sentLines.set(external, { account, transactions })
    }
    // Every figure from what was sent to the three created accounts.
    const lines = [...sentLines.values()]
    const sumOf = (name: string) => lines.reduce((n, line) => n + expectedSummary(line).counts[name]!, 0)
    const sentTransactions = lines.flatMap(transactionsOf)
    t.equal(sentTransactions.length, sumOf('transactions'))
    const amountSum = sentTransactions.reduce((sum, tx) => sum.plus(signedAmount(tx.type, tx.amount)), new Big(0))
    const balanceSum = lines.reduce((sum, line) => sum.plus(exactBalanceOf(line)), new Big(0))
    const res = await totals()
    t.equal(res.statusCode, 200, res.body)
    t.same(res.json(), {
      accounts_created: 3,
      accounts_skipped: 1,
      accounts_pending: 1,
      ledgers: [{ ledger_code: 'ENERGY', accounts: 3, balance_sum: formatDecimal(balanceSum) }],
      transactions: { count: sumOf('transactions'), amount_sum: formatDecimal(amountSum) },
      notes: sumOf('notes'),
      historical_agreements: sumOf('historical_agreements'),
      historical_statements: sumOf('historical_statements'),
      billing_documents: sumOf('billing_documents'),
      payment_instructions: sumOf('payment_instructions')
    })
    const balances = await Promise.all(['EXT-2', 'EXT-3'].map(async (e) => (await client.summary(e)).json()))
    t.equal(
      new Big(balances[1].ledgers[0].balance).minus(balances[0].ledgers[0].balance).toFixed(),
      '0.1000000002',
      'balances held to ten decimal places'
    )
  })
})

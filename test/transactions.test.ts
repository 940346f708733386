import t, { type Test } from 'tap'
import { eq } from 'drizzle-orm'
import { ledgers, ledgerTransactions, notes } from '../drizzle/schema/index.js'
import { codes, daysFromToday, exampleAccount, importedSetup } from './helpers/accounts.js'
import { tableCounts } from './helpers/database.js'
import { asOperator } from './helpers/graphql.js'

const PATH = 'transactions/create/'
const charge = (id: string, amount: unknown, date = daysFromToday(-1)) => ({
  transaction_id: id,
  transaction_date: date,
  amount,
  type: 'CHARGE'
})
const credit = (id: string, amount: unknown, date = daysFromToday(-1)) => ({
  transaction_id: id,
  transaction_date: date,
  amount,
  type: 'CREDIT'
})
const payment = (id: string, amount: unknown, date = daysFromToday(-1)) => ({
  transaction_id: id,
  transaction_date: date,
  amount,
  type: 'PAYMENT',
  reference: `REF-${id}`,
  payment_type: 'DEBIT_CARD'
})

t.test('transactions', async (t) => {
  const { app, database, client, post } = await importedSetup(t)
  const balance = async () => (await client.summary('EXT-000123')).json().ledgers[0].balance as string
  const unchanged = async (t: Test, before: Record<string, number>, what: string) =>
    t.same(await tableCounts(database), before, `${what}: nothing stored`)

  t.test('added in request order; the balance moves by their signed amounts, exactly', async (t) => {
    t.equal(await balance(), '6.26')
    const res = await post(PATH, { transactions: [charge('T-1', '10.10'), payment('T-2', 20)] })
    t.equal(res.statusCode, 201, res.body)
    t.same(
      res.json().results.map((r: any) => [r.status, r.transaction_data.transaction_id, r.transaction_data.amount]),
      [
        ['TRANSACTION_ADDED_TO_ACCOUNT', 'T-1', '10.10'],
        ['TRANSACTION_ADDED_TO_ACCOUNT', 'T-2', '20.00']
      ]
    )
    t.equal(await balance(), '16.16', '6.26 − 10.10 + 20.00')
    const summary = (await client.summary('EXT-000123')).json()
    t.equal(summary.counts.transactions, 6)
    t.equal(summary.latest_event.type, 'POST_IMPORT_WRITE')
  })

  t.test('a retry after success: TRANSACTION_ALREADY_EXISTS for each, the balance unchanged', async (t) => {
    const before = await tableCounts(database)
    const res = await post(PATH, { transactions: [charge('T-1', '10.10'), payment('T-2', 20)] })
    t.equal(res.statusCode, 201)
    t.same(
      res.json().results.map((r: any) => r.status),
      ['TRANSACTION_ALREADY_EXISTS', 'TRANSACTION_ALREADY_EXISTS']
    )
    t.equal(await balance(), '16.16')
    await unchanged(t, before, 'a retry')
  })

  t.test('check_previously_added=false with a repeated id fails instead of doubling money', async (t) => {
    const before = await tableCounts(database)
    const res = await post(
      PATH,
      { transactions: [credit('NEW-1', 5), charge('T-1', '10.10')] },
      '?check_previously_added=false'
    )
    t.equal(res.statusCode, 400)
    const body = res.json()
    t.same(
      [body.status, body.code, body.attr],
      ['TRANSACTION_IMPORT_ERROR', 'transaction_already_exists', 'transactions.1.transaction_id']
    )
    t.same(codes(res), [['transaction_already_exists', 'transactions.1.transaction_id']])
    t.same(body.transaction_data, charge('T-1', '10.10'), 'the transaction as sent')
    t.type(body.error_detail, 'string')
    t.equal(await balance(), '16.16')
    await unchanged(t, before, 'a failed request')
  })

  t.test('amounts that would drift in floating point add up exactly', async (t) => {
    const tenths = Array.from({ length: 10 }, (_, i) => credit(`TENTH-${i}`, 0.1))
    const res = await post(PATH, { transactions: [...tenths, charge('THIRD-1', '0.3'), credit('THIRD-2', 0.2)] })
    t.equal(res.statusCode, 201, res.body)
    t.equal(await balance(), '17.06', '16.16 + 10 × 0.1 − 0.3 + 0.2')
    const [ledger] = await database.db.select({ balance: ledgers.balance }).from(ledgers)
    t.equal(ledger!.balance, '17.0600000000', 'stored as numeric')
  })

  t.test('forcing on: earlier transactions move into the open statement, with one pinned note', async (t) => {
    const notesBefore = (await database.db.select().from(notes)).length
    const res = await post(PATH, {
      transactions: [charge('OLD-1', 1, '2026-09-01'), credit('NOW-1', 1), charge('OLD-2', 2, '2025-01-31')]
    })
    t.equal(res.statusCode, 201, res.body)
    const [first, , third] = res.json().results
    t.same(
      [first.transaction_data.transaction_date, first.transaction_data.original_transaction_date],
      ['2026-10-01', '2026-09-01']
    )
    t.same(
      [third.transaction_data.transaction_date, third.transaction_data.original_transaction_date],
      ['2026-10-01', '2025-01-31']
    )
    t.notOk(
      'original_transaction_date' in res.json().results[1].transaction_data,
      'an unmoved one has no original date'
    )
    const [stored] = await database.db
      .select()
      .from(ledgerTransactions)
      .where(eq(ledgerTransactions.transactionId, 'OLD-1'))
    t.same([stored!.transactionDate, stored!.originalTransactionDate], ['2026-10-01', '2026-09-01'])
    t.match(stored!.description, /2026-09-01/)
    const added = (await database.db.select().from(notes)).slice(notesBefore)
    t.equal(added.length, 1, 'one note per request')
    t.same([added[0]!.isPinned, added[0]!.bySystem], [true, true])
    t.match(added[0]!.body, /OLD-1, OLD-2/)
    t.equal(
      (await client.summary('EXT-000123')).json().counts.notes,
      0,
      'the service note is not counted as an imported note'
    )
  })

  t.test('forcing off: a transaction before the open statement fails the request', async (t) => {
    const before = await tableCounts(database)
    const res = await post(
      PATH,
      { transactions: [credit('OFF-1', 1), charge('OFF-2', 1, '2026-09-30')] },
      '?force_add_to_current_statement=false'
    )
    t.equal(res.statusCode, 400)
    t.same(
      [res.json().status, res.json().code, res.json().attr],
      ['TRANSACTION_IMPORT_ERROR', 'transaction_outside_open_statement_period', 'transactions.1.transaction_date']
    )
    await unchanged(t, before, 'forcing off')
    const onTheDay = await post(
      PATH,
      { transactions: [charge('OFF-3', 1, '2026-10-01')] },
      '?force_add_to_current_statement=false'
    )
    t.equal(onTheDay.statusCode, 201, 'the open statement start itself is inside the period')
  })

  t.test('a transaction in the future, and the lowest-indexed failing transaction decides', async (t) => {
    const before = await tableCounts(database)
    const future = charge('FUT-1', 1, daysFromToday(1))
    const bad = { ...payment('NEG-1', -5) }
    const res = await post(PATH, { transactions: [credit('OK-1', 1), bad, future] })
    t.equal(res.statusCode, 400)
    t.same(codes(res), [['min_value', 'transactions.1.amount']], 'only transaction 1')
    const only = await post(PATH, { transactions: [credit('OK-1', 1), future] })
    t.same(
      [only.json().status, only.json().code, only.json().attr],
      ['TRANSACTION_IMPORT_ERROR', 'transaction_in_future', 'transactions.1.transaction_date']
    )
    t.same(only.json().transaction_data, future)
    await unchanged(t, before, 'rule errors')
  })

  t.test('schema problems inside one transaction get the transaction body; others the standard one', async (t) => {
    const before = await tableCounts(database)
    const inside = await post(PATH, {
      transactions: [credit('S-1', 1), { ...credit('S-2', 'abc'), reason: 'X', surprise: true }]
    })
    t.equal(inside.statusCode, 400)
    t.same(
      [inside.json().status, inside.json().code, inside.json().attr],
      ['TRANSACTION_IMPORT_ERROR', 'invalid_decimal', 'transactions.1.amount']
    )
    t.same(codes(inside), [
      ['invalid_decimal', 'transactions.1.amount'],
      ['unexpected_field', 'transactions.1.surprise']
    ])
    const supply = await post(PATH, {
      transactions: [
        { transaction_id: 'S-3', transaction_date: daysFromToday(-1), amount: 1, type: 'SUPPLY_CHARGE', reason: 'NO' }
      ]
    })
    t.same(
      codes(supply),
      [
        ['required', 'transactions.0.line_items'],
        ['required', 'transactions.0.product_code'],
        ['unexpected_field', 'transactions.0.reason']
      ],
      'errors point into the branch the type selects'
    )
    const whole = await post(PATH, { transactions: [] })
    t.same([whole.json().code, whole.json().status], ['invalid_request', undefined])
    t.same(codes(whole), [['min_items', 'transactions']])
    const mixed = await post(PATH, { import_supplier: '', transactions: [credit('S-4', 'abc')] })
    t.equal(mixed.json().code, 'invalid_request')
    t.same(codes(mixed), [
      ['blank', 'import_supplier'],
      ['invalid_decimal', 'transactions.0.amount']
    ])
    const flags = await post(PATH, { transactions: [credit('S-5', 1)] }, '?check_previously_added=yes')
    t.equal(flags.json().code, 'invalid_request')
    t.same(codes(flags), [['invalid', 'check_previously_added']])
    const numeric = await post(PATH, { transactions: [credit('S-5', 1)] }, '?force_add_to_current_statement=1')
    t.same(codes(numeric), [['invalid', 'force_add_to_current_statement']])
    const dup = await post(PATH, { transactions: [credit('D-1', 1), credit('D-2', 1), credit('D-1', 2)] })
    t.equal(dup.json().code, 'invalid_request')
    t.same(codes(dup), [['duplicate_transaction_ids', 'transactions.2.transaction_id']])
    await unchanged(t, before, 'schema problems')
  })

  t.test(
    '404 until created, for an unknown pair and a foreign supplier; 400 when the supplier is not Ongoing',
    async (t) => {
      t.equal((await client.stage(exampleAccount({ external_account_number: 'STAGED-ONLY' }))).statusCode, 201)
      const staged = await post(PATH, { external_account_number: 'STAGED-ONLY', transactions: [credit('X-1', 1)] })
      t.equal(staged.statusCode, 404)
      t.same(codes(staged), [['account_not_found', null]])
      const unknown = await post(PATH, { external_account_number: 'NOPE', transactions: [credit('X-1', 1)] })
      t.same([unknown.statusCode, codes(unknown)], [404, [['import_process_does_not_exist', null]]])
      const foreign = await post(PATH, { import_supplier: 'OTHER', transactions: [credit('X-1', 1)] })
      t.same([foreign.statusCode, codes(foreign)], [404, [['import_process_does_not_exist', null]]])
      for (const status of ['Paused', 'Complete']) {
        await asOperator(
          app,
          `mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: ${status}}) { code } }`
        )
        const res = await post(PATH, { transactions: [credit('X-1', 1)] })
        t.same(
          [res.statusCode, res.json().code, codes(res)],
          [400, 'invalid_request', [['import_supplier_migration_not_ongoing', 'import_supplier']]],
          status
        )
      }
      await asOperator(app, 'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: Ongoing}) { code } }')
    }
  )
})

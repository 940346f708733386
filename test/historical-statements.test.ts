import t from 'tap'
import { sql } from 'drizzle-orm'
import { codes, daysFromToday, exampleAccount, importClient, importedSetup } from './helpers/accounts.js'
import { rowsOf, tableCounts } from './helpers/database.js'
import { asOperator, createTenant } from './helpers/graphql.js'

/** POST /v1/data-import/historical-statements/create/, on one app and account. */

const PATH = 'historical-statements/create/'
const setSupplier = (input: Record<string, unknown>) =>
  [
    'mutation($i: UpdateImportSupplierInput!) { updateImportSupplier(input: $i) { code } }',
    { i: { code: 'ACME_ENERGY', ...input } }
  ] as const

/** A valid statement; `changes` replace its fields (undefined removes one). */
function statement(id: string, changes: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<string, unknown> = {
    statement_id: id,
    bill_period_from_date: '2025-01-01',
    bill_period_to_date: '2025-01-31',
    issued_date: '2025-02-03',
    gross_amount: '10.00'
  }
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined) delete base[key]
    else base[key] = value
  }
  return base
}

const s = await importedSetup(t)
const { app, database, post, ref, client } = s
// A document root, so that the stored location shows every part.
await asOperator(app, ...setSupplier({ documentRoot: '/acme/docs/' }))

/** Plain arrays: postgres.js returns its own array class. */
const stored = async () => [
  ...rowsOf<Record<string, string | null>>(
    await database.db.execute(sql`select statement_id, bill_period_from_date::text as
  bill_period_from_date, bill_period_to_date::text as bill_period_to_date, issued_date::text as issued_date, number, gross_amount::text as gross_amount,
  statement_path, statement_location from historical_statements order by statement_id`)
  )
]
const lastEvent = async () =>
  rowsOf<{ type: string; detail: unknown }>(
    await database.db.execute(sql`select type::text as type, detail
  from import_events order by id desc limit 1`)
  )[0]!
const summary = async () => (await client.summary('EXT-000123')).json()

const initial = await summary()
t.equal(initial.ledgers[0].balance, '6.26', 'the example ledger balance before any statement')

t.test('stores the statements and echoes them normalised', async (t) => {
  const before = await tableCounts(database)
  const res = await post(PATH, {
    statements: [
      statement('ST-1', { number: 'INV-1', gross_amount: 53.5, statement_path: '/statements/2025/01.pdf' }),
      // Optional fields sent as null or blank are omitted; issued on its first day is allowed.
      statement('ST-2', {
        bill_period_from_date: '2025-02-01',
        bill_period_to_date: '2025-02-28',
        issued_date: '2025-02-01',
        gross_amount: '-12.3400',
        number: null,
        statement_path: '  '
      }),
      // A period ending today is not in the future.
      statement('ST-3', {
        bill_period_from_date: daysFromToday(-30),
        bill_period_to_date: daysFromToday(0),
        issued_date: daysFromToday(0),
        gross_amount: 0,
        statement_path: 'a/b c/d.pdf'
      })
    ]
  })
  t.equal(res.statusCode, 201, res.body)
  t.strictSame(res.json(), {
    ...ref,
    statements: [
      {
        statement_id: 'ST-1',
        bill_period_from_date: '2025-01-01',
        bill_period_to_date: '2025-01-31',
        issued_date: '2025-02-03',
        number: 'INV-1',
        gross_amount: '53.50',
        statement_path: 'statements/2025/01.pdf'
      },
      {
        statement_id: 'ST-2',
        bill_period_from_date: '2025-02-01',
        bill_period_to_date: '2025-02-28',
        issued_date: '2025-02-01',
        gross_amount: '-12.34'
      },
      {
        statement_id: 'ST-3',
        bill_period_from_date: daysFromToday(-30),
        bill_period_to_date: daysFromToday(0),
        issued_date: daysFromToday(0),
        gross_amount: '0.00',
        statement_path: 'a/b c/d.pdf'
      }
    ]
  })
  t.strictSame(await stored(), [
    {
      statement_id: 'ST-1',
      bill_period_from_date: '2025-01-01',
      bill_period_to_date: '2025-01-31',
      issued_date: '2025-02-03',
      number: 'INV-1',
      gross_amount: '53.5000000000',
      statement_path: 'statements/2025/01.pdf',
      statement_location: 'migration-documents/acme/docs/statements/2025/01.pdf'
    },
    {
      statement_id: 'ST-2',
      bill_period_from_date: '2025-02-01',
      bill_period_to_date: '2025-02-28',
      issued_date: '2025-02-01',
      number: null,
      gross_amount: '-12.3400000000',
      statement_path: null,
      statement_location: null
    },
    {
      statement_id: 'ST-3',
      bill_period_from_date: daysFromToday(-30),
      bill_period_to_date: daysFromToday(0),
      issued_date: daysFromToday(0),
      number: null,
      gross_amount: '0.0000000000',
      statement_path: 'a/b c/d.pdf',
      statement_location: 'migration-documents/acme/docs/a/b c/d.pdf'
    }
  ])
  const after = await tableCounts(database)
  t.strictSame(
    after,
    { ...before, historical_statements: before.historical_statements! + 3, import_events: before.import_events! + 1 },
    'three statements and one event, nothing else'
  )
  t.strictSame(await lastEvent(), {
    type: 'POST_IMPORT_WRITE',
    detail: { endpoint: 'historical_statements', created: 3 }
  })
  const now = await summary()
  t.equal(now.counts.historical_statements, 3)
  t.equal(now.latest_event.type, 'POST_IMPORT_WRITE')
  t.strictSame(now.ledgers, initial.ledgers, 'statements do not change the ledger balance')
})

t.test('repeating a successful request returns 201 and changes nothing', async (t) => {
  const before = await tableCounts(database)
  // The same statements in another spelling: a number for the amount, no leading slash.
  const same = [
    statement('ST-1', { number: 'INV-1', gross_amount: '53.50', statement_path: 'statements/2025/01.pdf' }),
    statement('ST-2', {
      bill_period_from_date: '2025-02-01',
      bill_period_to_date: '2025-02-28',
      issued_date: '2025-02-01',
      gross_amount: -12.34
    })
  ]
  const res = await post(PATH, { statements: same })
  t.equal(res.statusCode, 201, res.body)
  t.same(
    res.json().statements.map((e: any) => [e.statement_id, e.gross_amount]),
    [
      ['ST-1', '53.50'],
      ['ST-2', '-12.34']
    ]
  )
  t.strictSame(await tableCounts(database), before, 'no row and no event added')

  const mixed = await post(PATH, { statements: [...same, statement('ST-4')] })
  t.equal(mixed.statusCode, 201, mixed.body)
  t.equal(mixed.json().statements.length, 3, 'skipped statements are echoed too')
  t.strictSame(await tableCounts(database), {
    ...before,
    historical_statements: before.historical_statements! + 1,
    import_events: before.import_events! + 1
  })
  t.strictSame(await lastEvent(), {
    type: 'POST_IMPORT_WRITE',
    detail: { endpoint: 'historical_statements', created: 1 }
  })
})

t.test('concurrent identical requests store the statement once', async (t) => {
  const before = await tableCounts(database)
  const body = { statements: [statement('ST-RACE')] }
  const results = await Promise.all([post(PATH, body), post(PATH, body), post(PATH, body)])
  t.same(
    results.map((r) => r.statusCode),
    [201, 201, 201]
  )
  t.strictSame(await tableCounts(database), {
    ...before,
    historical_statements: before.historical_statements! + 1,
    import_events: before.import_events! + 1
  })
})

t.test('a stored statement_id with other fields refuses the whole request', async (t) => {
  const before = await tableCounts(database)
  const st1 = { number: 'INV-1', gross_amount: '53.50', statement_path: 'statements/2025/01.pdf' }
  const variants: Array<[string, Record<string, unknown>]> = [
    ['gross_amount', { ...st1, gross_amount: '53.51' }],
    ['number changed', { ...st1, number: 'INV-2' }],
    ['number omitted', { ...st1, number: undefined }],
    ['statement_path changed', { ...st1, statement_path: 'statements/2025/02.pdf' }],
    ['statement_path omitted', { ...st1, statement_path: undefined }],
    ['issued_date', { ...st1, issued_date: '2025-02-04' }],
    ['bill_period_from_date', { ...st1, bill_period_from_date: '2025-01-02' }],
    ['bill_period_to_date', { ...st1, bill_period_to_date: '2025-01-30' }]
  ]
  for (const [name, changes] of variants) {
    const res = await post(PATH, { statements: [statement('ST-NEW'), statement('ST-1', changes)] })
    t.equal(res.statusCode, 400, name)
    t.equal(res.json().code, 'invalid_request', name)
    t.strictSame(codes(res), [['historical_statement_already_exists', 'statements.1.statement_id']], name)
  }
  t.strictSame(await tableCounts(database), before, 'ST-NEW was not stored and no event was added')
})

t.test('each rule reports its code at its attr', async (t) => {
  const before = await tableCounts(database)
  const cases: Array<[string, Record<string, unknown>[], Array<[string, string]>]> = [
    [
      'duplicate ids, each later occurrence',
      [statement('D-1'), statement('D-2'), statement('D-1'), statement('D-1')],
      [
        ['duplicate_statement_ids', 'statements.2.statement_id'],
        ['duplicate_statement_ids', 'statements.3.statement_id']
      ]
    ],
    [
      'period ends before it starts',
      [
        statement('R-1', {
          bill_period_from_date: '2025-03-31',
          bill_period_to_date: '2025-03-01',
          issued_date: '2025-04-01'
        })
      ],
      [['start_date_later_than_end_date', 'statements.0.bill_period_to_date']]
    ],
    [
      'period ends tomorrow',
      [
        statement('R-2', {
          bill_period_from_date: daysFromToday(-20),
          bill_period_to_date: daysFromToday(1),
          issued_date: daysFromToday(1)
        })
      ],
      [['date_in_future', 'statements.0.bill_period_to_date']]
    ],
    [
      'issued before the period starts',
      [statement('R-3', { issued_date: '2024-12-31' })],
      [['issued_date_before_bill_period_from_date', 'statements.0.issued_date']]
    ],
    [
      'bad document path',
      [statement('R-4', { statement_path: 'a/../b.pdf' })],
      [['invalid_document_path', 'statements.0.statement_path']]
    ]
  ]
  for (const [name, statements, expected] of cases) {
    const res = await post(PATH, { statements })
    t.equal(res.statusCode, 400, name)
    t.equal(res.json().code, 'invalid_request', name)
    t.strictSame(codes(res), expected, name)
  }
  t.strictSame(await tableCounts(database), before, 'nothing stored')
})

t.test('several problems in one body, sorted by attr then code', async (t) => {
  const before = await tableCounts(database)
  const filler = Array.from({ length: 7 }, (_, i) => statement(`F-${i}`))
  const res = await post(PATH, {
    statements: [
      statement('M-0', {
        bill_period_from_date: '2025-05-10',
        bill_period_to_date: '2025-05-01',
        issued_date: '2025-05-02',
        statement_path: 's3://bucket/x.pdf'
      }),
      statement('M-1'),
      statement('ST-1', { gross_amount: 1 }),
      ...filler,
      statement('M-1', {
        bill_period_from_date: daysFromToday(5),
        bill_period_to_date: daysFromToday(2),
        issued_date: daysFromToday(5)
      })
    ]
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'invalid_request')
  t.strictSame(codes(res), [
    ['start_date_later_than_end_date', 'statements.0.bill_period_to_date'],
    ['issued_date_before_bill_period_from_date', 'statements.0.issued_date'],
    ['invalid_document_path', 'statements.0.statement_path'],
    ['historical_statement_already_exists', 'statements.2.statement_id'],
    ['date_in_future', 'statements.10.bill_period_to_date'],
    ['start_date_later_than_end_date', 'statements.10.bill_period_to_date'],
    ['duplicate_statement_ids', 'statements.10.statement_id']
  ])
  t.strictSame(await tableCounts(database), before, 'nothing stored')
})

t.test('document paths', async (t) => {
  const before = await tableCounts(database)
  const bad = [
    '../x.pdf',
    'a/../b.pdf',
    'a\\b.pdf',
    's3://bucket/a.pdf',
    'https://example.com/a.pdf',
    'a//b.pdf',
    '//a.pdf',
    'a/b/',
    'a/./b.pdf',
    'a/b\u0007.pdf',
    'a/\nb.pdf',
    'a/b\u007f.pdf',
    '/'
  ]
  const res = await post(PATH, { statements: bad.map((path, i) => statement(`P-${i}`, { statement_path: path })) })
  t.equal(res.statusCode, 400)
  t.strictSame(
    codes(res),
    bad.map((_, i) => ['invalid_document_path', `statements.${i}.statement_path`])
  )
  t.strictSame(await tableCounts(database), before, 'nothing stored')

  const ok = await post(PATH, { statements: [statement('P-OK', { statement_path: '/docs/p.pdf' })] })
  t.equal(ok.statusCode, 201, ok.body)
  t.equal(ok.json().statements[0].statement_path, 'docs/p.pdf', 'one leading slash is ignored')
  const [row] = (await stored()).filter((r) => r.statement_id === 'P-OK')
  t.equal(row!.statement_location, 'migration-documents/acme/docs/docs/p.pdf')
})

t.test('schema problems: 400 invalid_request before any account look-up', async (t) => {
  const before = await tableCounts(database)
  const empty = await post(PATH, { statements: [] })
  t.equal(empty.statusCode, 400)
  t.strictSame(codes(empty), [['min_items', 'statements']])
  const tooMany = await post(PATH, { statements: Array.from({ length: 1001 }, (_, i) => statement(`X-${i}`)) })
  t.strictSame(codes(tooMany), [['max_items', 'statements']])

  const res = await post(PATH, {
    external_account_number: 'EXT-UNKNOWN', // schema problems win over the 404
    statements: [
      statement('x'.repeat(65), { number: 'n'.repeat(65), gross_amount: 'abc', extra: 1 }),
      statement('S-1', {
        bill_period_from_date: '2023-02-30',
        issued_date: undefined,
        gross_amount: '12345678901.5',
        statement_path: 7
      }),
      statement('', { gross_amount: null, bill_period_to_date: '2025/01/31' })
    ]
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'invalid_request')
  t.strictSame(codes(res), [
    ['unexpected_field', 'statements.0.extra'],
    ['invalid_decimal', 'statements.0.gross_amount'],
    ['max_length', 'statements.0.number'],
    ['max_length', 'statements.0.statement_id'],
    ['invalid_date', 'statements.1.bill_period_from_date'],
    ['max_digits', 'statements.1.gross_amount'],
    ['required', 'statements.1.issued_date'],
    ['invalid', 'statements.1.statement_path'],
    ['invalid_date', 'statements.2.bill_period_to_date'],
    ['null', 'statements.2.gross_amount'],
    ['blank', 'statements.2.statement_id']
  ])
  t.strictSame(await tableCounts(database), before, 'nothing stored')
})

t.test('404: not staged, staged but not created, unknown or foreign supplier', async (t) => {
  const staged = await client.stage(exampleAccount({ external_account_number: 'EXT-STAGED' }))
  t.equal(staged.statusCode, 201, staged.body)
  const other = await createTenant(app, 'Globex', 'GLOBEX')
  const globex = importClient(app, other)
  t.equal(
    (await globex.stage(exampleAccount({ import_supplier: 'GLOBEX', external_account_number: 'EXT-GLOBEX' })))
      .statusCode,
    201
  )
  t.equal((await globex.create('EXT-GLOBEX')).statusCode, 201, 'the foreign account exists')

  const before = await tableCounts(database)
  // Rule problems in the body do not matter: the account is looked up first.
  const body = { statements: [statement('N-1'), statement('N-1', { issued_date: '2020-01-01' })] }
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['staged but not created', { external_account_number: 'EXT-STAGED' }, 'account_not_found'],
    ['never staged', { external_account_number: 'EXT-NEVER' }, 'import_process_does_not_exist'],
    ['unknown supplier', { import_supplier: 'NO_SUCH_SUPPLIER' }, 'import_process_does_not_exist'],
    [
      "another organisation's supplier",
      { import_supplier: 'GLOBEX', external_account_number: 'EXT-GLOBEX' },
      'import_process_does_not_exist'
    ]
  ]
  for (const [name, changes, code] of cases) {
    const res = await post(PATH, { ...body, ...changes })
    t.equal(res.statusCode, 404, name)
    t.equal(res.json().code, 'not_found', name)
    t.strictSame(codes(res), [[code, null]], name)
  }
  const ours = await post(PATH, { statements: [statement('G-1')] })
  t.equal(ours.statusCode, 201, 'the same statement is fine on our own account')
  const foreign = await app.inject({
    method: 'POST',
    url: `/v1/data-import/${PATH}`,
    headers: { authorization: `Token ${other.token}` },
    payload: { import_supplier: 'GLOBEX', external_account_number: 'EXT-GLOBEX', statements: [statement('G-1')] }
  })
  t.equal(foreign.statusCode, 201, "and on the other organisation's account with its own token")
  t.strictSame(
    await tableCounts(database),
    {
      ...before,
      historical_statements: before.historical_statements! + 2,
      import_events: before.import_events! + 2
    },
    'the 404s stored nothing'
  )
})

t.test('a supplier that is not Ongoing: 400 import_supplier_migration_not_ongoing', async (t) => {
  for (const status of ['Paused', 'Complete']) {
    await asOperator(app, `mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: ${status}}) { code } }`)
    const before = await tableCounts(database)
    const res = await post(PATH, { statements: [statement('NO-1'), statement('NO-1', { issued_date: '2020-01-01' })] })
    t.equal(res.statusCode, 400, status)
    t.equal(res.json().code, 'invalid_request', status)
    t.strictSame(
      codes(res),
      [['import_supplier_migration_not_ongoing', 'import_supplier']],
      `${status}: only the supplier status is reported`
    )
    const missing = await post(PATH, { external_account_number: 'EXT-NEVER', statements: [statement('NO-1')] })
    t.equal(missing.statusCode, 404, `${status}: an unknown pair is still 404`)
    const retry = await post(PATH, { statements: [statement('ST-4')] })
    t.equal(retry.statusCode, 400, `${status}: even a retry is refused`)
    t.strictSame(await tableCounts(database), before, `${status}: nothing stored`)
  }
  await asOperator(app, 'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: Ongoing}) { code } }')
  const res = await post(PATH, { statements: [statement('NO-1')] })
  t.equal(res.statusCode, 201, 'accepted again once Ongoing')
})

t.test('the account summary counts the statements; the balance is unchanged', async (t) => {
  const [own] = rowsOf<{ n: number }>(
    await database.db.execute(sql`select count(*)::int as n from historical_statements h
    join accounts a on a.id = h.account_id where a.external_account_number = 'EXT-000123'`)
  )
  const now = await summary()
  // ST-1..4, ST-RACE, P-OK, G-1 and NO-1; the other G-1 belongs to the Globex account.
  t.equal(now.counts.historical_statements, 8)
  t.equal(Number(own!.n), 8)
  t.strictSame(now.ledgers, initial.ledgers)
  t.strictSame(
    { ...now.counts, historical_statements: 0 },
    { ...initial.counts, historical_statements: 0 },
    'no other count changed'
  )
})

import t from 'tap'
import { sql } from 'drizzle-orm'
import { codes, exampleAccount, importClient, importedSetup } from './helpers/accounts.js'
import { rowsOf, tableCounts } from './helpers/database.js'
import { asOperator, createTenant } from './helpers/graphql.js'

/** POST /v1/data-import/historical-agreements/create/, on one app and account. */

const PATH = 'historical-agreements/create/'
/** The example account's supply point: current agreements from 2021-03-01 and 2024-04-01. */
const SP = '1200012345678'

const agreement = (from: string, to: string, tariff = 'E-OLD', supplyPoint = SP): Record<string, unknown> => ({
  supply_point_identifier: supplyPoint,
  tariff_code: tariff,
  effective_from: from,
  effective_to: to
})

const s = await importedSetup(t)
const { app, database, post, client } = s

/** The agreements of one account's supply points, oldest first. */
/** Plain arrays: postgres.js returns its own array class. */
const stored = async (external = 'EXT-000123') => [
  ...rowsOf<Record<string, unknown>>(
    await database.db.execute(sql`select sp.identifier,
  a.tariff_code, a.effective_from::text as effective_from, a.effective_to::text as effective_to, a.historical from agreements a
  join supply_points sp on sp.id = a.supply_point_id join accounts acc on acc.id = sp.account_id
  where acc.external_account_number = ${external} order by sp.identifier, a.effective_from`)
  )
]
const lastEvent = async () =>
  rowsOf<{ type: string; detail: unknown }>(
    await database.db.execute(sql`select type::text as type, detail
  from import_events order by id desc limit 1`)
  )[0]!
const summary = async () => (await client.summary('EXT-000123')).json()
const current = (from: string, to: string | null, tariff: string, identifier = SP) => ({
  identifier,
  tariff_code: tariff,
  effective_from: from,
  effective_to: to,
  historical: false
})
const historical = (from: string, to: string, tariff = 'E-OLD', identifier = SP) => ({
  identifier,
  tariff_code: tariff,
  effective_from: from,
  effective_to: to,
  historical: true
})

const initial = await summary()
t.strictSame(
  await stored(),
  [current('2021-03-01', '2024-04-01', 'E-1R-VAR-21-03-01'), current('2024-04-01', null, 'E-1R-FIX-24-04-01')],
  'the current agreements of the example account'
)

t.test('stores historical agreements: 201 with an empty body', async (t) => {
  const before = await tableCounts(database)
  const res = await post(PATH, {
    // Adjacent (the end is exclusive), the last ending on the day the first current agreement starts.
    agreements: [agreement('2020-01-01', '2021-03-01', 'E-OLD-2'), agreement('2019-01-01', '2020-01-01', 'E-OLD-1')]
  })
  t.equal(res.statusCode, 201, res.body)
  t.equal(res.body, '', 'empty body')
  t.strictSame(
    await stored(),
    [
      historical('2019-01-01', '2020-01-01', 'E-OLD-1'),
      historical('2020-01-01', '2021-03-01', 'E-OLD-2'),
      current('2021-03-01', '2024-04-01', 'E-1R-VAR-21-03-01'),
      current('2024-04-01', null, 'E-1R-FIX-24-04-01')
    ],
    'the current agreements are untouched'
  )
  t.strictSame(await tableCounts(database), {
    ...before,
    agreements: before.agreements! + 2,
    import_events: before.import_events! + 1
  })
  t.strictSame(await lastEvent(), {
    type: 'POST_IMPORT_WRITE',
    detail: { endpoint: 'historical_agreements', created: 2 }
  })
  const now = await summary()
  t.equal(now.counts.historical_agreements, 2)
  t.equal(now.counts.agreements, initial.counts.agreements, 'the current agreements count is unchanged')
  t.strictSame(now.ledgers, initial.ledgers, 'the ledger balance is unchanged')
})

t.test('repeating a successful request returns 201 and changes nothing', async (t) => {
  const before = await tableCounts(database)
  const same = [agreement('2020-01-01', '2021-03-01', 'E-OLD-2'), agreement('2019-01-01', '2020-01-01', 'E-OLD-1')]
  const res = await post(PATH, { agreements: same })
  t.equal(res.statusCode, 201, res.body)
  t.equal(res.body, '')
  t.strictSame(await tableCounts(database), before, 'no row and no event added')

  // A retry with one more agreement: a gap before the stored ones is allowed.
  const mixed = await post(PATH, { agreements: [...same, agreement('2016-01-01', '2017-01-01', 'E-OLD-0')] })
  t.equal(mixed.statusCode, 201, mixed.body)
  t.strictSame(await tableCounts(database), {
    ...before,
    agreements: before.agreements! + 1,
    import_events: before.import_events! + 1
  })
  t.strictSame(await lastEvent(), {
    type: 'POST_IMPORT_WRITE',
    detail: { endpoint: 'historical_agreements', created: 1 }
  })
  t.strictSame(
    (await stored()).filter((a) => a.historical).map((a) => a.effective_from),
    ['2016-01-01', '2019-01-01', '2020-01-01']
  )
})

t.test('concurrent identical requests store the agreement once', async (t) => {
  const before = await tableCounts(database)
  const body = { agreements: [agreement('2015-01-01', '2016-01-01', 'E-RACE')] }
  const results = await Promise.all([post(PATH, body), post(PATH, body), post(PATH, body)])
  t.same(
    results.map((r) => r.statusCode),
    [201, 201, 201]
  )
  t.strictSame(await tableCounts(database), {
    ...before,
    agreements: before.agreements! + 1,
    import_events: before.import_events! + 1
  })
})

t.test('each rule reports its code at its attr', async (t) => {
  const before = await tableCounts(database)
  // Stored so far: 2015–2016, 2016–2017, 2019–2020, 2020–2021-03-01 (exclusive ends); current from 2021-03-01.
  const cases: Array<[string, Record<string, unknown>[], Array<[string, string]>]> = [
    [
      'unknown supply point',
      [agreement('2010-01-01', '2011-01-01', 'E-X', '1200099999999')],
      [['supply_point_not_found', 'agreements.0.supply_point_identifier']]
    ],
    [
      'ends before it starts',
      [agreement('2011-01-02', '2011-01-01')],
      [['start_date_later_than_end_date', 'agreements.0.effective_to']]
    ],
    [
      'ends when it starts (the end is exclusive)',
      [agreement('2011-01-01', '2011-01-01')],
      [['start_date_later_than_end_date', 'agreements.0.effective_to']]
    ],
    [
      'ends a day into the first current agreement',
      [agreement('2021-03-01', '2021-03-02')],
      [['historical_agreement_overlaps_current_agreement', 'agreements.0.effective_to']]
    ],
    [
      'overlaps a stored one',
      [agreement('2019-06-01', '2019-07-01')],
      [['gaps_or_overlaps_in_agreement_dates', 'agreements.0.effective_from']]
    ],
    [
      'the dates of a stored one with another tariff',
      [agreement('2019-01-01', '2020-01-01', 'E-OTHER')],
      [['gaps_or_overlaps_in_agreement_dates', 'agreements.0.effective_from']]
    ],
    [
      'spans stored ones',
      [agreement('2014-01-01', '2018-01-01')],
      [['gaps_or_overlaps_in_agreement_dates', 'agreements.0.effective_from']]
    ],
    [
      'overlaps another in the request, reported at the later one',
      [
        agreement('2010-01-01', '2011-01-01'),
        agreement('2012-01-01', '2013-01-01'),
        agreement('2010-06-01', '2010-07-01')
      ],
      [['gaps_or_overlaps_in_agreement_dates', 'agreements.2.effective_from']]
    ],
    [
      'the same new agreement twice in the request',
      [agreement('2010-01-01', '2011-01-01'), agreement('2010-01-01', '2011-01-01')],
      [['gaps_or_overlaps_in_agreement_dates', 'agreements.1.effective_from']]
    ]
  ]
  for (const [name, agreements, expected] of cases) {
    const res = await post(PATH, { agreements })
    t.equal(res.statusCode, 400, name)
    t.equal(res.json().code, 'invalid_request', name)
    t.strictSame(codes(res), expected, name)
  }
  t.strictSame(await tableCounts(database), before, 'nothing stored')
})

t.test('several problems in one body, sorted by attr then code', async (t) => {
  const before = await tableCounts(database)
  const filler = Array.from({ length: 7 }, (_, i) => agreement(`200${i}-01-01`, `200${i}-06-01`, `E-F${i}`))
  const res = await post(PATH, {
    agreements: [
      agreement('2012-02-01', '2012-01-01', 'E-X', 'NOPE'),
      agreement('2013-01-01', '2014-01-01'), // valid, but its neighbour is not: nothing is stored
      agreement('2019-12-01', '2021-04-01'),
      ...filler,
      agreement('2013-06-01', '2013-07-01', 'E-Y', SP)
    ]
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'invalid_request')
  t.strictSame(codes(res), [
    ['start_date_later_than_end_date', 'agreements.0.effective_to'],
    ['supply_point_not_found', 'agreements.0.supply_point_identifier'],
    ['gaps_or_overlaps_in_agreement_dates', 'agreements.2.effective_from'],
    ['historical_agreement_overlaps_current_agreement', 'agreements.2.effective_to'],
    ['gaps_or_overlaps_in_agreement_dates', 'agreements.10.effective_from']
  ])
  t.strictSame(await tableCounts(database), before, 'nothing stored')
})

t.test('schema problems: 400 invalid_request before any account look-up', async (t) => {
  const before = await tableCounts(database)
  const empty = await post(PATH, { agreements: [] })
  t.equal(empty.statusCode, 400)
  t.strictSame(codes(empty), [['min_items', 'agreements']])
  const tooMany = await post(PATH, {
    agreements: Array.from({ length: 501 }, () => agreement('2000-01-01', '2000-02-01'))
  })
  t.strictSame(codes(tooMany), [['max_items', 'agreements']])
  const missing = await post(PATH, {})
  t.strictSame(codes(missing), [['required', 'agreements']])

  const res = await post(PATH, {
    external_account_number: 'EXT-UNKNOWN', // schema problems win over the 404
    agreements: [
      { ...agreement('2023-02-30', '2000-13-01', 'T'.repeat(65)), is_current: false },
      { tariff_code: '  ', effective_from: null, effective_to: 20000101 }
    ]
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'invalid_request')
  t.strictSame(codes(res), [
    ['invalid_date', 'agreements.0.effective_from'],
    ['invalid_date', 'agreements.0.effective_to'],
    ['unexpected_field', 'agreements.0.is_current'],
    ['max_length', 'agreements.0.tariff_code'],
    ['null', 'agreements.1.effective_from'],
    ['invalid_date', 'agreements.1.effective_to'],
    ['required', 'agreements.1.supply_point_identifier'],
    ['blank', 'agreements.1.tariff_code']
  ])
  t.strictSame(await tableCounts(database), before, 'nothing stored')
})

t.test('the rules are per supply point', async (t) => {
  // A second account with two supply points; the second one's first current agreement starts 2022-06-01.
  const example = exampleAccount({ external_account_number: 'EXT-TWO' })
  const address = example.supply_addresses[0]
  address.supply_points.push({
    ...address.supply_points[0],
    identifier: '1200077777777',
    supply_start_date: '2022-06-01',
    agreements: [{ effective_from: '2022-06-01', tariff_code: 'E-1R-FIX-22-06-01' }]
  })
  t.equal((await client.stage(example)).statusCode, 201)
  t.equal((await client.create('EXT-TWO')).statusCode, 201)
  const two = (agreements: Record<string, unknown>[]) => post(PATH, { external_account_number: 'EXT-TWO', agreements })

  const bad = await two([
    agreement('2021-01-01', '2022-06-01'),
    agreement('2021-01-01', '2022-06-01', 'E-OLD', '1200077777777')
  ])
  t.strictSame(
    codes(bad),
    [['historical_agreement_overlaps_current_agreement', 'agreements.0.effective_to']],
    'each supply point is bounded by its own first current agreement'
  )
  const ok = await two([
    agreement('2020-01-01', '2021-03-01'),
    agreement('2020-01-01', '2022-06-01', 'E-OLD', '1200077777777')
  ])
  t.equal(ok.statusCode, 201, ok.body)
  t.strictSame(
    (await stored('EXT-TWO')).filter((a) => a.historical),
    [historical('2020-01-01', '2021-03-01'), historical('2020-01-01', '2022-06-01', 'E-OLD', '1200077777777')],
    'overlapping dates on two supply points are no overlap'
  )
  const overlap = await two([agreement('2019-01-01', '2020-06-01', 'E-OLD', '1200077777777')])
  t.strictSame(codes(overlap), [['gaps_or_overlaps_in_agreement_dates', 'agreements.0.effective_from']])
  const foreignPoint = await post(PATH, {
    agreements: [agreement('2000-01-01', '2001-01-01', 'E-OLD', '1200077777777')]
  })
  t.strictSame(
    codes(foreignPoint),
    [['supply_point_not_found', 'agreements.0.supply_point_identifier']],
    'a supply point of another account of the same supplier is not on this account'
  )
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
  const body = { agreements: [agreement('2000-01-01', '2001-01-01'), agreement('2000-01-01', '2001-01-01')] }
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
  t.strictSame(await tableCounts(database), before, 'the 404s stored nothing')
  const foreign = await app.inject({
    method: 'POST',
    url: `/v1/data-import/${PATH}`,
    headers: { authorization: `Token ${other.token}` },
    payload: {
      import_supplier: 'GLOBEX',
      external_account_number: 'EXT-GLOBEX',
      agreements: [agreement('2000-01-01', '2001-01-01')]
    }
  })
  t.equal(foreign.statusCode, 201, 'the other organisation can write to its own account')
})

t.test('a supplier that is not Ongoing: 400 import_supplier_migration_not_ongoing', async (t) => {
  for (const status of ['Paused', 'Complete']) {
    await asOperator(app, `mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: ${status}}) { code } }`)
    const before = await tableCounts(database)
    const res = await post(PATH, {
      agreements: [agreement('2000-01-01', '2001-01-01'), agreement('2000-01-01', '2001-01-01', 'E-X', 'NOPE')]
    })
    t.equal(res.statusCode, 400, status)
    t.equal(res.json().code, 'invalid_request', status)
    t.strictSame(
      codes(res),
      [['import_supplier_migration_not_ongoing', 'import_supplier']],
      `${status}: only the supplier status is reported`
    )
    const missing = await post(PATH, {
      external_account_number: 'EXT-NEVER',
      agreements: [agreement('2000-01-01', '2001-01-01')]
    })
    t.equal(missing.statusCode, 404, `${status}: an unknown pair is still 404`)
    const retry = await post(PATH, { agreements: [agreement('2019-01-01', '2020-01-01', 'E-OLD-1')] })
    t.equal(retry.statusCode, 400, `${status}: even a retry is refused`)
    t.strictSame(await tableCounts(database), before, `${status}: nothing stored`)
  }
  await asOperator(app, 'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: Ongoing}) { code } }')
  const res = await post(PATH, { agreements: [agreement('2000-01-01', '2001-01-01')] })
  t.equal(res.statusCode, 201, 'accepted again once Ongoing')
})

t.test('the account summary counts the historical agreements; the balance is unchanged', async (t) => {
  const now = await summary()
  // 2019, 2020, 2016, E-RACE (2015) and 2000.
  t.equal(now.counts.historical_agreements, 5)
  t.equal((await stored()).filter((a) => a.historical).length, 5)
  t.strictSame(now.ledgers, initial.ledgers)
  t.strictSame(
    { ...now.counts, historical_agreements: 0 },
    { ...initial.counts, historical_agreements: 0 },
    'no other count changed'
  )
})

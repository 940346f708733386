import t, { type Test } from 'tap'
import { createServer } from 'node:http'
import { sql } from 'drizzle-orm'
import { daysFromToday, exampleAccount, importClient, importSetup, TEAM } from './helpers/accounts.js'
import { rowsOf, tableCounts } from './helpers/database.js'
import { asOperator, createTenant, type Tenant } from './helpers/graphql.js'

/**
 * `POST batches/`: each entry staged, created and given its sections as the single endpoints
 * would, with a result per entry; whole-request problems store nothing.
 */

type Setup = Awaited<ReturnType<typeof importSetup>>

async function vendor(t: Test): Promise<string> {
  const server = createServer((req, res) => {
    const found = req.url === '/payment-instructions/CARD-1'
    res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' })
    res.end(
      found ? JSON.stringify({ reference: 'CARD-1', type: 'CARD', status: 'ACTIVE', details: { last4: '4242' } }) : '{}'
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}

const batch = (setup: { app: Setup['app'] }, tenant: Tenant, body: unknown) =>
  setup.app.inject({
    method: 'POST',
    url: '/v1/data-import/batches/',
    headers: { authorization: `Bearer ${tenant.token}` },
    payload: body as object
  })
const body = (accounts: unknown[], more: Record<string, unknown> = {}) => ({
  import_supplier: 'ACME_ENERGY',
  operations_team_name: TEAM,
  accounts,
  ...more
})
const account = (external: string, changes: Record<string, unknown> = {}) =>
  exampleAccount({ external_account_number: external, ...changes })

/** Every section, valid for the example account (whose ENERGY ledger's open statement starts 2026-10-01). */
const sections = (external: string) => ({
  notes: [{ body: `Moved ${external}.` }, { document_paths: [{ document_path: 'letters/welcome.pdf' }] }],
  transactions: [{ transaction_id: 'W-1', transaction_date: daysFromToday(-1), amount: '1.50', type: 'CREDIT' }],
  historical_agreements: [
    {
      supply_point_identifier: '1200012345678',
      tariff_code: 'E-OLD',
      effective_from: '2019-01-01',
      effective_to: '2021-03-01'
    }
  ],
  historical_statements: [
    {
      statement_id: 'ST-1',
      bill_period_from_date: '2025-01-01',
      bill_period_to_date: '2025-01-31',
      issued_date: '2025-02-01',
      gross_amount: '42.10'
    }
  ],
  historical_billing_documents: {
    billing_document_type: 'ITEM_BASED',
    historical_billing_documents: [
      {
        billing_document_identifier: 'BILL-1',
        billing_document_type: 'ITEM_BASED',
        issued_date: '2025-02-01',
        transactions: [{ transaction_id: 'B-1', transaction_date: '2025-01-31', amount: '40.00', type: 'CHARGE' }]
      }
    ]
  },
  payment_instruction: { vendor: 'ACMEPAY', reference: 'CARD-1', type: 'CARD' }
})

const COUNTS_ALL = {
  customers: 1,
  supply_points: 1,
  agreements: 2,
  historical_agreements: 1,
  notes: 2,
  transactions: 6,
  historical_statements: 1,
  billing_documents: 1,
  payment_instructions: 1
}

async function events(setup: Setup, external: string): Promise<string[]> {
  return rowsOf<{ type: string }>(
    await setup.database.db
      .execute(sql`select e.type from import_events e join import_processes p on p.id = e.import_process_id
    where p.external_account_number = ${external} order by e.id`)
  ).map((r) => r.type)
}

t.test(
  'entries with every section are created with their history, exactly as the single endpoints would',
  async (t) => {
    const setup = await importSetup(t, { env: { PAYMENT_VENDORS: `ACMEPAY=${await vendor(t)}` } })
    const { tenant, client } = setup
    const externals = ['BA-1', 'BA-2', 'BA-3']
    const res = await batch(setup, tenant, body(externals.map((x) => ({ account: account(x), ...sections(x) }))))
    t.equal(res.statusCode, 200, res.body)
    const answer = res.json()
    t.same(answer.counts, { created: 3, already_imported: 0, would_create: 0, failed: 0 })
    t.same(
      answer.results.map((r: any) => [r.external_account_number, r.outcome, r.step, r.status, r.code, r.errors]),
      externals.map((x) => [x, 'created', null, null, null, null]),
      'in request order'
    )
    for (const [i, x] of externals.entries()) {
      const summary = (await client.summary(x)).json()
      t.equal(summary.service_account_number, answer.results[i].service_account_number)
      t.same(summary.counts, COUNTS_ALL, `${x}: every section stored`)
      t.equal(summary.ledgers[0].balance, '7.76', `${x}: 6.26 + 1.50`)
      t.same(
        await events(setup, x),
        [
          'STAGED',
          'CREATE_ATTEMPTED',
          'CREATED',
          'POST_IMPORT_WRITE',
          'POST_IMPORT_WRITE',
          'POST_IMPORT_WRITE',
          'POST_IMPORT_WRITE',
          'POST_IMPORT_WRITE',
          'POST_IMPORT_WRITE'
        ],
        `${x}: the single endpoints' events`
      )
    }
    // The same as one account through the single endpoints.
    const single = importClient(setup.app, tenant)
    t.equal((await single.stage(account('SINGLE'))).statusCode, 201)
    t.equal((await single.create('SINGLE')).statusCode, 201)
    const rows = async (x: string) =>
      rowsOf<Record<string, unknown>>(
        await setup.database.db.execute(sql`select
      a.account_type, a.billing_postal_code, a.transfer_balance::text, (select count(*) from statements s join ledgers l on l.id = s.ledger_id where l.account_id = a.id) as statements,
      (select string_agg(t.transaction_id || ' ' || t.amount::text || ' ' || t.source::text, ',' order by t.transaction_id) from ledger_transactions t join ledgers l on l.id = t.ledger_id where l.account_id = a.id and t.source = 'ACCOUNT_IMPORT') as imported
    from accounts a where a.external_account_number = ${x}`)
      )
    t.same(await rows('BA-1'), await rows('SINGLE'), 'the account rows a single create writes')

    const again = await batch(setup, tenant, body(externals.map((x) => ({ account: account(x), ...sections(x) }))))
    t.same(again.json().counts, { created: 0, already_imported: 3, would_create: 0, failed: 0 }, 'the same batch again')
    for (const x of externals) t.same((await client.summary(x)).json().counts, COUNTS_ALL, `${x}: nothing doubled`)
    t.equal((await client.summary('BA-1')).json().ledgers[0].balance, '7.76', 'not a penny more')
  }
)

t.test(
  'one entry of each kind of failure: each answered as its single endpoint would, the others unaffected',
  async (t) => {
    const setup = await importSetup(t, { env: { PAYMENT_VENDORS: `ACMEPAY=${await vendor(t)}` } })
    const { tenant, client, app } = setup
    await client.stage(account('IMPORTED'))
    await client.create('IMPORTED')
    await client.stage(account('SKIPPED'))
    await asOperator(
      app,
      'mutation { skipImportProcess(input: {importSupplierCode: "ACME_ENERGY", externalAccountNumber: "SKIPPED"}) { state } }'
    )
    const before = await tableCounts(setup.database)
    const res = await batch(
      setup,
      tenant,
      body([
        { account: account('OK-1') },
        { account: account('SCHEMA', { account_type: 'HOUSE' }) },
        { account: account('RULE', { transfer_balance: '1.00' }) },
        { account: account('IMPORTED'), notes: [{ body: 'after the fact' }] },
        { account: account('SKIPPED') },
        { account: account('OK-1') },
        {
          account: account('NOTES'),
          notes: [{ is_pinned: true }],
          transactions: [{ transaction_id: 'X', transaction_date: daysFromToday(-1), amount: '1', type: 'CREDIT' }]
        },
        { account: account('PAYMENT'), payment_instruction: { vendor: 'ACMEPAY', reference: 'NOPE', type: 'CARD' } },
        'not an entry',
        { notes: [] },
        { account: account('EXTRA'), comments: 'x' },
        { account: account('OTHER', { import_supplier: 'OTHER_ENERGY' }) }
      ])
    )
    t.equal(res.statusCode, 200)
    const results = res.json().results
    const view = (r: any) => [
      r.external_account_number,
      r.outcome,
      r.step,
      r.status,
      r.code,
      r.errors?.map((e: any) => `${e.code}@${e.attr}`) ?? null
    ]
    t.same(results.map(view), [
      ['OK-1', 'created', null, null, null, null],
      ['SCHEMA', 'failed', 'stage', 400, 'account_failed_validation', ['invalid_choice@account_type']],
      [
        'RULE',
        'failed',
        'stage',
        400,
        'account_failed_validation',
        ['ledger_balances_not_equal_to_transfer_balance@transfer_balance']
      ],
      ['IMPORTED', 'already_imported', null, null, null, null],
      ['SKIPPED', 'failed', 'stage', 400, 'account_failed_validation', ['account_import_skipped@null']],
      [
        'OK-1',
        'failed',
        'stage',
        400,
        'account_failed_validation',
        ['duplicate_external_account_number@external_account_number']
      ],
      ['NOTES', 'failed', 'notes', 400, 'invalid_request', ['note_body_or_document_path_not_found@notes.0']],
      ['PAYMENT', 'failed', 'payment_instruction', 400, 'invalid_request', ['payment_instruction_not_found@reference']],
      [null, 'failed', 'stage', 400, 'invalid_request', ['invalid@null']],
      [null, 'failed', 'stage', 400, 'invalid_request', ['required@account']],
      ['EXTRA', 'failed', 'stage', 400, 'invalid_request', ['unexpected_field@comments']],
      ['OTHER', 'failed', 'stage', 400, 'account_failed_validation', ['import_supplier_mismatch@import_supplier']]
    ])
    t.same(
      res.json().counts,
      { created: 1, already_imported: 1, would_create: 0, failed: 10 },
      'an entry whose section failed is failed, though its account was created'
    )
    t.match(
      results[6].service_account_number,
      /^A-/,
      'a section failed after the account was created: its number is given'
    )
    t.equal(results[0].errors, null)

    const after = await tableCounts(setup.database)
    t.equal(after.accounts! - before.accounts!, 3, 'OK-1, NOTES and PAYMENT created; nothing else')
    t.equal(
      (await client.summary('NOTES')).json().counts.notes,
      0,
      'the failed notes stored nothing, and the transactions after them did not run'
    )
    t.equal((await client.summary('NOTES')).json().counts.transactions, 4)
    t.equal((await client.summary('IMPORTED')).json().counts.notes, 1, "an imported account's sections run")
    t.equal((await client.status('SCHEMA')).statusCode, 404, 'a refused account is not staged')
    const failures = rowsOf<{ external: string; step: string }>(
      await setup.database.db.execute(
        sql`select external_account_number as external, step::text from import_failures order by 1, 2`
      )
    )
    t.same(
      failures.map((f) => `${f.external}:${f.step}`),
      ['NOTES:notes', 'PAYMENT:payment_instruction', 'RULE:stage', 'SCHEMA:stage'],
      "recorded as the single endpoints record them (a duplicate, a skip and entry-shape problems are not the account's failures)"
    )
  }
)

t.test("a new account's import process is written once, as imported, as a stage and a create leave it", async (t) => {
  const setup = await importSetup(t)
  const exec = async (query: ReturnType<typeof sql>) =>
    rowsOf<Record<string, any>>(await setup.database.db.execute(query))
  // The table's statistics from here on (an embedded database is reused between tests).
  await exec(sql`select pg_stat_force_next_flush()`)
  await exec(sql`select pg_stat_reset()`)
  const res = await batch(
    setup,
    setup.tenant,
    body(['ONCE-1', 'ONCE-2', 'ONCE-3'].map((x) => ({ account: account(x) })))
  )
  t.same(res.json().counts, { created: 3, already_imported: 0, would_create: 0, failed: 0 })
  const single = importClient(setup.app, setup.tenant)
  t.equal((await single.stage(account('ONCE-SINGLE'))).statusCode, 201)
  t.equal((await single.create('ONCE-SINGLE')).statusCode, 201)
  const process = async (x: string) =>
    (
      await exec(sql`select state, service_account_number is not null as numbered,
        first_staged_at is not null as staged, account_created_at is not null as created, staged_data is not null as data,
        latest_error, staged_data_erased_at from import_processes where external_account_number = ${x}`)
    )[0]
  t.same(await process('ONCE-1'), await process('ONCE-SINGLE'), 'the row a stage and a create leave')
  const [numbers] = await exec(sql`select count(*)::int as n from import_processes p
    join accounts a on a.import_process_id = p.id and a.service_account_number = p.service_account_number
    where p.external_account_number like 'ONCE-_'`)
  t.equal(numbers!.n, 3, "each process has its account's number")
  // The table's statistics: three rows inserted by the batch, one by the single stage, and one
  // update (the single create). A backend sends them within seconds: wait for the inserts.
  let counts: Record<string, any> | undefined
  for (let i = 0; i < 100; i++) {
    ;[counts] = await exec(sql`select n_tup_ins::int as inserted, n_tup_upd::int as updated
      from pg_stat_user_tables where relname = 'import_processes'`)
    if (counts!.inserted >= 4) break
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  t.same(counts, { inserted: 4, updated: 1 }, 'the batch wrote each process once, with no row version left behind')
})

t.test('problems of the request as a whole: 400 or 413, and nothing stored', async (t) => {
  const setup = await importSetup(t, { env: { BODY_LIMIT_BYTES: String(200_000) } })
  const { tenant, app } = setup
  const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
  await asOperator(
    app,
    'mutation { createImportSupplier(input: {code: "PAUSED", organisation: "Acme", status: Paused}) { code } }'
  )
  const before = await tableCounts(setup.database)
  const one = [{ account: account('W-1') }]
  const cases: Array<[string, unknown, Array<[string, string | null]>]> = [
    ['1,001 entries', body(Array.from({ length: 1001 }, () => ({}))), [['max_items', 'accounts']]],
    ['no entries', body([]), [['min_items', 'accounts']]],
    ['accounts not an array', body({} as never), [['invalid', 'accounts']]],
    ['an unknown field', { ...body(one), extra: 1 }, [['unexpected_field', 'extra']]],
    ['no team', { import_supplier: 'ACME_ENERGY', accounts: one }, [['required', 'operations_team_name']]],
    ['an unknown supplier', body(one, { import_supplier: 'NOPE' }), [['does_not_exist', 'import_supplier']]],
    [
      "another organisation's supplier",
      body(one, { import_supplier: other.supplier }),
      [['does_not_exist', 'import_supplier']]
    ],
    [
      'a paused supplier',
      body(one, { import_supplier: 'PAUSED' }),
      [['import_supplier_migration_not_ongoing', 'import_supplier']]
    ],
    [
      'an unknown team',
      body(one, { operations_team_name: 'Nobody' }),
      [['operations_team_name_does_not_exist', 'operations_team_name']]
    ]
  ]
  for (const [what, payload, expected] of cases) {
    const res = await batch(setup, tenant, payload)
    t.equal(res.statusCode, 400, what)
    t.equal(res.json().code, 'invalid_request', what)
    t.same(
      res.json().errors.map((e: any) => [e.code, e.attr]),
      expected,
      what
    )
  }
  const big = await batch(
    setup,
    tenant,
    body(Array.from({ length: 120 }, (_, i) => ({ account: account(`BIG-${i}`) })))
  )
  t.equal(big.statusCode, 413)
  t.equal(big.json().code, 'payload_too_large')
  t.same(await tableCounts(setup.database), before, 'nothing stored')
  const none = await setup.app.inject({ method: 'POST', url: '/v1/data-import/batches/', payload: body(one) })
  t.equal(none.statusCode, 401)
})

t.test('dry_run: every entry validated, staged and dry-run created; nothing created, no section run', async (t) => {
  const setup = await importSetup(t)
  const { tenant, client } = setup
  const res = await batch(
    setup,
    tenant,
    body(
      [
        { account: account('D-1'), notes: [{ body: 'not now' }] },
        { account: account('D-2', { transfer_balance: 'x' }) }
      ],
      { dry_run: true }
    )
  )
  t.same(
    res.json().results.map((r: any) => [r.outcome, r.step]),
    [
      ['would_create', null],
      ['failed', 'stage']
    ]
  )
  t.same(res.json().counts, { created: 0, already_imported: 0, would_create: 1, failed: 1 })
  t.same((await client.list('imported')).json(), [])
  t.equal((await client.status('D-1')).json().status, 'UNKNOWN', 'staged')
  t.same(await events(setup, 'D-1'), ['STAGED', 'DRY_RUN'])
})

t.test('failure records and the timeline count batch entries as single requests', async (t) => {
  const setup = await importSetup(t)
  const { tenant, client } = setup
  await client.validate(account('FR-1', { transfer_balance: 'x' }))
  await batch(
    setup,
    tenant,
    body([
      { account: account('FR-1') },
      { account: account('FR-2', { transfer_balance: 'x' }) },
      { account: account('FR-3') }
    ])
  )
  const failures = rowsOf<{ external: string; step: string }>(
    await setup.database.db.execute(sql`select external_account_number as external, step::text from import_failures`)
  )
  t.same(
    failures.map((f) => `${f.external}:${f.step}`),
    ['FR-2:stage'],
    "FR-1's validate failure cleared by its create"
  )
  const timeline = (
    await setup.app.inject({
      url: '/v1/data-import/migration-timeline/ACME_ENERGY/?minutes=2',
      headers: { authorization: `Bearer ${tenant.token}` }
    })
  ).json()
  const total = timeline.minutes.reduce(
    (s: any, m: any) => ({ staged: s.staged + m.staged, created: s.created + m.created, failed: s.failed + m.failed }),
    { staged: 0, created: 0, failed: 0 }
  )
  t.same(total, { staged: 2, created: 2, failed: 2 }, "the single validate's failure and the batch's")
})

t.test('a database error in one entry fails that entry alone; the others are created', async (t) => {
  const setup = await importSetup(t)
  const db = setup.database.db
  await db.execute(sql`create function refuse_boom() returns trigger language plpgsql as $$
    begin if new.external_account_number = 'BOOM' then raise exception 'boom'; end if; return new; end $$`)
  await db.execute(
    sql`create trigger refuse_boom before insert on accounts for each row execute function refuse_boom()`
  )
  const res = await batch(
    setup,
    setup.tenant,
    body(['OK-A', 'BOOM', 'OK-B'].map((x) => ({ account: account(x), notes: [{ body: 'n' }] })))
  )
  t.equal(res.statusCode, 200)
  t.same(
    res.json().results.map((r: any) => [r.external_account_number, r.outcome, r.step, r.status, r.code]),
    [
      ['OK-A', 'created', null, null, null],
      ['BOOM', 'failed', 'create', 500, 'server_error'],
      ['OK-B', 'created', null, null, null]
    ]
  )
  t.equal((await setup.client.summary('OK-A')).json().counts.notes, 1)
  t.equal(
    (await setup.client.status('BOOM')).json().status,
    'UNKNOWN',
    'BOOM is staged, as a single stage would have left it'
  )
})

t.test("a supplier's concurrency limit: the batch waits for free slots instead of answering 429", async (t) => {
  const setup = await importSetup(t)
  await asOperator(
    setup.app,
    'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", maxConcurrentProcessing: 1}) { code } }'
  )
  const res = await batch(
    setup,
    setup.tenant,
    body(Array.from({ length: 6 }, (_, i) => ({ account: account(`L-${i}`) })))
  )
  t.same(res.json().counts, { created: 6, already_imported: 0, would_create: 0, failed: 0 })
})

t.test("others' requests, not the migration's own, make PGlite keep batch transactions short", async (t) => {
  const setup = await importSetup(t)
  const { app, tenant, client } = setup
  const activity = app.othersActivity
  const marked: string[] = []
  const mark = activity.mark
  activity.mark = () => {
    marked.push('mark')
    mark()
  }
  t.teardown(() => {
    activity.mark = mark
  })
  t.equal((await batch(setup, tenant, body([{ account: account('OA-2') }]))).statusCode, 200)
  const jobs = { url: '/v1/data-import/import-jobs/', headers: { authorization: `Bearer ${tenant.token}` } }
  t.equal((await app.inject(jobs)).statusCode, 200)
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200)
  t.same(marked, [], 'batches, import jobs and /healthz are not counted')
  t.equal((await client.status('OA-2')).statusCode, 200)
  t.same(marked, ['mark'], 'a status read is')
  t.ok(activity.recent())
})

import t from 'tap'
import { sql } from 'drizzle-orm'
import { STEP_NAMES } from '../schemas/failures.js'
import { exampleAccount, importSetup } from './helpers/accounts.js'
import { rowsOf, tableCounts } from './helpers/database.js'
import { asOperator, createTenant, operatorToken, type Tenant } from './helpers/graphql.js'

/**
 * Failure records: what each step records, replaces and clears, what is never recorded,
 * and the reads (list, summary, timeline) with their tenancy. Records are read from the table too,
 * to show that no `detail` or input value is stored.
 */

type Setup = Awaited<ReturnType<typeof importSetup>>

async function records(setup: Setup) {
  return rowsOf<{
    external: string
    step: string
    attempts: number
    http_status: number
    code: string
    errors: unknown
    codes: string[]
  }>(
    await setup.database.db
      .execute(sql`select external_account_number as external, step, attempts, http_status, code, errors, codes
      from import_failures order by external_account_number, step`)
  )
}

const steps = async (setup: Setup, external: string) =>
  (await records(setup)).filter((r) => r.external === external).map((r) => r.step)

const badPhone = (external: string) =>
  exampleAccount({
    external_account_number: external,
    customers: [{ ...exampleAccount().customers[0], landline: 'abcde' }]
  })

function listUrl(tenant: Tenant, query = '') {
  return `/v1/data-import/failed-account-import-processes/${tenant.supplier}/${query}`
}

async function get(setup: Setup, url: string, tenant: Tenant = setup.tenant) {
  return setup.app.inject({ url, headers: { authorization: `Bearer ${tenant.token}` } })
}

t.test('validate, stage and create record their failures, replace them and clear them', async (t) => {
  const setup = await importSetup(t)
  const { client } = setup

  t.test('a failed validate records codes and attrs only; repeating it counts attempts in one record', async (t) => {
    const res = await client.validate(badPhone('EXT-V'))
    t.equal(res.statusCode, 400)
    const [record] = await records(setup)
    t.same(record, {
      external: 'EXT-V',
      step: 'validate',
      attempts: 1,
      http_status: 400,
      code: 'account_failed_validation',
      errors: [{ code: 'invalid_phone_number', attr: 'customers.0.landline' }],
      codes: ['invalid_phone_number']
    })
    t.notMatch(JSON.stringify(await records(setup)), /abcde|valid phone/, 'no input value and no detail stored')
    for (let i = 0; i < 4; i++) await client.validate(badPhone('EXT-V'))
    const after = await records(setup)
    t.equal(after.length, 1, 'still one record')
    t.equal(after[0]!.attempts, 5)
    t.equal((await tableCounts(setup.database)).import_processes, 0, 'validate stores nothing of the account')
  })

  t.test('a clean validate clears the validate record', async (t) => {
    t.equal((await client.validate(exampleAccount({ external_account_number: 'EXT-V' }))).statusCode, 200)
    t.same(await steps(setup, 'EXT-V'), [])
  })

  t.test('a failed stage records stage; a good stage clears validate and stage', async (t) => {
    await client.validate(badPhone('EXT-S'))
    t.equal((await client.stage(badPhone('EXT-S'))).statusCode, 400)
    t.same(await steps(setup, 'EXT-S'), ['validate', 'stage'])
    t.equal((await client.stage(exampleAccount({ external_account_number: 'EXT-S' }))).statusCode, 201)
    t.same(await steps(setup, 'EXT-S'), [], 'first stage')
    await client.validate(badPhone('EXT-S'))
    await client.stage(badPhone('EXT-S'))
    t.equal((await client.stage(exampleAccount({ external_account_number: 'EXT-S' }))).statusCode, 200)
    t.same(await steps(setup, 'EXT-S'), [], 'restage')
  })

  t.test('a failed create records create with its status; a create clears validate, stage and create', async (t) => {
    await client.validate(badPhone('EXT-S'))
    const refused = await client.create('EXT-S', { team: 'No Such Team' })
    t.equal(refused.statusCode, 400)
    const create = (await records(setup)).find((r) => r.external === 'EXT-S' && r.step === 'create')
    t.same(create?.errors, [{ code: 'operations_team_name_does_not_exist', attr: 'operations_team_name' }])
    t.equal((await client.create('EXT-NOTHING')).statusCode, 400, 'nothing staged')
    t.same(await steps(setup, 'EXT-NOTHING'), ['create'], 'is a failure of create too')
    t.same(await steps(setup, 'EXT-S'), ['validate', 'create'])
    t.equal((await client.create('EXT-S')).statusCode, 201)
    t.same(await steps(setup, 'EXT-S'), [])
  })

  t.test('account_already_imported clears validate, stage and create, on every step', async (t) => {
    const db = setup.database.db
    await db.execute(sql`insert into import_failures select supplier_id, 'EXT-S', s::import_step, now(), 1, 400, 'x', '[]', '{x}'
      from import_processes, unnest(array['validate', 'stage', 'create', 'notes']) as s where external_account_number = 'EXT-S'`)
    t.equal(
      (await client.validate(exampleAccount({ external_account_number: 'EXT-S' }))).json().code,
      'account_already_imported'
    )
    t.same(await steps(setup, 'EXT-S'), ['notes'], 'validate: post-import records stay')
    await db.execute(sql`insert into import_failures select supplier_id, 'EXT-S', 'stage', now(), 1, 400, 'x', '[]', '{x}'
      from import_processes where external_account_number = 'EXT-S'`)
    t.equal(
      (await client.stage(exampleAccount({ external_account_number: 'EXT-S' }))).json().code,
      'account_already_imported'
    )
    t.same(await steps(setup, 'EXT-S'), ['notes'], 'stage')
  })

  t.test('a dry run that would succeed clears them; one that fails records create', async (t) => {
    await client.stage(exampleAccount({ external_account_number: 'EXT-D' }))
    await client.validate(badPhone('EXT-D'))
    t.equal((await client.create('EXT-D', { team: 'Nope', dryRun: true })).statusCode, 400)
    t.same(await steps(setup, 'EXT-D'), ['validate', 'create'])
    t.equal((await client.create('EXT-D', { dryRun: true })).json().code, 'dry_run_rolled_back')
    t.same(await steps(setup, 'EXT-D'), [])
  })

  t.test('skipping a pair clears all its records', async (t) => {
    await client.validate(badPhone('EXT-K'))
    await client.create('EXT-K')
    t.same(await steps(setup, 'EXT-K'), ['validate', 'create'])
    await asOperator(
      setup.app,
      'mutation { skipImportProcess(input: {importSupplierCode: "ACME_ENERGY", externalAccountNumber: "EXT-K"}) { state } }'
    )
    t.same(await steps(setup, 'EXT-K'), [])
  })
})

t.test('what is never recorded', async (t) => {
  const setup = await importSetup(t, { env: { BODY_LIMIT_BYTES: '65536' } })
  const { client, app, tenant } = setup
  const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
  const bad = badPhone('EXT-N')
  const send = (
    url: string,
    payload: unknown,
    headers: Record<string, string> = { authorization: `Bearer ${tenant.token}` }
  ) => app.inject({ method: 'POST', url: `/v1/data-import/${url}`, headers, payload: payload as object })

  const cases: Array<[string, () => Promise<{ statusCode: number }>]> = [
    ['an unknown supplier', () => client.validate({ ...bad, import_supplier: 'NOPE' })],
    ["another organisation's supplier", () => client.validate({ ...bad, import_supplier: other.supplier })],
    ['no external account number', () => client.validate({ ...bad, external_account_number: undefined })],
    ['a number as external account number', () => client.validate({ ...bad, external_account_number: 12 })],
    ['a blank one', () => client.validate({ ...bad, external_account_number: '  ' })],
    ['one with leading whitespace', () => client.validate({ ...bad, external_account_number: ' EXT-N' })],
    ['one too long', () => client.validate({ ...bad, external_account_number: 'E'.repeat(129) })],
    ['401', () => send('validate-account/', bad, {})],
    [
      '403 (operator token)',
      async () => send('validate-account/', bad, { authorization: `Bearer ${await operatorToken(app)}` })
    ],
    [
      '404 post-import',
      () =>
        send('notes/create/', {
          import_supplier: tenant.supplier,
          external_account_number: 'EXT-N',
          notes: [{ body: 'x' }]
        })
    ],
    ['413', () => send('validate-account/', { ...bad, padding: 'x'.repeat(70_000) })],
    [
      '415',
      () =>
        app.inject({
          method: 'POST',
          url: '/v1/data-import/validate-account/',
          headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'text/plain' },
          payload: 'x'
        })
    ]
  ]
  for (const [what, run] of cases) {
    const res = await run()
    t.ok(res.statusCode >= 400, `${what}: refused (${res.statusCode})`)
    t.same(await records(setup), [], `${what}: nothing recorded`)
  }

  t.test('account_import_skipped', async (t) => {
    t.equal((await client.stage(exampleAccount({ external_account_number: 'EXT-SKIP' }))).statusCode, 201)
    await asOperator(
      app,
      'mutation { skipImportProcess(input: {importSupplierCode: "ACME_ENERGY", externalAccountNumber: "EXT-SKIP"}) { state } }'
    )
    for (const res of [await client.stage(badPhone('EXT-SKIP')), await client.create('EXT-SKIP')]) {
      t.same(
        res.json().errors.map((e: any) => e.code),
        ['account_import_skipped']
      )
    }
    t.same(await records(setup), [], 'skipped')
  })
})

t.test('a failure that cannot be recorded is logged, and the 400 is answered as it was', async (t) => {
  const setup = await importSetup(t, { captureLogs: true })
  await setup.database.db.execute(sql`create function refuse_failures() returns trigger language plpgsql as $$
    begin raise exception 'no failure records today'; end $$`)
  await setup.database.db.execute(
    sql`create trigger refuse before insert on import_failures for each row execute function refuse_failures()`
  )
  const res = await setup.client.validate(badPhone('EXT-X'))
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'account_failed_validation')
  t.match(setup.logs(), /failure record could not be written/)
})

t.test('post-import steps record their 400 and 500, and a success clears them', async (t) => {
  const setup = await importSetup(t)
  await setup.client.stage(exampleAccount())
  await setup.client.create('EXT-000123')
  const post = (path: string, body: Record<string, unknown>) =>
    setup.app.inject({
      method: 'POST',
      url: `/v1/data-import/${path}`,
      headers: { authorization: `Bearer ${setup.tenant.token}` },
      payload: { import_supplier: 'ACME_ENERGY', external_account_number: 'EXT-000123', ...body }
    })
  t.equal((await post('notes/create/', { notes: [{ is_pinned: true }] })).statusCode, 400)
  t.equal((await post('notes/create/', { notes: [{ body: 'x', extra: 1 }] })).statusCode, 400, 'a schema error too')
  const tx = await post('transactions/create/', {
    transactions: [{ transaction_id: 'T', transaction_date: '2026-10-10', amount: 'x', type: 'CHARGE' }]
  })
  t.equal(tx.statusCode, 400)
  const [notes, transactions] = await records(setup)
  t.same(notes, {
    external: 'EXT-000123',
    step: 'notes',
    attempts: 2,
    http_status: 400,
    code: 'invalid_request',
    errors: [{ code: 'unexpected_field', attr: 'notes.0.extra' }],
    codes: ['unexpected_field']
  })
  t.same(
    [transactions!.step, transactions!.code, transactions!.errors],
    ['transactions', 'invalid_decimal', [{ code: 'invalid_decimal', attr: 'transactions.0.amount' }]],
    "the transaction body's top-level code"
  )
  t.equal((await post('notes/create/', { notes: [{ body: 'fine' }] })).statusCode, 201)
  t.same(await steps(setup, 'EXT-000123'), ['transactions'], 'notes cleared; transactions stay')
})

t.test('the failure list: order, filters, paging, streaming, tenancy', async (t) => {
  const setup = await importSetup(t)
  const { client, tenant, app } = setup
  for (const external of ['B-2', 'A-1', 'C-3']) await client.validate(badPhone(external))
  await client.create('B-2')
  await client.create('A-1', { team: 'x' })
  await client.validate(exampleAccount({ external_account_number: 'D-4', transfer_balance: 'bad' }))
  const list = async (query = '') => {
    const res = await get(setup, listUrl(tenant, query))
    t.equal(res.statusCode, 200, res.body)
    return res
  }
  const all = (await list()).json()
  t.same(
    all.map((r: any) => `${r.external_account_number}:${r.step}`),
    ['A-1:validate', 'A-1:create', 'B-2:validate', 'B-2:create', 'C-3:validate', 'D-4:validate'],
    'by external account number, then step in step order'
  )
  t.same(Object.keys(all[0]).sort(), [
    'attempts',
    'code',
    'errors',
    'external_account_number',
    'failed_at',
    'http_status',
    'step'
  ])
  t.match(all[0].failed_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
  t.same(
    (await list('?step=create')).json().map((r: any) => r.external_account_number),
    ['A-1', 'B-2']
  )
  t.same(
    (await list('?code=invalid_phone_number')).json().map((r: any) => r.external_account_number),
    ['A-1', 'B-2', 'C-3']
  )
  t.same((await list('?code=import_process_does_not_exist')).json().length, 2, 'entry codes')
  t.same(
    (await list('?code=account_failed_validation')).json().length,
    6,
    'records whose top-level code it is, though their entries have other codes'
  )
  t.ok(
    (await list('?code=account_failed_validation'))
      .json()
      .every(
        (r: { code: string; errors: Array<{ code: string }> }) =>
          r.code === 'account_failed_validation' && r.errors.every((e) => e.code !== 'account_failed_validation')
      ),
    'found by their top-level code alone'
  )

  const first = await list('?limit=3')
  t.same(
    first.json().map((r: any) => `${r.external_account_number}:${r.step}`),
    ['A-1:validate', 'A-1:create', 'B-2:validate']
  )
  t.equal(
    first.headers.link,
    `</v1/data-import/failed-account-import-processes/${tenant.supplier}/?limit=3&after=B-2%3Avalidate>; rel="next"`
  )
  const second = await list('?limit=3&after=B-2%3Avalidate')
  t.same(
    second.json().map((r: any) => `${r.external_account_number}:${r.step}`),
    ['B-2:create', 'C-3:validate', 'D-4:validate']
  )
  t.notOk(second.headers.link, 'no next page')
  t.same(
    (await list('?after=B-2')).json().map((r: any) => r.external_account_number),
    ['C-3', 'D-4'],
    'after an account: after all its records'
  )
  const filtered = await list('?limit=1&step=create')
  t.match(filtered.headers.link, /step=create/, 'filters are kept in the next link')

  const badStep = await get(setup, listUrl(tenant, '?step=nope'))
  t.equal(badStep.statusCode, 400)
  t.same(
    badStep.json().errors.map((e: any) => [e.code, e.attr]),
    [['invalid_choice', 'step']]
  )
  const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
  for (const url of [
    listUrl(tenant),
    `/v1/data-import/failure-summary/${tenant.supplier}/`,
    `/v1/data-import/migration-timeline/${tenant.supplier}/`,
    listUrl({ ...tenant, supplier: 'NOPE' })
  ]) {
    const foreign = await get(setup, url, other)
    t.equal(foreign.statusCode, 404, `${url} for another organisation`)
    t.same(
      foreign.json().errors.map((e: any) => e.code),
      ['import_process_does_not_exist']
    )
  }
})

t.test('the failure summary counts accounts by step and by code', async (t) => {
  const setup = await importSetup(t)
  const { client, tenant } = setup
  for (const external of ['A', 'B', 'C']) await client.validate(badPhone(external))
  await client.validate(
    exampleAccount({
      external_account_number: 'D',
      transfer_balance: 'bad',
      billing_address: { ...exampleAccount().billing_address, postal_code: 'nope' }
    })
  )
  await client.create('A')
  const res = await get(setup, `/v1/data-import/failure-summary/${tenant.supplier}/`)
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    failing_accounts: 4,
    by_step: { ...Object.fromEntries(STEP_NAMES.map((step) => [step, 0])), validate: 4, create: 1 },
    by_code: [
      { step: 'validate', code: 'invalid_phone_number', accounts: 3 },
      { step: 'validate', code: 'invalid_decimal', accounts: 1 },
      { step: 'validate', code: 'invalid_postcode', accounts: 1 },
      { step: 'create', code: 'import_process_does_not_exist', accounts: 1 }
    ]
  })
  const empty = await createTenant(setup.app, 'Quiet', 'QUIET')
  const none = await get(setup, '/v1/data-import/failure-summary/QUIET/', empty)
  t.same(none.json().failing_accounts, 0)
  t.same(none.json().by_code, [])
})

t.test('the timeline counts stages, creates and failures per minute', async (t) => {
  const setup = await importSetup(t)
  const { client, tenant } = setup
  await client.stage(exampleAccount({ external_account_number: 'T-1' }))
  await client.stage(exampleAccount({ external_account_number: 'T-2' }))
  await client.stage(exampleAccount({ external_account_number: 'T-1' }))
  await client.create('T-1')
  await client.validate(badPhone('T-3'))
  await client.create('T-3')
  await client.stage({ ...badPhone('T-4'), import_supplier: 'NOPE' })
  const res = await get(setup, `/v1/data-import/migration-timeline/${tenant.supplier}/`)
  t.equal(res.statusCode, 200)
  const minutes = res.json().minutes as Array<{ minute: string; staged: number; created: number; failed: number }>
  t.equal(minutes.length, 60, 'the last hour by default')
  const now = Math.floor(Date.now() / 60_000) * 60_000
  t.ok(new Date(minutes[59]!.minute).getTime() >= now - 60_000, 'the current minute last')
  t.equal(
    new Date(minutes[1]!.minute).getTime() - new Date(minutes[0]!.minute).getTime(),
    60_000,
    'one entry per minute, oldest first'
  )
  const total = minutes.reduce(
    (sum, m) => ({ staged: sum.staged + m.staged, created: sum.created + m.created, failed: sum.failed + m.failed }),
    { staged: 0, created: 0, failed: 0 }
  )
  t.same(total, { staged: 3, created: 1, failed: 2 })
  t.equal(
    (await get(setup, `/v1/data-import/migration-timeline/${tenant.supplier}/?minutes=10080`)).json().minutes.length,
    10080,
    'a week'
  )
  for (const bad of ['0', '10081', 'x']) {
    const refused = await get(setup, `/v1/data-import/migration-timeline/${tenant.supplier}/?minutes=${bad}`)
    t.equal(refused.statusCode, 400, `minutes=${bad}`)
    t.equal(refused.json().errors[0].attr, 'minutes')
  }
})

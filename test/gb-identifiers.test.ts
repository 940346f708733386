import t, { type Test } from 'tap'
import { sql } from 'drizzle-orm'
import { codes, exampleAccount, importClient, importSetup, jobSettled, TEAM } from './helpers/accounts.js'
import { otherSupplyAddress } from './helpers/account-data.js'
import { rowsOf } from './helpers/database.js'
import { asOperator, gql, operatorToken } from './helpers/graphql.js'
import { runClient } from './helpers/migrate.js'

/**
 * A supplier's `supplyPointChecks: GB`: its accounts' ELECTRICITY identifiers must be MPAN cores
 * and GAS ones MPRNs, through validate, stage, create (against the supplier as it is then),
 * batches and import jobs; a NONE supplier takes them as before. The GraphQL field, and the
 * generator's --gb-identifiers, whose accounts pass a GB supplier.
 */

type Setup = Awaited<ReturnType<typeof importSetup>>

const GB = 'ACME_GB'
const POINT = 'supply_addresses.0.supply_points.0.identifier'
const GAS_POINT = 'supply_addresses.1.supply_points.0.identifier'
/** The example account's MPAN with its right check digit (the example's own, …678, has 8 where 9 is due). */
const GOOD_MPAN = '1200012345679'

const SUPPLIER_FIELDS = 'code status supplyPointChecks'

/** The example account for `supplier`, with its ELECTRICITY identifier and, when given, a GAS point at a second address. */
function gbAccount(external: string, supplier: string, mpan: string, mprn?: string) {
  const account = exampleAccount({ external_account_number: external, import_supplier: supplier })
  account.supply_addresses[0].supply_points[0].identifier = mpan
  if (mprn !== undefined) account.supply_addresses.push(otherSupplyAddress(mprn))
  return account
}

async function createSupplier(setup: Setup, code: string, checks?: string) {
  const data = await asOperator(
    setup.app,
    `mutation($input: CreateImportSupplierInput!) { createImportSupplier(input: $input) { ${SUPPLIER_FIELDS} } }`,
    { input: { code, organisation: setup.tenant.organisation, ...(checks ? { supplyPointChecks: checks } : {}) } }
  )
  return data.createImportSupplier
}

async function setChecks(setup: Setup, code: string, checks: string | null) {
  const data = await asOperator(
    setup.app,
    `mutation($input: UpdateImportSupplierInput!) { updateImportSupplier(input: $input) { ${SUPPLIER_FIELDS} } }`,
    { input: { code, supplyPointChecks: checks } }
  )
  return data.updateImportSupplier
}

async function processCount(setup: Setup, supplier: string): Promise<number> {
  const [row] = rowsOf<{ n: number }>(
    await setup.app.db.execute(sql`select count(*)::int as n from import_processes p
      join import_suppliers s on s.id = p.supplier_id where s.code = ${supplier}`)
  )
  return row!.n
}

/** The supplier's open failure records of a step: account, attempts and [code, attr] pairs. */
async function failures(setup: Setup, supplier: string, step: string) {
  const data = await asOperator(
    setup.app,
    `query($s: String!, $step: String) { migrationFailures(importSupplierCode: $s, step: $step) {
      externalAccountNumber attempts errors { code attr } } }`,
    { s: supplier, step }
  )
  return (data.migrationFailures as Array<{ externalAccountNumber: string; attempts: number; errors: any[] }>).map(
    (f) => [f.externalAccountNumber, f.attempts, f.errors.map((e) => [e.code, e.attr])]
  )
}

t.test('GraphQL: supplyPointChecks on create, update and the supplier type', async (t) => {
  const setup = await importSetup(t)
  t.same(await createSupplier(setup, GB, 'GB'), { code: GB, status: 'Ongoing', supplyPointChecks: 'GB' })
  t.same(await createSupplier(setup, 'ACME_PLAIN'), {
    code: 'ACME_PLAIN',
    status: 'Ongoing',
    supplyPointChecks: 'NONE'
  })

  const listed = async (token?: string) => {
    const res = await gql(
      setup.app,
      `{ importSuppliers { ${SUPPLIER_FIELDS} } }`,
      {},
      token ?? (await operatorToken(setup.app))
    )
    return Object.fromEntries((res.data!.importSuppliers as any[]).map((s) => [s.code, s.supplyPointChecks]))
  }
  t.same(await listed(), { ACME_ENERGY: 'NONE', ACME_GB: 'GB', ACME_PLAIN: 'NONE' }, 'listed for the operator')
  t.same(await listed(setup.tenant.token), await listed(), 'and for the organisation')

  t.same(await setChecks(setup, 'ACME_PLAIN', 'GB'), { code: 'ACME_PLAIN', status: 'Ongoing', supplyPointChecks: 'GB' })
  const status = await asOperator(
    setup.app,
    `mutation { updateImportSupplier(input: {code: "ACME_PLAIN", status: Paused}) { ${SUPPLIER_FIELDS} } }`
  )
  t.same(status.updateImportSupplier.supplyPointChecks, 'GB', 'an update without the field leaves it')
  t.same((await setChecks(setup, 'ACME_PLAIN', null)).supplyPointChecks, 'NONE', 'an explicit null sets NONE')
  t.same((await setChecks(setup, 'ACME_PLAIN', 'NONE')).supplyPointChecks, 'NONE')

  const bad = await gql(
    setup.app,
    'mutation { updateImportSupplier(input: {code: "ACME_PLAIN", supplyPointChecks: FR}) { code } }',
    {},
    await operatorToken(setup.app)
  )
  t.ok(bad.errors?.length, 'a value outside the enum is refused')
  t.equal((await listed()).ACME_PLAIN, 'NONE', 'and changes nothing')

  const events = rowsOf<{ change: unknown }>(
    await setup.app.db.execute(sql`select e.change from import_supplier_events e
      join import_suppliers s on s.id = e.supplier_id where s.code = 'ACME_PLAIN' order by e.id`)
  )
  t.match(events[0]!.change, { created: { supplyPointChecks: 'NONE' } }, 'the setting is in the change history')
  t.match(events[1]!.change, { supplyPointChecks: 'GB' })
})

t.test('validate and stage on a GB supplier', async (t) => {
  const setup = await importSetup(t)
  await createSupplier(setup, GB, 'GB')
  const { client } = setup

  t.test('a bad MPAN: invalid_mpan at its identifier, nothing stored', async (t) => {
    const account = gbAccount('GB-1', GB, '1200012345678')
    for (const res of [await client.validate(account), await client.stage(account)]) {
      t.equal(res.statusCode, 400, res.body)
      t.equal(res.json().code, 'account_failed_validation')
      t.same(codes(res), [['invalid_mpan', POINT]])
      t.equal(
        res.json().errors[0].detail,
        '1200012345678 is not a valid MPAN core: 13 digits, the first two a distributor id of 10 or above, the last the check digit.'
      )
    }
    t.equal(await processCount(setup, GB), 0, 'nothing staged')
    // Distributor 09 with its right check digit, and 12 digits.
    for (const mpan of ['0912345678901', '120001234567']) {
      t.same(codes(await client.validate(gbAccount('GB-1', GB, mpan))), [['invalid_mpan', POINT]], mpan)
    }
  })

  t.test('a bad MPRN: invalid_mprn at its identifier, nothing stored', async (t) => {
    for (const mprn of ['12345', '12345678901', '12345A']) {
      const account = gbAccount('GB-2', GB, GOOD_MPAN, mprn)
      t.same(codes(await client.validate(account)), [['invalid_mprn', GAS_POINT]], `validate ${mprn}`)
      t.same(codes(await client.stage(account)), [['invalid_mprn', GAS_POINT]], `stage ${mprn}`)
    }
    t.equal(await processCount(setup, GB), 0, 'nothing staged')
  })

  t.test('good ones are validated, staged and created', async (t) => {
    const account = gbAccount('GB-3', GB, GOOD_MPAN, '1234567890')
    t.equal((await client.validate(account)).statusCode, 200)
    t.equal((await client.stage(account)).statusCode, 201)
    const created = await client.create('GB-3', { supplier: GB })
    t.equal(created.statusCode, 201, created.body)
    // An IDNO's distributor id (24 and above) is a distributor id too.
    t.equal((await client.validate(gbAccount('GB-4', GB, '2412345678904', '123456'))).statusCode, 200)
  })

  t.test('a NONE supplier takes them as before', async (t) => {
    const account = gbAccount('NONE-1', 'ACME_ENERGY', '1200012345678', '12345')
    t.equal((await client.validate(account)).statusCode, 200)
    t.equal((await client.stage(account)).statusCode, 201)
    t.equal((await client.create('NONE-1')).statusCode, 201)
  })

  t.test("validate's failure record is kept while the account fails GB, and cleared once it passes", async (t) => {
    const bad = gbAccount('GB-5', GB, '1200012345678')
    await client.validate(bad)
    await client.validate(bad)
    const records = async () => (await failures(setup, GB, 'validate')).filter((f) => f[0] === 'GB-5')
    t.same(await records(), [['GB-5', 2, [['invalid_mpan', POINT]]]], 'two attempts, one record')
    t.equal((await client.validate(gbAccount('GB-5', GB, GOOD_MPAN))).statusCode, 200)
    t.same(await records(), [], 'cleared by a success')
  })
})

t.test('create judges the staged data against the supplier as it is then', async (t) => {
  const setup = await importSetup(t)
  await createSupplier(setup, 'ACME_SWITCH')
  const { client } = setup
  t.equal((await client.stage(gbAccount('SW-1', 'ACME_SWITCH', '1200012345678'))).statusCode, 201, 'staged under NONE')
  await setChecks(setup, 'ACME_SWITCH', 'GB')

  for (const dryRun of [true, false]) {
    const res = await client.create('SW-1', { supplier: 'ACME_SWITCH', dryRun })
    t.equal(res.statusCode, 400, res.body)
    t.same(codes(res), [['invalid_mpan', POINT]], dryRun ? 'a dry run refuses' : 'the create refuses')
  }
  const status = (await client.status('SW-1', 'ACME_SWITCH')).json()
  t.equal(status.status, 'UNKNOWN', 'not created')
  t.match(status.latest_error, { errors: [{ code: 'invalid_mpan', attr: POINT }] })

  await setChecks(setup, 'ACME_SWITCH', 'NONE')
  t.equal((await client.create('SW-1', { supplier: 'ACME_SWITCH' })).statusCode, 201, 'created once back to NONE')
})

t.test('batches and import jobs: a failure per entry', async (t) => {
  const setup = await importSetup(t)
  await createSupplier(setup, GB, 'GB')
  const batch = (dryRun: boolean, accounts: unknown[]) =>
    setup.app.inject({
      method: 'POST',
      url: '/v1/data-import/batches/',
      headers: { authorization: `Bearer ${setup.tenant.token}` },
      payload: { import_supplier: GB, operations_team_name: TEAM, dry_run: dryRun, accounts }
    })
  const view = (r: any) => [
    r.external_account_number,
    r.outcome,
    r.step ?? null,
    r.errors?.map((e: any) => [e.code, e.attr]) ?? null
  ]
  const entries = (prefix: string) => [
    { account: gbAccount(`${prefix}-OK`, GB, GOOD_MPAN, '1234567890') },
    { account: gbAccount(`${prefix}-MPAN`, GB, '1200012345678') },
    { account: gbAccount(`${prefix}-MPRN`, GB, GOOD_MPAN, '12345') }
  ]

  for (const dryRun of [true, false]) {
    const res = await batch(dryRun, entries(dryRun ? 'DRY' : 'B'))
    t.equal(res.statusCode, 200, res.body)
    const prefix = dryRun ? 'DRY' : 'B'
    t.same(res.json().results.map(view), [
      [`${prefix}-OK`, dryRun ? 'would_create' : 'created', null, null],
      [`${prefix}-MPAN`, 'failed', 'stage', [['invalid_mpan', POINT]]],
      [`${prefix}-MPRN`, 'failed', 'stage', [['invalid_mprn', GAS_POINT]]]
    ])
  }
  t.same(
    (await failures(setup, GB, 'stage')).map((f) => f[0]),
    ['B-MPAN', 'B-MPRN', 'DRY-MPAN', 'DRY-MPRN'],
    'recorded as the single stage would'
  )

  // An import job runs its lines through the batch engine: the same per-line failure.
  const headers = { authorization: `Bearer ${setup.tenant.token}` }
  const submitted = await setup.app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/?import_supplier=${GB}&operations_team_name=${TEAM}`,
    headers: { ...headers, 'content-type': 'application/x-ndjson' },
    payload: entries('JOB')
      .map((e) => JSON.stringify(e) + '\n')
      .join('')
  })
  t.equal(submitted.statusCode, 202, submitted.body)
  const id = submitted.json().id as string
  const job = await jobSettled(setup.app, setup.tenant.token, id, { states: ['COMPLETED'] })
  t.match(job, { state: 'COMPLETED', lines: { created: 1, failed: 2 } })
  const results = (await setup.app.inject({ url: `/v1/data-import/import-jobs/${id}/results/`, headers })).body
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
  t.match(results, [
    { outcome: 'created' },
    { outcome: 'failed', errors: [{ code: 'invalid_mpan', attr: POINT }] },
    { outcome: 'failed', errors: [{ code: 'invalid_mprn', attr: GAS_POINT }] }
  ])
})

t.test("the generator's --gb-identifiers accounts pass a GB supplier's validate", async (t: Test) => {
  const setup = await importSetup(t)
  await createSupplier(setup, GB, 'GB')
  const client = importClient(setup.app, setup.tenant)
  const generate = async (...more: string[]) => {
    const run = await runClient(['generate', '40', '--seed', 'gb', '--supplier', GB, ...more], {})
    t.equal(run.code, 0, run.stderr)
    return run.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line).account)
  }
  const accounts = await generate('--gb-identifiers')
  const types = new Set(
    accounts.flatMap((a: any) => a.supply_addresses.flatMap((s: any) => s.supply_points.map((p: any) => p.supply_type)))
  )
  t.same([...types].sort(), ['ELECTRICITY', 'GAS'], 'both supply types are generated')
  for (const account of accounts) {
    const res = await client.validate(account)
    if (res.statusCode !== 200) t.fail(`${account.external_account_number} refused: ${res.body}`)
  }
  t.pass(`${accounts.length} accounts validated`)

  // Without the flag the same seed gives the same accounts but for their ELECTRICITY identifiers, which GB refuses.
  const plain = await generate()
  const refused = []
  for (const account of plain) {
    const res = await client.validate(account)
    if (res.statusCode === 400) refused.push(...codes(res).map(([code]) => code))
  }
  t.ok(refused.length > 0 && refused.every((code) => code === 'invalid_mpan'), 'without it: invalid_mpan')
  const withoutIdentifiers = (list: any[]) =>
    JSON.stringify(list, (key, value) => (key === 'identifier' ? undefined : value))
  t.equal(withoutIdentifiers(plain), withoutIdentifiers(accounts), 'nothing else differs')

  const help = await runClient(['--help'], {})
  t.match(help.stdout, /--gb-identifiers +ELECTRICITY supply point identifiers are valid MPAN cores/)
})

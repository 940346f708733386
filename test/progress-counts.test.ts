import t, { type Test } from 'tap'
import { sql } from 'drizzle-orm'
import { exampleAccount, importSetup, jobSettled, TEAM } from './helpers/accounts.js'
import { rowsOf, testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { PROGRESS_FOLD_ROWS } from '../src/accounts/repository.js'

/**
 * migrationProgress reads kept counts (import_progress_counts, appended by a trigger on
 * import_processes). After every kind of work that changes a process (stage, restage, create,
 * a failed create, dry runs, skips, batches, a dry-run batch rolled back, import jobs, and on the
 * PostgreSQL server batches and stages at the same time as progress reads folding the rows) the
 * kept counts must equal the counts taken directly from import_processes.
 */

type Setup = Awaited<ReturnType<typeof importSetup>>

const PROGRESS =
  'query($s: String!) { migrationProgress(importSupplierCode: $s) { staged pending imported skipped failed } }'
const SKIP = `mutation($s: String!, $e: String!) {
  skipImportProcess(input: {importSupplierCode: $s, externalAccountNumber: $e}) { state }
}`

/** The five numbers counted over every process of the supplier, as migrationProgress once did. */
async function direct(setup: Setup, supplier: string) {
  const [row] = rowsOf<Record<string, string | number>>(
    await setup.app.db.execute(sql`select
      count(*) filter (where p.first_staged_at is not null) as staged,
      count(*) filter (where p.state = 'STAGED') as pending,
      count(*) filter (where p.state = 'IMPORTED') as imported,
      count(*) filter (where p.state = 'SKIPPED') as skipped,
      count(*) filter (where p.state = 'STAGED' and p.latest_error is not null) as failed
      from import_processes p join import_suppliers s on s.id = p.supplier_id where s.code = ${supplier}`)
  )
  return Object.fromEntries(Object.entries(row!).map(([k, v]) => [k, Number(v)]))
}

async function keptRows(setup: Setup): Promise<number> {
  const [row] = rowsOf<{ n: string | number }>(
    await setup.app.db.execute(sql`select count(*) as n from import_progress_counts`)
  )
  return Number(row!.n)
}

async function same(t: Test, setup: Setup, what: string) {
  for (const supplier of ['ACME_ENERGY', 'OTHER_ENERGY']) {
    const kept = (await asOperator(setup.app, PROGRESS, { s: supplier })).migrationProgress
    t.same(kept, await direct(setup, supplier), `${what}: ${supplier}'s kept counts are the direct counts`)
  }
}

function batch(setup: Setup, token: string, supplier: string, externals: string[], dryRun = false) {
  return setup.app.inject({
    method: 'POST',
    url: '/v1/data-import/batches/',
    headers: { authorization: `Bearer ${token}` },
    payload: {
      import_supplier: supplier,
      operations_team_name: TEAM,
      dry_run: dryRun,
      accounts: externals.map((x) => ({ account: exampleAccount({ external_account_number: x }) }))
    }
  })
}

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i + 1}`)

t.test('the kept counts follow every kind of work on the processes', async (t) => {
  const setup = await importSetup(t)
  const { app, client, tenant } = setup
  const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
  await same(t, setup, 'before anything')

  for (const x of names('P', 6)) {
    t.equal((await client.stage(exampleAccount({ external_account_number: x }))).statusCode, 201)
  }
  await same(t, setup, 'staged')
  t.equal((await client.stage(exampleAccount({ external_account_number: 'P-1' }))).statusCode, 200, 'restaged')
  t.equal((await client.create('P-1')).statusCode, 201)
  t.equal((await client.create('P-2')).statusCode, 201)
  t.equal((await client.create('P-3', { team: 'Nobody' })).statusCode, 400, 'a failed create')
  t.equal((await client.create('P-4', { team: 'Nobody' })).statusCode, 400)
  t.equal((await client.create('P-5', { dryRun: true })).json().code, 'dry_run_rolled_back', 'a dry run')
  await same(t, setup, 'created, failed and dry run')
  t.equal((await client.stage(exampleAccount({ external_account_number: 'P-4' }))).statusCode, 200)
  t.equal((await client.create('P-4')).statusCode, 201, 'created after a failure')
  t.notOk((await asOperator(app, SKIP, { s: 'ACME_ENERGY', e: 'P-3' })).errors, 'a failed one skipped')
  t.notOk((await asOperator(app, SKIP, { s: 'ACME_ENERGY', e: 'NEVER-1' })).errors, 'one never staged skipped')
  await same(t, setup, 'skipped')

  t.equal((await batch(setup, tenant.token, 'ACME_ENERGY', [...names('B', 20), 'P-6'])).statusCode, 200)
  t.equal((await batch(setup, other.token, 'OTHER_ENERGY', names('O', 7))).statusCode, 200)
  const before = await direct(setup, 'ACME_ENERGY')
  const dry = await batch(setup, tenant.token, 'ACME_ENERGY', [...names('D', 20), 'P-5'], true)
  t.equal(dry.json().counts.would_create, 21, dry.body)
  t.same(
    await direct(setup, 'ACME_ENERGY'),
    { ...before, staged: before.staged! + 20, pending: before.pending! + 20 },
    'a dry-run batch stages its new accounts; its creates are rolled back'
  )
  await same(t, setup, 'batches')

  const jobLines = names('J', 12)
    .map((x) => JSON.stringify({ account: exampleAccount({ external_account_number: x }) }) + '\n')
    .join('')
  for (const dryRun of [true, false]) {
    const res = await app.inject({
      method: 'POST',
      url: `/v1/data-import/import-jobs/?import_supplier=ACME_ENERGY&operations_team_name=${TEAM}&dry_run=${dryRun}`,
      headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/x-ndjson' },
      payload: jobLines
    })
    t.equal(res.statusCode, 202, res.body)
    const id = res.json().id as string
    const { state } = await jobSettled(app, tenant.token, id, { states: ['COMPLETED'] })
    t.equal(state, 'COMPLETED', `the ${dryRun ? 'dry-run ' : ''}import job ran`)
  }
  await same(t, setup, 'import jobs')
  t.same(
    (await asOperator(app, PROGRESS, { s: 'ACME_ENERGY' })).migrationProgress,
    { staged: 58, pending: 21, imported: 36, skipped: 2, failed: 0 },
    'the figures of this story'
  )

  t.test('many rows are folded into one by a read, and counted the same', async (t) => {
    for (const x of names('F', PROGRESS_FOLD_ROWS + 5)) {
      t.equal((await client.stage(exampleAccount({ external_account_number: x }))).statusCode, 201)
    }
    t.ok((await keptRows(setup)) > PROGRESS_FOLD_ROWS, `${await keptRows(setup)} rows before the read`)
    await same(t, setup, 'before the fold')
    t.ok((await keptRows(setup)) <= 3, `${await keptRows(setup)} rows after the read folded them`)
    await same(t, setup, 'after the fold')
  })

  const onServer = testDatabaseUrl ? {} : { skip: 'concurrency needs the PostgreSQL server (set TEST_DATABASE_URL)' }
  t.test('concurrent batches and stages, with progress reads folding meanwhile', onServer, async (t) => {
    const run = { reading: true }
    let reads = 0
    const reader = (async () => {
      while (run.reading) {
        await asOperator(app, PROGRESS, { s: 'ACME_ENERGY' })
        reads++
      }
    })()
    const overlap = names('C-overlap', 30)
    const work: Array<Promise<{ statusCode: number }>> = [
      ...[0, 1, 2, 3].map((i) => batch(setup, tenant.token, 'ACME_ENERGY', names(`C${i}`, 30))),
      batch(setup, tenant.token, 'ACME_ENERGY', overlap),
      batch(setup, tenant.token, 'ACME_ENERGY', [...overlap].reverse()),
      batch(setup, tenant.token, 'ACME_ENERGY', names('CD', 30), true),
      batch(setup, other.token, 'OTHER_ENERGY', names('CO', 30)),
      ...names('CS', 150).map((x) => client.stage(exampleAccount({ external_account_number: x })))
    ]
    const answers = await Promise.all(work)
    run.reading = false
    await reader
    t.ok(
      answers.every((a) => a.statusCode === 200 || a.statusCode === 201),
      'every request answered 200 or 201'
    )
    t.ok(reads > 0, `${reads} progress reads ran meanwhile`)
    await same(t, setup, 'after the concurrent work')
  })
})

import t, { type Test } from 'tap'
import { sql } from 'drizzle-orm'
import { exampleAccount, importedSetup } from './helpers/accounts.js'
import { rowsOf } from './helpers/database.js'
import { checkAccountData, DEFAULT_SUPPLIER_SETTINGS } from '../src/accounts/rules.js'
import { planAccount } from '../src/accounts/plan.js'
import { utcToday } from '../src/rules/context.js'
import { createBatchesRepository, type PlannedAccount } from '../src/modules/batches/repository.js'

/**
 * Service account and ledger numbers are drawn at random, so at a million accounts a batch's
 * chunk of 100 now and then draws one that is taken. Only that account is left to the single
 * path (which draws again); the rest of the chunk is created in its one transaction, not rolled
 * back and taken one by one.
 */

/** The example account created, its supplier, team and numbers, and the tenant as an actor. */
async function withAnAccount(t: Test) {
  const setup = await importedSetup(t)
  const { app } = setup
  const [taken] = rowsOf<{ supplier_id: string; team_id: string; san: string; ledger: string }>(
    await app.db.execute(sql`select a.supplier_id, a.operations_team_id as team_id, a.service_account_number as san,
      (select l.ledger_number from ledgers l where l.account_id = a.id limit 1) as ledger from accounts a`)
  )
  const [key] = rowsOf<{ organisation_id: string }>(
    await app.db.execute(sql`select organisation_id from api_keys where id = ${setup.tenant.apiKeyId}::uuid`)
  )
  const actor = { organisationId: key!.organisation_id, apiKeyId: setup.tenant.apiKeyId, name: 'organisation:Acme' }
  return { setup, app, taken: taken!, actor }
}

t.test('a chunk account whose drawn number is taken is left to the single path; the others are created', async (t) => {
  const { setup, app, taken, actor } = await withAnAccount(t)
  const planned = (external: string): PlannedAccount => {
    const { data } = checkAccountData(
      exampleAccount({ external_account_number: external }),
      utcToday(),
      DEFAULT_SUPPLIER_SETTINGS
    )
    const rows = planAccount(data!, {
      importProcessId: 0,
      supplierId: taken.supplier_id,
      operationsTeamId: taken.team_id,
      sendMigrationEmails: false
    })
    return { external, data: data!, rows, sectionRows: [], postImportEvents: [] }
  }
  const sameAccountNumber = planned('EXT-N1')
  sameAccountNumber.rows.account.serviceAccountNumber = taken.san
  const sameLedgerNumber = planned('EXT-N2')
  sameLedgerNumber.rows.ledgers[0]!.ledgerNumber = taken.ledger
  const fine = planned('EXT-N3')

  const outcome = await createBatchesRepository(app.db).stageAndCreate(
    taken.supplier_id,
    [sameAccountNumber, sameLedgerNumber, fine],
    actor
  )
  t.strictSame([...outcome.created.keys()], ['EXT-N3'], 'the account with numbers of its own is created')
  t.strictSame(
    outcome.elsewhere.sort(),
    ['EXT-N1', 'EXT-N2'],
    'the two with a taken number are left to the single path'
  )
  const processes = rowsOf<{ external: string; state: string }>(
    await app.db.execute(sql`select external_account_number as external, state from import_processes
      where external_account_number like 'EXT-N%' order by 1`)
  )
  t.strictSame([...processes], [{ external: 'EXT-N3', state: 'IMPORTED' }], 'nothing is stored for the two left out')

  // Through the batch endpoint, each is then created (the single path draws numbers of its own).
  const res = await app.inject({
    method: 'POST',
    url: '/v1/data-import/batches/',
    headers: { authorization: `Bearer ${setup.tenant.token}` },
    payload: {
      import_supplier: 'ACME_ENERGY',
      operations_team_name: 'Migrations',
      accounts: ['EXT-N1', 'EXT-N2'].map((external) => ({
        account: exampleAccount({ external_account_number: external })
      }))
    }
  })
  t.equal(res.statusCode, 200, 'the batch is answered')
  t.strictSame(
    (res.json().results as Array<{ outcome: string }>).map((r) => r.outcome),
    ['created', 'created']
  )
})

t.test('a dry-run chunk draws again a number that is taken, instead of rolling the chunk back', async (t) => {
  const { app, taken, actor } = await withAnAccount(t)
  const entries = ['EXT-D1', 'EXT-D2'].map((external) => ({
    external,
    data: checkAccountData(exampleAccount({ external_account_number: external }), utcToday(), DEFAULT_SUPPLIER_SETTINGS)
      .data!
  }))
  // The create's verdict draws the numbers of an account that exists.
  const judge = (staged: unknown) => {
    const rows = planAccount(staged as (typeof entries)[number]['data'], {
      importProcessId: 0,
      supplierId: taken.supplier_id,
      operationsTeamId: taken.team_id,
      sendMigrationEmails: false
    })
    rows.account.serviceAccountNumber = taken.san
    rows.ledgers[0]!.ledgerNumber = taken.ledger
    return { rows }
  }
  const outcome = await createBatchesRepository(app.db).stageAndDryRun(
    taken.supplier_id,
    entries,
    actor,
    'Migrations',
    judge
  )
  t.strictSame(outcome.wouldCreate, ['EXT-D1', 'EXT-D2'], 'both would be created')
  t.strictSame(outcome.elsewhere, [], 'none is left to the single path')
  const processes = rowsOf<{ external: string; state: string }>(
    await app.db.execute(sql`select external_account_number as external, state from import_processes
      where external_account_number like 'EXT-D%' order by 1`)
  )
  t.strictSame(
    [...processes],
    [
      { external: 'EXT-D1', state: 'STAGED' },
      { external: 'EXT-D2', state: 'STAGED' }
    ],
    'both are staged, and their create rolled back'
  )
  const [accounts] = rowsOf<{ n: number | string }>(await app.db.execute(sql`select count(*) as n from accounts`))
  t.equal(Number(accounts!.n), 1, 'no account of the dry run is kept')
})

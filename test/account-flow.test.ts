import t from 'tap'
import { eq, sql } from 'drizzle-orm'
import {
  accounts,
  customers,
  emailOutbox,
  importProcesses,
  ledgers,
  ledgerTransactions,
  statements,
  transactionLineItems,
  transactionTaxItems
} from '../drizzle/schema/index.js'
import { codes, exampleAccount, importClient, importSetup, TEAM } from './helpers/accounts.js'
import { tableCounts } from './helpers/database.js'
import { asOperator, createTenant } from './helpers/graphql.js'

const EVENTS =
  'query($s: String!, $e: String!) { importProcessEvents(importSupplierCode: $s, externalAccountNumber: $e) { type at actor detail } }'
const PROGRESS =
  'query($s: String!) { migrationProgress(importSupplierCode: $s) { staged pending imported skipped failed } }'
const setSupplier = (input: Record<string, unknown>) =>
  [
    'mutation($i: UpdateImportSupplierInput!) { updateImportSupplier(input: $i) { code } }',
    { i: { code: 'ACME_ENERGY', ...input } }
  ] as const

t.test('the example account: validate, stage, dry run, create, and read back', async (t) => {
  const { app, database, client } = await importSetup(t)
  const events = async (external: string) =>
    (await asOperator(app, EVENTS, { s: 'ACME_ENERGY', e: external })).importProcessEvents as Array<{
      type: string
      actor: string
      detail: any
    }>

  t.test('validate returns the normalised data', async (t) => {
    const res = await client.validate(exampleAccount())
    t.equal(res.statusCode, 200, res.body)
    const body = res.json()
    t.equal(body.transfer_balance, '6.26')
    t.same(
      body.billing_address,
      { street_address: '12 Harbour Row\nFlat 3', locality: 'Bristol', postal_code: 'BS1 5TY', country: 'GB' },
      'the blank administrative_area is omitted'
    )
    t.equal(body.customers[0].landline, '+441174960123', 'E.164')
    const ledger = body.ledgers[0]
    t.equal(ledger.last_statement_balance, '-40.50')
    t.equal(ledger.ledger_balance, '6.26')
    t.equal(ledger.historical_statement_transactions[0].amount, '90.50')
    t.same(ledger.current_statement_transactions[0].line_items[0].units, ['4.00', '8.00'])
    t.equal(ledger.current_statement_transactions[0].tax_items[0].rate, '0.21')
    t.same(body.metadata, [{ key: 'legacy_crm_id', value: { crm: 'X-991', segment: 4 } }], 'metadata values as sent')
    t.same(await tableCounts(database).then((c) => c.import_processes), 0, 'validate stores nothing')
  })

  t.test('stage: 201 first, 200 after, stores the normalised data, records events', async (t) => {
    const first = await client.stage(exampleAccount())
    t.equal(first.statusCode, 201, first.body)
    t.same(first.json(), { import_supplier: 'ACME_ENERGY', external_account_number: 'EXT-000123' })
    const again = await client.stage(exampleAccount({ sales_subchannel: 'WAVE_2' }))
    t.equal(again.statusCode, 200)
    const [row] = await database.db
      .select({ data: importProcesses.stagedData, state: importProcesses.state })
      .from(importProcesses)
    t.equal(row!.state, 'STAGED')
    t.equal((row!.data as any).sales_subchannel, 'WAVE_2', 'restaging replaces the data')
    t.equal((row!.data as any).transfer_balance, '6.26', 'stored normalised')
    t.same(
      (await events('EXT-000123')).map((e) => [e.type, e.actor]),
      [
        ['STAGED', 'organisation:Acme'],
        ['RESTAGED', 'organisation:Acme']
      ]
    )
    const status = await client.status('EXT-000123')
    t.same(status.json(), { status: 'UNKNOWN', service_account_number: '', latest_error: null })
    const summary = await client.summary('EXT-000123')
    t.equal(summary.statusCode, 404)
    t.same(codes(summary), [['account_not_found', null]])
    t.same((await client.list('pending')).json(), [
      { external_account_number: 'EXT-000123', service_account_number: null, account_created_at: null }
    ])
  })

  t.test('a dry run leaves every table as it was, except one DRY_RUN event', async (t) => {
    await asOperator(app, ...setSupplier({ sendMigrationEmails: true }))
    const before = await tableCounts(database)
    const res = await client.create('EXT-000123', { dryRun: true })
    t.equal(res.statusCode, 400)
    t.same(res.json(), {
      detail: 'Account would successfully import. Rolled back due to dry run.',
      code: 'dry_run_rolled_back',
      errors: []
    })
    const after = await tableCounts(database)
    t.same(after, { ...before, import_events: before.import_events! + 1 })
    const last = (await events('EXT-000123')).at(-1)!
    t.same([last.type, last.detail], ['DRY_RUN', { would_succeed: true, errors: [] }])
    t.equal((await client.status('EXT-000123')).json().status, 'UNKNOWN')
  })

  t.test('a failing dry run reports its errors without recording a latest error', async (t) => {
    const res = await client.create('EXT-000123', { dryRun: true, team: 'Nobody' })
    t.equal(res.statusCode, 400)
    t.same(codes(res), [['operations_team_name_does_not_exist', 'operations_team_name']])
    const last = (await events('EXT-000123')).at(-1)!
    t.same(
      [last.type, last.detail.would_succeed, last.detail.errors.map((e: any) => e.code)],
      ['DRY_RUN', false, ['operations_team_name_does_not_exist']]
    )
    t.equal((await client.status('EXT-000123')).json().latest_error, null)
    t.equal(
      (await asOperator(app, PROGRESS, { s: 'ACME_ENERGY' })).migrationProgress.failed,
      0,
      'a dry run does not count as failed'
    )
  })

  t.test('create: 201 with the account and ledger numbers, everything stored', async (t) => {
    const res = await client.create('EXT-000123')
    t.equal(res.statusCode, 201, res.body)
    const body = res.json()
    t.match(body.service_account_number, /^A-[0-9A-F]{8}$/)
    t.equal(body.ledgers.length, 1)
    t.match(body.ledgers[0], { ledger_code: 'ENERGY', ledger_number: /^L-[0-9A-F]{8}$/ })

    const [account] = await database.db.select().from(accounts)
    t.equal(account!.serviceAccountNumber, body.service_account_number)
    t.equal(account!.transferBalance.replace(/0+$/, ''), '6.26')
    const [ledger] = await database.db.select().from(ledgers)
    t.equal(ledger!.ledgerNumber, body.ledgers[0].ledger_number)
    t.equal(Number(ledger!.balance), 6.26)
    const stmts = await database.db
      .select()
      .from(statements)
      .where(eq(statements.ledgerId, ledger!.id))
      .orderBy(statements.periodFrom)
    t.same(
      stmts.map((s) => [
        s.status,
        s.imported,
        s.periodFrom,
        s.periodTo,
        s.openingBalance.replace(/\.?0+$/, ''),
        s.closingBalance?.replace(/\.?0+$/, '') ?? null
      ]),
      [
        // The closed statement opens at −40.50 − (−90.50 + 50.00) = 0 and closes at −40.50.
        ['CLOSED', true, '2026-09-15', '2026-09-30', '0', '-40.5'],
        ['OPEN', false, '2026-10-01', null, '-40.5', null]
      ]
    )
    const txs = await database.db
      .select({ id: ledgerTransactions.transactionId, statement: ledgerTransactions.statementId })
      .from(ledgerTransactions)
      .orderBy(ledgerTransactions.transactionId)
    t.same(
      txs.map((x) => [x.id, x.statement === stmts[0]!.id ? 'closed' : 'open']),
      [
        ['C-1', 'open'],
        ['C-2', 'open'],
        ['H-1', 'closed'],
        ['H-2', 'closed']
      ]
    )
    t.equal((await database.db.select().from(transactionLineItems)).length, 1)
    t.equal((await database.db.select().from(transactionTaxItems)).length, 1)
    const [customer] = await database.db.select().from(customers)
    t.same([customer!.landline, customer!.portfolioRoles], ['+441174960123', ['ADMIN']])
    const outbox = await database.db.select().from(emailOutbox)
    t.same(
      outbox.map((o) => [o.recipient, o.status]),
      [['ada.lovelace@mailbox.org', 'PENDING']],
      'one migration e-mail queued'
    )

    t.same(
      (await events('EXT-000123')).slice(-2).map((e) => e.type),
      ['CREATE_ATTEMPTED', 'CREATED']
    )
    t.same((await asOperator(app, PROGRESS, { s: 'ACME_ENERGY' })).migrationProgress, {
      staged: 1,
      pending: 0,
      imported: 1,
      skipped: 0,
      failed: 0
    })
  })

  t.test('status, lists and summary read the account back with its balances', async (t) => {
    const [account] = await database.db.select().from(accounts)
    const status = await client.status('EXT-000123')
    t.same(status.json(), {
      status: 'COMPLETED',
      service_account_number: account!.serviceAccountNumber,
      latest_error: null
    })
    const imported = (await client.list('imported')).json()
    t.equal(imported.length, 1)
    t.equal(imported[0].service_account_number, account!.serviceAccountNumber)
    t.match(imported[0].account_created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    t.same((await client.list('pending')).json(), [])
    t.same((await client.list('all')).json(), imported)

    const summary = await client.summary('EXT-000123')
    t.equal(summary.statusCode, 200, summary.body)
    const [ledger] = await database.db.select().from(ledgers)
    t.same(summary.json(), {
      service_account_number: account!.serviceAccountNumber,
      external_account_number: 'EXT-000123',
      import_supplier: 'ACME_ENERGY',
      account_created_at: imported[0].account_created_at,
      operations_team_name: TEAM,
      ledgers: [
        {
          ledger_code: 'ENERGY',
          ledger_number: ledger!.ledgerNumber,
          balance: '6.26',
          open_statement_from_date: '2026-10-01'
        }
      ],
      counts: {
        customers: 1,
        supply_points: 1,
        agreements: 2,
        historical_agreements: 0,
        notes: 0,
        transactions: 4,
        historical_statements: 0,
        billing_documents: 0,
        payment_instructions: 0
      },
      latest_event: { type: 'CREATED', at: summary.json().latest_event.at },
      latest_error: null
    })
  })

  t.test('validate, stage and create refuse the imported account with both numbers', async (t) => {
    const [account] = await database.db.select().from(accounts)
    const broken = exampleAccount({ transfer_balance: 'oops', surprise: 1 })
    for (const res of [await client.validate(broken), await client.stage(broken), await client.create('EXT-000123')]) {
      t.equal(res.statusCode, 400)
      t.same(res.json(), {
        detail: 'Account has already been imported.',
        code: 'account_already_imported',
        errors: [
          { detail: res.json().errors[0].detail, code: 'account_already_imported', attr: 'external_account_number' }
        ],
        external_account_number: 'EXT-000123',
        service_account_number: account!.serviceAccountNumber
      })
    }
    t.equal((await database.db.select().from(accounts)).length, 1)
  })

  t.test('another organisation sees none of it', async (t) => {
    const other = importClient(app, await createTenant(app, 'Globex', 'GLOBEX'))
    for (const res of [
      await other.status('EXT-000123', 'ACME_ENERGY'),
      await other.summary('EXT-000123', 'ACME_ENERGY')
    ]) {
      t.equal(res.statusCode, 404)
      t.same(codes(res), [['import_process_does_not_exist', null]])
    }
    const create = await other.create('EXT-000123', { supplier: 'ACME_ENERGY' })
    t.same(codes(create), [['does_not_exist', 'import_supplier_code']])
  })
})

t.test('create: check order and refusals', async (t) => {
  const { app, database, client } = await importSetup(t)
  const stage = async (external: string, changes: Record<string, unknown> = {}) => {
    const res = await client.stage(exampleAccount({ external_account_number: external, ...changes }))
    t.equal(res.statusCode, 201, res.body)
  }

  t.test('schema problems and an unknown supplier in one body', async (t) => {
    const bad = await client.create('', { supplier: 'NO_SUCH', team: '' })
    t.equal(bad.statusCode, 400)
    t.equal(bad.json().code, 'account_failed_validation')
    t.same(codes(bad), [
      ['blank', 'external_account_number'],
      ['does_not_exist', 'import_supplier_code'],
      ['blank', 'operations_team_name']
    ])
    const typed = await client.create('X', { dryRun: 'yes' as unknown as boolean })
    t.same(codes(typed), [['invalid', 'dry_run']])
  })

  t.test('nothing staged', async (t) => {
    const res = await client.create('NEVER-STAGED')
    t.equal(res.statusCode, 400)
    t.same(codes(res), [['import_process_does_not_exist', 'external_account_number']])
  })

  t.test('skipped, before team and supplier problems', async (t) => {
    await stage('SKIP-1')
    await asOperator(
      app,
      'mutation { skipImportProcess(input: {importSupplierCode: "ACME_ENERGY", externalAccountNumber: "SKIP-1"}) { state } }'
    )
    const res = await client.create('SKIP-1', { team: 'Nobody' })
    t.same(codes(res), [['account_import_skipped', null]])
    const restage = await client.stage(exampleAccount({ external_account_number: 'SKIP-1' }))
    t.same(codes(restage), [['account_import_skipped', null]])
    t.equal((await client.status('SKIP-1')).json().status, 'UNKNOWN')
  })

  t.test('team, supplier status and re-validation problems in one body, recorded as the latest error', async (t) => {
    await stage('FAIL-1')
    // Staged data that no longer validates (as if the rules had changed since staging).
    await database.db
      .update(importProcesses)
      .set({ stagedData: sql`jsonb_set(${importProcesses.stagedData}, '{transfer_balance}', '"9.99"')` })
      .where(eq(importProcesses.externalAccountNumber, 'FAIL-1'))
    await asOperator(app, ...setSupplier({ status: 'Paused' }))
    const res = await client.create('FAIL-1', { team: 'Nobody' })
    await asOperator(app, ...setSupplier({ status: 'Ongoing' }))
    t.equal(res.statusCode, 400)
    t.same(codes(res), [
      ['import_supplier_migration_not_ongoing', 'import_supplier_code'],
      ['operations_team_name_does_not_exist', 'operations_team_name'],
      ['ledger_balances_not_equal_to_transfer_balance', 'transfer_balance']
    ])
    const status = (await client.status('FAIL-1')).json()
    t.equal(status.status, 'UNKNOWN')
    t.match(status.latest_error, { at: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/ })
    t.same(
      status.latest_error.errors.map((e: any) => e.code),
      res.json().errors.map((e: any) => e.code)
    )
    const evts = (await asOperator(app, EVENTS, { s: 'ACME_ENERGY', e: 'FAIL-1' })).importProcessEvents
    t.same(
      evts.map((e: any) => e.type),
      ['STAGED', 'CREATE_ATTEMPTED', 'CREATE_FAILED']
    )
    t.equal((await asOperator(app, PROGRESS, { s: 'ACME_ENERGY' })).migrationProgress.failed, 1)
    t.equal((await database.db.select().from(accounts)).length, 0)

    // Restaging fixes the data; a successful create clears the latest error.
    await client.stage(exampleAccount({ external_account_number: 'FAIL-1' }))
    const created = await client.create('FAIL-1')
    t.equal(created.statusCode, 201, created.body)
    t.equal((await client.status('FAIL-1')).json().latest_error, null)
  })

  t.test('a failure in the middle of creation leaves no rows, then a retry succeeds', async (t) => {
    await stage('MID-1', {
      supply_addresses: exampleAccount().supply_addresses.map((a: any) => ({
        ...a,
        supply_points: a.supply_points.map((p: any) => ({ ...p, identifier: 'MID-POINT' }))
      }))
    })
    await database.db.execute(
      sql.raw(`create function fail_mid_create() returns trigger language plpgsql as $$
      begin if new.identifier = 'MID-POINT' then raise exception 'forced failure'; end if; return new; end $$`)
    )
    await database.db.execute(
      sql.raw(
        'create trigger fail_mid_create before insert on supply_points for each row execute function fail_mid_create()'
      )
    )
    const before = await tableCounts(database)
    const res = await client.create('MID-1')
    t.equal(res.statusCode, 500)
    t.equal(res.json().code, 'server_error')
    t.notMatch(res.body, /forced failure/, 'no internals leak')
    const after = await tableCounts(database)
    t.same(
      { ...after, import_events: 0, import_processes: 0 },
      { ...before, import_events: 0, import_processes: 0 },
      'no account rows left'
    )
    const evts = (await asOperator(app, EVENTS, { s: 'ACME_ENERGY', e: 'MID-1' })).importProcessEvents
    t.same(
      evts.slice(-1).map((e: any) => [e.type, e.detail.errors[0].code]),
      [['CREATE_FAILED', 'server_error']]
    )
    await database.db.execute(sql.raw('drop trigger fail_mid_create on supply_points'))
    const retry = await client.create('MID-1')
    t.equal(retry.statusCode, 201, retry.body)
  })

  t.test('no outbox rows when the supplier does not send migration e-mails', async (t) => {
    await stage('MAIL-OFF')
    t.equal((await client.create('MAIL-OFF')).statusCode, 201)
    const [account] = await database.db.select().from(accounts).where(eq(accounts.externalAccountNumber, 'MAIL-OFF'))
    t.same(await database.db.select().from(emailOutbox).where(eq(emailOutbox.accountId, account!.id)), [])
  })
})

t.test('status and lists: 404s and paging', async (t) => {
  const { client } = await importSetup(t)
  const unknown = await client.status('NOPE')
  t.equal(unknown.statusCode, 404)
  t.same(codes(unknown), [['import_process_does_not_exist', null]])
  t.equal((await client.status('NOPE', 'NO_SUCH')).statusCode, 404)
  t.equal((await client.summary('NOPE')).statusCode, 404)

  for (const ext of ['b/2', 'a 1', 'C-3', 'a-2', 'é-5']) {
    t.equal((await client.stage(exampleAccount({ external_account_number: ext }))).statusCode, 201)
  }
  t.equal(
    (await client.status('b/2')).json().status,
    'UNKNOWN',
    'a slash in the external account number, percent-encoded'
  )

  const all = (await client.list('all')).json().map((r: any) => r.external_account_number)
  t.same(all, ['C-3', 'a 1', 'a-2', 'b/2', 'é-5'], 'code point order')
  const first = await client.list('all', '?limit=2')
  t.same(
    first.json().map((r: any) => r.external_account_number),
    ['C-3', 'a 1']
  )
  t.equal(
    first.headers.link,
    '</v1/data-import/all-account-import-processes/ACME_ENERGY/?limit=2&after=a%201>; rel="next"'
  )
  const next = await client.list('all', '?limit=2&after=a%201')
  t.same(
    next.json().map((r: any) => r.external_account_number),
    ['a-2', 'b/2']
  )
  const last = await client.list('all', '?limit=2&after=b%2F2')
  t.same(
    last.json().map((r: any) => r.external_account_number),
    ['é-5']
  )
  t.equal(last.headers.link, undefined, 'no next page')
  const exact = await client.list('all', '?limit=5')
  t.equal(exact.headers.link, undefined, 'exactly the rows asked: no next page')

  for (const bad of ['?limit=0', '?limit=10001', '?limit=x', '?after=', '?page=2']) {
    const res = await client.list('all', bad)
    t.equal(res.statusCode, 400, bad)
    t.equal(res.json().code, 'invalid_request', bad)
  }
  t.same(codes(await client.list('all', '?limit=0')), [['min_value', 'limit']])
})

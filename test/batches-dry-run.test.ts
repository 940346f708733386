import t from 'tap'
import { sql } from 'drizzle-orm'
import { exampleAccount, importSetup, TEAM } from './helpers/accounts.js'
import { rowsOf, tableCounts } from './helpers/database.js'
import { asOperator } from './helpers/graphql.js'

/**
 * A dry-run batch, pinned: the answer, the events, the failure records, the timeline and the
 * processes it leaves, for a batch of every kind of entry. The expected values were taken from
 * the dry run as it was when each entry went through the single stage and dry-run create one at
 * a time; the set-based dry run must leave exactly the same.
 */

type Setup = Awaited<ReturnType<typeof importSetup>>

const account = (external: string, changes: Record<string, unknown> = {}) =>
  exampleAccount({ external_account_number: external, ...changes })
const dryRun = (setup: Setup, accounts: unknown[]) =>
  setup.app.inject({
    method: 'POST',
    url: '/v1/data-import/batches/',
    headers: { authorization: `Bearer ${setup.tenant.token}` },
    payload: { import_supplier: 'ACME_ENERGY', operations_team_name: TEAM, dry_run: true, accounts }
  })

/** Enough good entries that the ready ones fill more than one chunk of the set-based path. */
const FILLERS = Array.from({ length: 110 }, (_, i) => `FILL-${String(i).padStart(3, '0')}`)

/** The batch: one entry of each kind, the fillers in between. */
function entries(): unknown[] {
  return [
    { account: account('GOOD-1') },
    { account: account('GOOD-2'), notes: [{ body: 'not in a dry run' }] },
    { account: account('RESTAGE') },
    { account: account('SCHEMA', { account_type: 'HOUSE' }) },
    ...FILLERS.slice(0, 60).map((x) => ({ account: account(x) })),
    { account: account('RULE', { transfer_balance: '1.00' }) },
    { account: account('SPOIL-NEW') },
    { account: account('SPOIL-OLD') },
    { account: account('IMPORTED'), notes: [{ body: 'not in a dry run' }] },
    { account: account('SKIPPED') },
    { account: account('GOOD-1') },
    { account: account('IMPORTED') },
    ...FILLERS.slice(60).map((x) => ({ account: account(x) })),
    { account: account('BOOM') },
    'not an entry',
    { account: account('OTHER', { import_supplier: 'OTHER_ENERGY' }) }
  ]
}

const NAMED = [
  'BOOM',
  'GOOD-1',
  'GOOD-2',
  'IMPORTED',
  'OTHER',
  'RESTAGE',
  'RULE',
  'SCHEMA',
  'SKIPPED',
  'SPOIL-NEW',
  'SPOIL-OLD'
]

/** The supplier's timeline of the last few minutes, summed (read through the API, which writes the counts kept in memory first). */
async function timeline(setup: Setup) {
  const res = await setup.app.inject({
    url: '/v1/data-import/migration-timeline/ACME_ENERGY/?minutes=10',
    headers: { authorization: `Bearer ${setup.tenant.token}` }
  })
  return res.json().minutes.reduce(
    (sum: Record<string, number>, m: Record<string, number>) => ({
      staged: sum.staged! + m.staged!,
      created: sum.created! + m.created!,
      failed: sum.failed! + m.failed!
    }),
    { staged: 0, created: 0, failed: 0 }
  )
}

/** The last event's id. */
async function lastEvent(setup: Setup): Promise<number> {
  const [row] = rowsOf<{ id: number | string | null }>(
    await setup.database.db.execute(sql`select max(id) as id from import_events`)
  )
  return Number(row!.id ?? 0)
}

/** What a dry run leaves behind, without what changes from run to run (ids, times, random numbers). */
async function leftBehind(setup: Setup, importedNumber: string, sinceEvent: number) {
  const db = setup.database.db
  const processes = rowsOf<{ external: string; state: string; san: string | null; staged: boolean; latest: unknown }>(
    await db.execute(sql`
    select external_account_number as external, state::text, service_account_number as san, staged_data is not null as staged,
      latest_error -> 'errors' as latest
    from import_processes order by external_account_number`)
  )
  const events = rowsOf<{ external: string; type: string; detail: unknown }>(
    await db.execute(sql`
    select p.external_account_number as external, e.type::text, e.detail from import_events e join import_processes p on p.id = e.import_process_id
    where e.id > ${sinceEvent} order by p.external_account_number, e.id`)
  )
  const failures = rowsOf<{
    external: string
    step: string
    attempts: number
    status: number
    code: string
    errors: unknown
  }>(
    await db.execute(sql`
    select external_account_number as external, step::text, attempts, http_status as status, code, errors from import_failures
    order by external_account_number, step`)
  )
  const named = (x: string) => NAMED.includes(x)
  const san = (s: string | null) => (s === importedNumber ? 'the imported number' : s)
  return {
    processes: processes.filter((p) => named(p.external)).map((p) => ({ ...p, san: san(p.san) })),
    fillers: processes
      .filter((p) => p.external.startsWith('FILL-'))
      .map((p) => `${p.state} ${p.staged}`)
      .filter((v, i, all) => all.indexOf(v) === i),
    events: Object.fromEntries(
      NAMED.map((x) => [x, events.filter((e) => e.external === x).map((e) => [e.type, e.detail])])
    ),
    fillerEvents: [
      ...new Set(
        FILLERS.map((x) => JSON.stringify(events.filter((e) => e.external === x).map((e) => [e.type, e.detail])))
      )
    ].map((s) => JSON.parse(s)),
    failures,
    timeline: await timeline(setup)
  }
}

/** The answers of the named entries (view below), as the one-by-one dry run gave them. */
const EXPECTED_RESULTS = [
  ['GOOD-1', 'would_create', null, null, null, null, null],
  ['GOOD-2', 'would_create', null, null, null, null, null],
  ['RESTAGE', 'would_create', null, null, null, null, null],
  [
    'SCHEMA',
    'failed',
    null,
    'stage',
    400,
    'account_failed_validation',
    [
      {
        detail:
          'Not a valid choice: one of DOMESTIC, BUSINESS, DOMESTIC_OCCUPIER, BUSINESS_OCCUPIER, DOMESTIC_VACANT, BUSINESS_VACANT.',
        code: 'invalid_choice',
        attr: 'account_type'
      }
    ]
  ],
  [
    'RULE',
    'failed',
    null,
    'stage',
    400,
    'account_failed_validation',
    [
      {
        detail: 'The transfer balance must equal the sum of the ledger balances (6.26).',
        code: 'ledger_balances_not_equal_to_transfer_balance',
        attr: 'transfer_balance'
      }
    ]
  ],
  [
    'SPOIL-NEW',
    'failed',
    null,
    'create',
    400,
    'account_failed_validation',
    [
      {
        detail: 'The transfer balance must equal the sum of the ledger balances (6.26).',
        code: 'ledger_balances_not_equal_to_transfer_balance',
        attr: 'transfer_balance'
      }
    ]
  ],
  [
    'SPOIL-OLD',
    'failed',
    null,
    'create',
    400,
    'account_failed_validation',
    [
      {
        detail: 'The transfer balance must equal the sum of the ledger balances (6.26).',
        code: 'ledger_balances_not_equal_to_transfer_balance',
        attr: 'transfer_balance'
      }
    ]
  ],
  ['IMPORTED', 'already_imported', 'the imported number', null, null, null, null],
  [
    'SKIPPED',
    'failed',
    null,
    'stage',
    400,
    'account_failed_validation',
    [
      {
        detail: 'The import of this account has been marked to be skipped.',
        code: 'account_import_skipped',
        attr: null
      }
    ]
  ],
  [
    'GOOD-1',
    'failed',
    null,
    'stage',
    400,
    'account_failed_validation',
    [
      {
        detail: 'Account GOOD-1 appears earlier in the batch; each account is sent once.',
        code: 'duplicate_external_account_number',
        attr: 'external_account_number'
      }
    ]
  ],
  [
    'IMPORTED',
    'failed',
    null,
    'stage',
    400,
    'account_failed_validation',
    [
      {
        detail: 'Account IMPORTED appears earlier in the batch; each account is sent once.',
        code: 'duplicate_external_account_number',
        attr: 'external_account_number'
      }
    ]
  ],
  ['BOOM', 'failed', null, 'create', 500, 'server_error', []],
  [
    null,
    'failed',
    null,
    'stage',
    400,
    'invalid_request',
    [{ detail: 'An entry must be an object holding an account.', code: 'invalid', attr: null }]
  ],
  [
    'OTHER',
    'failed',
    null,
    'stage',
    400,
    'account_failed_validation',
    [
      {
        detail: 'The account is for OTHER_ENERGY, the batch for ACME_ENERGY.',
        code: 'import_supplier_mismatch',
        attr: 'import_supplier'
      }
    ]
  ]
]

const EXPECTED_LEFT = {
  processes: [
    { external: 'BOOM', state: 'STAGED', san: null, staged: true, latest: null },
    { external: 'GOOD-1', state: 'STAGED', san: null, staged: true, latest: null },
    { external: 'GOOD-2', state: 'STAGED', san: null, staged: true, latest: null },
    { external: 'IMPORTED', state: 'IMPORTED', san: 'the imported number', staged: true, latest: null },
    {
      external: 'RESTAGE',
      state: 'STAGED',
      san: null,
      staged: true,
      latest: [
        {
          attr: 'operations_team_name',
          code: 'operations_team_name_does_not_exist',
          detail: 'Operations team Nobody does not exist.'
        }
      ]
    },
    { external: 'SKIPPED', state: 'SKIPPED', san: null, staged: true, latest: null },
    { external: 'SPOIL-NEW', state: 'STAGED', san: null, staged: true, latest: null },
    { external: 'SPOIL-OLD', state: 'STAGED', san: null, staged: true, latest: null }
  ],
  fillers: ['STAGED true'],
  events: {
    BOOM: [
      ['STAGED', {}],
      [
        'DRY_RUN',
        {
          errors: [
            { attr: null, code: 'server_error', detail: 'The account could not be created because of a server error.' }
          ],
          would_succeed: false
        }
      ]
    ],
    'GOOD-1': [
      ['STAGED', {}],
      ['DRY_RUN', { errors: [], would_succeed: true }]
    ],
    'GOOD-2': [
      ['STAGED', {}],
      ['DRY_RUN', { errors: [], would_succeed: true }]
    ],
    IMPORTED: [],
    OTHER: [],
    RESTAGE: [
      ['RESTAGED', {}],
      ['DRY_RUN', { errors: [], would_succeed: true }]
    ],
    RULE: [],
    SCHEMA: [],
    SKIPPED: [],
    'SPOIL-NEW': [
      ['STAGED', {}],
      [
        'DRY_RUN',
        {
          errors: [
            {
              attr: 'transfer_balance',
              code: 'ledger_balances_not_equal_to_transfer_balance',
              detail: 'The transfer balance must equal the sum of the ledger balances (6.26).'
            }
          ],
          would_succeed: false
        }
      ]
    ],
    'SPOIL-OLD': [
      ['RESTAGED', {}],
      [
        'DRY_RUN',
        {
          errors: [
            {
              attr: 'transfer_balance',
              code: 'ledger_balances_not_equal_to_transfer_balance',
              detail: 'The transfer balance must equal the sum of the ledger balances (6.26).'
            }
          ],
          would_succeed: false
        }
      ]
    ]
  },
  fillerEvents: [
    [
      ['STAGED', {}],
      ['DRY_RUN', { errors: [], would_succeed: true }]
    ]
  ],
  failures: [
    { external: 'BOOM', step: 'create', attempts: 1, status: 500, code: 'server_error', errors: [] },
    {
      external: 'RULE',
      step: 'stage',
      attempts: 1,
      status: 400,
      code: 'account_failed_validation',
      errors: [{ attr: 'transfer_balance', code: 'ledger_balances_not_equal_to_transfer_balance' }]
    },
    {
      external: 'SCHEMA',
      step: 'stage',
      attempts: 1,
      status: 400,
      code: 'account_failed_validation',
      errors: [{ attr: 'account_type', code: 'invalid_choice' }]
    },
    {
      external: 'SPOIL-NEW',
      step: 'create',
      attempts: 1,
      status: 400,
      code: 'account_failed_validation',
      errors: [{ attr: 'transfer_balance', code: 'ledger_balances_not_equal_to_transfer_balance' }]
    },
    {
      external: 'SPOIL-OLD',
      step: 'create',
      attempts: 1,
      status: 400,
      code: 'account_failed_validation',
      errors: [{ attr: 'transfer_balance', code: 'ledger_balances_not_equal_to_transfer_balance' }]
    }
  ],
  timeline: { staged: 116, created: 0, failed: 5 }
}

/** The second run: every ready entry restaged (not staged) before its dry run, each failure record one attempt more; the rest as the first. */
const EXPECTED_LEFT_AGAIN = {
  ...EXPECTED_LEFT,
  events: Object.fromEntries(
    Object.entries(EXPECTED_LEFT.events).map(([x, list]) => [
      x,
      list.map(([type, detail]) => [type === 'STAGED' ? 'RESTAGED' : type, detail])
    ])
  ),
  fillerEvents: [
    [
      ['RESTAGED', {}],
      ['DRY_RUN', { errors: [], would_succeed: true }]
    ]
  ],
  failures: EXPECTED_LEFT.failures.map((f) => ({ ...f, attempts: 2 }))
}

t.test(
  'a dry-run batch of every kind of entry: the answers, events, failure records and timeline as before, nothing created',
  async (t) => {
    const setup = await importSetup(t)
    const { client, app, database } = setup
    const db = database.db

    // Before the batch: an imported account, a skipped one, two staged ones (one of them with failure records of every account step).
    t.equal((await client.stage(account('IMPORTED'))).statusCode, 201)
    const importedNumber = (await client.create('IMPORTED')).json().service_account_number as string
    t.equal((await client.stage(account('SKIPPED'))).statusCode, 201)
    await asOperator(
      app,
      'mutation { skipImportProcess(input: {importSupplierCode: "ACME_ENERGY", externalAccountNumber: "SKIPPED"}) { state } }'
    )
    t.equal((await client.stage(account('RESTAGE'))).statusCode, 201)
    t.equal((await client.validate(account('RESTAGE', { transfer_balance: 'x' }))).statusCode, 400)
    t.equal((await client.stage(account('RESTAGE', { transfer_balance: 'x' }))).statusCode, 400)
    t.equal((await client.create('RESTAGE', { team: 'Nobody' })).statusCode, 400)
    t.equal((await client.stage(account('SPOIL-OLD'))).statusCode, 201)
    // Staged data that no longer passes at create (as if the rules had changed since staging): SPOIL-* are stored with a wrong transfer balance.
    await db.execute(sql`create function spoil_staged() returns trigger language plpgsql as $$
    begin
      if new.external_account_number like 'SPOIL-%' and new.staged_data is not null then
        new.staged_data = jsonb_set(new.staged_data, '{transfer_balance}', '"9.99"');
      end if;
      return new;
    end $$`)
    await db.execute(
      sql`create trigger spoil_staged before insert or update on import_processes for each row execute function spoil_staged()`
    )
    // A database error while creating BOOM.
    await db.execute(sql`create function refuse_boom() returns trigger language plpgsql as $$
    begin if new.external_account_number = 'BOOM' then raise exception 'boom'; end if; return new; end $$`)
    await db.execute(
      sql`create trigger refuse_boom before insert on accounts for each row execute function refuse_boom()`
    )
    await timeline(setup)
    await db.execute(sql`delete from migration_minutes`)
    const before = await tableCounts(database)
    const mark = await lastEvent(setup)

    const res = await dryRun(setup, entries())
    t.equal(res.statusCode, 200, res.statusCode === 200 ? 'answered' : res.body)
    const answer = res.json()
    const view = (r: any) => [
      r.external_account_number,
      r.outcome,
      r.service_account_number === importedNumber ? 'the imported number' : r.service_account_number,
      r.step,
      r.status,
      r.code,
      r.errors
    ]
    const named = answer.results.filter((r: any) => !r.external_account_number?.startsWith('FILL-'))
    t.same(named.map(view), EXPECTED_RESULTS, 'each entry answered as before')
    const fillers = answer.results.filter((r: any) => r.external_account_number?.startsWith('FILL-'))
    t.same(
      fillers.map((r: any) => r.external_account_number),
      FILLERS,
      'in request order'
    )
    t.same(
      [...new Set(fillers.map((r: any) => JSON.stringify(view(r).slice(1))))],
      [JSON.stringify(['would_create', null, null, null, null, null])]
    )
    t.same(answer.counts, { created: 0, already_imported: 1, would_create: 113, failed: 10 })

    const after = await tableCounts(database)
    const grown = Object.fromEntries(
      Object.keys(after)
        .filter((k) => after[k] !== before[k])
        .map((k) => [k, after[k]! - before[k]!])
    )
    t.same(
      grown,
      { import_events: 232, import_processes: 114 },
      'only the processes staged and their events (116 staged, 116 dry runs): nothing created, no number used'
    )
    t.same(
      await leftBehind(setup, importedNumber, mark),
      EXPECTED_LEFT,
      'processes, events, failure records and timeline as before'
    )

    // The same dry run again: everything is staged now, so each ready entry is restaged; the same answers.
    await db.execute(sql`delete from migration_minutes`)
    const mark2 = await lastEvent(setup)
    const again = await dryRun(setup, entries())
    t.same(
      again
        .json()
        .results.filter((r: any) => !r.external_account_number?.startsWith('FILL-'))
        .map(view),
      EXPECTED_RESULTS,
      'the same answers again'
    )
    t.same(again.json().counts, answer.counts)
    t.same(await leftBehind(setup, importedNumber, mark2), EXPECTED_LEFT_AGAIN, 'and again as before')
    t.same(
      (await client.list('imported')).json().map((p: any) => p.external_account_number),
      ['IMPORTED'],
      'still only the account imported before'
    )
  }
)

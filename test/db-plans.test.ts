import t from 'tap'
import { sql } from 'drizzle-orm'
import { rowsOf, supplierExternals, textList } from '../src/db/index.js'
import { accountCountColumns } from '../src/accounts/repository.js'
import {
  agreementsQuery,
  createHistoricalAgreementsRepository
} from '../src/modules/historical-agreements/repository.js'
import { chunkStanding } from '../src/modules/batches/repository.js'
import { freshDatabase } from './helpers/database.js'

/**
 * Query plans that must not depend on the statistics being fresh. A supplier whose accounts
 * arrived after the last ANALYZE is estimated at one row; a batch's look-up of 100 external
 * numbers must still go through the pair index instead of scanning the supplier's accounts once
 * per number (a bench saw batches fall from 1,000 to 53 accounts/s that way). On tables never
 * analysed, an account's summary must count its rows through their indexes, not hash its ledgers
 * and supply points and scan every transaction and agreement (1.5 s per summary at 1,000,000
 * accounts).
 */

interface PlanNode {
  'Node Type': string
  'Index Name'?: string
  'Index Cond'?: string
  'Rows Removed by Join Filter'?: number
  'Rows Removed by Filter'?: number
  'Actual Rows': number
  'Actual Loops'?: number
  Plans?: PlanNode[]
}

const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)]

type Exec = (query: ReturnType<typeof sql>) => Promise<Record<string, any>[]>

/** The plan of a statement as it ran, every node of it. */
async function plan(exec: Exec, query: ReturnType<typeof sql>): Promise<PlanNode[]> {
  const [row] = await exec(sql`explain (analyze, format json) ${query}`)
  const json = row!['QUERY PLAN']
  return nodes((typeof json === 'string' ? JSON.parse(json) : json)[0].Plan as PlanNode)
}

/** Rows each node produced (over all its loops) and dropped: what the statement read. */
const read = (all: PlanNode[]) =>
  all.reduce(
    (sum, n) =>
      sum +
      n['Actual Rows'] * (n['Actual Loops'] ?? 1) +
      (n['Rows Removed by Join Filter'] ?? 0) +
      (n['Rows Removed by Filter'] ?? 0),
    0
  )

/**
 * 5,000 created accounts of one supplier, each with a customer, a ledger of five transactions and
 * a supply point with two agreements, in tables never analysed (autovacuum off for them).
 */
async function accountsWithHistory(exec: Exec): Promise<void> {
  const N = 5000
  const tables = [
    'import_processes',
    'import_events',
    'accounts',
    'customers',
    'ledgers',
    'ledger_transactions',
    'supply_addresses',
    'supply_points',
    'agreements',
    'notes',
    'billing_documents',
    'statements',
    'historical_statements',
    'payment_instructions'
  ]
  for (const table of tables) await exec(sql.raw(`alter table ${table} set (autovacuum_enabled = false)`))
  const [org] = await exec(sql`insert into organisations (name) values ('Plans') returning id`)
  const [supplier] = await exec(
    sql`insert into import_suppliers (code, organisation_id) values ('BIG', ${org!.id}) returning id`
  )
  const [team] = await exec(sql`insert into operations_teams (name) values ('T') returning id`)
  await exec(sql`insert into import_processes (supplier_id, external_account_number, state, first_staged_at, service_account_number)
    select ${supplier!.id}, 'E-' || g, 'IMPORTED', now(), 'A-' || g from generate_series(1, ${N}) g`)
  await exec(sql`insert into accounts (id, service_account_number, import_process_id, supplier_id, external_account_number,
      account_type, billing_street_address, billing_country, communication_preference, sales_channel, unknown_occupier,
      transfer_balance, operations_team_id)
    select gen_random_uuid(), p.service_account_number, p.id, p.supplier_id, p.external_account_number, 'DOMESTIC',
      '1 Street', 'GB', 'EMAIL', 'DIRECT', false, 0, ${team!.id} from import_processes p`)
  await exec(sql`insert into customers (id, account_id, position, given_name, portfolio_roles, unable_to_read_meters)
    select gen_random_uuid(), id, 1, 'A', '{}', false from accounts`)
  await exec(sql`insert into ledgers (id, account_id, ledger_code, ledger_number, balance)
    select gen_random_uuid(), id, 'MAIN', 'L-' || service_account_number, 0 from accounts`)
  await exec(sql`insert into ledger_transactions (id, ledger_id, source, transaction_id, type, transaction_date, amount)
    select gen_random_uuid(), l.id, 'ACCOUNT_IMPORT', 'T-' || g, 'CHARGE', '2026-01-01', 1 from ledgers l, generate_series(1, 5) g`)
  await exec(sql`insert into supply_addresses (id, account_id, position, customer_at_supply_address_from_date, street_address, country)
    select gen_random_uuid(), id, 1, '2026-01-01', '1 Street', 'GB' from accounts`)
  await exec(sql`insert into supply_points (id, account_id, supply_address_id, identifier, supply_type, supply_start_date)
    select gen_random_uuid(), a.account_id, a.id, 'SP', 'ELECTRICITY', '2026-01-01' from supply_addresses a`)
  await exec(sql`insert into agreements (supply_point_id, tariff_code, effective_from)
    select id, 'TARIFF', '2026-01-01' from supply_points, generate_series(1, 2)`)
}

t.test('a batch finds its accounts through the pair index while the statistics are stale', async (t) => {
  const { database, drop } = await freshDatabase()
  t.teardown(async () => {
    await database.close()
    await drop()
  })
  const { db } = database
  const exec: Exec = async (query) => rowsOf<Record<string, any>>(await db.execute(query))

  await exec(sql`alter table import_processes set (autovacuum_enabled = false)`)
  const [org] = await exec(sql`insert into organisations (name) values ('Plans') returning id`)
  const [old] = await exec(
    sql`insert into import_suppliers (code, organisation_id) values ('OLD', ${org!.id}) returning id`
  )
  await exec(sql`insert into import_processes (supplier_id, external_account_number, state)
    select ${old!.id}, 'O-' || g, 'STAGED' from generate_series(1, 50000) g`)
  await exec(sql`analyze import_processes`)
  // A new supplier's accounts, staged since the statistics were taken.
  const [fresh] = await exec(
    sql`insert into import_suppliers (code, organisation_id) values ('NEW', ${org!.id}) returning id`
  )
  await exec(sql`insert into import_processes (supplier_id, external_account_number, state)
    select ${fresh!.id}, 'N-' || g, 'STAGED' from generate_series(1, 5000) g`)
  const externals = Array.from({ length: 100 }, (_, i) => `N-${i * 37 + 1}`)

  const processes = (where: ReturnType<typeof sql>) => plan(exec, sql`select id from import_processes where ${where}`)
  const removed = (all: PlanNode[]) =>
    all.reduce((sum, n) => sum + (n['Rows Removed by Join Filter'] ?? 0) + (n['Rows Removed by Filter'] ?? 0), 0)

  const pairs = await processes(
    sql`(supplier_id, external_account_number) in ${supplierExternals(fresh!.id, externals)}`
  )
  t.equal(pairs[0]!['Actual Rows'], 100, 'every account is found')
  t.ok(
    pairs.some(
      (n) => n['Index Name'] === 'import_processes_pair_idx' && /external_account_number/.test(n['Index Cond'] ?? '')
    ),
    'looked up by supplier and number in the pair index'
  )
  t.ok(removed(pairs) <= 100, `no scan of the supplier's accounts (${removed(pairs)} rows read and dropped)`)

  // A batch chunk's read before its transaction: its processes, and ids for the new ones.
  const externalsAndNew = [...externals.slice(0, 90), ...Array.from({ length: 10 }, (_, i) => `NEW-${i}`)]
  const standing = await plan(exec, chunkStanding(fresh!.id, externalsAndNew))
  t.equal(standing[0]!['Actual Rows'], 100, "the chunk's read: a row per account")
  t.ok(
    standing.some(
      (n) => n['Index Name'] === 'import_processes_pair_idx' && /external_account_number/.test(n['Index Cond'] ?? '')
    ),
    "the chunk's read looks its processes up in the pair index"
  )
  t.ok(removed(standing) <= 100, `and scans nothing (${removed(standing)} rows read and dropped)`)

  // What the pairs avoid: the same look-up written as a supplier and a list of numbers.
  const list = await processes(
    sql`supplier_id = ${fresh!.id}::uuid and external_account_number in ${textList(externals)}`
  )
  t.equal(list[0]!['Actual Rows'], 100)
  t.comment(`supplier = $1 and number in (list): ${removed(list)} rows read and dropped`)
})

t.test('an account summary reads only its own rows on tables never analysed', async (t) => {
  const { database, drop } = await freshDatabase()
  t.teardown(async () => {
    await database.close()
    await drop()
  })
  const { db } = database
  const exec: Exec = async (query) => rowsOf<Record<string, any>>(await db.execute(query))
  await accountsWithHistory(exec)

  const [one] = await exec(sql`select id from accounts where external_account_number = 'E-77'`)
  const columns = accountCountColumns(sql`a.id`)
  const query = sql`select ${sql.join(
    Object.entries(columns).map(([name, column]) => sql`${column} as ${sql.identifier(name)}`),
    sql`, `
  )} from accounts a where a.id = ${one!.id}::uuid`
  const [counts] = await exec(query)
  t.same(
    Object.fromEntries(Object.entries(counts!).map(([k, v]) => [k, Number(v)])),
    {
      customers: 1,
      supply_points: 1,
      agreements: 2,
      historical_agreements: 0,
      notes: 0,
      transactions: 5,
      historical_statements: 0,
      billing_documents: 0,
      payment_instructions: 0
    },
    "the account's counts"
  )
  const counted = await plan(exec, query)
  t.ok(
    read(counted) <= 100,
    `the summary's counts read the account's rows only (${read(counted)} rows; ` +
      `${counted.filter((n) => n['Node Type'] === 'Seq Scan').length} sequential scans)`
  )
})

t.test("an account's agreements are read through its supply points on tables never analysed", async (t) => {
  const { database, drop } = await freshDatabase()
  t.teardown(async () => {
    await database.close()
    await drop()
  })
  const exec: Exec = async (query) => rowsOf<Record<string, any>>(await database.db.execute(query))
  await accountsWithHistory(exec)
  const [one] = await exec(sql`select id from accounts where external_account_number = 'E-77'`)

  const rows = await createHistoricalAgreementsRepository().agreementsOf(database.db, one!.id)
  t.equal(rows.length, 2, "the account's two agreements")
  t.same(
    rows.map((r) => [r.tariffCode, r.effectiveFrom, r.effectiveTo, r.historical]),
    [
      ['TARIFF', '2026-01-01', null, false],
      ['TARIFF', '2026-01-01', null, false]
    ],
    'dates as written, as text'
  )
  const rowsRead = read(await plan(exec, agreementsQuery(one!.id)))
  t.ok(rowsRead <= 100, `the account's rows only (${rowsRead} rows read)`)

  // What the look-up per supply point avoids: the same rows as a join.
  const joined = await plan(
    exec,
    sql`select g.* from agreements g join supply_points p on p.id = g.supply_point_id where p.account_id = ${one!.id}::uuid`
  )
  t.comment(`as a join: ${read(joined)} rows read`)
})

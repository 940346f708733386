import t from 'tap'
import { sql } from 'drizzle-orm'
import { rowsOf, supplierExternals, textList } from '../src/db/index.js'
import { freshDatabase } from './helpers/database.js'

/**
 * Query plans that must not depend on the statistics being fresh. A supplier whose accounts
 * arrived after the last ANALYZE is estimated at one row; a batch's look-up of 100 external
 * numbers must still go through the pair index instead of scanning the supplier's accounts once
 * per number (a bench saw batches fall from 1,000 to 53 accounts/s that way).
 */

interface PlanNode {
  'Node Type': string
  'Index Name'?: string
  'Index Cond'?: string
  'Rows Removed by Join Filter'?: number
  'Rows Removed by Filter'?: number
  'Actual Rows': number
  Plans?: PlanNode[]
}

const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)]

t.test('a batch finds its accounts through the pair index while the statistics are stale', async (t) => {
  const { database, drop } = await freshDatabase()
  t.teardown(async () => {
    await database.close()
    await drop()
  })
  const { db } = database
  const exec = async (query: ReturnType<typeof sql>) => rowsOf<Record<string, any>>(await db.execute(query))

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

  const plan = async (where: ReturnType<typeof sql>) => {
    const [row] = await exec(sql`explain (analyze, format json) select id from import_processes where ${where}`)
    const json = row!['QUERY PLAN']
    return nodes((typeof json === 'string' ? JSON.parse(json) : json)[0].Plan as PlanNode)
  }
  const removed = (all: PlanNode[]) =>
    all.reduce((sum, n) => sum + (n['Rows Removed by Join Filter'] ?? 0) + (n['Rows Removed by Filter'] ?? 0), 0)

  const pairs = await plan(sql`(supplier_id, external_account_number) in ${supplierExternals(fresh!.id, externals)}`)
  t.equal(pairs[0]!['Actual Rows'], 100, 'every account is found')
  t.ok(
    pairs.some(
      (n) => n['Index Name'] === 'import_processes_pair_idx' && /external_account_number/.test(n['Index Cond'] ?? '')
    ),
    'looked up by supplier and number in the pair index'
  )
  t.ok(removed(pairs) <= 100, `no scan of the supplier's accounts (${removed(pairs)} rows read and dropped)`)

  // What the pairs avoid: the same look-up written as a supplier and a list of numbers.
  const list = await plan(sql`supplier_id = ${fresh!.id}::uuid and external_account_number in ${textList(externals)}`)
  t.equal(list[0]!['Actual Rows'], 100)
  t.comment(`supplier = $1 and number in (list): ${removed(list)} rows read and dropped`)
})

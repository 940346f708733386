import { DuckDBInstance } from '@duckdb/node-api'
import { readFileSync } from 'node:fs'
const [dir, mappingFile] = process.argv.slice(2)
const inst = await DuckDBInstance.create(':memory:', { threads: '2' })
const c = await inst.connect()
const files = ['accounts','customers','supply_addresses','meter_points','agreements','balances','transactions','notes','statements','bills']
for (const f of files) await c.run(`CREATE TABLE ${f} AS SELECT *, row_number() OVER ()::INTEGER + 1 AS source_row FROM read_csv('${dir}/extract/${f}.csv', all_varchar=true, header=true)`)
const sql = readFileSync(mappingFile, 'utf8').split('\n').filter(l => !l.startsWith('--')).join('\n')
const stmts = sql.split(/;\s*\n/).map(s => s.trim()).filter(Boolean)
for (const s of stmts.slice(0, -1)) await c.run(s)
const t0 = Date.now()
await c.run(`CREATE TABLE out AS ${stmts.at(-1)}`)
const t1 = Date.now()
const r = await c.runAndReadAll(`SELECT count(*), sum(length(entry::VARCHAR)), md5(string_agg(entry::VARCHAR, '' ORDER BY account_key)) FROM out`)
console.log('query', t1 - t0, 'ms', r.getRowsJS()[0])

import t, { type Test } from 'tap'
import { createReadStream, createWriteStream, mkdirSync, writeFileSync } from 'node:fs'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { tempDir } from './helpers/temp-dir.js'
import { runMapping } from '../src/cli/migrate/map/index.js'

/**
 * Row numbers on a file of many of DuckDB's read buffers, read by four threads: every row's
 * `source_row` (in the sources file) is the row it holds in the file, although quoted fields hold
 * line breaks and rows the reader rejects are spread through it; and the lines keep the file's
 * order. The row each account is on is written in the row itself, to compare.
 */

const ROWS = 60_000
const BAD_EVERY = 4_999

async function rowsAndOrder(t: Test, bufferSize: number | undefined): Promise<void> {
  const dir = tempDir(t)
  mkdirSync(join(dir, 'extract'))
  const out = createWriteStream(join(dir, 'extract', 'accounts.csv'))
  out.write('account_number,row,note\r\n')
  const rejected: number[] = []
  for (let row = 2; row <= ROWS + 1; row++) {
    let text: string
    if (row % BAD_EVERY === 0) {
      text = `K${row},${row}\r\n` // a column missing: rejected
      rejected.push(row)
    } else if (row % 7 === 0) text = `K${row},${row},"over\r\ntwo lines, with a comma"\r\n`
    else text = `K${row},${row},note ${row}\r\n`
    if (!out.write(text)) await once(out, 'drain')
  }
  out.end()
  await once(out, 'close')
  writeFileSync(
    join(dir, 'mapping.sql'),
    `-- extract: extract
-- accounts: accounts.csv key account_number
SELECT account_number AS account_key,
  json_object('account', json_object('external_account_number', account_number, 'sales_subchannel', "row")) AS entry
FROM accounts;
`
  )
  const { summary, lines, sources } = await runMapping({
    mapping: join(dir, 'mapping.sql'),
    out: join(dir, 'lines.ndjson'),
    threads: 4,
    // 64 kB buffers: the 3 MB file is read in about 50 of them, rows and quotes split across them.
    ...(bufferSize ? { bufferSize } : {})
  })
  t.equal(summary.files['accounts.csv']!.rows_read, ROWS)
  t.same(
    summary.files['accounts.csv']!.rejected.map((r) => r.line),
    rejected,
    'each rejected row at its row'
  )
  t.equal(summary.lines, ROWS - rejected.length)

  const entries = createInterface({ input: createReadStream(lines) })[Symbol.asyncIterator]()
  const sourceLines = createInterface({ input: createReadStream(sources) })[Symbol.asyncIterator]()
  await sourceLines.next()
  let wrongRow = 0
  let wrongOrder = 0
  let previous = 0
  let first: string | undefined
  for (;;) {
    const entry = await entries.next()
    const source = await sourceLines.next()
    if (entry.done || source.done) {
      t.equal(entry.done && source.done, true, 'as many sources as lines')
      break
    }
    const row = Number(JSON.parse(entry.value).account.sales_subchannel)
    const from = JSON.parse(source.value).rows['accounts.csv'][0] as number
    if (from !== row) {
      wrongRow++
      first ??= `row ${row} given as ${from}`
    }
    if (row < previous) wrongOrder++
    previous = row
  }
  t.equal(wrongRow, 0, `every line's source row is its row in the file${first ? ` (first wrong: ${first})` : ''}`)
  t.equal(wrongOrder, 0, "the lines keep the file's order")
}

t.test("source rows and order, four threads, DuckDB's own buffer size", (t) => rowsAndOrder(t, undefined))

t.test('source rows and order on a file DuckDB reads in many buffers with several threads', (t) =>
  rowsAndOrder(t, 64 * 1024)
)

import t, { type Test } from 'tap'
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LEGACY_FILES, LEGACY_MAPPING, legacyExtract } from './helpers/extract.js'
import { runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'

/**
 * Bad input to `map`, each named in the person's terms (the mapping file and its line, the extract
 * file, the field), exit 2, nothing written, never a stack trace.
 */

async function mapWith(t: Test, mapping: string, files: Record<string, Buffer | string> = LEGACY_FILES) {
  const dir = tempDir(t)
  legacyExtract(dir, mapping, files)
  const run = await runClient(['map', 'mapping.sql', '--out', 'lines.ndjson', '--go-on'], { INIT_CWD: dir })
  t.equal(run.code, 2, 'exit 2')
  t.notMatch(run.stderr, /\n\s+at /, 'no stack trace')
  t.notOk(existsSync(join(dir, 'lines.ndjson')), 'no lines written')
  t.notOk(existsSync(join(dir, 'lines.ndjson.sources.ndjson')), 'no sources written')
  t.same(
    readdirSync(dir).filter((f) => f.includes('.partial')),
    [],
    'no partly written file left'
  )
  return run.stderr
}

/** The legacy mapping with `from` replaced by `to` (which must be there). */
function changed(from: string, to: string): string {
  if (!LEGACY_MAPPING.includes(from)) throw new Error(`not in the mapping: ${from}`)
  return LEGACY_MAPPING.replace(from, to)
}

const lineOf = (text: string, part: string) => text.slice(0, text.indexOf(part)).split('\n').length

t.test("the mapping's SQL fails: DuckDB's message at the mapping file's line", async (t) => {
  // A column the file does not have, in the final SELECT.
  const unknownColumn = changed("'given_name', a.name", "'given_name', a.nmae")
  let stderr = await mapWith(t, unknownColumn)
  t.match(stderr, new RegExp(`^error: mapping\\.sql line ${lineOf(unknownColumn, 'a.nmae')}: Binder Error: .*nmae`))

  // A syntax error in a statement before it.
  const syntax = changed('CREATE MACRO amount(x) AS CAST(', 'CREATE MACRO amount(x) AS CAST(\n  WHERE')
  stderr = await mapWith(t, syntax)
  t.match(
    stderr,
    new RegExp(
      `^error: mapping\\.sql line ${lineOf(syntax, 'WHERE')}: Parser Error: syntax error at or near "WHERE"\n\nLINE \\d+:`
    )
  )

  // Failing on the data (no position from DuckDB): the statement's first line.
  const data = changed("'transfer_balance', amount(a.balance)", "'transfer_balance', CAST(a.name AS INTEGER)")
  stderr = await mapWith(t, data)
  t.match(stderr, /^error: mapping\.sql(,| line) .*Conversion Error/)
  t.match(stderr, new RegExp(`line ${lineOf(data, 'SELECT\n')}|line ${lineOf(data, 'CAST(a.name')}`))

  const notSelect = LEGACY_MAPPING.replace(/SELECT\n[\s\S]*$/, 'CREATE TABLE x AS SELECT 1;\n')
  stderr = await mapWith(t, notSelect)
  t.match(stderr, /the last statement \(line \d+\) must be a SELECT giving account_key and entry/)

  const noEntry = changed(') AS entry', ') AS entries')
  stderr = await mapWith(t, noEntry)
  t.match(stderr, /must give the columns account_key and entry; it gives account_key, entries/)
})

t.test('offline: a mapping cannot install or load an extension, nor change the settings', async (t) => {
  const first = 'CREATE MACRO uk_date'
  const line = lineOf(LEGACY_MAPPING, first)
  let stderr = await mapWith(t, changed(first, `INSTALL httpfs;\n${first}`))
  t.match(
    stderr,
    new RegExp(
      `^error: mapping\\.sql, the statement that starts on line ${line}: IO Error: Failed to install local extension "httpfs"`
    )
  )
  stderr = await mapWith(t, changed(first, `SELECT * FROM read_csv('https://example.com/x.csv');\n${first}`))
  t.match(
    stderr,
    new RegExp(`^error: mapping\\.sql line ${line}: Missing Extension Error: .*requires the extension httpfs`)
  )
  stderr = await mapWith(t, changed(first, `SET memory_limit = '100GB';\n${first}`))
  t.match(stderr, /the configuration has been locked/)
})

t.test('a field the batch entry does not have is named before anything is written', async (t) => {
  const stderr = await mapWith(
    t,
    changed("json_object('given_name', a.name)", "json_object('given_name', a.name, 'middle_name', a.name)")
      .replace("json_object('body', n.note)", "json_object('body', n.note, 'pinned', true)")
      .replace("'account', json_object(", "'acount_extra', 1, 'account', json_object(")
  )
  t.match(stderr, /^error: mapping\.sql gives 3 fields a batch entry does not have \(nothing was written\):\n/)
  t.match(stderr, /\n {2}acount_extra: not a field of a batch entry \(it has account, notes, transactions,/)
  t.match(
    stderr,
    /\n {2}account\.customers\[\]\.middle_name: not a field of account\.customers\[\] \(it has title, given_name,/
  )
  t.match(
    stderr,
    /\n {2}notes\[\]\.pinned: not a field of notes\[\] \(it has body, document_paths, created_at, is_pinned, unpin_at\)/
  )
})

t.test('an extract file missing or empty, a key column missing: named', async (t) => {
  const { 'notes.csv': _notes, ...withoutNotes } = LEGACY_FILES
  let stderr = await mapWith(t, LEGACY_MAPPING, withoutNotes)
  t.match(
    stderr,
    /^error: notes\.csv: no such file in the extract folder .*extract \(declared on line 6 of the mapping\)/
  )

  stderr = await mapWith(t, LEGACY_MAPPING, { ...LEGACY_FILES, 'transactions.csv': '' })
  t.match(stderr, /^error: transactions\.csv is empty: it needs at least its line of column names/)

  stderr = await mapWith(t, LEGACY_MAPPING, { ...LEGACY_FILES, 'transactions.csv': 'Account_Number,date,amount\r\n' })
  t.match(stderr, /^error: transactions\.csv has no column account_number, its declared key \(it has Account_Number/)

  // A file separated by ";" read with the default ",": the one name it makes, and what to declare.
  stderr = await mapWith(t, LEGACY_MAPPING, {
    ...LEGACY_FILES,
    'transactions.csv': 'account_number;date;amount\r\nA-1;01/02/2020;1.00\r\n'
  })
  t.match(
    stderr,
    /^error: transactions\.csv has no column account_number, its declared key; its columns: account_number;date;amount; its first line is one name split by ";" rather than ",": if that is the file's delimiter, say so at the top of the mapping: -- delimiter: ;/
  )

  stderr = await mapWith(t, LEGACY_MAPPING.replace('-- accounts: accounts.csv key account_number\n', ''))
  t.match(stderr, /declares no accounts file: its header needs a line "-- accounts: accounts\.csv key <column>"/)

  const dir = tempDir(t)
  writeFileSync(join(dir, 'mapping.sql'), LEGACY_MAPPING)
  const run = await runClient(['map', 'mapping.sql', '--out', 'lines.ndjson'], { INIT_CWD: dir })
  t.equal(run.code, 2)
  t.match(run.stderr, /^error: the extract folder extract \(.*\) does not exist\n$/)
})

t.test(
  '--memory: a size in DuckDB units is taken; anything else is a usage error before the mapping runs',
  async (t) => {
    const dir = tempDir(t)
    legacyExtract(dir)
    const bad = await runClient(['map', 'mapping.sql', '--out', 'lines.ndjson', '--memory', '12'], { INIT_CWD: dir })
    t.equal(bad.code, 2)
    t.match(bad.stderr, /--memory takes a size such as 4GB or 512MB, not "12"/)
    t.notOk(existsSync(join(dir, 'lines.ndjson')), 'nothing written')
    const good = await runClient(['map', 'mapping.sql', '--out', 'lines.ndjson', '--go-on', '--memory', '512MB'], {
      INIT_CWD: dir
    })
    t.equal(good.code, 0, good.stderr)
    t.ok(existsSync(join(dir, 'lines.ndjson')))
  }
)

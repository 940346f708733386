import t, { type Test } from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { legacyExtract, LEGACY_MAPPING } from './helpers/extract.js'
import { runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'

/**
 * The mapping's last SELECT runs on slices of the accounts (`--slice`, default 50,000 accounts):
 * the lines, their sources and the summary are the same whatever the slice, for the starter
 * mapping (views grouped by account), the legacy test mapping (a subquery per account) and a
 * SELECT built on a table of every account; a line whose account_key is not an account number of
 * the accounts file is refused, with nothing written.
 */

const outputs = async (t: Test, dir: string, mapping: string, slice?: number) => {
  const out = `lines-${slice ?? 'whole'}.ndjson`
  const run = await runClient(['map', mapping, '--out', out, '--go-on', ...(slice ? ['--slice', String(slice)] : [])], {
    INIT_CWD: dir
  })
  t.equal(run.code, 0, run.stderr)
  return {
    lines: readFileSync(join(dir, out), 'utf8'),
    // The summary names the lines file: the same apart from its name, and the line per slice.
    summary: run.stderr.replaceAll(out, 'lines.ndjson').replace(/^mapping: slice .*\n/gm, ''),
    sources: readFileSync(join(dir, `${out}.sources.ndjson`), 'utf8')
  }
}

t.test('the legacy mapping in slices of 1 and 2 accounts: the same lines, sources and summary', async (t) => {
  const dir = tempDir(t)
  legacyExtract(dir)
  const whole = await outputs(t, dir, 'mapping.sql')
  t.equal(whole.lines.trim().split('\n').length, 4)
  for (const slice of [1, 2]) t.same(await outputs(t, dir, 'mapping.sql', slice), whole, `--slice ${slice}`)
  const run = await runClient(['map', 'mapping.sql', '--out', 'x.ndjson', '--go-on', '--slice', '2'], { INIT_CWD: dir })
  t.match(
    run.stderr,
    'mapping: slice 1 of 2 done, 3 lines so far\nmapping: slice 2 of 2 done, 4 lines so far\n',
    'a line per slice'
  )
})

t.test('the starter mapping in slices of 2 accounts: the same lines, sources and summary', async (t) => {
  const dir = tempDir(t)
  const init = await runClient(['map', 'init', 'starter'], { INIT_CWD: dir })
  t.equal(init.code, 0, init.stderr)
  const whole = await outputs(t, dir, 'starter/mapping.sql')
  t.ok(whole.lines.trim().split('\n').length > 2, 'more accounts than a slice')
  t.same(await outputs(t, dir, 'starter/mapping.sql', 2), whole)
})

t.test('a SELECT built on a table of every account: each line once, in slices too', async (t) => {
  const dir = tempDir(t)
  const last = LEGACY_MAPPING.lastIndexOf('SELECT\n  a.account_number')
  legacyExtract(
    dir,
    LEGACY_MAPPING.slice(0, last) +
      'CREATE TABLE every_account AS SELECT * FROM accounts;\n' +
      LEGACY_MAPPING.slice(last).replace('FROM accounts a', 'FROM every_account a')
  )
  const whole = await outputs(t, dir, 'mapping.sql')
  t.equal(whole.lines.trim().split('\n').length, 4)
  t.same(await outputs(t, dir, 'mapping.sql', 1), whole)
})

t.test('an account_key that is not an account number of the accounts file: refused, nothing written', async (t) => {
  const dir = tempDir(t)
  legacyExtract(
    dir,
    LEGACY_MAPPING.replace('a.account_number AS account_key', "'X' || a.account_number AS account_key")
  )
  const run = await runClient(['map', 'mapping.sql', '--out', 'lines.ndjson', '--go-on'], { INIT_CWD: dir })
  t.equal(run.code, 2)
  t.match(
    run.stderr,
    'the account_key of 4 rows of its SELECT (the first: "XA-1") are not an account number of accounts.csv'
  )
  t.notOk(existsSync(join(dir, 'lines.ndjson')))
  t.same(
    readdirSync(dir).filter((f) => f.includes('partial')),
    [],
    'no partial file left'
  )
})

t.test('--slice takes a whole number of accounts', async (t) => {
  const dir = tempDir(t)
  legacyExtract(dir)
  for (const bad of ['0', '-1', '2.5', 'many']) {
    const run = await runClient(['map', 'mapping.sql', '--out', 'lines.ndjson', `--slice=${bad}`], { INIT_CWD: dir })
    t.equal(run.code, 2, bad)
    t.match(run.stderr, `--slice takes a number of accounts such as 20000, not "${bad}"`)
  }
})

t.test('the last SELECT reads its slice: a count of the accounts table is the slice’s', async (t) => {
  const dir = tempDir(t)
  // Each customer's name: how many account rows the last SELECT sees.
  legacyExtract(
    dir,
    LEGACY_MAPPING.replace("'given_name', a.name", "'given_name', (SELECT count(*) FROM accounts)::VARCHAR")
  )
  const seen = async (slice: string[]) => {
    const run = await runClient(['map', 'mapping.sql', '--out', 'lines.ndjson', '--go-on', ...slice], { INIT_CWD: dir })
    t.equal(run.code, 0, run.stderr)
    return readFileSync(join(dir, 'lines.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map(
        (l) =>
          (JSON.parse(l) as { account: { customers: Array<{ given_name: string }> } }).account.customers[0]!.given_name
      )
  }
  t.same(await seen([]), ['4', '4', '4', '4'], 'one slice: the four account rows loaded (A-1, A-2 twice, A-5)')
  t.same(
    await seen(['--slice', '2']),
    ['3', '3', '3', '1'],
    'slices of two accounts: A-1 and A-2 (its two rows), then A-5'
  )
})

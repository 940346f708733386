import t from 'tap'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { exampleAccount, TEAM } from './helpers/accounts.js'
import { inputFile, migrationServer, runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'

/**
 * A job's failed lines in the source's terms: with a sources file beside the submitted lines
 * (found through the upload state submit keeps beside them, or named with --sources), `results`
 * gives each failed line its source rows and each problem its field and column, `failed-lines`
 * writes the failed lines' own sources file, and `report` lists the failures by code with their
 * rows and columns.
 */

const TRANSACTION = {
  transaction_id: 'T-1',
  transaction_date: '2026-10-15',
  amount: '12.50',
  type: 'CHARGE',
  reason: 'IMPORTED_CHARGE'
}
const entry = (external: string, account: Record<string, unknown> = {}, more: Record<string, unknown> = {}) => ({
  account: exampleAccount({ external_account_number: external, ...account }),
  ...more
})
const HEADER = {
  kind: 'sources',
  mapping: 'mapping.sql',
  extract: 'extract',
  files: {
    'accounts.csv': { rows_read: 3, rows_used: 3, rejected: [], orphans: [], repeated_keys: [] },
    'meta.csv': { rows_read: 2, rows_used: 2, rejected: [], orphans: [], repeated_keys: [] }
  },
  columns: { 'account.metadata[].key': { file: 'meta.csv', column: 'meta_name' } }
}
const SOURCES = [
  { line: 1, account: 'J-1', rows: { 'accounts.csv': [2] } },
  { line: 2, account: 'J-2', rows: { 'accounts.csv': [3], 'meta.csv': [2, 3] } },
  { line: 3, account: 'J-3', rows: { 'accounts.csv': [4] } }
]
const readNdjson = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, any>)

t.test('results, failed-lines and report name the source rows of a failed line', async (t) => {
  const server = await migrationServer(t)
  const dir = tempDir(t)
  const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }
  inputFile(dir, 'lines.ndjson', [
    entry('J-1', {}, { transactions: [TRANSACTION] }),
    entry('J-2', {
      metadata: [
        { key: 'tariff', value: 'A' },
        { key: 'tariff', value: 'B' }
      ]
    }),
    entry('J-3')
  ])
  writeFileSync(
    join(dir, 'lines.ndjson.sources.ndjson'),
    [HEADER, ...SOURCES].map((l) => JSON.stringify(l)).join('\n') + '\n'
  )
  const submitted = await runClient(['submit', 'lines.ndjson', '--url', server.url, '--team', TEAM, '--follow'], env, {
    pollIntervalMs: 100
  })
  t.equal(submitted.code, 1, `a line failed ${submitted.stderr}`)
  const id = /Job (\S+) of ACME_ENERGY/.exec(submitted.stdout)![1]!

  const results = await runClient(['results', id, '--failed', '--url', server.url], env)
  t.equal(results.code, 0, results.stderr)
  t.match(
    results.stdout,
    /Each failed line names its source rows and columns \(1 found in lines\.ndjson\.sources\.ndjson\)/
  )
  const [failed, ...others] = readNdjson(join(dir, `job-${id}.failed-results.ndjson`))
  t.same(others, [], 'one failed line')
  t.match(failed, {
    line: 2,
    outcome: 'failed',
    source: { account: 'J-2', rows: { 'accounts.csv': [3], 'meta.csv': [2, 3] } },
    errors: [
      {
        code: 'metadata_has_duplicate_keys',
        attr: 'metadata.1.key',
        field: 'account.metadata.1.key',
        column: { file: 'meta.csv', column: 'meta_name' }
      }
    ]
  })

  const report = await runClient(['report', `job-${id}.failed-results.ndjson`], env)
  t.equal(report.code, 0, report.stderr)
  t.match(
    report.stdout,
    /Failures in the source's terms \(from lines\.ndjson\.sources\.ndjson: file and rows, field, column\):\n/
  )
  t.match(
    report.stdout,
    /metadata_has_duplicate_keys: 1 line\n[\s\S]*line 2, account J-2 \(service, stage\)\n +account\.metadata\.1\.key ← meta\.csv, column meta_name, rows 2, 3\n/
  )

  const lines = await runClient(['failed-lines', id, '--url', server.url, '--out', 'fix.ndjson'], env)
  t.equal(lines.code, 0, lines.stderr)
  t.match(
    lines.stdout,
    /Their source rows \(from lines\.ndjson\.sources\.ndjson\) are in fix\.ndjson\.sources\.ndjson, beside it\./
  )
  const [header, first, ...rest] = readNdjson(join(dir, 'fix.ndjson.sources.ndjson'))
  t.same(header, HEADER, 'the header of the job input')
  t.same(first, { line: 1, account: 'J-2', rows: { 'accounts.csv': [3], 'meta.csv': [2, 3] } }, 'renumbered')
  t.same(rest, [])

  // Named with --sources when the upload state is elsewhere: the same.
  const elsewhere = await runClient(
    [
      'results',
      id,
      '--failed',
      '--url',
      server.url,
      '--out',
      'named.ndjson',
      '--sources',
      'lines.ndjson.sources.ndjson'
    ],
    { ...env, INIT_CWD: dir }
  )
  t.equal(elsewhere.code, 0, elsewhere.stderr)
  t.match(readNdjson(join(dir, 'named.ndjson'))[0], { source: { account: 'J-2' } })

  // Without a sources file: the results as the service gives them.
  const other = tempDir(t)
  const plain = await runClient(['results', id, '--failed', '--url', server.url], { ...env, INIT_CWD: other })
  t.equal(plain.code, 0, plain.stderr)
  t.notMatch(plain.stdout, /source rows/)
  t.notOk('source' in readNdjson(join(other, `job-${id}.failed-results.ndjson`))[0]!)
  t.notOk(existsSync(join(other, 'fix.ndjson.sources.ndjson')))
})

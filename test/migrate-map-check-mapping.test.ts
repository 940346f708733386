import t from 'tap'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { TEAM } from './helpers/accounts.js'
import { migrationServer, runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'
import { writeStarter } from '../src/cli/migrate/map/starter.js'

/**
 * A mapping straight to the service: `map check <mapping.sql>` maps the extract and checks the
 * lines (the failures named by extract file, row and column), and `submit <mapping.sql>` maps
 * then submits, refusing to send anything while the mapping leaves source rows out (unless
 * --go-on); the job's failed results then name their source rows. On `map init`'s sample extract.
 */

/** Replaces bytes in an extract file (Windows-1252: ASCII edits keep its encoding). */
function edit(path: string, from: string, to: string) {
  const text = readFileSync(path, 'latin1')
  if (!text.includes(from)) throw new Error(`${from} not in ${path}`)
  writeFileSync(path, text.replace(from, to), 'latin1')
}

const readNdjson = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, any>)

t.test('map check and submit take a mapping; the failures are named in the extract', async (t) => {
  const server = await migrationServer(t)
  const dir = tempDir(t)
  const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }
  writeStarter(join(dir, 'm'))
  // Account 100001's customer gets an e-mail address the service refuses.
  edit(join(dir, 'm', 'extract', 'customers.csv'), 'ada.lovelace@mailbox.org', 'ada.lovelace at mailbox')

  const checked = await runClient(['map', 'check', 'm/mapping.sql', '--url', server.url, '--team', TEAM], env, {
    pollIntervalMs: 100
  })
  t.equal(checked.code, 1, `a line failed: exit 1 ${checked.stderr}`)
  t.match(
    checked.stderr,
    /3 lines mapped, kept until the check ends \(--out <file> keeps them/,
    "the engine's summary, on standard error"
  )
  t.match(checked.stdout, /^Check of m\/mapping\.sql\n/)
  t.match(checked.stdout, /lines: +3\n/)
  // The column the mapping takes the field from (the engine's lineage), and the account's row in that file.
  t.match(
    checked.stdout,
    /invalid_email: 1 line\n[\s\S]*line 1, account 100001 \(dry run, stage\)\n +account\.customers\.0\.email ← customers\.csv, column email, row 2\n/,
    'the failure at its field, with the extract rows it came from'
  )
  t.notOk(existsSync(join(dir, 'm', 'mapping.lines.ndjson')), 'map check leaves no lines behind without --out')

  // A transaction of an account the accounts file lacks: an orphan row. Submit stops before sending.
  writeFileSync(
    join(dir, 'm', 'extract', 'transactions.csv'),
    Buffer.concat([
      readFileSync(join(dir, 'm', 'extract', 'transactions.csv')),
      Buffer.from('999999,ENERGY,T-9,01/10/2025,CHG,£1.00,,,Nobody\r\n', 'latin1')
    ])
  )
  const jobs = async () =>
    (
      await server.app.inject({
        url: '/v1/data-import/import-jobs/',
        headers: { authorization: `Token ${server.tenant.token}` }
      })
    ).json() as unknown[]
  const before = (await jobs()).length
  const refused = await runClient(['submit', 'm/mapping.sql', '--url', server.url, '--team', TEAM], env)
  t.equal(refused.code, 1, refused.stderr)
  t.match(refused.stderr, /the mapping left source rows out \(the summary above\): nothing was sent/)
  t.equal((await jobs()).length, before, 'no job was made')
  t.notOk(existsSync(join(dir, 'm', 'mapping.lines.ndjson.job.json')), 'nothing uploaded')

  const submitted = await runClient(
    ['submit', 'm/mapping.sql', '--url', server.url, '--team', TEAM, '--go-on', '--follow'],
    env,
    { pollIntervalMs: 100 }
  )
  t.equal(submitted.code, 1, `one line failed ${submitted.stderr}`)
  t.match(submitted.stderr, /Mapped m\/mapping\.sql to m\/mapping\.lines\.ndjson: submitting it/)
  t.match(submitted.stdout, /created: +2\n/)
  const id = /Job (\S+) of ACME_ENERGY/.exec(submitted.stdout)![1]!
  t.ok(existsSync(join(dir, 'm', 'mapping.lines.ndjson.sources.ndjson')), 'the sources beside the lines')

  // results, run where the lines are: the failed line's source rows, found through the upload state.
  const results = await runClient(['results', id, '--failed', '--url', server.url], {
    ...env,
    INIT_CWD: join(dir, 'm')
  })
  t.equal(results.code, 0, results.stderr)
  const [failed] = readNdjson(join(dir, 'm', `job-${id}.failed-results.ndjson`))
  t.match(failed, {
    line: 1,
    source: { account: '100001', rows: { 'accounts.csv': [2], 'customers.csv': [2] } },
    errors: [
      {
        attr: 'customers.0.email',
        field: 'account.customers.0.email',
        code: 'invalid_email',
        column: { file: 'customers.csv', column: 'email' }
      }
    ]
  })

  // From the folder above, where the docs' walk-through runs them: the upload state found in m/.
  const above = await runClient(['results', id, '--failed', '--url', server.url, '--out', 'above.ndjson'], env)
  t.equal(above.code, 0, above.stderr)
  t.match(above.stdout + above.stderr, 'found in m/mapping.lines.ndjson.sources.ndjson')
  t.match(readNdjson(join(dir, 'above.ndjson'))[0], { line: 1, source: { account: '100001' } })

  // Checked again once migrated: the accounts created are already imported; the orphan row is named.
  const again = await runClient(['map', 'check', 'm/mapping.sql', '--url', server.url, '--team', TEAM], env, {
    pollIntervalMs: 100
  })
  t.equal(again.code, 1, 'the orphan row and the failed line: exit 1')
  t.match(again.stdout, /dry run \(accounts\): +0 would be created, 2 already imported, 1 failed\n/)
  t.match(
    again.stdout,
    /Source rows the mapping left out:\n +transactions\.csv: 1 orphan row, no such account \(row \d+: 999999\)/
  )
})

import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { TEAM } from './helpers/accounts.js'
import { migrationServer, runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'
import { SAMPLE_EXTRACT, STARTER_MAPPING } from '../src/cli/migrate/map/starter.js'

/**
 * `map init` as a new user runs it: the starter mapping and the sample extract it writes map to
 * lines that all create on a fresh supplier, through `submit --follow` against a real server; it
 * never overwrites a file.
 */

t.test('map init, map, submit: every account of the sample extract is created', async (t) => {
  const server = await migrationServer(t)
  const dir = tempDir(t)
  const env = { AMIS_API_KEY: server.tenant.apiKey, INIT_CWD: dir }

  const init = await runClient(['map', 'init', 'starter'], env)
  t.equal(init.code, 0, init.stderr)
  t.match(init.stderr, /Wrote a starter mapping and a sample extract \(10 files\)/)
  t.equal(readFileSync(join(dir, 'starter', 'mapping.sql'), 'utf8'), STARTER_MAPPING)
  const accountsCsv = readFileSync(join(dir, 'starter', 'extract', 'accounts.csv'))
  t.ok(accountsCsv.includes(Buffer.from('\r\n')), 'CRLF line ends')
  const customers = readFileSync(join(dir, 'starter', 'extract', 'customers.csv'))
  t.ok(customers.includes(Buffer.from([0x92])), 'Windows-1252: the curly apostrophe is one byte, 0x92')

  const again = await runClient(['map', 'init', 'starter'], env)
  t.equal(again.code, 2, 'init never overwrites')
  t.match(again.stderr, /mapping\.sql.*exist.* already: nothing written/)

  const mapped = await runClient(['map', 'starter/mapping.sql', '--out', 'lines.ndjson'], env)
  t.equal(mapped.code, 0, mapped.stderr)
  const accounts = SAMPLE_EXTRACT['accounts.csv']!.length - 1
  t.match(mapped.stderr, new RegExp(`${accounts} lines written to lines\\.ndjson`))
  const lines = readFileSync(join(dir, 'lines.ndjson'), 'utf8').trim().split('\n')
  t.equal(lines.length, accounts)
  const first = JSON.parse(lines[0]!)
  t.equal(first.account.external_account_number, '100001')
  t.equal(first.account.ledgers[0].ledger_balance, -5.94, '"(5.94)" is -5.94')
  const second = JSON.parse(lines[1]!)
  t.equal(second.account.customers[1].family_name, 'O’Brien', 'Windows-1252 0x92 read as ’')
  t.equal(second.notes[0].body, 'Customer asked for paper bills.\nJoint account holder added.', 'a note over two lines')
  t.equal(second.account.communication_preference, 'PRINT')
  // Each field's column, through the starter's views (its lists) and its code map (a join).
  const sources = JSON.parse(readFileSync(join(dir, 'lines.ndjson.sources.ndjson'), 'utf8').split('\n')[0]!)
  t.match(sources.columns, {
    'account.customers[].email': { file: 'customers.csv', column: 'email' },
    'account.supply_addresses[].supply_points[].agreements[].tariff_code': {
      file: 'agreements.csv',
      column: 'tariff_code'
    },
    'account.ledgers[].historical_statement_transactions[].amount': { file: 'transactions.csv', column: 'amount' },
    'account.ledgers[].current_statement_transactions[].type': { file: 'transactions.csv', column: 'type_code' },
    'account.transfer_balance': { file: 'balances.csv', column: 'balance' },
    'notes[].body': { file: 'notes.csv', column: 'note' }
  })

  const submitted = await runClient(['submit', 'lines.ndjson', '--url', server.url, '--team', TEAM, '--follow'], {
    ...env
  })
  if (submitted.code !== 0) {
    const id = /Job (\S+) of/.exec(submitted.stdout)?.[1]
    await runClient(['results', id!, '--url', server.url, '--failed', '--out', 'failed.ndjson'], env)
    t.comment(readFileSync(join(dir, 'failed.ndjson'), 'utf8'))
  }
  t.equal(submitted.code, 0, submitted.stderr + submitted.stdout)
  t.match(submitted.stdout, new RegExp(`created: +${accounts}\\n {2}failed: +0\\n`))
  for (const line of lines) {
    const external = JSON.parse(line).account.external_account_number as string
    const status = await server.app.inject({
      url: `/v1/data-import/account-transfer-status/ACME_ENERGY/${external}/`,
      headers: { authorization: `Token ${server.tenant.token}` }
    })
    t.equal(status.json().status, 'COMPLETED', `${external} created`)
  }
  const summary = await server.app.inject({
    url: '/v1/data-import/accounts/ACME_ENERGY/100001/',
    headers: { authorization: `Token ${server.tenant.token}` }
  })
  t.match(summary.json(), { counts: { notes: 1, historical_statements: 1 } }, 'its history came too')
  writeFileSync(join(dir, 'done'), '')
})

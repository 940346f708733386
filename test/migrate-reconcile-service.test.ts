import t from 'tap'
import { createServer } from 'node:http'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Big } from '../src/decimal.js'
import { expectedSummary } from './helpers/migrate-expect.js'
import { clientArgs, migrationServer, readReport, runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'

/**
 * `migrate reconcile` against the service itself: a generated file migrated with the batch client
 * reconciles with every account matching; a copy without one of an account's transactions shows
 * exactly that account's balance and transaction count; accounts that failed show as not_created.
 * The generated accounts, with every section, are where the client's expected computation and the
 * service's rules must agree.
 */

/** A payment vendor on loopback that knows every CARD instruction whose reference starts with `pi_`. */
async function paymentVendor(t: Parameters<typeof migrationServer>[0]): Promise<string> {
  const vendor = createServer((req, res) => {
    const reference = decodeURIComponent(req.url?.replace('/payment-instructions/', '') ?? '')
    const found = reference.startsWith('pi_')
    res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' })
    res.end(found ? JSON.stringify({ reference, type: 'CARD', status: 'ACTIVE', details: { last4: '4242' } }) : '{}')
  })
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => vendor.close(() => resolve())))
  return `http://127.0.0.1:${(vendor.address() as { port: number }).port}`
}

/** `npm run migrate -- generate …` into `dir/name`; the file's path and lines. */
async function generatedFile(dir: string, name: string, argv: string[]) {
  const run = await runClient(['generate', ...argv], {})
  if (run.code !== 0) throw new Error(run.stderr)
  const path = join(dir, name)
  writeFileSync(path, run.stdout)
  return { path, lines: run.stdout.split('\n').slice(0, -1) }
}

const readNdjson = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)

t.test('a migrated generated file reconciles; a changed copy and failed accounts show their differences', async (t) => {
  const dir = tempDir(t)
  const vendorUrl = await paymentVendor(t)
  const { url, tenant } = await migrationServer(t, { env: { PAYMENT_VENDORS: `ACMEPAY=${vendorUrl}` } })
  const env = { AMIS_API_KEY: tenant.apiKey }
  const file = await generatedFile(dir, 'accounts.ndjson', [
    '200',
    '--seed',
    'reconcile',
    '--payment-vendor',
    'ACMEPAY'
  ])

  const migrated = await runClient(clientArgs(file.path, url, join(dir, 'run.ndjson'), '--batch-size', '100'), env)
  t.equal(migrated.code, 0, migrated.stdout + migrated.stderr)

  const all = await runClient(['reconcile', file.path, '--url', url], env)
  t.equal(all.code, 0, all.stdout + all.stderr)
  t.match(all.stdout, /checked: +200\n/)
  t.match(all.stdout, /matching: +200\n/)
  t.match(all.stdout, /no differences/)
  t.same(readFileSync(join(dir, 'accounts.ndjson.reconcile.ndjson'), 'utf8'), '')

  // A copy without one post-import transaction of one account.
  const lines = file.lines.map((l) => JSON.parse(l) as Record<string, unknown>)
  const at = lines.findIndex((l) => Array.isArray(l.transactions) && l.transactions.length > 0)
  t.ok(at >= 0, 'a generated account has post-import transactions')
  const changed = lines[at]!
  const removed = (changed.transactions as Array<Record<string, unknown>>).shift()!
  t.not(Number(removed.amount), 0)
  const external = (changed.account as { external_account_number: string }).external_account_number
  const copy = join(dir, 'copy.ndjson')
  writeFileSync(copy, lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
  const one = await runClient(['reconcile', copy, '--url', url, '--report', join(dir, 'copy-differences.ndjson')], env)
  t.equal(one.code, 1, one.stdout + one.stderr)
  t.match(one.stdout, /checked: +200\n/)
  t.match(one.stdout, /matching: +199\n/)
  t.match(one.stdout, /balance_differs: +1\n/)
  t.match(one.stdout, /count_differs: +1\n/)
  const differences = readNdjson(join(dir, 'copy-differences.ndjson'))
  t.same(
    differences.map((d) => [d.line, d.external_account_number, d.problem, d.field]),
    [
      [at + 1, external, 'balance_differs', 'ledgers.ENERGY.balance'],
      [at + 1, external, 'count_differs', 'counts.transactions']
    ]
  )
  // The figures of the line migrated and of its copy, counted from the lines themselves.
  const copied = expectedSummary(changed)
  const migratedLine = { ...changed, transactions: [removed, ...(changed.transactions as unknown[])] }
  const sent = expectedSummary(migratedLine)
  t.same(
    [differences[1]!.expected, differences[1]!.actual],
    [copied.counts.transactions, sent.counts.transactions],
    'the service holds the one transaction more that was migrated'
  )
  t.same(
    [new Big(String(differences[0]!.expected)).toFixed(2), new Big(String(differences[0]!.actual)).toFixed(2)],
    [copied.energyBalance, sent.energyBalance],
    "the balances are the copy's and the migrated line's"
  )
  t.match(one.stdout, new RegExp(`line ${at + 1} +${external} +balance_differs +ledgers\\.ENERGY\\.balance`))

  // Accounts that failed in the migration are not_created.
  const invalid = await generatedFile(dir, 'invalid.ndjson', [
    '40',
    '--seed',
    'reconcile-invalid',
    '--invalid-share',
    '0.2'
  ])
  const report = join(dir, 'invalid-run.ndjson')
  const run = await runClient(clientArgs(invalid.path, url, report, '--batch-size', '20'), env)
  t.equal(run.code, 1)
  const failed = readReport(report)
    .filter((e) => e.outcome === 'failed')
    .map((e) => e.external_account_number)
    .sort()
  t.ok(failed.length > 0, 'some generated accounts failed')
  const checked = await runClient(['reconcile', invalid.path, '--url', url], env)
  t.equal(checked.code, 1)
  const notCreated = readNdjson(join(dir, 'invalid.ndjson.reconcile.ndjson'))
  t.same(
    notCreated.map((d) => d.problem),
    failed.map(() => 'not_created')
  )
  t.same(notCreated.map((d) => d.external_account_number).sort(), failed)
  t.match(checked.stdout, new RegExp(`matching: +${40 - failed.length}\\n`))
  t.match(checked.stdout, new RegExp(`not_created: +${failed.length}\\n`))
})

import t, { type Test } from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Big } from '../src/decimal.js'
import type { ExpectedAccount } from '../src/cli/migrate/expected.js'
import { inputFile, runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'

/**
 * `migrate reconcile` against a small service on loopback that answers the reconciliation endpoint
 * as the service does (and obtainToken): what the client sends (the expected balances and counts,
 * pages of at most 10,000), its summary, its report of differences (never overwritten) and its
 * exit codes.
 */

interface Held {
  balances: Record<string, string>
  counts: Record<string, number>
}

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ''
    req.on('data', (d: Buffer) => (body += d.toString()))
    req.on('end', () => resolve(body))
  })

/** The service on loopback: `held` is what it holds by external account number (absent: not created). */
async function reconciliationService(t: Test, held: Map<string, Held>) {
  const requests: Array<{ path: string; accounts: ExpectedAccount[] }> = []
  const server = createServer((req, res) => {
    void read(req).then((text) => {
      const body = JSON.parse(text || '{}') as { query?: string; accounts?: ExpectedAccount[] }
      res.setHeader('content-type', 'application/json')
      if (req.url === '/graphql') {
        if (body.query?.includes('obtainToken')) {
          return res.end(
            JSON.stringify({
              data: { obtainToken: { token: 't', expiresIn: 3600, refreshToken: 'r', refreshExpiresIn: 86400 } }
            })
          )
        }
        return res.end(JSON.stringify({ data: null, errors: [{ message: 'Permission denied.' }] }))
      }
      const m = /^\/v1\/data-import\/reconciliation\/([^/]+)\/$/.exec(req.url ?? '')
      if (!m || req.method !== 'POST' || req.headers.authorization !== 'Token t') {
        res.statusCode = 404
        return res.end(JSON.stringify({ code: 'not_found', detail: 'Not found.' }))
      }
      if (m[1] === 'NOPE') {
        res.statusCode = 404
        return res.end(JSON.stringify({ code: 'import_process_does_not_exist', detail: 'Not found.', errors: [] }))
      }
      const accounts = body.accounts ?? []
      requests.push({ path: req.url!, accounts })
      const differences: unknown[] = []
      let matching = 0
      for (const a of accounts) {
        const h = held.get(a.external_account_number)
        if (!h) {
          differences.push({
            external_account_number: a.external_account_number,
            problem: 'not_created',
            field: null,
            expected: null,
            actual: null
          })
          continue
        }
        const before = differences.length
        for (const l of a.ledgers ?? []) {
          const actual = h.balances[l.ledger_code] ?? null
          if (actual === null || !new Big(actual).eq(new Big(l.balance))) {
            differences.push({
              external_account_number: a.external_account_number,
              problem: 'balance_differs',
              field: `ledgers.${l.ledger_code}.balance`,
              expected: l.balance,
              actual
            })
          }
        }
        for (const [name, value] of Object.entries(a.counts ?? {})) {
          if ((h.counts[name] ?? 0) !== value) {
            differences.push({
              external_account_number: a.external_account_number,
              problem: 'count_differs',
              field: `counts.${name}`,
              expected: value,
              actual: h.counts[name] ?? 0
            })
          }
        }
        if (differences.length === before) matching++
      }
      res.end(JSON.stringify({ checked: accounts.length, matching, differences }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests }
}

const env = { AMIS_API_KEY: 'amk_test' }
const counts = (more: Record<string, number> = {}) => ({
  transactions: 0,
  notes: 0,
  historical_agreements: 0,
  historical_statements: 0,
  billing_documents: 0,
  payment_instructions: 0,
  ...more
})
const account = (n: number, balance = '-10.00') => ({
  import_supplier: 'ACME_ENERGY',
  external_account_number: `EXT-${n}`,
  ledgers: [{ ledger_code: 'ENERGY', ledger_balance: balance }]
})

t.test('sends each account expected balances and counts, prints the summary and writes every difference', async (t) => {
  const dir = tempDir(t)
  const held = new Map<string, Held>([
    ['EXT-1', { balances: { ENERGY: '-10.00' }, counts: counts({ transactions: 1, notes: 1 }) }],
    ['EXT-2', { balances: { ENERGY: '5.0' }, counts: counts() }],
    ['EXT-4', { balances: { ENERGY: '0.30' }, counts: counts({ transactions: 1 }) }]
  ])
  const service = await reconciliationService(t, held)
  const file = inputFile(dir, 'accounts.ndjson', [
    {
      account: account(1, '-11.00'),
      transactions: [{ transaction_id: 'T1', type: 'PAYMENT', amount: '1.00', transaction_date: '2026-01-01' }],
      notes: [{ body: 'hello' }]
    },
    account(2, '5.00'), // a bare account: 5.00 is 5.0
    'not json',
    account(3),
    {
      account: account(4, '0.1'),
      transactions: [{ transaction_id: 'T1', type: 'CREDIT', amount: 0.2, transaction_date: '2026-01-01' }]
    },
    { account: { ...account(5), ledgers: [{ ledger_code: 'ENERGY', ledger_balance: '1' }] }, notes: [{ body: 'x' }] }
  ])
  held.set('EXT-5', { balances: { ENERGY: '2.00' }, counts: counts() })
  const run = await runClient(['reconcile', file, '--url', service.url], env)
  t.equal(run.code, 1, run.stderr)
  t.equal(service.requests.length, 1)
  t.equal(service.requests[0]!.path, '/v1/data-import/reconciliation/ACME_ENERGY/')
  t.same(service.requests[0]!.accounts[0], {
    external_account_number: 'EXT-1',
    ledgers: [{ ledger_code: 'ENERGY', balance: '-10.00' }],
    counts: counts({ transactions: 1, notes: 1 })
  })
  t.same(
    service.requests[0]!.accounts.map((a) => a.external_account_number),
    ['EXT-1', 'EXT-2', 'EXT-3', 'EXT-4', 'EXT-5']
  )
  t.match(run.stdout, /checked: +5\n/)
  t.match(run.stdout, /matching: +3\n/)
  t.match(run.stdout, /not_created: +1\n/)
  t.match(run.stdout, /balance_differs: +1\n/)
  t.match(run.stdout, /count_differs: +1\n/)
  t.match(run.stdout, /not checked: +1 lines? .*: 3\n/)
  t.match(run.stdout, /line 4 +EXT-3 +not_created\n/)
  t.match(run.stdout, /line 6 +EXT-5 +balance_differs +ledgers\.ENERGY\.balance: expected 1\.00, actual 2\.00\n/)
  t.match(run.stdout, /line 6 +EXT-5 +count_differs +counts\.notes: expected 1, actual 0\n/)
  t.notMatch(run.stdout, /§|contract/i)
  const report = join(dir, 'accounts.ndjson.reconcile.ndjson')
  const lines = readFileSync(report, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
  t.same(
    lines.map((l) => [l.line, l.external_account_number, l.problem, l.field]),
    [
      [4, 'EXT-3', 'not_created', null],
      [6, 'EXT-5', 'balance_differs', 'ledgers.ENERGY.balance'],
      [6, 'EXT-5', 'count_differs', 'counts.notes']
    ]
  )
  t.match(run.stdout, /Every difference: .*accounts\.ndjson\.reconcile\.ndjson\n/)

  // Again: a new report beside the first, never over it.
  const again = await runClient(['reconcile', file, '--url', service.url], env)
  t.equal(again.code, 1)
  t.ok(existsSync(join(dir, 'accounts.ndjson.reconcile-2.ndjson')))
  t.equal(readFileSync(report, 'utf8').trim().split('\n').length, 3)
  // A --report that is taken is a usage mistake.
  const taken = await runClient(['reconcile', file, '--url', service.url, '--report', report], env)
  t.equal(taken.code, 2)
  t.match(taken.stderr, /exists already/)
})

t.test('every account matching: exit 0; --supplier names the supplier', async (t) => {
  const dir = tempDir(t)
  const held = new Map<string, Held>([['EXT-1', { balances: { ENERGY: '-10.00' }, counts: counts() }]])
  const service = await reconciliationService(t, held)
  const file = inputFile(dir, 'one.ndjson', [{ ...account(1), import_supplier: undefined }])
  const run = await runClient(['reconcile', file, '--url', service.url, '--supplier', 'OTHER'], env)
  t.equal(run.code, 0, run.stdout + run.stderr)
  t.equal(service.requests[0]!.path, '/v1/data-import/reconciliation/OTHER/')
  t.match(run.stdout, /matching: +1\n/)
  t.match(run.stdout, /no differences/)

  // A supplier the organisation does not have: said so, exit 1.
  const unknown = await runClient(['reconcile', file, '--url', service.url, '--supplier', 'NOPE'], env)
  t.equal(unknown.code, 1)
  t.match(unknown.stderr, /no import supplier NOPE/)
})

t.test('pages of at most 10,000 accounts', async (t) => {
  const dir = tempDir(t)
  const held = new Map<string, Held>()
  for (let n = 1; n <= 10_001; n++) held.set(`EXT-${n}`, { balances: { ENERGY: '-10.00' }, counts: counts() })
  const service = await reconciliationService(t, held)
  const file = join(dir, 'many.ndjson')
  writeFileSync(file, Array.from({ length: 10_001 }, (_, i) => JSON.stringify(account(i + 1))).join('\n') + '\n')
  const run = await runClient(['reconcile', file, '--url', service.url], env)
  t.equal(run.code, 0, run.stderr)
  t.same(
    service.requests.map((r) => r.accounts.length),
    [10_000, 1]
  )
  t.match(run.stdout, /checked: +10001\n/)
})

t.test('usage mistakes: exit 2', async (t) => {
  const dir = tempDir(t)
  t.equal((await runClient(['reconcile', join(dir, 'missing.ndjson')], env)).code, 2)
  const file = inputFile(dir, 'a.ndjson', [account(1)])
  t.equal((await runClient(['reconcile', file, '--team', 'x'], env)).code, 2)
  t.equal((await runClient(['reconcile'], env)).code, 2)
  const help = await runClient(['--help'], env)
  t.match(help.stdout, /reconcile <file\.ndjson>/)
  t.notMatch(help.stdout, /§|contract/i)
})

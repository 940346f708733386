import t from 'tap'
import { generateAccounts, externalNumber } from '../src/cli/migrate/generate.js'
import { countLines, readLines } from '../src/cli/migrate/lines.js'
import { importSetup } from './helpers/accounts.js'
import { generated, inputFile, runClient } from './helpers/migrate.js'
import { tempDir } from './helpers/temp-dir.js'

t.test(
  'every valid generated account passes validate on the real server; every invalid one fails with its code',
  async (t) => {
    const { client } = await importSetup(t)
    const lines = generated(300, 'validate-all', { invalidShare: 0.1, postImportShare: 0.5 })
    const invalid = lines.filter((l) => l.invalid)
    t.equal(invalid.length, 30, 'exactly the share asked for')
    t.ok(new Set(invalid.map((l) => l.invalid)).size >= 6, 'several kinds of fault')
    for (const { line, invalid: fault } of lines) {
      const res = await client.validate((line as any).account)
      if (fault) {
        t.equal(res.statusCode, 400, `${fault} fails`)
        t.ok(
          res.json().errors.some((e: { code: string }) => e.code === fault),
          `${fault} is reported: ${res.body}`
        )
      } else if (res.statusCode !== 200) {
        t.fail(`generated account refused: ${res.body}\n${JSON.stringify(line)}`)
      }
    }
    // Varied shapes: both account kinds, one or two customers, DEPOSIT ledgers, post-import sections.
    const accounts = lines.map((l) => (l.line as any).account)
    t.ok(accounts.some((a) => a.customers?.length === 2) && accounts.some((a) => a.customers?.length === 1))
    t.ok(accounts.some((a) => a.ledgers.length === 2))
    t.ok(accounts.some((a) => a.account_type === 'BUSINESS'))
    for (const section of [
      'notes',
      'transactions',
      'historical_agreements',
      'historical_billing_documents',
      'historical_statements'
    ]) {
      t.ok(
        lines.some((l) => section in l.line),
        `some carry ${section}`
      )
    }
  }
)

t.test('the same seed gives the same lines; another seed other account numbers', async (t) => {
  const options = { count: 40, invalidShare: 0.05, postImportShare: 0.5, supplier: 'ACME_ENERGY', today: '2026-06-15' }
  const a = [...generateAccounts({ ...options, seed: 's1' })]
  const b = [...generateAccounts({ ...options, seed: 's1' })]
  const c = [...generateAccounts({ ...options, seed: 's2' })]
  t.same(a, b)
  const numbers = (lines: typeof a) => lines.map((l) => (l.line as any).account.external_account_number as string)
  t.equal(new Set(numbers(a)).size, 40, 'distinct within a run')
  t.equal(numbers(a).filter((n) => numbers(c).includes(n)).length, 0, 'distinct between seeds')
  t.equal(numbers(a)[0], externalNumber('s1', 0))
  t.match(numbers(a)[0], /^SYN[0-9A-F]{8}-0000001$/)
  // The first accounts do not depend on how many are asked for.
  t.same(
    [...generateAccounts({ ...options, count: 10, seed: 's1' })].map((l) => l.line),
    a.slice(0, 10).map((l) => l.line)
  )
})

t.test('npm run migrate -- generate writes the lines to standard output', async (t) => {
  const run = await runClient(
    ['generate', '25', '--seed', 'cli', '--invalid-share', '0.2', '--as-of', '2026-06-15', '--supplier', 'OTHER_CO'],
    {}
  )
  t.equal(run.code, 0, run.stderr)
  const expected = [
    ...generateAccounts({
      count: 25,
      seed: 'cli',
      invalidShare: 0.2,
      postImportShare: 0.5,
      supplier: 'OTHER_CO',
      today: '2026-06-15'
    })
  ]
  t.same(
    run.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l)),
    expected.map((l) => l.line)
  )
  t.equal(run.stderr, 'generated 25 accounts (5 invalid) for OTHER_CO, seed "cli"\n')

  const unseeded = await runClient(['generate', '2'], {})
  t.match(unseeded.stderr, /seed "[a-z0-9]+" \(pass --seed to repeat\)/)

  for (const argv of [
    ['generate'],
    ['generate', 'ten'],
    ['generate', '5', '--invalid-share', '2'],
    ['generate', '5', '--as-of', 'soon'],
    ['generate', '5', '--team', 'x']
  ]) {
    const bad = await runClient(argv, {})
    t.equal(bad.code, 2, `${argv.join(' ')}: usage error`)
    t.match(bad.stderr, /^error: /)
    t.equal(bad.stdout, '')
  }
})

t.test('the input is read with bounded read-ahead', async (t) => {
  const dir = tempDir(t)
  const lines = generated(400, 'read-ahead').map((l) => l.line)
  const path = inputFile(dir, 'accounts.ndjson', ['', ...lines.slice(0, 200), '   ', ...lines.slice(200)])
  t.equal(await countLines(path), 400, 'blank lines do not count')
  const reader = readLines(path, 8)
  let read = 0
  let last = 0
  for (let next = await reader.next(); next; next = await reader.next()) {
    if (next.text.trim() !== '') read++
    last = next.number
    await new Promise((resolve) => setTimeout(resolve, 1)) // a slow consumer
  }
  t.equal(read, 400)
  t.equal(last, 402, 'line numbers count every line')
  // 8 lines asked for, plus what one 16 KiB chunk holds beyond them (accounts are a few KiB each).
  t.ok(reader.maxQueued <= 8 + 12, `at most ~8 lines read ahead (saw ${reader.maxQueued})`)
})

import t from 'tap'
import { codes, exampleAccount, importSetup } from './helpers/accounts.js'

t.test('the example account validates, stages, dry-runs, creates and reads back', async (t) => {
  const { client } = await importSetup(t)
  const account = exampleAccount()

  const validated = await client.validate(account)
  t.equal(validated.statusCode, 200, validated.body)
  console.log(validated.body)

  const staged = await client.stage(account)
  t.equal(staged.statusCode, 201, staged.body)
  t.same(staged.json(), { import_supplier: 'ACME_ENERGY', external_account_number: 'EXT-000123' })
  const restaged = await client.stage(account)
  t.equal(restaged.statusCode, 200)

  const dry = await client.create('EXT-000123', { dryRun: true })
  t.equal(dry.statusCode, 400, dry.body)
  t.equal(dry.json().code, 'dry_run_rolled_back')

  const created = await client.create('EXT-000123')
  t.equal(created.statusCode, 201, created.body)
  console.log(created.body)

  const status = await client.status('EXT-000123')
  console.log(status.body)
  const summary = await client.summary('EXT-000123')
  console.log(summary.body)
  const again = await client.create('EXT-000123')
  console.log(again.body)
  console.log(codes(again))
})

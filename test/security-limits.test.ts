import t from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { codes, exampleAccount, importedSetup } from './helpers/accounts.js'
import { buildTestApp } from './helpers/app.js'
import { tableCounts } from './helpers/database.js'
import { createTenant } from './helpers/graphql.js'
import { expectStandalone, postImportBodies, routeRecorder, UNREACHABLE_VENDOR } from './helpers/security.js'

/** A refused import job action (a POST route) is recorded in the audit trail: that table is not counted. */
const REFUSALS_RECORDED = ['audit_events']

const LIMIT = 8192

/** A JSON object of exactly `bytes` bytes. */
function jsonOfSize(bytes: number): string {
  const text = JSON.stringify({ padding: '' })
  return JSON.stringify({ padding: 'x'.repeat(bytes - text.length) })
}

t.test('bodies at and past BODY_LIMIT_BYTES on every POST route', async (t) => {
  const routes = routeRecorder()
  const { app, database } = await buildTestApp(t, {
    onRoute: routes.collect,
    env: { BODY_LIMIT_BYTES: String(LIMIT), ...UNREACHABLE_VENDOR }
  })
  const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')
  const posts = routes.all().filter((r) => r.method === 'POST')
  t.ok(posts.length >= 10, `POST routes seen (${posts.length})`)
  const before = await tableCounts(database, REFUSALS_RECORDED)
  for (const route of posts) {
    const send = (payload: string) =>
      app.inject({
        method: 'POST',
        url: route.url,
        payload,
        headers: { 'content-type': 'application/json', authorization: `Token ${acme.token}` }
      })
    t.equal(jsonOfSize(LIMIT).length, LIMIT)
    const at = await send(jsonOfSize(LIMIT))
    t.not(at.statusCode, 413, `${route.url}: ${LIMIT} bytes are read (${at.statusCode})`)
    t.ok(at.statusCode < 500, `${route.url}: at the limit, no server error`)
    expectStandalone(t, await send(jsonOfSize(LIMIT + 1)), 413, 'payload_too_large', `${route.url}: one byte more`)
    expectStandalone(t, await send(jsonOfSize(LIMIT * 20)), 413, 'payload_too_large', `${route.url}: far more`)
    const noToken = await app.inject({
      method: 'POST',
      url: route.url,
      payload: jsonOfSize(LIMIT + 1),
      headers: { 'content-type': 'application/json' }
    })
    const expected =
      route.url === '/graphql' ? ([413, 'payload_too_large'] as const) : ([401, 'not_authenticated'] as const)
    expectStandalone(
      t,
      noToken,
      expected[0],
      expected[1],
      `${route.url}: the token is checked first, on the headers alone (order)`
    )
  }
  t.same(await tableCounts(database, REFUSALS_RECORDED), before, 'nothing written')
})

t.test('arrays and strings at and past their limits', async (t) => {
  const setup = await importedSetup(t, { env: UNREACHABLE_VENDOR })
  const { client, post } = setup
  const account = (changes: Record<string, unknown> = {}) =>
    exampleAccount({ external_account_number: 'EXT-SEC-2', ...changes })
  const has = (res: LightMyRequestResponse, code: string, attr: string) =>
    res.statusCode >= 400 && codes(res).some(([c, a]) => c === code && a === attr)
  const many = <T>(n: number, item: (i: number) => T) => Array.from({ length: n }, (_, i) => item(i))

  t.test('arrays of the account body', async (t) => {
    const base = account()
    const customer = base.customers[0]
    const address = base.supply_addresses[0]
    const point = address.supply_points[0]
    const cases: Array<[string, number, (n: number) => Record<string, unknown>]> = [
      [
        'customers',
        20,
        (n) =>
          account({
            customers: many(n, (i) => ({
              ...customer,
              email: `c${i}@mailbox.org`,
              portfolio_roles: i ? ['READ_ONLY'] : ['ADMIN']
            }))
          })
      ],
      [
        'ledgers',
        2,
        (n) => account({ ledgers: many(n, (i) => ({ ...base.ledgers[0], ledger_code: i ? `L${i}` : 'ENERGY' })) })
      ],
      ['metadata', 100, (n) => account({ metadata: many(n, (i) => ({ key: `k${i}`, value: i })) })],
      [
        'supply_addresses',
        50,
        (n) =>
          account({
            supply_addresses: many(n, (i) => ({
              ...address,
              supply_address: { ...address.supply_address, street_address: `${i} Row` },
              supply_points: [{ ...point, identifier: `12000${i}` }]
            }))
          })
      ],
      [
        'supply_addresses.0.supply_points',
        20,
        (n) =>
          account({
            supply_addresses: [{ ...address, supply_points: many(n, (i) => ({ ...point, identifier: `13000${i}` })) }]
          })
      ],
      [
        'ledgers.0.historical_statement_transactions',
        10000,
        (n) =>
          account({
            ledgers: [
              {
                ...base.ledgers[0],
                historical_statement_transactions: many(n, (i) => ({
                  transaction_id: `H-${i}`,
                  transaction_date: '2024-01-01',
                  amount: '0.01',
                  type: 'CREDIT'
                }))
              }
            ]
          })
      ],
      [
        'ledgers.0.current_statement_transactions',
        10000,
        (n) =>
          account({
            ledgers: [
              {
                ...base.ledgers[0],
                current_statement_transactions: many(n, (i) => ({
                  transaction_id: `C-${i}`,
                  transaction_date: '2024-01-01',
                  amount: '0.01',
                  type: 'CREDIT'
                }))
              }
            ]
          })
      ],
      [
        'supply_addresses.0.supply_points.0.agreements',
        20,
        (n) =>
          account({
            supply_addresses: [
              {
                ...address,
                supply_points: [
                  {
                    ...point,
                    agreements: many(n, (i) => ({
                      effective_from: `2021-03-${String(i + 1).padStart(2, '0')}`,
                      tariff_code: `T${i}`
                    }))
                  }
                ]
              }
            ]
          })
      ]
    ]
    for (const [attr, max, make] of cases) {
      const at = await client.validate(make(max))
      t.notOk(
        has(at, 'max_items', attr),
        `${attr}: ${max} items are allowed (${at.statusCode} ${at.statusCode >= 400 ? JSON.stringify(codes(at).slice(0, 3)) : ''})`
      )
      const past = await client.validate(make(max + 1))
      t.equal(past.statusCode, 400, `${attr}: ${max + 1} items are refused`)
      t.ok(has(past, 'max_items', attr), `${attr}: max_items at ${attr}`)
    }
  })

  t.test('arrays of the post-import bodies', async (t) => {
    const bodies = postImportBodies(setup.ledgerNumber)
    const cases: Array<[string, string, number, (i: number) => unknown]> = [
      ['notes/create/', 'notes', 500, (i) => ({ body: `note ${i}` })],
      [
        'transactions/create/',
        'transactions',
        1000,
        (i) => ({ transaction_id: `LIM-${i}`, transaction_date: '2026-10-02', amount: '0.01', type: 'CREDIT' })
      ],
      [
        'historical-agreements/create/',
        'agreements',
        500,
        (i) => ({
          supply_point_identifier: '1200012345678',
          tariff_code: `T${i}`,
          effective_from: new Date(Date.UTC(2015, 0, 1 + 2 * i)).toISOString().slice(0, 10),
          effective_to: new Date(Date.UTC(2015, 0, 2 + 2 * i)).toISOString().slice(0, 10)
        })
      ],
      [
        'historical-statements/create/',
        'statements',
        1000,
        (i) => ({
          statement_id: `S-${i}`,
          bill_period_from_date: '2025-01-01',
          bill_period_to_date: '2025-01-31',
          issued_date: '2025-02-03',
          gross_amount: '1.00'
        })
      ],
      [
        'historical-billing-documents/create/',
        'historical_billing_documents',
        1000,
        (i) => ({
          billing_document_identifier: `B-${i}`,
          billing_document_type: 'ITEM_BASED',
          issued_date: '2025-04-02'
        })
      ]
    ]
    for (const [path, attr, max, item] of cases) {
      const base = bodies[`/v1/data-import/${path}`]!
      const past = await post(path, { ...base, [attr]: many(max + 1, item) })
      t.equal(past.statusCode, 400, `${path}: ${max + 1} items are refused`)
      t.same(codes(past), [['max_items', attr]], `${path}: exactly max_items at ${attr}`)
      const at = await post(path, { ...base, [attr]: many(max, item) })
      t.equal(at.statusCode, 201, `${path}: ${max} items are taken (${at.body.slice(0, 200)})`)
    }
    const paths = (n: number) => ({ notes: [{ document_paths: many(n, (i) => ({ document_path: `d/${i}.pdf` })) }] })
    t.same(
      codes(await post('notes/create/', paths(21))),
      [['max_items', 'notes.0.document_paths']],
      'document_paths: 21 refused'
    )
    t.equal((await post('notes/create/', paths(20))).statusCode, 201, 'document_paths: 20 taken')
  })

  t.test('strings at and past maxLength, counted in code points', async (t) => {
    const rocket = (n: number) => '🚀'.repeat(n) // two UTF-16 units each: lengths must count code points
    const accountCases: Array<[string, number, (s: string) => Record<string, unknown>]> = [
      ['external_account_number', 128, (s) => account({ external_account_number: s })],
      ['customers.0.given_name', 255, (s) => account({ customers: [{ ...account().customers[0], given_name: s }] })],
      [
        'billing_address.street_address',
        512,
        (s) => account({ billing_address: { ...account().billing_address, street_address: s } })
      ],
      ['metadata.0.key', 1024, (s) => account({ metadata: [{ key: s, value: 1 }] })],
      ['sales_subchannel', 128, (s) => account({ sales_subchannel: s })]
    ]
    for (const [attr, max, make] of accountCases) {
      t.notOk(has(await client.validate(make(rocket(max))), 'max_length', attr), `${attr}: ${max} code points allowed`)
      t.ok(
        has(await client.validate(make(rocket(max + 1))), 'max_length', attr),
        `${attr}: ${max + 1} refused with max_length`
      )
    }
    const postCases: Array<[string, string, number, (s: string) => Record<string, unknown>]> = [
      ['notes/create/', 'notes.0.body', 10000, (s) => ({ notes: [{ body: s }] })],
      [
        'notes/create/',
        'notes.0.document_paths.0.document_path',
        1024,
        (s) => ({ notes: [{ document_paths: [{ document_path: s }] }] })
      ],
      [
        'historical-statements/create/',
        'statements.0.statement_id',
        64,
        (s) => ({
          statements: [
            {
              statement_id: s,
              bill_period_from_date: '2025-01-01',
              bill_period_to_date: '2025-01-31',
              issued_date: '2025-02-03',
              gross_amount: '1.00'
            }
          ]
        })
      ],
      ['payment-instruction/create/', 'reference', 512, (s) => ({ vendor: 'NOPAY', reference: s, type: 'CARD' })]
    ]
    for (const [path, attr, max, make] of postCases) {
      const at = await post(path, make(rocket(max)))
      t.notOk(has(at, 'max_length', attr), `${path} ${attr}: ${max} code points allowed (${at.statusCode})`)
      if (path === 'notes/create/') {
        t.equal(at.statusCode, 201, `${path} ${attr}: ${max} code points taken (${at.body.slice(0, 200)})`)
      }
      const past = await post(path, make(rocket(max + 1)))
      t.equal(past.statusCode, 400, `${path} ${attr}: ${max + 1} refused`)
      t.ok(has(past, 'max_length', attr), `${path} ${attr}: max_length`)
    }
  })
})

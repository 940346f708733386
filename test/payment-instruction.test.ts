import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { sql } from 'drizzle-orm'
import type { LightMyRequestResponse } from 'fastify'
import { openPostgres, type Database } from '../src/db/index.js'
import { ConfigError, loadConfig } from '../src/config.js'
import { codes, exampleAccount, importedSetup, importSetup } from './helpers/accounts.js'
import { freshDatabase, rowsOf, tableCounts, testDatabaseUrl } from './helpers/database.js'
import { asOperator } from './helpers/graphql.js'

const PATH = 'payment-instruction/create/'
const TOKEN = 'vendor-token-0123456789'

const CARD_DETAILS = { brand: 'VISA', last4: '4242', expiry: '12/29', holder_reference: 'H-77' }

/**
 * A payment vendor on loopback. It answers `GET /payment-instructions/<reference>` by reference,
 * requires `Authorization: Bearer <TOKEN>` (401 otherwise) and records every hit.
 */
async function startVendor(t: Test) {
  const hits: Array<{ reference: string; rawPath: string; at: number; authorization: string | undefined }> = []
  const waiting: Array<{ reference: string; calls: number; resolve: () => void }> = []
  const gates = new Map<string, Array<() => void>>()
  const pending = new Set<NodeJS.Timeout>()
  const seen: Record<string, number> = {}
  const state = { switchUp: false }

  const instruction = (reference: string, type: string, status = 'ACTIVE', details: unknown = CARD_DETAILS) => ({
    reference,
    type,
    status,
    details
  })

  function answer(res: ServerResponse, status: number, body?: unknown): void {
    if (res.destroyed) return
    res.writeHead(status, { 'content-type': 'application/json' }).end(body === undefined ? '' : JSON.stringify(body))
  }

  /** Holds a `PI-GATE…` answer until the test releases it. */
  function hold(reference: string, release: () => void): void {
    gates.set(reference, [...(gates.get(reference) ?? []), release])
  }

  function later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      pending.delete(timer)
      fn()
    }, ms)
    pending.add(timer)
  }

  const server = createServer(function vendor(req: IncomingMessage, res: ServerResponse) {
    const match = /^\/payment-instructions\/([^/?#]*)$/.exec(req.url ?? '')
    if (req.method !== 'GET' || !match) return answer(res, 400, { error: 'bad path ' + req.url })
    const reference = decodeURIComponent(match[1]!)
    hits.push({ reference, rawPath: req.url!, at: Date.now(), authorization: req.headers.authorization })
    seen[reference] = (seen[reference] ?? 0) + 1
    for (const w of waiting) if (w.reference === reference && seen[reference]! >= w.calls) w.resolve()
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return answer(res, 401, { error: 'bad credentials' })
    switch (reference) {
      case 'PI-CARD-1':
        return answer(res, 200, instruction(reference, 'CARD'))
      case 'PI-DD-1':
        return answer(
          res,
          200,
          instruction(reference, 'DIRECT_DEBIT', 'ACTIVE', { mandate_id: 'M-1', sort_code: '12-34-56' })
        )
      case 'PI-CANCELLED':
        return answer(res, 200, instruction(reference, 'CARD', 'CANCELLED'))
      case 'PI-WRONG-TYPE':
        return answer(res, 200, instruction(reference, 'DIRECT_DEBIT'))
      case 'PI-FORBIDDEN':
        return answer(res, 403, { error: 'not for you' })
      case 'PI-SLOW':
        return later(2000, () => answer(res, 200, instruction(reference, 'CARD')))
      case 'PI-FLAKY':
        return seen[reference] === 1
          ? answer(res, 503, { error: 'busy' })
          : answer(res, 200, instruction(reference, 'CARD'))
      case 'PI-DOWN':
        return answer(res, 500, { error: 'down' })
      case 'PI-GARBAGE':
        return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>')
      case 'PI-OTHER-REF':
        return answer(res, 200, instruction('PI-SOMETHING-ELSE', 'CARD'))
      case 'PI-SWITCH':
        return state.switchUp ? answer(res, 200, instruction(reference, 'CARD')) : answer(res, 502)
      case 'PI-GATE':
        return hold(reference, () => answer(res, 200, instruction(reference, 'CARD')))
      case 'PI-GATE-DD':
        return hold(reference, () => answer(res, 200, instruction(reference, 'DIRECT_DEBIT')))
      default:
        return answer(res, 404, { error: 'no such instruction' })
    }
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => {
    for (const timer of pending) clearTimeout(timer)
    for (const held of gates.values()) held.forEach((release) => release())
    server.closeAllConnections()
    server.close()
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    hits,
    state,
    /** Hits for one reference. */
    count: (reference: string) => hits.filter((h) => h.reference === reference).length,
    /** Resolves when the vendor has received `calls` calls for `reference`. */
    arrival: (reference: string, calls = 1) =>
      new Promise<void>((resolve) => {
        if ((seen[reference] ?? 0) >= calls) resolve()
        else waiting.push({ reference, calls, resolve })
      }),
    /** Lets the held `PI-GATE…` calls for `reference` answer. */
    release: (reference: string) =>
      gates
        .get(reference)
        ?.splice(0)
        .forEach((release) => release())
  }
}

/** Row counts that a failed request must leave as they were. */
async function stored(database: Database) {
  const counts = await tableCounts(database)
  return { payment_instructions: counts.payment_instructions!, import_events: counts.import_events! }
}

/** Asserts the endpoint's error body: status, top-level code, one entry, and the extra fields. */
function assertFailure(
  t: Test,
  res: LightMyRequestResponse,
  status: number,
  top: string,
  code: string,
  attr: string | null,
  reference: string
) {
  t.equal(res.statusCode, status, res.body)
  const body = res.json()
  t.equal(body.code, top, 'top-level code')
  t.same(codes(res), [[code, attr]], 'one entry with its attr')
  t.equal(body.error_detail, body.errors[0]?.detail, 'error_detail says what went wrong')
  t.type(body.error_detail, 'string')
  t.equal(body.import_supplier, 'ACME_ENERGY')
  t.equal(body.external_account_number, 'EXT-000123')
  t.equal(body.reference, reference)
  if (status >= 500) t.type(body.request_id, 'string', '5xx carry the request id')
}

t.test('payment instruction endpoint', async (t) => {
  const vendor = await startVendor(t)
  const setup = await importedSetup(t, {
    env: {
      PAYMENT_VENDORS: `ACMEPAY=${vendor.url},BADKEY=${vendor.url}`,
      PAYMENT_VENDOR_TOKENS: `ACMEPAY=${TOKEN},BADKEY=not-the-token`,
      PAYMENT_VENDOR_TIMEOUT_MS: '600',
      PAYMENT_VENDOR_RETRIES: '2',
      PAYMENT_VENDOR_BREAKER_WINDOW_SECONDS: '3600'
    }
  })
  const { post, database, client, app } = setup
  const valid = { vendor: 'ACMEPAY', reference: 'PI-CARD-1', type: 'CARD' }

  t.test('schema problems come first (400 invalid_request), without calling the vendor', async (t) => {
    const before = vendor.hits.length
    const cases: Array<[Record<string, unknown>, Array<[string, string | null]>]> = [
      [{ ...valid, vendor: 'NOPAY' }, [['invalid_choice', 'vendor']]],
      [{ ...valid, vendor: ' ' }, [['blank', 'vendor']]],
      [{ ...valid, type: 'CHEQUE' }, [['invalid_choice', 'type']]],
      [{ ...valid, reference: 'r'.repeat(513) }, [['max_length', 'reference']]],
      [{ vendor: 'ACMEPAY', type: 'CARD' }, [['required', 'reference']]],
      [{ ...valid, reference: null }, [['null', 'reference']]],
      [{ ...valid, mandate: 'x' }, [['unexpected_field', 'mandate']]],
      // schema before the account: an unknown pair with a bad vendor is still a 400
      [{ ...valid, vendor: 'NOPAY', external_account_number: 'EXT-404' }, [['invalid_choice', 'vendor']]]
    ]
    for (const [fields, expected] of cases) {
      const res = await post(PATH, fields)
      t.equal(res.statusCode, 400, JSON.stringify(fields))
      t.equal(res.json().code, 'invalid_request')
      t.same(codes(res), expected, JSON.stringify(fields))
    }
    t.equal(
      (await post(PATH, { ...valid, reference: 'r'.repeat(512), vendor: 'NOPAY' })).json().errors.length,
      1,
      '512 code points are allowed'
    )
    t.equal(
      (await post(PATH, { ...valid, vendor: 'NOPAY' })).json().errors[0].detail,
      'Payment vendor NOPAY is not configured on this service; configured: ACMEPAY, BADKEY.',
      'an unknown vendor: the detail lists the configured ones'
    )
    t.equal(vendor.hits.length, before, 'the vendor was not called')
  })

  t.test('404 for an unknown pair and for a staged account not created', async (t) => {
    const staged = await client.stage(exampleAccount({ external_account_number: 'EXT-000999' }))
    t.equal(staged.statusCode, 201, staged.body)
    const before = vendor.hits.length
    for (const [external, code] of [
      ['EXT-404', 'import_process_does_not_exist'],
      ['EXT-000999', 'account_not_found']
    ] as const) {
      const res = await post(PATH, { ...valid, external_account_number: external })
      t.equal(res.statusCode, 404, res.body)
      t.equal(res.json().code, 'not_found')
      t.same(codes(res), [[code, null]])
    }
    const unknown = await post(PATH, { ...valid, import_supplier: 'OTHER_ENERGY' })
    t.equal(unknown.statusCode, 404, 'an unknown supplier')
    t.same(codes(unknown), [['import_process_does_not_exist', null]])
    t.equal(vendor.hits.length, before, 'the vendor was not called')
  })

  t.test('vendor answers that refuse the instruction: 400 at reference, nothing stored', async (t) => {
    const cases: Array<[string, string, string]> = [
      ['PI-MISSING', 'CARD', 'payment_instruction_not_found'],
      ['PI-CANCELLED', 'CARD', 'payment_instruction_not_active'],
      ['PI-WRONG-TYPE', 'CARD', 'payment_instruction_type_mismatch']
    ]
    for (const [reference, type, code] of cases) {
      const before = await stored(database)
      const res = await post(PATH, { vendor: 'ACMEPAY', reference, type })
      assertFailure(t, res, 400, 'invalid_request', code, 'reference', reference)
      t.equal(vendor.count(reference), 1, `${reference}: asked once (a clear answer is not retried)`)
      t.same(await stored(database), before, `${reference}: nothing stored`)
    }
  })

  t.test('not active and of the other type: both reported', async (t) => {
    const res = await post(PATH, { vendor: 'ACMEPAY', reference: 'PI-CANCELLED', type: 'DIRECT_DEBIT' })
    t.equal(res.statusCode, 400, res.body)
    t.same(codes(res), [
      ['payment_instruction_not_active', 'reference'],
      ['payment_instruction_type_mismatch', 'reference']
    ])
    t.equal(res.json().error_detail, res.json().errors[0].detail)
  })

  t.test('the reference is sent percent-encoded as one path segment', async (t) => {
    const reference = 'a/b?c#d %e/ü'
    const res = await post(PATH, { vendor: 'ACMEPAY', reference, type: 'CARD' })
    assertFailure(t, res, 400, 'invalid_request', 'payment_instruction_not_found', 'reference', reference)
    const hit = vendor.hits.find((h) => h.reference === reference)
    t.equal(hit?.rawPath, '/payment-instructions/a%2Fb%3Fc%23d%20%25e%2F%C3%BC')
    t.equal(hit?.authorization, `Bearer ${TOKEN}`, 'the vendor token is sent')
    const before = vendor.hits.length
    const dots = await post(PATH, { vendor: 'ACMEPAY', reference: '..', type: 'CARD' })
    assertFailure(t, dots, 400, 'invalid_request', 'payment_instruction_not_found', 'reference', '..')
    t.equal(vendor.hits.length, before, '`..` cannot name an instruction: the vendor is not asked')
  })

  t.test('credentials refused (401, 403): 400 payment_vendor_unavailable at null, not retried', async (t) => {
    for (const [vendorCode, reference] of [
      ['BADKEY', 'PI-CARD-1'],
      ['ACMEPAY', 'PI-FORBIDDEN']
    ] as const) {
      const before = await stored(database)
      const hits = vendor.hits.length
      const res = await post(PATH, { vendor: vendorCode, reference, type: 'CARD' })
      assertFailure(t, res, 400, 'invalid_request', 'payment_vendor_unavailable', null, reference)
      t.equal(vendor.hits.length, hits + 1, `${vendorCode} ${reference}: one call`)
      t.same(await stored(database), before, 'nothing stored')
    }
  })

  t.test('a timeout on every attempt: 500 payment_vendor_error after the retries', async (t) => {
    const before = await stored(database)
    const started = Date.now()
    const res = await post(PATH, { vendor: 'ACMEPAY', reference: 'PI-SLOW', type: 'CARD' })
    assertFailure(t, res, 500, 'server_error', 'payment_vendor_error', null, 'PI-SLOW')
    t.equal(vendor.count('PI-SLOW'), 3, 'first attempt and two retries')
    t.ok(Date.now() - started >= 3 * 600, 'each attempt waited for its timeout')
    const at = vendor.hits.filter((h) => h.reference === 'PI-SLOW').map((h) => h.at)
    t.ok(at[1]! - at[0]! < 1500 && at[2]! - at[1]! < 1500, 'each attempt gave up long before the 2 s answer')
    t.same(await stored(database), before, 'nothing stored')
  })

  t.test('5xx on every attempt: 500 payment_vendor_error, retried with growing backoff', async (t) => {
    const before = await stored(database)
    const res = await post(PATH, { vendor: 'ACMEPAY', reference: 'PI-DOWN', type: 'CARD' })
    assertFailure(t, res, 500, 'server_error', 'payment_vendor_error', null, 'PI-DOWN')
    const at = vendor.hits.filter((h) => h.reference === 'PI-DOWN').map((h) => h.at)
    t.equal(at.length, 3, 'first attempt and two retries')
    t.ok(at[1]! - at[0]! >= 90, `first backoff ≥ 100 ms (was ${at[1]! - at[0]!})`)
    t.ok(at[2]! - at[1]! >= 190, `second backoff ≥ 200 ms (was ${at[2]! - at[1]!})`)
    t.same(await stored(database), before, 'nothing stored')
  })

  t.test('an answer that is not the instruction asked for: 500 payment_vendor_error, not retried', async (t) => {
    for (const reference of ['PI-GARBAGE', 'PI-OTHER-REF']) {
      const before = await stored(database)
      const res = await post(PATH, { vendor: 'ACMEPAY', reference, type: 'CARD' })
      assertFailure(t, res, 500, 'server_error', 'payment_vendor_error', null, reference)
      t.equal(vendor.count(reference), 1, `${reference}: asked once`)
      t.same(await stored(database), before, 'nothing stored')
    }
  })

  t.test('5xx once then ACTIVE: retried, stored with the vendor details, one event', async (t) => {
    const before = await stored(database)
    const res = await post(PATH, { vendor: 'ACMEPAY', reference: 'PI-FLAKY', type: 'CARD' })
    t.equal(res.statusCode, 201, res.body)
    t.same(res.json(), { service_account_number: setup.serviceAccountNumber, reference: 'PI-FLAKY' })
    t.equal(vendor.count('PI-FLAKY'), 2, 'the 503 was retried once')
    t.same(await stored(database), {
      payment_instructions: before.payment_instructions + 1,
      import_events: before.import_events + 1
    })
    const rows = rowsOf<Record<string, unknown>>(
      await database.db.execute(sql`select vendor, reference, type, status, details from payment_instructions`)
    )
    t.same(rows, [{ vendor: 'ACMEPAY', reference: 'PI-FLAKY', type: 'CARD', status: 'ACTIVE', details: CARD_DETAILS }])
    const [event] = rowsOf<{ type: string }>(
      await database.db.execute(sql`select type from import_events order by id desc limit 1`)
    )
    t.equal(event?.type, 'POST_IMPORT_WRITE')
  })

  t.test('repeating a success: 201 again, nothing new, the vendor is not asked again', async (t) => {
    const before = await stored(database)
    const hits = vendor.hits.length
    const res = await post(PATH, { vendor: 'ACMEPAY', reference: 'PI-FLAKY', type: 'CARD' })
    t.equal(res.statusCode, 201, res.body)
    t.same(res.json(), { service_account_number: setup.serviceAccountNumber, reference: 'PI-FLAKY' })
    t.same(await stored(database), before, 'no row, no event')
    t.equal(vendor.hits.length, hits)
  })

  t.test('the same reference with the other type: type mismatch', async (t) => {
    const before = await stored(database)
    const res = await post(PATH, { vendor: 'ACMEPAY', reference: 'PI-FLAKY', type: 'DIRECT_DEBIT' })
    assertFailure(t, res, 400, 'invalid_request', 'payment_instruction_type_mismatch', 'reference', 'PI-FLAKY')
    t.same(await stored(database), before)
  })

  t.test('a second, different active instruction: account_already_has_active_instruction', async (t) => {
    const before = await stored(database)
    for (const fields of [
      { vendor: 'ACMEPAY', reference: 'PI-DD-1', type: 'DIRECT_DEBIT' },
      { vendor: 'BADKEY', reference: 'PI-FLAKY', type: 'CARD' }
    ]) {
      const res = await post(PATH, fields)
      assertFailure(
        t,
        res,
        400,
        'invalid_request',
        'account_already_has_active_instruction',
        'reference',
        fields.reference
      )
    }
    t.same(await stored(database), before, 'nothing stored')
  })

  t.test('the account summary counts the instruction', async (t) => {
    const res = await client.summary('EXT-000123')
    t.equal(res.statusCode, 200, res.body)
    t.equal(res.json().counts.payment_instructions, 1)
  })

  t.test('a Paused supplier: 400 import_supplier_migration_not_ongoing before any vendor call', async (t) => {
    const status = (s: string) =>
      asOperator(app, `mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: ${s}}) { code } }`)
    await status('Paused')
    t.teardown(() => status('Ongoing'))
    const before = await stored(database)
    const hits = vendor.hits.length
    const res = await post(PATH, { vendor: 'ACMEPAY', reference: 'PI-CARD-1', type: 'CARD' })
    t.equal(res.statusCode, 400, res.body)
    t.equal(res.json().code, 'invalid_request')
    t.same(codes(res), [['import_supplier_migration_not_ongoing', 'import_supplier']])
    t.equal(vendor.hits.length, hits, 'the vendor was not called')
    t.same(await stored(database), before)
  })
})

t.test('the circuit breaker opens after a window of failures and closes again', async (t) => {
  const vendor = await startVendor(t)
  const { post, database } = await importedSetup(t, {
    env: {
      PAYMENT_VENDORS: `ACMEPAY=${vendor.url}`,
      PAYMENT_VENDOR_TOKENS: `ACMEPAY=${TOKEN}`,
      PAYMENT_VENDOR_TIMEOUT_MS: '300',
      PAYMENT_VENDOR_RETRIES: '0',
      PAYMENT_VENDOR_BREAKER_WINDOW_SECONDS: '1'
    }
  })
  const call = () => post(PATH, { vendor: 'ACMEPAY', reference: 'PI-SWITCH', type: 'CARD' })
  const before = await stored(database)

  // Failures within less than a window: still called.
  assertFailure(t, await call(), 500, 'server_error', 'payment_vendor_error', null, 'PI-SWITCH')
  assertFailure(t, await call(), 500, 'server_error', 'payment_vendor_error', null, 'PI-SWITCH')
  t.equal(vendor.count('PI-SWITCH'), 2)
  // Still failing a window later: this call opens the breaker.
  await sleep(1100)
  assertFailure(t, await call(), 500, 'server_error', 'payment_vendor_error', null, 'PI-SWITCH')
  t.equal(vendor.count('PI-SWITCH'), 3)
  // Open: refused without calling the vendor, even once the vendor is back.
  assertFailure(t, await call(), 400, 'invalid_request', 'payment_vendor_unavailable', null, 'PI-SWITCH')
  t.equal(vendor.count('PI-SWITCH'), 3, 'not called while open')
  // After the window, one trial call; it fails, so the breaker opens again at once.
  await sleep(1100)
  assertFailure(t, await call(), 500, 'server_error', 'payment_vendor_error', null, 'PI-SWITCH')
  t.equal(vendor.count('PI-SWITCH'), 4, 'the trial call')
  vendor.state.switchUp = true
  assertFailure(t, await call(), 400, 'invalid_request', 'payment_vendor_unavailable', null, 'PI-SWITCH')
  t.equal(vendor.count('PI-SWITCH'), 4, 'open again after the failed trial')
  t.same(await stored(database), before, 'nothing stored by any failure')
  // A window later the trial succeeds: closed, stored.
  await sleep(1100)
  const res = await call()
  t.equal(res.statusCode, 201, res.body)
  t.equal(vendor.count('PI-SWITCH'), 5)
  t.same(await stored(database), { payment_instructions: 1, import_events: before.import_events + 1 })
})

t.test('no database transaction or connection is held while the vendor answers', async (t) => {
  const vendor = await startVendor(t)
  // On PostgreSQL: a pool of ONE connection, so a held connection would block every other request.
  let small: Database | undefined
  if (testDatabaseUrl) {
    const fresh = await freshDatabase()
    small = await openPostgres(fresh.url!, 1)
    // Registered before the app's own teardown, so it runs after the app is closed.
    t.teardown(async () => {
      await small!.close()
      await fresh.database.close()
      await fresh.drop()
    })
  }
  const setup = await importedSetup(t, {
    ...(small ? { database: small } : {}),
    env: {
      PAYMENT_VENDORS: `ACMEPAY=${vendor.url}`,
      PAYMENT_VENDOR_TOKENS: `ACMEPAY=${TOKEN}`,
      PAYMENT_VENDOR_TIMEOUT_MS: '10000',
      DATABASE_POOL_SIZE: '1'
    }
  })
  const { post, client, database } = setup
  const before = await stored(database)
  // Two identical requests and a different one, all past the early check and waiting for the vendor.
  const arrived = Promise.all([vendor.arrival('PI-GATE', 2), vendor.arrival('PI-GATE-DD')])
  let settled = 0
  const card = [1, 2].map(() =>
    post(PATH, { vendor: 'ACMEPAY', reference: 'PI-GATE', type: 'CARD' }).finally(() => {
      settled++
    })
  )
  const debit = post(PATH, { vendor: 'ACMEPAY', reference: 'PI-GATE-DD', type: 'DIRECT_DEBIT' }).finally(() => {
    settled++
  })
  await arrived // the vendor holds its answers from here until `release`

  const within = <T>(ms: number, p: Promise<T>) => Promise.race([p, sleep(ms).then(() => 'timed out' as const)])
  const status = await within(5000, client.status('EXT-000123'))
  t.not(status, 'timed out', 'a status read completes while the vendor calls are in flight')
  if (status !== 'timed out') t.equal(status.statusCode, 200, status.body)
  const note = await within(5000, post('notes/create/', { notes: [{ body: 'written during the vendor call' }] }))
  t.not(note, 'timed out', 'a write to the same account (its row lock) completes too')
  if (note !== 'timed out') t.equal(note.statusCode, 201, note.body)
  t.equal(settled, 0, 'the payment instruction requests were still waiting for the vendor')

  // The identical pair both succeed with one row; the other then fails the re-check in the transaction.
  vendor.release('PI-GATE')
  for (const res of await Promise.all(card)) {
    t.equal(res.statusCode, 201, res.body)
    t.same(res.json(), { service_account_number: setup.serviceAccountNumber, reference: 'PI-GATE' })
  }
  vendor.release('PI-GATE-DD')
  assertFailure(
    t,
    await debit,
    400,
    'invalid_request',
    'account_already_has_active_instruction',
    'reference',
    'PI-GATE-DD'
  )
  t.equal(vendor.count('PI-GATE-DD'), 1, 'the vendor was asked before the account had an instruction')
  t.same(
    await stored(database),
    { payment_instructions: 1, import_events: before.import_events + 2 },
    'one instruction; events: it and the note'
  )
  t.equal((await client.summary('EXT-000123')).json().counts.payment_instructions, 1)
})

t.test('configuration of the vendor calls', async (t) => {
  const defaults = loadConfig({})
  t.same(
    [
      defaults.paymentVendorTokens,
      defaults.paymentVendorTimeoutMs,
      defaults.paymentVendorRetries,
      defaults.paymentVendorBreakerWindowSeconds
    ],
    [{}, 3000, 2, 30]
  )
  const c = loadConfig({
    PAYMENT_VENDORS: 'STRIPE=https://a.test,ADYEN=https://b.test',
    PAYMENT_VENDOR_TOKENS: 'STRIPE=sk_live_ab=c, ADYEN=t0k'
  })
  t.same(c.paymentVendorTokens, { STRIPE: 'sk_live_ab=c', ADYEN: 't0k' })
  for (const [tokens, problem] of [
    ['OTHER=secret-1', /OTHER, which is not in PAYMENT_VENDORS/],
    ['STRIPE', /CODE=token/],
    ['STRIPE=a b', /CODE=token/],
    ['STRIPE=x,STRIPE=y', /twice/]
  ] as const) {
    try {
      loadConfig({ PAYMENT_VENDORS: 'STRIPE=https://a.test', PAYMENT_VENDOR_TOKENS: tokens })
      t.fail(`${tokens} should be refused`)
    } catch (err) {
      t.type(err, ConfigError)
      t.match((err as Error).message, problem)
      t.notMatch((err as Error).message, /secret-1/, 'the token is not in the message')
    }
  }
  for (const env of [
    { PAYMENT_VENDOR_TIMEOUT_MS: '0' },
    { PAYMENT_VENDOR_RETRIES: '-1' },
    { PAYMENT_VENDOR_BREAKER_WINDOW_SECONDS: '0' }
  ]) {
    t.throws(() => loadConfig(env), ConfigError, Object.keys(env)[0]!)
  }
})

t.test('with no vendor configured every vendor code is invalid_choice', async (t) => {
  const { app, tenant } = await importSetup(t)
  const res = await app.inject({
    method: 'POST',
    url: `/v1/data-import/${PATH}`,
    headers: { authorization: `Token ${tenant.token}` },
    payload: {
      import_supplier: 'ACME_ENERGY',
      external_account_number: 'EXT-000123',
      vendor: 'ACMEPAY',
      reference: 'PI-CARD-1',
      type: 'CARD'
    }
  })
  t.equal(res.statusCode, 400, res.body)
  t.equal(res.json().code, 'invalid_request')
  t.same(codes(res), [['invalid_choice', 'vendor']])
  t.equal(
    res.json().errors[0].detail,
    'Payment vendor ACMEPAY is not configured on this service; configured: none.',
    'the detail names the vendor and says none is configured'
  )
  const blank = await app.inject({
    method: 'POST',
    url: `/v1/data-import/${PATH}`,
    headers: { authorization: `Token ${tenant.token}` },
    payload: {
      import_supplier: 'ACME_ENERGY',
      external_account_number: 'EXT-000123',
      vendor: ' ',
      reference: 'r',
      type: 'CARD'
    }
  })
  t.same(codes(blank), [['blank', 'vendor']], 'a blank vendor is blank, as with vendors configured')
})

import t from 'tap'
import { connect, type AddressInfo } from 'node:net'
import { exampleAccount, importedSetup } from './helpers/accounts.js'
import { tableCounts } from './helpers/database.js'
import { operatorToken } from './helpers/graphql.js'
import { postImportBodies, routeRecorder, UNREACHABLE_VENDOR } from './helpers/security.js'
import { Type } from 'typebox'
import { shapeProblem } from '../src/plugins/bodies.js'
import { compileBody } from '../src/validation.js'
import { waitFor } from './helpers/wait.js'

/** A refused import job action (a POST route) is recorded in the audit trail: that table is not counted. */
const REFUSALS_RECORDED = ['audit_events']

/**
 * Bodies: a caller without a token is answered before its body is read; bodies must be UTF-8 and
 * of a sane shape; what a body costs to judge stays close to what it costs to parse.
 */

/** Counts JSON.parse calls on texts of at least `minLength` characters while `fn` runs. */
async function countingParses<T>(minLength: number, fn: () => Promise<T>): Promise<{ result: T; parses: number }> {
  const original = JSON.parse
  let parses = 0
  JSON.parse = function countedParse(text: string, reviver?: Parameters<typeof JSON.parse>[1]) {
    if (typeof text === 'string' && text.length >= minLength) parses++
    return original(text, reviver)
  }
  try {
    return { result: await fn(), parses }
  } finally {
    JSON.parse = original
  }
}

/** A JSON object of `keys` keys, about 16 bytes each. */
const manyKeys = (keys: number) => '{' + Array.from({ length: keys }, (_, i) => `"k${i}":${i}`).join(',') + '}'

const invalidBody = (res: { statusCode: number; json(): any }) =>
  res.statusCode === 400 &&
  res.json().code === 'invalid_request' &&
  res.json().errors.length === 1 &&
  res.json().errors[0].code === 'invalid' &&
  res.json().errors[0].attr === null

t.test('shapeProblem: depth and keys per object, outside strings only', async (t) => {
  const bytes = (text: string) => Buffer.from(text)
  const nest = (n: number) => '['.repeat(n) + ']'.repeat(n)
  t.equal(shapeProblem(bytes(nest(32))), undefined, '32 levels')
  t.match(shapeProblem(bytes(nest(33))), /deeper than 32 levels/, '33 levels')
  t.equal(shapeProblem(bytes(`{"a":${nest(31)}}`)), undefined, 'an object counts as a level: 1 + 31')
  t.match(shapeProblem(bytes(`{"a":${nest(32)}}`)), /deeper/)
  t.equal(shapeProblem(bytes(manyKeys(1000))), undefined, '1,000 keys')
  t.match(shapeProblem(bytes(manyKeys(1001))), /more than 1000 keys/, '1,001 keys')
  t.equal(
    shapeProblem(bytes(`[${Array(5000).fill(manyKeys(1000)).join(',')}]`)),
    undefined,
    'keys are counted per object'
  )
  t.equal(
    shapeProblem(bytes(JSON.stringify({ a: '[[[[:::{{{"\\"'.repeat(100), b: '\\"[' }))),
    undefined,
    'brackets, colons and escaped quotes inside strings are text'
  )
  t.equal(
    shapeProblem(bytes(JSON.stringify({ a: 'é漢字🚀'.repeat(50), b: [[['x']]] }))),
    undefined,
    'multi-byte characters'
  )
  t.equal(
    shapeProblem(bytes(`{"a":"\\\\"}${nest(40)}`)),
    'The body is nested deeper than 32 levels.',
    'an escaped backslash ends before the quote'
  )
})

t.test('a caller without a token is answered 401 before its body is read or parsed', async (t) => {
  const { app } = await importedSetup(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as AddressInfo).port
  const body = manyKeys(610_000)
  t.ok(body.length > 10_000_000, `a body of ${body.length} bytes`)
  const parseStarted = performance.now()
  JSON.parse(body)
  const parseMs = performance.now() - parseStarted
  const { result, parses } = await countingParses(
    1_000_000,
    () =>
      new Promise<{ response: string; ms: number }>((resolve) => {
        const started = performance.now()
        const socket = connect(port, '127.0.0.1')
        let response = ''
        socket.on('data', (chunk) => {
          response += chunk.toString()
        })
        socket.on('error', () => {}) // the server closes while the body is still being sent
        socket.on('close', () => resolve({ response, ms: performance.now() - started }))
        socket.write(
          'POST /v1/data-import/notes/create/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
            `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`
        )
        socket.write(body)
      })
  )
  t.match(result.response, /^HTTP\/1\.1 401 /, '401')
  t.match(result.response, /\r\nconnection: close\r\n/i, 'with Connection: close')
  t.match(result.response, /"code":"not_authenticated"/)
  t.equal(parses, 0, 'the body was never parsed')
  t.ok(
    result.ms < parseMs,
    `answered and closed in ${Math.round(result.ms)} ms, less than parsing the body takes (${Math.round(parseMs)} ms)`
  )
})

t.test(
  'a client that asks before sending (Expect: 100-continue) is told to go on only once its token is accepted',
  async (t) => {
    const { app, tenant, ref } = await importedSetup(t)
    await app.listen({ host: '127.0.0.1', port: 0 })
    const port = (app.server.address() as AddressInfo).port
    const body = JSON.stringify({ ...ref, notes: [{ body: 'Asked first.' }] })
    /** Sends the headers, waits, then the body only if told to go on; the text the server sent. */
    const ask = (authorization: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(port, '127.0.0.1')
        let response = ''
        socket.on('error', () => {})
        socket.on('data', (chunk) => {
          response += chunk.toString()
          if (/^HTTP\/1\.1 100 /.test(response) && !response.includes('\r\n\r\nHTTP')) socket.write(body)
          if (/\r\n\r\n\{.*\}$/s.test(response.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ''))) socket.end()
        })
        socket.on('close', () => resolve(response))
        socket.write(
          `POST /v1/data-import/notes/create/ HTTP/1.1\r\nHost: x\r\n${authorization}Content-Type: application/json\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`
        )
      })
    const refused = await ask('')
    t.match(refused, /^HTTP\/1\.1 401 /, 'without a token: 401 straight away, never 100 Continue')
    const accepted = await ask(`Authorization: Bearer ${tenant.token}\r\n`)
    t.match(
      accepted,
      /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /,
      'with one: 100 Continue, then the body is sent and answered'
    )
  }
)

t.test('bodies that are not UTF-8 are refused on every POST route, and nothing is stored', async (t) => {
  const routes = routeRecorder()
  const setup = await importedSetup(t, { onRoute: routes.collect, env: UNREACHABLE_VENDOR })
  const { app, database, tenant } = setup
  const operator = await operatorToken(app)
  const ref = { import_supplier: 'ACME_ENERGY', external_account_number: 'EXT-000123' }
  const account = exampleAccount({ external_account_number: 'EXT-UTF' })
  // Each body valid but for the bytes put into the string field named here.
  const requests: Record<string, [unknown, string]> = {
    ...Object.fromEntries(
      Object.entries(postImportBodies(setup.ledgerNumber)).map(([url, fields]) => [url, [{ ...ref, ...fields }, '']])
    ),
    '/v1/data-import/validate-account/': [account, 'given_name'],
    '/v1/data-import/account-import-process/create-or-update/': [account, 'given_name'],
    '/v1/data-import/account-import-process/process/': [
      { external_account_number: 'EXT-UTF', import_supplier_code: 'ACME_ENERGY', operations_team_name: 'Migrations' },
      'operations_team_name'
    ],
    '/v1/data-import/batches/': [
      {
        import_supplier: 'ACME_ENERGY',
        operations_team_name: 'Migrations',
        accounts: [{ account, notes: [{ body: 'Moved.' }] }]
      },
      'body'
    ],
    '/v1/data-import/import-jobs/': [
      { import_supplier: 'ACME_ENERGY', operations_team_name: 'Migrations' },
      'operations_team_name'
    ],
    '/v1/data-import/reconciliation/:supplier/': [
      { accounts: [{ external_account_number: 'EXT-000123', ledgers: [{ ledger_code: 'ENERGY', balance: '1.00' }] }] },
      'ledger_code'
    ],
    // Start and cancel take no body: one sent is still read, and refused.
    '/v1/data-import/import-jobs/:id/start/': [{ note: 'x' }, 'note'],
    '/v1/data-import/import-jobs/:id/cancel/': [{ note: 'x' }, 'note'],
    '/graphql': [
      { query: 'mutation($n: String!) { createOrganisation(input: {name: $n}) { id } }', variables: { n: 'Bad' } },
      'n'
    ]
  }
  const fieldOf: Record<string, string> = {
    '/v1/data-import/notes/create/': 'body',
    '/v1/data-import/transactions/create/': 'transaction_id',
    '/v1/data-import/historical-agreements/create/': 'tariff_code',
    '/v1/data-import/historical-billing-documents/create/': 'billing_document_identifier',
    '/v1/data-import/historical-statements/create/': 'statement_id',
    '/v1/data-import/payment-instruction/create/': 'reference'
  }
  const posts = routes.all().filter((r) => r.method === 'POST')
  t.ok(posts.length >= 11, `POST routes seen (${posts.length})`)
  const before = await tableCounts(database, REFUSALS_RECORDED)
  for (const { url } of posts) {
    const [body, named] = requests[url] ?? [{}, '']
    const field = named || fieldOf[url]
    const text = JSON.stringify(body)
    const at = field ? text.indexOf(`"${field}":"`) + field.length + 4 : -1
    t.ok(at > 0, `${url}: a string ${field} to corrupt`)
    // A Latin-1 "é" followed by a stray continuation byte: not UTF-8.
    const payload = Buffer.concat([
      Buffer.from(text.slice(0, at)),
      Buffer.from([0xe9, 0x80]),
      Buffer.from(text.slice(at))
    ])
    const authorization = url === '/graphql' ? `Bearer ${operator}` : `Bearer ${tenant.token}`
    const res = await app.inject({
      method: 'POST',
      url,
      payload,
      headers: { 'content-type': 'application/json', authorization }
    })
    t.ok(
      invalidBody(res),
      `${url}: 400 invalid_request, one invalid at null (${res.statusCode} ${res.body.slice(0, 160)})`
    )
  }
  t.same(await tableCounts(database, REFUSALS_RECORDED), before, 'nothing stored')
})

t.test(
  'pathological shapes are refused before validation, and judging a body costs little more than parsing it',
  async (t) => {
    const { app, tenant } = await importedSetup(t)
    const post = (url: string, payload: string) =>
      app.inject({
        method: 'POST',
        url: `/v1/data-import/${url}`,
        payload,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${tenant.token}` }
      })
    const account = exampleAccount({ external_account_number: 'EXT-SHAPE' })
    const nest = (n: number): unknown => (n === 0 ? 1 : [nest(n - 1)])
    // validate-account's body is level 1, metadata 2, its item 3: a value there may be 29 levels deep.
    const deep = (levels: number) => JSON.stringify({ ...account, metadata: [{ key: 'deep', value: nest(levels) }] })
    t.equal((await post('validate-account/', deep(29))).statusCode, 200, 'a body 32 levels deep is judged as usual')
    t.ok(invalidBody(await post('validate-account/', deep(30))), 'one 33 levels deep: 400 invalid at null')
    const keys = (n: number) =>
      JSON.stringify({
        ...account,
        metadata: [{ key: 'k', value: Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])) }]
      })
    t.equal((await post('validate-account/', keys(1000))).statusCode, 200, 'an object of 1,000 keys is judged as usual')
    t.ok(invalidBody(await post('validate-account/', keys(1001))), 'one of 1,001 keys: 400 invalid at null')

    const item = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i]))
    const shapes: Array<[string, string, string]> = [
      ['one object of 600,000 keys', 'notes/create/', manyKeys(600_000)],
      [
        '600 objects of 1,000 unexpected keys',
        'validate-account/',
        JSON.stringify({ ...account, metadata: Array.from({ length: 600 }, () => item) })
      ],
      [
        '600 notes of 1,000 unexpected keys',
        'notes/create/',
        JSON.stringify({
          import_supplier: 'ACME_ENERGY',
          external_account_number: 'EXT-000123',
          notes: Array.from({ length: 600 }, () => item)
        })
      ]
    ]
    for (const [what, url, text] of shapes) {
      let parseMs = Infinity
      let answerMs = Infinity
      let res
      // CPU time of this process (the app runs in it), best of three, side by side: what the body
      // costs the server, without the waits for a database that other tests keep busy.
      const cpuMs = (since: NodeJS.CpuUsage) => {
        const used = process.cpuUsage(since)
        return (used.user + used.system) / 1000
      }
      for (let i = 0; i < 3; i++) {
        const parseStarted = process.cpuUsage()
        JSON.parse(text)
        parseMs = Math.min(parseMs, cpuMs(parseStarted))
        const started = process.cpuUsage()
        res = await post(url, text)
        answerMs = Math.min(answerMs, cpuMs(started))
      }
      t.equal(res!.statusCode, 400, `${what}: 400`)
      t.ok(res!.json().errors.length <= 100, `${what}: at most 100 errors (${res!.json().errors.length})`)
      t.ok(
        answerMs <= 2 * parseMs + 250,
        `${what}: answered in ${Math.round(answerMs)} ms of CPU; JSON.parse alone takes ${Math.round(parseMs)} ms`
      )
    }
  }
)

t.test(
  'validation stops building errors at 1,000; below that, the answer is the first 100 of all in sort order',
  async (t) => {
    const { app, tenant } = await importedSetup(t)
    const post = (payload: unknown) =>
      app.inject({
        method: 'POST',
        url: '/v1/data-import/validate-account/',
        payload: payload as object,
        headers: { authorization: `Bearer ${tenant.token}` }
      })
    const account = exampleAccount({ external_account_number: 'EXT-CAP' })
    const tx = (i: number, amount: unknown) => ({
      transaction_id: `C-${i}`,
      transaction_date: '2026-10-02',
      amount,
      type: 'CREDIT'
    })
    const many = (n: number) => ({
      ...account,
      ledgers: [
        { ...account.ledgers[0], current_statement_transactions: Array.from({ length: n }, (_, i) => tx(i, 'x')) }
      ]
    })
    const amountAt = (i: number) => `invalid_decimal@ledgers.0.current_statement_transactions.${i}.amount`
    const cut = await post(many(1500))
    t.equal(cut.statusCode, 400)
    const codes = cut.json().errors.map((e: any) => `${e.code}@${e.attr}`)
    t.equal(codes.length, 100, '100 entries')
    t.equal(codes[0], 'invalid@null', 'the first says validation stopped')
    t.match(cut.json().errors[0].detail, /stopped after 1000/)
    t.same(
      codes.slice(1),
      Array.from({ length: 99 }, (_, i) => amountAt(i)),
      'then the first of the problems found, in sort order'
    )
    const all = await post(many(900))
    t.same(
      all.json().errors.map((e: any) => `${e.code}@${e.attr}`),
      Array.from({ length: 100 }, (_, i) => amountAt(i)),
      'below 1,000: the first 100 of every problem, no note'
    )
  }
)

t.test(
  'a union whose first branch raises 1,000 errors: the data is judged as a whole, never refused for a branch it need not match',
  async (t) => {
    const Strict = Type.Object({ id: Type.String() }, { additionalProperties: false })
    const Loose = Type.Object({ id: Type.Integer() }, { additionalProperties: Type.Integer() })
    const validate = compileBody(Type.Object({ value: Type.Union([Strict, Loose]) }, { additionalProperties: false }))
    const keys = Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`k${i}`, i]))
    t.ok(validate({ value: { id: 1, ...keys } }), 'valid by the second branch, after 1,500 errors of the first')
    t.notOk(validate({ value: { id: 1, ...keys, bad: 'x' } }), 'invalid by both: refused')
    t.ok(
      validate.errors!.length <= 1002,
      `with at most the first 1,000 errors and the note (${validate.errors!.length})`
    )
    t.equal(validate.errors!.at(-1)!.keyword, 'maxErrors')
    t.ok(validate({ value: { id: 'x' } }), 'the first branch still matches')
  }
)

t.test('/graphql without a valid token takes at most 64 KB; with one, the body limit', async (t) => {
  const { app } = await importedSetup(t)
  const sized = (bytes: number) => {
    const base = JSON.stringify({ query: '{ __typename }', variables: { pad: '' } })
    return JSON.stringify({ query: '{ __typename }', variables: { pad: 'x'.repeat(bytes - base.length) } })
  }
  const send = (payload: string, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: '/graphql',
      payload,
      headers: { 'content-type': 'application/json', ...headers }
    })
  t.equal(sized(65_536).length, 65_536)
  t.equal((await send(sized(65_536))).statusCode, 200, '65,536 bytes without a token')
  const over = await send(sized(65_537))
  t.equal(over.statusCode, 413, '65,537 bytes without a token: 413')
  t.equal(over.json().code, 'payload_too_large')
  t.equal(
    (await send(sized(65_537), { authorization: 'Bearer not-a-token' })).statusCode,
    413,
    'nor with a token that is not valid'
  )
  const operator = await operatorToken(app)
  t.equal(
    (await send(sized(200_000), { authorization: `Bearer ${operator}` })).statusCode,
    200,
    'with a valid token: up to the body limit'
  )
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as AddressInfo).port
  const chunked = await new Promise<string>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let response = ''
    socket.on('data', (chunk) => {
      response += chunk.toString()
    })
    socket.on('error', () => {})
    socket.on('close', () => resolve(response))
    const body = sized(70_000)
    socket.write(
      'POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n'
    )
    socket.write(`${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)
  })
  t.match(chunked, /^HTTP\/1\.1 413 /, 'a chunked body of unknown length is counted as it arrives')
})

t.test('a body waiting for its turn is kept as bytes, parsed once the turn comes, and judged as before', async (t) => {
  const { app, tenant, post } = await importedSetup(t)
  const minLength = 2_000
  // Every turn taken, by other organisations' work (the last turn is kept for an organisation holding none).
  const releases = []
  for (;;) {
    const asked = app.turns.acquire(`other ${releases.length}`)
    const taken = await Promise.race([
      asked,
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 50))
    ])
    if (taken === undefined) {
      void asked.then((release) => release()) // the probe gives its turn back when it gets one
      break
    }
    releases.push(taken)
  }
  t.ok(app.turns.waiting === 1 && releases.length > 0, `every turn taken (${releases.length})`)
  const original = JSON.parse
  let parses = 0
  JSON.parse = function countedParse(text: string, reviver?: Parameters<typeof JSON.parse>[1]) {
    if (typeof text === 'string' && text.length >= minLength) parses++
    return original(text, reviver)
  }
  t.teardown(() => {
    JSON.parse = original
  })
  const answer = post('notes/create/', { notes: [{ body: 'Waited for its turn. '.repeat(200) }] })
  const broken = app.inject({
    method: 'POST',
    url: '/v1/data-import/notes/create/',
    headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/json' },
    payload: '{"notes": [' + ' '.repeat(minLength) + ']'
  })
  // Not there in 3 s: the t.equal below says so, and the turns taken are still given back.
  await waitFor('three requests wait for a turn', () => app.turns.waiting >= 3, {
    timeoutMs: 3000,
    intervalMs: 10
  }).catch(() => undefined)
  t.equal(
    app.turns.waiting,
    3,
    `both requests wait for a turn (beside the probe above): ${app.turns.waiting} waiting, ${app.turns.active} active`
  )
  t.equal(parses, 0, `neither body is parsed while it waits (${parses})`)
  for (const release of releases) release()
  t.equal((await answer).statusCode, 201, 'the note is stored once its turn comes')
  t.ok(invalidBody(await broken), 'a body that is not JSON is still a 400 invalid_request at null')
  t.equal(parses, 2, 'each body parsed once, in its turn')
})

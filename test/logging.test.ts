import t from 'tap'
import { sql, type SQL } from 'drizzle-orm'
import type { LightMyRequestResponse } from 'fastify'
import { codes, exampleAccount, importedSetup, importSetup } from './helpers/accounts.js'
import { postImportBodies, UNREACHABLE_VENDOR } from './helpers/security.js'
import { buildTestApp, TEST_OPERATOR_KEY } from './helpers/app.js'
import { operatorToken } from './helpers/graphql.js'
import { AppError } from '../src/errors.js'
import { serializeError } from '../src/logging.js'

/**
 * Personal data (e-mail, names, phones, addresses) never appears in logs; nor do credentials.
 * The app logs at trace level here, so nothing is hidden by the level.
 */

const GIVEN = 'Zeldaprobe'
const FAMILY = 'Quixoticname'
const EMAIL = 'zelda.quixotic@privacyprobe.co.uk'
const LANDLINE = '0117 496 0777'
const LANDLINE_E164 = '+441174960777'
const STREET = '77 Secretlane Mews'
const LOCALITY = 'Quillborough'
const POSTCODE = 'BS8 4QX'
const SUPPLY_STREET = '9 Hiddenwell Court'

function probeAccount(external: string): Record<string, any> {
  const base = exampleAccount({ external_account_number: external })
  const address = { ...base.billing_address, street_address: STREET, locality: LOCALITY, postal_code: POSTCODE }
  return {
    ...base,
    billing_address: address,
    customers: [{ ...base.customers[0], email: EMAIL, given_name: GIVEN, family_name: FAMILY, landline: LANDLINE }],
    supply_addresses: base.supply_addresses.map((s: any) => ({
      ...s,
      supply_address: { ...address, street_address: SUPPLY_STREET }
    }))
  }
}

interface LogLine {
  level: number
  reqId?: string
  msg?: string
  req?: { method?: string; url?: string }
  res?: { statusCode?: number }
  responseTime?: number
  code?: string
  err?: { type?: string; message?: string; stack?: string; cause?: Record<string, unknown> }
}

t.test('personal data and credentials never reach the logs', async (t) => {
  const { app, database, client, logs, tenant } = await importSetup(t, { captureLogs: true })
  const requestIds: string[] = []
  const seen = (res: LightMyRequestResponse) => {
    requestIds.push(String(res.headers['x-request-id']))
    return res
  }

  // The happy path: validate, stage, create.
  const valid = seen(await client.validate(probeAccount('LOG-1')))
  t.equal(valid.statusCode, 200, valid.body)
  t.equal(valid.json().customers[0].landline, LANDLINE_E164, 'the normalised phone is one of the strings looked for')
  t.equal(seen(await client.stage(probeAccount('LOG-1'))).statusCode, 201)
  t.equal(seen(await client.create('LOG-1')).statusCode, 201)

  // The error path: rule errors whose details name the values sent.
  const bad = probeAccount('LOG-2')
  bad.customers[0].landline = `${GIVEN}-phone`
  bad.customers[0].email = `not-an-email ${EMAIL}`
  bad.billing_address.postal_code = `${POSTCODE}${POSTCODE}`
  const refused = seen(await client.validate(bad))
  t.equal(refused.statusCode, 400)
  t.match(refused.body, GIVEN, 'the answer may quote the value; the logs may not')
  // Unparseable JSON: Node's SyntaxError message quotes the body.
  const broken = seen(
    await app.inject({
      method: 'POST',
      url: '/v1/data-import/validate-account/',
      headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/json' },
      payload: `{"customers": [{"email": "${EMAIL}", "given_name": ${GIVEN}}]}`
    })
  )
  t.equal(broken.statusCode, 400)
  t.equal(broken.json().code, 'invalid_request')

  // A 500 in the middle of a create: PostgreSQL's own error names the failing row.
  t.equal(seen(await client.stage(probeAccount('LOG-3'))).statusCode, 201)
  await database.db.execute(
    sql.raw(`alter table customers add constraint log_probe check (given_name <> '${GIVEN}') not valid`)
  )
  const failed = seen(
    await app.inject({
      method: 'POST',
      url: '/v1/data-import/account-import-process/process/',
      headers: { authorization: `JWT ${tenant.token}`, 'x-request-id': 'log-probe-500' },
      payload: {
        external_account_number: 'LOG-3',
        import_supplier_code: 'ACME_ENERGY',
        operations_team_name: 'Migrations'
      }
    })
  )
  await database.db.execute(sql.raw('alter table customers drop constraint log_probe'))
  t.equal(failed.statusCode, 500)
  t.equal(failed.json().request_id, 'log-probe-500')

  // Read endpoints answer with the personal data; the operator reads events.
  t.equal(seen(await client.summary('LOG-1')).statusCode, 200)
  const op = await operatorToken(app)
  const events = seen(
    await app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${op}` },
      payload: {
        query:
          'query { importProcessEvents(importSupplierCode: "ACME_ENERGY", externalAccountNumber: "LOG-3") { type detail } }'
      }
    })
  )
  t.equal(events.statusCode, 200)

  const text = logs()
  const lines: LogLine[] = text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as LogLine)
  t.ok(lines.length > 20, `structured JSON, one object per line (${lines.length} lines)`)

  // Nothing personal, in any form it was sent or stored in.
  const personal = [
    GIVEN,
    FAMILY,
    EMAIL,
    'privacyprobe',
    LANDLINE,
    LANDLINE_E164,
    '1174960777',
    STREET,
    'Secretlane',
    LOCALITY,
    POSTCODE,
    'BS84QX',
    SUPPLY_STREET,
    'Hiddenwell'
  ]
  for (const value of personal) t.notOk(text.toLowerCase().includes(value.toLowerCase()), `no "${value}" in the logs`)
  // Nor credentials: tokens, API keys, the operator key.
  for (const [name, secret] of [
    ['organisation token', tenant.token],
    ['operator token', op],
    ['API key', tenant.apiKey],
    ['operator key', TEST_OPERATOR_KEY]
  ] as const) {
    t.notOk(text.includes(secret), `no ${name} in the logs`)
    t.notOk(text.includes(secret.split('.').at(-1)!), `no part of the ${name} in the logs`)
  }

  // Every request is traceable by its id, the failure included, with what went wrong.
  for (const id of requestIds) {
    const access = lines.filter(
      (l) => l.reqId === id && (l.msg === 'request completed' || l.msg === 'incoming request')
    )
    t.equal(access.length, 1, `request ${id}: one access line, with its reqId`)
    t.match(access[0], {
      msg: 'request completed',
      req: { method: /^(GET|POST)$/, url: /^\// },
      res: { statusCode: Number },
      responseTime: Number
    })
  }
  const failure = lines.find((l) => l.reqId === 'log-probe-500' && l.level === 50)
  t.ok(failure, 'the 500 is logged at error level under its request id')
  t.match(
    failure?.err?.message ?? '',
    // On PGlite the account's inserts are one statement (`writes` in src/db/insert.ts).
    /^Failed query: (with s0 as \(.*)?insert into "customers" \(.*\$1/,
    'the statement, without its parameters'
  )
  t.match(
    failure?.err?.stack ?? '',
    /^Error: Failed query: (with s0 as \(.*)?insert into "customers".*\n\s+at /,
    'with a stack'
  )
  t.match(
    failure?.err?.cause,
    { code: '23514', constraint: 'log_probe', table: 'customers' },
    'and what PostgreSQL said'
  )
})

t.test('driver errors are serialized without the values they carry', async (t) => {
  const { database } = await buildTestApp(t)
  async function failure(query: SQL): Promise<unknown> {
    try {
      await database.db.execute(query)
    } catch (err) {
      return err
    }
    throw new Error('the query did not fail')
  }

  // A data exception quotes the value: invalid input syntax for type date: "…".
  const dataError = await failure(sql`select ${EMAIL}::date`)
  t.match(
    JSON.stringify(dataError, Object.getOwnPropertyNames(dataError)) + String((dataError as Error).cause),
    EMAIL,
    'the raw error holds the value'
  )
  const data = serializeError(dataError)
  t.notMatch(JSON.stringify(data), /zelda|privacyprobe/i, 'the serialized one does not')
  t.equal(data.message, 'Failed query: select $1::date')
  t.match(data.cause, { code: '22007', message: /^invalid input syntax for type date: "\[redacted\]"$/ })

  // A check violation's detail names the whole failing row.
  await database.db.execute(sql.raw('create table log_probe_rows (v text check (length(v) < 5))'))
  const rowError = await failure(sql`insert into log_probe_rows values (${EMAIL})`)
  await database.db.execute(sql.raw('drop table log_probe_rows'))
  t.match(String((rowError as any).cause?.detail), EMAIL, 'the driver gives the failing row')
  const row = serializeError(rowError)
  t.notMatch(JSON.stringify(row), /zelda|privacyprobe/i, 'the serialized error does not')
  t.match(row.cause, { code: '23514', table: 'log_probe_rows', constraint: 'log_probe_rows_v_check' })
  t.equal((row.cause as Record<string, unknown>).detail, undefined)

  // Errors of our own keep their code, entries and stack.
  const own = serializeError(
    new AppError(500, 'server_error', 'A server error occurred.', [
      { code: 'payment_vendor_error', attr: null, detail: 'STRIPE did not answer.' }
    ])
  )
  t.match(own, {
    type: 'AppError',
    message: 'A server error occurred.',
    code: 'server_error',
    statusCode: 500,
    errors: [{ code: 'payment_vendor_error' }]
  })
  t.match(own.stack, /^AppError: A server error occurred\.\n\s+at /)
})

t.test('a NUL in what a client sends is a 400, never an error in the logs', async (t) => {
  const { app, logs, tenant, client, ledgerNumber } = await importedSetup(t, {
    captureLogs: true,
    env: UNREACHABLE_VENDOR
  })
  const NUL = 'ACME\u0000ENERGY'
  const headers = { authorization: `Token ${tenant.token}` }
  const post = (url: string, payload: unknown) =>
    app.inject({ method: 'POST', url, headers, payload: payload as object })
  const account = (changes: Record<string, unknown>) => ({
    ...exampleAccount({ external_account_number: 'NUL-1' }),
    ...changes
  })
  // A NUL in the supplier code of every endpoint that records failures, each refused at that field.
  const cases: Array<[string, LightMyRequestResponse, string]> = [
    ['validate', await client.validate(account({ import_supplier: NUL })), 'import_supplier'],
    ['stage', await client.stage(account({ import_supplier: NUL })), 'import_supplier'],
    ['create', await client.create('NUL-1', { supplier: NUL }), 'import_supplier_code']
  ]
  for (const [url, body] of Object.entries(postImportBodies(ledgerNumber))) {
    const res = await post(url, { import_supplier: NUL, external_account_number: 'EXT-000123', ...body })
    cases.push([url, res, 'import_supplier'])
  }
  for (const [name, res, attr] of cases) {
    t.equal(res.statusCode, 400, `${name}: ${res.body.slice(0, 200)}`)
    t.ok(
      codes(res).some(([code, at]) => code === 'invalid' && at === attr),
      `${name}: invalid at ${attr}`
    )
  }
  // A NUL in a key: refused at an attr holding it, for a supplier that exists (a failure is recorded).
  const key = await client.validate(account({ 'fo\u0000o': 1 }))
  t.same(codes(key), [['unexpected_field', 'fo\u0000o']], 'the answer names the key as sent')
  const recorded = await app.inject({ url: '/v1/data-import/failed-account-import-processes/ACME_ENERGY/', headers })
  t.match(recorded.json(), [
    { external_account_number: 'NUL-1', step: 'validate', errors: [{ code: 'unexpected_field', attr: 'fo\ufffdo' }] }
  ])

  const lines: LogLine[] = logs()
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as LogLine)
  const errors = lines.filter((line) => line.level >= 50)
  t.same(
    errors.map((line) => line.msg),
    [],
    'nothing at error level (or above)'
  )
  t.ok(cases.length >= 9, `${cases.length} endpoints tried`)
})

t.test('a refusal is one log line with its code and no stack; a 5xx still logs its stack', async (t) => {
  const { app, database, logs, tenant, client } = await importSetup(t, { captureLogs: true })
  const op = await operatorToken(app)
  const gql = (token: string, query: string, id: string) =>
    app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${token}`, 'x-request-id': id },
      payload: { query }
    })
  const rest = (token: string, id: string) =>
    app.inject({
      method: 'GET',
      url: '/v1/data-import/failure-summary/ACME_ENERGY/',
      headers: { authorization: `Bearer ${token}`, 'x-request-id': id }
    })

  const refusals: Array<[string, LightMyRequestResponse, string]> = [
    ['an operator token on a data-import path', await rest(op, 'refused-rest-403'), 'permission_denied'],
    [
      'an account that is not valid',
      await app.inject({
        method: 'POST',
        url: '/v1/data-import/validate-account/',
        headers: { authorization: `Token ${tenant.token}`, 'x-request-id': 'refused-rest-400' },
        payload: { external_account_number: 'X' }
      }),
      'account_failed_validation'
    ],
    ['an empty token', await rest('', 'refused-rest-401'), 'authentication_failed'],
    [
      'an organisation on an operator field',
      await gql(
        tenant.token,
        'mutation { createOperationsTeam(input: {name: "Sneaky"}) { id } }',
        'refused-gql-denied'
      ),
      'permission_denied'
    ],
    ['a field that does not exist', await gql(tenant.token, '{ noSuchField }', 'refused-gql-invalid'), 'invalid'],
    ['a document that does not parse', await gql(tenant.token, '{ ', 'refused-gql-syntax'), 'invalid']
  ]
  t.equal(refusals[0]![1].statusCode, 403)
  t.equal(refusals[3]![1].json().errors[0].extensions.code, 'permission_denied')

  // Two server errors: a REST create and a GraphQL mutation whose statement the database refuses.
  t.equal((await client.stage(exampleAccount({ external_account_number: 'LOG-500' }))).statusCode, 201)
  await database.db.execute(
    sql.raw(`alter table accounts add constraint log_probe check (external_account_number <> 'LOG-500') not valid`)
  )
  await database.db.execute(
    sql.raw(`alter table operations_teams add constraint log_probe check (name <> 'Boom') not valid`)
  )
  const restFailure = await app.inject({
    method: 'POST',
    url: '/v1/data-import/account-import-process/process/',
    headers: { authorization: `Token ${tenant.token}`, 'x-request-id': 'failed-rest-500' },
    payload: {
      external_account_number: 'LOG-500',
      import_supplier_code: 'ACME_ENERGY',
      operations_team_name: 'Migrations'
    }
  })
  const gqlFailure = await gql(op, 'mutation { createOperationsTeam(input: {name: "Boom"}) { id } }', 'failed-gql-500')
  t.equal(restFailure.statusCode, 500, restFailure.body)
  t.equal(gqlFailure.json().errors[0].extensions.code, 'server_error', gqlFailure.body)

  const lines: LogLine[] = logs()
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as LogLine)
  const of = (id: string) => lines.filter((line) => line.reqId === id)
  for (const [name, res, code] of refusals) {
    const id = String(res.headers['x-request-id'])
    t.match(
      of(id),
      [{ level: 30, msg: 'request completed', code, res: { statusCode: res.statusCode } }],
      `${name}: one line, at info, with its code`
    )
    t.equal(of(id).length, 1, `${name}: only that line`)
    t.notOk(JSON.stringify(of(id)).includes('"stack"'), `${name}: no stack`)
  }
  for (const id of ['failed-rest-500', 'failed-gql-500']) {
    const failed = of(id).find((line) => line.level === 50)
    t.match(failed?.err?.stack ?? '', /\n\s+at /, `${id}: logged at error with its stack`)
    t.match(
      of(id).find((line) => line.msg === 'request completed'),
      { code: 'server_error' },
      `${id}: its access line`
    )
  }
})

import t, { type Test } from 'tap'
import { and, asc, eq, sql } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import type { FastifyInstance } from 'fastify'
import {
  apiKeys,
  importEvents,
  importProcesses,
  importSupplierEvents,
  importSuppliers,
  operationsTeams,
  organisations
} from '../drizzle/schema/index.js'
import type { Database } from '../src/db/index.js'
import { buildTestApp } from './helpers/app.js'
import { createTenant, gql, OBTAIN_TOKEN, operatorToken, type GraphQLResult } from './helpers/graphql.js'

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/

/** HS256 token with role `op`, signed with a secret that is not the test secret. */
const FOREIGN_JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoib3AiLCJpYXQiOjE3MDAwMDAwMDAsImV4cCI6NDEwMjQ0NDgwMH0.' +
  'c2lnbmF0dXJlLXRoYXQtZG9lcy1ub3QtbWF0Y2gtYW55dGhpbmc'

type Assert = Pick<Test, 'equal' | 'ok'>

/** The field's value, or null when the whole `data` is null (a non-null field that failed). */
function fieldOf(res: GraphQLResult, field: string): unknown {
  return res.data === null ? null : (res.data[field] ?? null)
}

/** A resolver error: HTTP 200, `errors[0].extensions.code`, and no data for the field. */
function expectError(t: Assert, res: GraphQLResult, field: string, code: string, message = '') {
  const prefix = message ? `${message}: ` : ''
  t.equal(res.status, 200, `${prefix}HTTP 200`)
  t.equal(
    res.errors?.[0]?.extensions?.code,
    code,
    `${prefix}errors[0].extensions.code is ${code} (got ${JSON.stringify(res.errors)})`
  )
  t.equal(fieldOf(res, field), null, `${prefix}data.${field} is null`)
}

/** A successful call: HTTP 200, no errors, and the field's value. */
function expectOk(t: Assert, res: GraphQLResult, field: string, message = ''): any {
  const prefix = message ? `${message}: ` : ''
  t.equal(res.status, 200, `${prefix}HTTP 200`)
  t.equal(res.errors, undefined, `${prefix}no errors (got ${JSON.stringify(res.errors)})`)
  return fieldOf(res, field)
}

const CREATE_ORGANISATION = 'mutation($name: String!) { createOrganisation(input: {name: $name}) { id name } }'
const CREATE_API_KEY = 'mutation($o: String!) { createApiKey(input: {organisation: $o}) { id key organisation } }'
const REVOKE_API_KEY = 'mutation($id: ID!) { revokeApiKey(input: {id: $id}) { id organisation revokedAt } }'
const SUPPLIER_FIELDS = 'code organisation status documentRoot sendMigrationEmails maxConcurrentProcessing'
const CREATE_SUPPLIER = `mutation($input: CreateImportSupplierInput!) { createImportSupplier(input: $input) { ${SUPPLIER_FIELDS} } }`
const UPDATE_SUPPLIER = `mutation($input: UpdateImportSupplierInput!) { updateImportSupplier(input: $input) { ${SUPPLIER_FIELDS} } }`
const LIST_SUPPLIERS = `query { importSuppliers { ${SUPPLIER_FIELDS} } }`
const CREATE_TEAM = 'mutation($name: String!) { createOperationsTeam(input: {name: $name}) { id name } }'
const SKIP = `mutation($s: String!, $e: String!) {
  skipImportProcess(input: {importSupplierCode: $s, externalAccountNumber: $e}) {
    importSupplierCode externalAccountNumber state serviceAccountNumber
  }
}`
const EVENTS = `query($s: String!, $e: String!) {
  importProcessEvents(importSupplierCode: $s, externalAccountNumber: $e) { type at actor detail }
}`
const PROGRESS =
  'query($s: String!) { migrationProgress(importSupplierCode: $s) { staged pending imported skipped failed } }'

/** The operator's token, obtained once per app. */
function operatorSession(app: FastifyInstance) {
  let token: Promise<string> | undefined
  return (query: string, variables: Record<string, unknown> = {}) => {
    token ??= operatorToken(app)
    return token.then((tk) => gql(app, query, variables, tk))
  }
}

async function supplierId(database: Database, code: string): Promise<string> {
  const [row] = await database.db
    .select({ id: importSuppliers.id })
    .from(importSuppliers)
    .where(eq(importSuppliers.code, code))
  if (!row) throw new Error(`no supplier ${code}`)
  return row.id
}

async function supplierRow(database: Database, code: string) {
  const [row] = await database.db.select().from(importSuppliers).where(eq(importSuppliers.code, code))
  return row
}

async function supplierEvents(database: Database, code: string) {
  return database.db
    .select()
    .from(importSupplierEvents)
    .where(eq(importSupplierEvents.supplierId, await supplierId(database, code)))
    .orderBy(asc(importSupplierEvents.id))
}

async function countRows(database: Database) {
  const count = async (table: PgTable) => {
    const [row] = await database.db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(table)
    return row!.n
  }
  return {
    organisations: await count(organisations),
    apiKeys: await count(apiKeys),
    importSuppliers: await count(importSuppliers),
    importSupplierEvents: await count(importSupplierEvents),
    operationsTeams: await count(operationsTeams),
    importProcesses: await count(importProcesses),
    importEvents: await count(importEvents)
  }
}

function listProcesses(app: FastifyInstance, list: 'all' | 'pending' | 'imported', supplier: string, token: string) {
  return app.inject({
    method: 'GET',
    url: `/v1/data-import/${list}-account-import-processes/${supplier}/`,
    headers: { authorization: `Token ${token}` }
  })
}

// ---------------------------------------------------------------------------------------------
// Organisations, API keys, suppliers, teams
// ---------------------------------------------------------------------------------------------

t.test('operator configuration mutations', async (t) => {
  const { app, database } = await buildTestApp(t)
  const op = operatorSession(app)

  t.test('createOrganisation', async (t) => {
    t.test('returns {id name}', async (t) => {
      const org = expectOk(t, await op(CREATE_ORGANISATION, { name: 'Acme Energy' }), 'createOrganisation')
      t.same(Object.keys(org).sort(), ['id', 'name'])
      t.equal(org.name, 'Acme Energy')
      t.type(org.id, 'string')
      t.ok(org.id.length > 0, 'id is not empty')
      const [row] = await database.db.select().from(organisations).where(eq(organisations.name, 'Acme Energy'))
      t.equal(row?.id, org.id, 'the returned id is the stored organisation')
    })

    t.test('a duplicate name is already_exists with HTTP 200', async (t) => {
      const before = await countRows(database)
      const res = await op(CREATE_ORGANISATION, { name: 'Acme Energy' })
      expectError(t, res, 'createOrganisation', 'already_exists')
      t.same(res.data, { createOrganisation: null }, 'data.createOrganisation is null')
      t.equal((await countRows(database)).organisations, before.organisations, 'no organisation added')
    })

    t.test('a blank or whitespace-only name is invalid', async (t) => {
      const before = await countRows(database)
      for (const name of ['', ' ', '   \t  ']) {
        expectError(t, await op(CREATE_ORGANISATION, { name }), 'createOrganisation', 'invalid', JSON.stringify(name))
      }
      t.equal((await countRows(database)).organisations, before.organisations, 'no organisation added')
    })
  })

  t.test('createApiKey', async (t) => {
    await op(CREATE_ORGANISATION, { name: 'Keyed' })
    const first = expectOk(t, await op(CREATE_API_KEY, { o: 'Keyed' }), 'createApiKey')
    const second = expectOk(t, await op(CREATE_API_KEY, { o: 'Keyed' }), 'createApiKey')

    t.test('returns {id key organisation}', async (t) => {
      t.same(Object.keys(first).sort(), ['id', 'key', 'organisation'])
      t.equal(first.organisation, 'Keyed')
      t.type(first.id, 'string')
      t.type(first.key, 'string')
      t.not(first.id, second.id, 'two keys have two ids')
    })

    t.test('the key has at least 256 bits of randomness and keys differ', async (t) => {
      for (const key of [first.key, second.key]) {
        t.match(key, /^amk_[A-Za-z0-9_-]{43,}$/, 'amk_ followed by at least 43 base64url characters (≥ 256 bits)')
      }
      t.not(first.key, second.key, 'two keys differ')
      t.not(first.key.slice(4, 20), second.key.slice(4, 20), 'keys do not share a prefix beyond amk_')
    })

    t.test('the key is not stored in clear', async (t) => {
      const rows = await database.db.select().from(apiKeys)
      t.ok(rows.length >= 2, 'the keys are stored')
      const row = rows.find((r) => r.id === first.id)
      t.ok(row, 'the key row exists')
      for (const r of rows) {
        for (const [column, value] of Object.entries(r)) {
          const text = value instanceof Date ? value.toISOString() : String(value)
          for (const key of [first.key, second.key] as string[]) {
            t.notOk(text.includes(key), `api_keys.${column} does not hold the key`)
            t.notOk(text.includes(key.slice(4)), `api_keys.${column} does not hold the key's random part`)
          }
        }
      }
      // Nor anywhere else in the database's tables of the row (raw SQL, every column as text).
      const raw = await database.db.execute(sql`select row_to_json(k)::text as j from api_keys k`)
      const texts = (
        (raw as unknown as { rows?: Array<{ j: string }> }).rows ?? (raw as unknown as Array<{ j: string }>)
      ).map((r) => r.j)
      t.ok(texts.length >= 2, 'raw rows read')
      for (const text of texts) {
        t.notOk(text.includes(first.key.slice(4)), 'no column of api_keys holds the first key')
        t.notOk(text.includes(second.key.slice(4)), 'no column of api_keys holds the second key')
      }
    })

    t.test('an unknown organisation is not_found', async (t) => {
      const before = await countRows(database)
      expectError(t, await op(CREATE_API_KEY, { o: 'Nobody' }), 'createApiKey', 'not_found')
      t.equal((await countRows(database)).apiKeys, before.apiKeys, 'no key added')
    })

    t.test('the key works with obtainToken', async (t) => {
      const res = await gql(app, OBTAIN_TOKEN, { input: { APIKey: first.key } })
      const token = expectOk(t, res, 'obtainToken')
      t.type(token?.token, 'string')
      t.ok(token.token.length > 0)
      const res2 = await gql(app, OBTAIN_TOKEN, { input: { APIKey: second.key } })
      t.type(expectOk(t, res2, 'obtainToken')?.token, 'string', 'the second key works too')
    })
  })

  t.test('revokeApiKey', async (t) => {
    await op(CREATE_ORGANISATION, { name: 'Revoking' })
    const key = expectOk(t, await op(CREATE_API_KEY, { o: 'Revoking' }), 'createApiKey')
    const other = expectOk(t, await op(CREATE_API_KEY, { o: 'Revoking' }), 'createApiKey')
    const issued = expectOk(t, await gql(app, OBTAIN_TOKEN, { input: { APIKey: key.key } }), 'obtainToken')
    t.type(issued?.refreshToken, 'string', 'the key works before revocation')

    t.test('returns {id organisation revokedAt}', async (t) => {
      const before = Date.now()
      const revoked = expectOk(t, await op(REVOKE_API_KEY, { id: key.id }), 'revokeApiKey')
      t.same(Object.keys(revoked).sort(), ['id', 'organisation', 'revokedAt'])
      t.equal(revoked.id, key.id)
      t.equal(revoked.organisation, 'Revoking')
      t.match(revoked.revokedAt, DATETIME, 'revokedAt is YYYY-MM-DDTHH:MM:SSZ')
      const at = Date.parse(revoked.revokedAt)
      t.ok(Math.abs(at - before) < 60_000, 'revokedAt is about now')
      const [row] = await database.db.select().from(apiKeys).where(eq(apiKeys.id, key.id))
      t.ok(row?.revokedAt instanceof Date, 'the stored key is marked revoked')
    })

    t.test('a revoked key no longer obtains tokens', async (t) => {
      const res = await gql(app, OBTAIN_TOKEN, { input: { APIKey: key.key } })
      expectError(t, res, 'obtainToken', 'authentication_failed')
    })

    t.test('a refresh token of a revoked key no longer obtains tokens', async (t) => {
      const res = await gql(app, OBTAIN_TOKEN, { input: { refreshToken: issued.refreshToken } })
      expectError(t, res, 'obtainToken', 'authentication_failed')
    })

    t.test('revoking again is still not an error and keeps the key revoked', async (t) => {
      const again = expectOk(t, await op(REVOKE_API_KEY, { id: key.id }), 'revokeApiKey')
      t.equal(again?.id, key.id)
      t.match(again?.revokedAt, DATETIME)
      expectError(
        t,
        await gql(app, OBTAIN_TOKEN, { input: { APIKey: key.key } }),
        'obtainToken',
        'authentication_failed'
      )
    })

    t.test('the other key of the organisation still works', async (t) => {
      const res = await gql(app, OBTAIN_TOKEN, { input: { APIKey: other.key } })
      t.type(expectOk(t, res, 'obtainToken')?.token, 'string')
    })

    t.test('an unknown or malformed id is not_found', async (t) => {
      for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '12345', '']) {
        expectError(t, await op(REVOKE_API_KEY, { id }), 'revokeApiKey', 'not_found', JSON.stringify(id))
      }
    })
  })

  t.test('createImportSupplier', async (t) => {
    await op(CREATE_ORGANISATION, { name: 'Supplier Org' })
    await op(CREATE_ORGANISATION, { name: 'Second Org' })

    t.test('defaults', async (t) => {
      const supplier = expectOk(
        t,
        await op(CREATE_SUPPLIER, { input: { code: 'DEFAULTS', organisation: 'Supplier Org' } }),
        'createImportSupplier'
      )
      t.same(supplier, {
        code: 'DEFAULTS',
        organisation: 'Supplier Org',
        status: 'Ongoing',
        documentRoot: '',
        sendMigrationEmails: false,
        maxConcurrentProcessing: null
      })
      const row = await supplierRow(database, 'DEFAULTS')
      t.equal(row?.status, 'Ongoing', 'stored status')
      t.equal(row?.maxConcurrentProcessing, null, 'stored: no concurrency limit')
    })

    t.test('every field given', async (t) => {
      const input = {
        code: 'ALL_FIELDS_9',
        organisation: 'Supplier Org',
        documentRoot: 'acme/exports-2026',
        status: 'Paused',
        sendMigrationEmails: true,
        maxConcurrentProcessing: 7
      }
      const supplier = expectOk(t, await op(CREATE_SUPPLIER, { input }), 'createImportSupplier')
      t.same(supplier, {
        code: 'ALL_FIELDS_9',
        organisation: 'Supplier Org',
        status: 'Paused',
        documentRoot: 'acme/exports-2026',
        sendMigrationEmails: true,
        maxConcurrentProcessing: 7
      })
      const row = await supplierRow(database, 'ALL_FIELDS_9')
      t.equal(row?.documentRoot, 'acme/exports-2026')
      t.equal(row?.sendMigrationEmails, true)
      t.equal(row?.maxConcurrentProcessing, 7)
      t.equal(row?.status, 'Paused')
    })

    t.test('the longest code (32 characters) and status Complete are accepted', async (t) => {
      const code = 'A'.repeat(31) + '1'
      const supplier = expectOk(
        t,
        await op(CREATE_SUPPLIER, { input: { code, organisation: 'Supplier Org', status: 'Complete' } }),
        'createImportSupplier'
      )
      t.equal(supplier?.code, code)
      t.equal(supplier?.status, 'Complete')
    })

    t.test('a code not matching ^[A-Z0-9_]{1,32}$ is invalid', async (t) => {
      const before = await countRows(database)
      for (const code of ['acme', 'Acme_1', 'A'.repeat(33), 'AC-ME', 'AC ME', '', ' ACME', 'ACME\n', 'ÄCME']) {
        expectError(
          t,
          await op(CREATE_SUPPLIER, { input: { code, organisation: 'Supplier Org' } }),
          'createImportSupplier',
          'invalid',
          JSON.stringify(code)
        )
      }
      t.equal((await countRows(database)).importSuppliers, before.importSuppliers, 'no supplier added')
    })

    t.test('a duplicate code is already_exists, also for another organisation', async (t) => {
      const before = await countRows(database)
      expectError(
        t,
        await op(CREATE_SUPPLIER, { input: { code: 'DEFAULTS', organisation: 'Supplier Org' } }),
        'createImportSupplier',
        'already_exists'
      )
      expectError(
        t,
        await op(CREATE_SUPPLIER, { input: { code: 'DEFAULTS', organisation: 'Second Org' } }),
        'createImportSupplier',
        'already_exists',
        'other organisation'
      )
      t.equal((await countRows(database)).importSuppliers, before.importSuppliers, 'no supplier added')
      const row = await supplierRow(database, 'DEFAULTS')
      t.equal(
        row?.organisationId,
        (await database.db.select().from(organisations).where(eq(organisations.name, 'Supplier Org')))[0]?.id,
        'the existing supplier keeps its organisation'
      )
    })

    t.test('an unknown organisation is not_found', async (t) => {
      const before = await countRows(database)
      expectError(
        t,
        await op(CREATE_SUPPLIER, { input: { code: 'ORPHAN', organisation: 'No Such Org' } }),
        'createImportSupplier',
        'not_found'
      )
      t.equal((await countRows(database)).importSuppliers, before.importSuppliers, 'no supplier added')
    })

    t.test('a bad documentRoot is invalid', async (t) => {
      const before = await countRows(database)
      const bad = [
        '..',
        '../up',
        'a/../b',
        'a/..',
        'a\\b',
        '\\a',
        's3://x',
        'https://bucket/x',
        'file:x',
        'a//b',
        'a/b//c',
        'a\u0000b',
        'a\nb'
      ]
      let i = 0
      for (const documentRoot of bad) {
        const res = await op(CREATE_SUPPLIER, {
          input: { code: `BAD_ROOT_${i++}`, organisation: 'Supplier Org', documentRoot }
        })
        expectError(t, res, 'createImportSupplier', 'invalid', JSON.stringify(documentRoot))
      }
      t.equal((await countRows(database)).importSuppliers, before.importSuppliers, 'no supplier added')
    })

    t.test('leading and trailing slashes are normalised away', async (t) => {
      const cases: Array<[string, string]> = [
        ['/acme/docs/', 'acme/docs'],
        ['/acme', 'acme'],
        ['acme/', 'acme'],
        ['acme/docs', 'acme/docs']
      ]
      let i = 0
      for (const [documentRoot, stored] of cases) {
        const code = `ROOT_${i++}`
        const supplier = expectOk(
          t,
          await op(CREATE_SUPPLIER, { input: { code, organisation: 'Supplier Org', documentRoot } }),
          'createImportSupplier'
        )
        t.equal(supplier?.documentRoot, stored, `${JSON.stringify(documentRoot)} → ${JSON.stringify(stored)}`)
        t.equal((await supplierRow(database, code))?.documentRoot, stored, 'stored normalised')
      }
    })

    t.test('maxConcurrentProcessing 0 or negative is invalid', async (t) => {
      const before = await countRows(database)
      for (const maxConcurrentProcessing of [0, -1, -100]) {
        const res = await op(CREATE_SUPPLIER, {
          input: { code: 'LIMITED', organisation: 'Supplier Org', maxConcurrentProcessing }
        })
        expectError(t, res, 'createImportSupplier', 'invalid', String(maxConcurrentProcessing))
      }
      t.equal((await countRows(database)).importSuppliers, before.importSuppliers, 'no supplier added')
      const ok = expectOk(
        t,
        await op(CREATE_SUPPLIER, {
          input: { code: 'LIMITED', organisation: 'Supplier Org', maxConcurrentProcessing: 1 }
        }),
        'createImportSupplier'
      )
      t.equal(ok?.maxConcurrentProcessing, 1, '1 is the smallest limit')
    })

    t.test('creation is recorded as a supplier event by the operator', async (t) => {
      const events = await supplierEvents(database, 'DEFAULTS')
      t.equal(events.length, 1, 'one event')
      t.equal(events[0]?.actor, 'operator')
      t.ok(events[0]?.at instanceof Date, 'with a time')
    })
  })

  t.test('updateImportSupplier', async (t) => {
    await op(CREATE_ORGANISATION, { name: 'Update Org' })
    const created = expectOk(
      t,
      await op(CREATE_SUPPLIER, {
        input: {
          code: 'UPD',
          organisation: 'Update Org',
          documentRoot: 'upd/root',
          sendMigrationEmails: true,
          maxConcurrentProcessing: 3
        }
      }),
      'createImportSupplier'
    )
    t.equal(created?.code, 'UPD')

    t.test('omitted arguments leave values unchanged', async (t) => {
      const only = expectOk(t, await op(UPDATE_SUPPLIER, { input: { code: 'UPD' } }), 'updateImportSupplier')
      t.same(
        only,
        {
          code: 'UPD',
          organisation: 'Update Org',
          status: 'Ongoing',
          documentRoot: 'upd/root',
          sendMigrationEmails: true,
          maxConcurrentProcessing: 3
        },
        'nothing given: nothing changes'
      )
      const one = expectOk(
        t,
        await op(UPDATE_SUPPLIER, { input: { code: 'UPD', maxConcurrentProcessing: 9 } }),
        'updateImportSupplier'
      )
      t.same(
        one,
        {
          code: 'UPD',
          organisation: 'Update Org',
          status: 'Ongoing',
          documentRoot: 'upd/root',
          sendMigrationEmails: true,
          maxConcurrentProcessing: 9
        },
        'only maxConcurrentProcessing changed'
      )
      const literal = await op(
        `mutation { updateImportSupplier(input: {code: "UPD", documentRoot: "/new/root/"}) { ${SUPPLIER_FIELDS} } }`
      )
      t.same(
        expectOk(t, literal, 'updateImportSupplier'),
        {
          code: 'UPD',
          organisation: 'Update Org',
          status: 'Ongoing',
          documentRoot: 'new/root',
          sendMigrationEmails: true,
          maxConcurrentProcessing: 9
        },
        'only documentRoot changed (normalised), with inline arguments'
      )
      const row = await supplierRow(database, 'UPD')
      t.equal(row?.maxConcurrentProcessing, 9)
      t.equal(row?.documentRoot, 'new/root')
      t.equal(row?.sendMigrationEmails, true)
    })

    t.test('explicit null clears maxConcurrentProcessing (variables and inline)', async (t) => {
      const cleared = expectOk(
        t,
        await op(UPDATE_SUPPLIER, { input: { code: 'UPD', maxConcurrentProcessing: null } }),
        'updateImportSupplier'
      )
      t.equal(cleared?.maxConcurrentProcessing, null, 'limit removed')
      t.equal(cleared?.documentRoot, 'new/root', 'other values unchanged')
      t.equal((await supplierRow(database, 'UPD'))?.maxConcurrentProcessing, null, 'stored null')
      expectOk(
        t,
        await op(UPDATE_SUPPLIER, { input: { code: 'UPD', maxConcurrentProcessing: 4 } }),
        'updateImportSupplier'
      )
      const inline = await op(
        'mutation { updateImportSupplier(input: {code: "UPD", maxConcurrentProcessing: null}) { maxConcurrentProcessing documentRoot } }'
      )
      t.same(
        expectOk(t, inline, 'updateImportSupplier'),
        { maxConcurrentProcessing: null, documentRoot: 'new/root' },
        'inline null clears it too'
      )
    })

    t.test('explicit null resets documentRoot and sendMigrationEmails to their defaults', async (t) => {
      const res = await op(UPDATE_SUPPLIER, { input: { code: 'UPD', documentRoot: null, sendMigrationEmails: null } })
      const updated = expectOk(t, res, 'updateImportSupplier')
      t.equal(updated?.documentRoot, '')
      t.equal(updated?.sendMigrationEmails, false)
      expectOk(
        t,
        await op(UPDATE_SUPPLIER, { input: { code: 'UPD', documentRoot: 'upd/root', sendMigrationEmails: true } }),
        'updateImportSupplier'
      )
    })

    t.test('invalid values are refused and change nothing', async (t) => {
      const before = await supplierRow(database, 'UPD')
      const eventsBefore = (await supplierEvents(database, 'UPD')).length
      for (const input of [
        { code: 'UPD', maxConcurrentProcessing: 0 },
        { code: 'UPD', maxConcurrentProcessing: -2 },
        { code: 'UPD', documentRoot: 'a/../b' },
        { code: 'UPD', documentRoot: 's3://bucket' },
        { code: 'UPD', documentRoot: 'a//b' },
        { code: 'UPD', documentRoot: 'a\\b' },
        { code: 'UPD', status: 'Paused', maxConcurrentProcessing: 0 }
      ]) {
        expectError(t, await op(UPDATE_SUPPLIER, { input }), 'updateImportSupplier', 'invalid', JSON.stringify(input))
      }
      const after = await supplierRow(database, 'UPD')
      t.same(after, before, 'the supplier is unchanged')
      t.equal((await supplierEvents(database, 'UPD')).length, eventsBefore, 'no event recorded')
    })

    t.test('status transitions any to any, each recorded with actor and time', async (t) => {
      const before = (await supplierEvents(database, 'UPD')).length
      const start = Date.now()
      const path = ['Complete', 'Ongoing', 'Paused', 'Complete', 'Paused', 'Ongoing']
      for (const status of path) {
        const updated = expectOk(
          t,
          await op(UPDATE_SUPPLIER, { input: { code: 'UPD', status } }),
          'updateImportSupplier'
        )
        t.equal(updated?.status, status, `now ${status}`)
        t.equal((await supplierRow(database, 'UPD'))?.status, status, `stored ${status}`)
        t.equal(updated?.documentRoot, 'upd/root', 'other values unchanged')
      }
      const events = (await supplierEvents(database, 'UPD')).slice(before)
      t.equal(events.length, path.length, 'one event per transition')
      events.forEach((event, i) => {
        t.equal(event.actor, 'operator', `event ${i} actor`)
        t.ok(event.at instanceof Date && Math.abs(event.at.getTime() - start) < 60_000, `event ${i} has a time`)
        t.ok(JSON.stringify(event.change).includes(`"${path[i]}"`), `event ${i} records the new status ${path[i]}`)
      })
    })

    t.test('an unknown code is not_found', async (t) => {
      const before = await countRows(database)
      expectError(
        t,
        await op(UPDATE_SUPPLIER, { input: { code: 'NO_SUCH', status: 'Paused' } }),
        'updateImportSupplier',
        'not_found'
      )
      expectError(
        t,
        await op(UPDATE_SUPPLIER, { input: { code: 'upd' } }),
        'updateImportSupplier',
        'not_found',
        'codes are case-sensitive'
      )
      t.same(await countRows(database), before, 'nothing written')
    })

    t.test('status: null is invalid', async (t) => {
      const before = await supplierRow(database, 'UPD')
      expectError(
        t,
        await op(UPDATE_SUPPLIER, { input: { code: 'UPD', status: null } }),
        'updateImportSupplier',
        'invalid',
        'variables'
      )
      const inline = await op(
        `mutation { updateImportSupplier(input: {code: "UPD", status: null}) { ${SUPPLIER_FIELDS} } }`
      )
      expectError(t, inline, 'updateImportSupplier', 'invalid', 'inline')
      t.same(await supplierRow(database, 'UPD'), before, 'unchanged')
    })
  })

  t.test('importSuppliers lists every supplier with its organisation name', async (t) => {
    await op(CREATE_ORGANISATION, { name: 'List One' })
    await op(CREATE_ORGANISATION, { name: 'List Two' })
    expectOk(
      t,
      await op(CREATE_SUPPLIER, { input: { code: 'LIST_A', organisation: 'List One' } }),
      'createImportSupplier'
    )
    expectOk(
      t,
      await op(CREATE_SUPPLIER, {
        input: {
          code: 'LIST_B',
          organisation: 'List Two',
          status: 'Paused',
          documentRoot: 'b',
          sendMigrationEmails: true,
          maxConcurrentProcessing: 2
        }
      }),
      'createImportSupplier'
    )
    const list = expectOk(t, await op(LIST_SUPPLIERS), 'importSuppliers') as any[]
    t.ok(Array.isArray(list), 'an array')
    const [rows] = await database.db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(importSuppliers)
    t.equal(list.length, rows!.n, 'every supplier is listed')
    t.same(
      list.find((s) => s.code === 'LIST_A'),
      {
        code: 'LIST_A',
        organisation: 'List One',
        status: 'Ongoing',
        documentRoot: '',
        sendMigrationEmails: false,
        maxConcurrentProcessing: null
      }
    )
    t.same(
      list.find((s) => s.code === 'LIST_B'),
      {
        code: 'LIST_B',
        organisation: 'List Two',
        status: 'Paused',
        documentRoot: 'b',
        sendMigrationEmails: true,
        maxConcurrentProcessing: 2
      }
    )
    t.equal(list.find((s) => s.code === 'DEFAULTS')?.organisation, 'Supplier Org')
    t.equal(new Set(list.map((s) => s.code)).size, list.length, 'each supplier once')
  })

  t.test('createOperationsTeam', async (t) => {
    t.test('returns {id name}', async (t) => {
      const team = expectOk(t, await op(CREATE_TEAM, { name: 'Migrations' }), 'createOperationsTeam')
      t.same(Object.keys(team).sort(), ['id', 'name'])
      t.equal(team.name, 'Migrations')
      t.type(team.id, 'string')
      const [row] = await database.db.select().from(operationsTeams).where(eq(operationsTeams.name, 'Migrations'))
      t.equal(row?.id, team.id, 'stored')
    })

    t.test('a duplicate name is already_exists', async (t) => {
      const before = await countRows(database)
      const res = await op(CREATE_TEAM, { name: 'Migrations' })
      expectError(t, res, 'createOperationsTeam', 'already_exists')
      t.same(res.data, { createOperationsTeam: null })
      t.equal((await countRows(database)).operationsTeams, before.operationsTeams, 'no team added')
    })

    t.test('a blank name is invalid', async (t) => {
      for (const name of ['', '   ']) {
        expectError(t, await op(CREATE_TEAM, { name }), 'createOperationsTeam', 'invalid', JSON.stringify(name))
      }
    })
  })

  // Strings must be well-formed without U+0000 (`invalid`). Such a value can name nothing that
  // exists, so `not_found` is accepted for look-ups too — but never a server error.
  t.test('a U+0000 in a string argument is invalid or not_found, never a server error', async (t) => {
    const before = await countRows(database)
    const cases: Array<{ field: string; query: string; variables: Record<string, unknown> }> = [
      { field: 'createOrganisation', query: CREATE_ORGANISATION, variables: { name: 'Nul\u0000Org' } },
      { field: 'createOperationsTeam', query: CREATE_TEAM, variables: { name: 'Nul\u0000Team' } },
      { field: 'createApiKey', query: CREATE_API_KEY, variables: { o: 'Supplier Org\u0000' } },
      {
        field: 'createImportSupplier',
        query: CREATE_SUPPLIER,
        variables: { input: { code: 'NUL', organisation: 'Supplier\u0000Org' } }
      },
      { field: 'updateImportSupplier', query: UPDATE_SUPPLIER, variables: { input: { code: 'DEFAULTS\u0000' } } },
      { field: 'skipImportProcess', query: SKIP, variables: { s: 'DEFAULTS\u0000', e: 'X-1' } },
      { field: 'skipImportProcess', query: SKIP, variables: { s: 'DEFAULTS', e: 'X\u0000-1' } },
      { field: 'importProcessEvents', query: EVENTS, variables: { s: 'DEFAULTS\u0000', e: 'X-1' } },
      { field: 'importProcessEvents', query: EVENTS, variables: { s: 'DEFAULTS', e: 'X\u0000-1' } },
      { field: 'migrationProgress', query: PROGRESS, variables: { s: 'DEFAULTS\u0000' } }
    ]
    for (const { field, query, variables } of cases) {
      const label = `${field} ${JSON.stringify(variables)}`
      const res = await op(query, variables)
      t.equal(res.status, 200, `${label}: HTTP 200`)
      t.equal(fieldOf(res, field), null, `${label}: no data`)
      const code = res.errors?.[0]?.extensions?.code
      t.ok(
        code === 'invalid' || code === 'not_found',
        `${label}: invalid or not_found (got ${JSON.stringify(res.errors)})`
      )
      const text = JSON.stringify(res.body).toLowerCase()
      for (const internal of ['byte sequence', '0x00', 'select ', 'insert ', 'postgres', 'stack']) {
        t.notOk(text.includes(internal), `${label}: no internals leak (${internal.trim()})`)
      }
    }
    t.same(await countRows(database), before, 'nothing created')
  })
})

// ---------------------------------------------------------------------------------------------
// Skips, events and progress
// ---------------------------------------------------------------------------------------------

t.test('skips, import process events and migration progress', async (t) => {
  const { app, database } = await buildTestApp(t)
  const op = operatorSession(app)
  const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')
  const other = await createTenant(app, 'Other', 'OTHER_POWER')
  const acmeId = await supplierId(database, 'ACME_ENERGY')

  t.test('skipping a never-staged pair creates a skipped process', async (t) => {
    const skipped = expectOk(t, await op(SKIP, { s: 'ACME_ENERGY', e: 'NEVER-1' }), 'skipImportProcess')
    t.same(skipped, {
      importSupplierCode: 'ACME_ENERGY',
      externalAccountNumber: 'NEVER-1',
      state: 'SKIPPED',
      serviceAccountNumber: null
    })
    const [row] = await database.db
      .select()
      .from(importProcesses)
      .where(and(eq(importProcesses.supplierId, acmeId), eq(importProcesses.externalAccountNumber, 'NEVER-1')))
    t.equal(row?.state, 'SKIPPED', 'stored as SKIPPED')
    t.equal(row?.serviceAccountNumber, null)
  })

  t.test('the skipped process is in the all- list, not in pending-', async (t) => {
    const all = await listProcesses(app, 'all', 'ACME_ENERGY', acme.token)
    t.equal(all.statusCode, 200)
    t.same(all.json(), [{ external_account_number: 'NEVER-1', service_account_number: null, account_created_at: null }])
    const pending = await listProcesses(app, 'pending', 'ACME_ENERGY', acme.token)
    t.equal(pending.statusCode, 200)
    t.same(pending.json(), [], 'not pending')
    const imported = await listProcesses(app, 'imported', 'ACME_ENERGY', acme.token)
    t.same(imported.json(), [], 'not imported')
    const foreign = await listProcesses(app, 'all', 'OTHER_POWER', other.token)
    t.same(foreign.json(), [], "not in the other organisation's list")
  })

  t.test('importProcessEvents shows one SKIPPED event by the operator', async (t) => {
    const events = expectOk(t, await op(EVENTS, { s: 'ACME_ENERGY', e: 'NEVER-1' }), 'importProcessEvents') as any[]
    t.equal(events.length, 1, 'one event')
    t.equal(events[0]?.type, 'SKIPPED')
    t.equal(events[0]?.actor, 'operator')
    t.match(events[0]?.at, DATETIME, 'at is YYYY-MM-DDTHH:MM:SSZ')
    t.ok(Math.abs(Date.parse(events[0]?.at) - Date.now()) < 60_000, 'at is about now')
  })

  t.test('skipping again is fine', async (t) => {
    const again = expectOk(t, await op(SKIP, { s: 'ACME_ENERGY', e: 'NEVER-1' }), 'skipImportProcess')
    t.same(again, {
      importSupplierCode: 'ACME_ENERGY',
      externalAccountNumber: 'NEVER-1',
      state: 'SKIPPED',
      serviceAccountNumber: null
    })
    const rows = await database.db
      .select()
      .from(importProcesses)
      .where(and(eq(importProcesses.supplierId, acmeId), eq(importProcesses.externalAccountNumber, 'NEVER-1')))
    t.equal(rows.length, 1, 'still one process')
    t.equal(rows[0]?.state, 'SKIPPED')
    const events = expectOk(t, await op(EVENTS, { s: 'ACME_ENERGY', e: 'NEVER-1' }), 'importProcessEvents') as any[]
    t.equal(events.length, 1, 'a repeated skip changes nothing and records nothing')
    t.ok(
      events.every((e) => e.type === 'SKIPPED' && e.actor === 'operator'),
      'only operator skips'
    )
    t.same(events[0]?.detail, { previousState: null }, 'the first skip created the process')
  })

  t.test('skipping a staged process moves it out of pending-', async (t) => {
    await database.db.insert(importProcesses).values({
      supplierId: acmeId,
      externalAccountNumber: 'STAGED-1',
      state: 'STAGED',
      firstStagedAt: new Date(),
      stagedData: {}
    })
    const pendingBefore = (await listProcesses(app, 'pending', 'ACME_ENERGY', acme.token)).json()
    t.same(
      pendingBefore.map((p: any) => p.external_account_number),
      ['STAGED-1'],
      'pending before the skip'
    )
    const skipped = expectOk(t, await op(SKIP, { s: 'ACME_ENERGY', e: 'STAGED-1' }), 'skipImportProcess')
    t.equal(skipped?.state, 'SKIPPED')
    t.equal(skipped?.serviceAccountNumber, null)
    t.same((await listProcesses(app, 'pending', 'ACME_ENERGY', acme.token)).json(), [], 'no longer pending')
    const events = expectOk(t, await op(EVENTS, { s: 'ACME_ENERGY', e: 'STAGED-1' }), 'importProcessEvents') as any[]
    t.same(
      events.map((e) => [e.type, e.detail]),
      [['SKIPPED', { previousState: 'STAGED' }]],
      'the event names the state it left'
    )
    const all = (await listProcesses(app, 'all', 'ACME_ENERGY', acme.token)).json()
    t.same(
      all.map((p: any) => p.external_account_number),
      ['NEVER-1', 'STAGED-1'],
      'both skipped processes are in all-'
    )
  })

  t.test('skipping an imported process is invalid and changes nothing', async (t) => {
    const created = new Date('2026-01-02T03:04:05Z')
    await database.db.insert(importProcesses).values({
      supplierId: acmeId,
      externalAccountNumber: 'DONE-1',
      state: 'IMPORTED',
      firstStagedAt: created,
      serviceAccountNumber: 'A-00C0FFEE',
      accountCreatedAt: created
    })
    const eventsBefore = (await countRows(database)).importEvents
    expectError(t, await op(SKIP, { s: 'ACME_ENERGY', e: 'DONE-1' }), 'skipImportProcess', 'invalid')
    const [row] = await database.db
      .select()
      .from(importProcesses)
      .where(and(eq(importProcesses.supplierId, acmeId), eq(importProcesses.externalAccountNumber, 'DONE-1')))
    t.equal(row?.state, 'IMPORTED', 'still imported')
    t.equal(row?.serviceAccountNumber, 'A-00C0FFEE')
    t.equal((await countRows(database)).importEvents, eventsBefore, 'no event recorded')
    const imported = (await listProcesses(app, 'imported', 'ACME_ENERGY', acme.token)).json()
    t.same(imported, [
      {
        external_account_number: 'DONE-1',
        service_account_number: 'A-00C0FFEE',
        account_created_at: '2026-01-02T03:04:05Z'
      }
    ])
  })

  t.test('an unknown supplier is not_found', async (t) => {
    const before = await countRows(database)
    expectError(t, await op(SKIP, { s: 'NO_SUCH', e: 'X-1' }), 'skipImportProcess', 'not_found')
    expectError(
      t,
      await op(SKIP, { s: 'acme_energy', e: 'X-1' }),
      'skipImportProcess',
      'not_found',
      'codes are case-sensitive'
    )
    t.same(await countRows(database), before, 'nothing created')
  })

  t.test('an external account number that cannot exist is invalid', async (t) => {
    const before = await countRows(database)
    for (const e of ['', ' X-1', 'X-1 ', 'X'.repeat(129)]) {
      const res = await op(SKIP, { s: 'ACME_ENERGY', e })
      expectError(
        t,
        res,
        'skipImportProcess',
        'invalid',
        JSON.stringify(e.length > 20 ? `${e.slice(0, 10)}… (${e.length})` : e)
      )
    }
    t.same(await countRows(database), before, 'nothing created')
  })

  t.test('importProcessEvents for an unknown pair or supplier is not_found', async (t) => {
    expectError(
      t,
      await op(EVENTS, { s: 'ACME_ENERGY', e: 'NEVER-STAGED' }),
      'importProcessEvents',
      'not_found',
      'unknown pair'
    )
    expectError(
      t,
      await op(EVENTS, { s: 'NO_SUCH', e: 'NEVER-1' }),
      'importProcessEvents',
      'not_found',
      'unknown supplier'
    )
    expectError(
      t,
      await op(EVENTS, { s: 'OTHER_POWER', e: 'NEVER-1' }),
      'importProcessEvents',
      'not_found',
      'pair of another supplier'
    )
  })

  t.test('migrationProgress counts every kind of process', async (t) => {
    const progressOrg = await createTenant(app, 'Progress Org', 'PROGRESS')
    t.equal(progressOrg.supplier, 'PROGRESS')
    const id = await supplierId(database, 'PROGRESS')
    const empty = expectOk(t, await op(PROGRESS, { s: 'PROGRESS' }), 'migrationProgress')
    t.same(empty, { staged: 0, pending: 0, imported: 0, skipped: 0, failed: 0 }, 'all zero before anything')

    const at = new Date('2026-03-01T12:00:00Z')
    const error = { at: '2026-03-02T12:00:00Z', errors: [{ code: 'invalid', attr: null, detail: 'x' }] }
    await database.db.insert(importProcesses).values([
      // pending, never failed
      { supplierId: id, externalAccountNumber: 'P-1', state: 'STAGED', firstStagedAt: at, stagedData: {} },
      { supplierId: id, externalAccountNumber: 'P-2', state: 'STAGED', firstStagedAt: at, stagedData: {} },
      { supplierId: id, externalAccountNumber: 'P-3', state: 'STAGED', firstStagedAt: at, stagedData: {} },
      // pending, latest create failed
      {
        supplierId: id,
        externalAccountNumber: 'F-1',
        state: 'STAGED',
        firstStagedAt: at,
        stagedData: {},
        latestError: error
      },
      {
        supplierId: id,
        externalAccountNumber: 'F-2',
        state: 'STAGED',
        firstStagedAt: at,
        stagedData: {},
        latestError: error
      },
      // imported (one after an earlier failure: not failed)
      {
        supplierId: id,
        externalAccountNumber: 'I-1',
        state: 'IMPORTED',
        firstStagedAt: at,
        serviceAccountNumber: 'A-0000AA01',
        accountCreatedAt: at
      },
      {
        supplierId: id,
        externalAccountNumber: 'I-2',
        state: 'IMPORTED',
        firstStagedAt: at,
        serviceAccountNumber: 'A-0000AA02',
        accountCreatedAt: at,
        latestError: error
      },
      {
        supplierId: id,
        externalAccountNumber: 'I-3',
        state: 'IMPORTED',
        firstStagedAt: at,
        serviceAccountNumber: 'A-0000AA03',
        accountCreatedAt: at
      },
      {
        supplierId: id,
        externalAccountNumber: 'I-4',
        state: 'IMPORTED',
        firstStagedAt: at,
        serviceAccountNumber: 'A-0000AA04',
        accountCreatedAt: at
      },
      // skipped after staging (one after a failure: not failed)
      { supplierId: id, externalAccountNumber: 'S-1', state: 'SKIPPED', firstStagedAt: at, stagedData: {} },
      {
        supplierId: id,
        externalAccountNumber: 'S-2',
        state: 'SKIPPED',
        firstStagedAt: at,
        stagedData: {},
        latestError: error
      },
      // skipped, never staged
      { supplierId: id, externalAccountNumber: 'S-3', state: 'SKIPPED' },
      // another supplier's process: not counted
      {
        supplierId: acmeId,
        externalAccountNumber: 'P-9',
        state: 'STAGED',
        firstStagedAt: at,
        stagedData: {},
        latestError: error
      }
    ])
    expectOk(t, await op(SKIP, { s: 'PROGRESS', e: 'S-4' }), 'skipImportProcess')

    const progress = expectOk(t, await op(PROGRESS, { s: 'PROGRESS' }), 'migrationProgress')
    t.same(Object.keys(progress).sort(), ['failed', 'imported', 'pending', 'skipped', 'staged'])
    t.equal(progress.staged, 11, 'staged: every process ever staged (5 pending + 4 imported + 2 skipped after staging)')
    t.equal(progress.pending, 5, 'pending: staged, not created, not skipped')
    t.equal(progress.imported, 4, 'imported')
    t.equal(progress.skipped, 4, 'skipped: staged or not')
    t.equal(progress.failed, 2, 'failed: pending ones whose latest create failed')
  })

  t.test('migrationProgress for an unknown supplier is not_found', async (t) => {
    expectError(t, await op(PROGRESS, { s: 'NO_SUCH' }), 'migrationProgress', 'not_found')
    expectError(t, await op(PROGRESS, { s: '' }), 'migrationProgress', 'not_found', 'empty code')
  })

  t.test('an operator token may not call the data-import endpoints', async (t) => {
    const token = await operatorToken(app)
    const res = await listProcesses(app, 'all', 'ACME_ENERGY', token)
    t.equal(res.statusCode, 403)
    t.equal(res.json().code, 'permission_denied')
  })
})

// ---------------------------------------------------------------------------------------------
// Who may call the operator fields
// ---------------------------------------------------------------------------------------------

t.test('operator fields need an operator token', async (t) => {
  const { app, database } = await buildTestApp(t)
  const tenant = await createTenant(app, 'Tenant Org', 'TENANT_SUP')
  const skippedId = await supplierId(database, 'TENANT_SUP')
  await database.db.insert(importProcesses).values({
    supplierId: skippedId,
    externalAccountNumber: 'KNOWN-1',
    state: 'STAGED',
    firstStagedAt: new Date(),
    stagedData: {}
  })

  // `ownSuppliers`: organisations may read these for their own suppliers (tested in failures-graphql.test.ts).
  const fields: Array<{ field: string; query: string; variables?: Record<string, unknown>; ownSuppliers?: true }> = [
    { field: 'createOrganisation', query: CREATE_ORGANISATION, variables: { name: 'Intruder Org' } },
    { field: 'createApiKey', query: CREATE_API_KEY, variables: { o: 'Tenant Org' } },
    { field: 'revokeApiKey', query: REVOKE_API_KEY, variables: { id: tenant.apiKeyId } },
    {
      field: 'createImportSupplier',
      query: CREATE_SUPPLIER,
      variables: { input: { code: 'INTRUDER', organisation: 'Tenant Org' } }
    },
    {
      field: 'updateImportSupplier',
      query: UPDATE_SUPPLIER,
      variables: { input: { code: 'TENANT_SUP', status: 'Complete', maxConcurrentProcessing: 1 } }
    },
    { field: 'createOperationsTeam', query: CREATE_TEAM, variables: { name: 'Intruder Team' } },
    { field: 'skipImportProcess', query: SKIP, variables: { s: 'TENANT_SUP', e: 'KNOWN-1' } },
    { field: 'importSuppliers', query: LIST_SUPPLIERS, ownSuppliers: true },
    { field: 'importProcessEvents', query: EVENTS, variables: { s: 'TENANT_SUP', e: 'KNOWN-1' }, ownSuppliers: true },
    { field: 'migrationProgress', query: PROGRESS, variables: { s: 'TENANT_SUP' }, ownSuppliers: true },
    { field: 'organisations', query: '{ organisations { id name } }' },
    { field: 'apiKeys', query: '{ apiKeys { id organisation createdAt revokedAt } }' },
    { field: 'operationsTeams', query: '{ operationsTeams { id name } }' }
  ]

  const callers: Array<{ name: string; headers: () => Record<string, string>; code: string }> = [
    { name: 'no token', headers: () => ({}), code: 'not_authenticated' },
    {
      name: 'an organisation token',
      headers: () => ({ authorization: `Bearer ${tenant.token}` }),
      code: 'permission_denied'
    },
    {
      name: 'an organisation token (Token form)',
      headers: () => ({ authorization: `Token ${tenant.token}` }),
      code: 'permission_denied'
    },
    { name: 'a garbage token', headers: () => ({ authorization: 'Bearer not.a.jwt' }), code: 'authentication_failed' },
    {
      name: 'a garbage token without a prefix',
      headers: () => ({ authorization: 'garbage' }),
      code: 'authentication_failed'
    },
    {
      name: 'a token signed with another secret',
      headers: () => ({ authorization: `JWT ${FOREIGN_JWT}` }),
      code: 'authentication_failed'
    }
  ]

  const supplierBefore = await supplierRow(database, 'TENANT_SUP')
  const rowsBefore = await countRows(database)

  for (const caller of callers) {
    t.test(`with ${caller.name}`, async (t) => {
      for (const { field, query, variables, ownSuppliers } of fields) {
        if (ownSuppliers && caller.code === 'permission_denied') continue
        const res = await app.inject({
          method: 'POST',
          url: '/graphql',
          headers: caller.headers(),
          payload: { query, variables: variables ?? {} }
        })
        const body = res.json()
        const result: GraphQLResult = { status: res.statusCode, data: body.data ?? null, errors: body.errors, body }
        expectError(t, result, field, caller.code, field)
        t.equal(result.errors?.length, 1, `${field}: one error`)
        t.notOk(JSON.stringify(body).includes('"key":"amk_'), `${field}: no key leaks`)
      }
      t.same(await countRows(database), rowsBefore, 'nothing was created')
      t.same(await supplierRow(database, 'TENANT_SUP'), supplierBefore, 'the supplier is unchanged')
      const [key] = await database.db.select().from(apiKeys).where(eq(apiKeys.id, tenant.apiKeyId))
      t.equal(key?.revokedAt, null, 'the key is not revoked')
      const [process] = await database.db
        .select()
        .from(importProcesses)
        .where(and(eq(importProcesses.supplierId, skippedId), eq(importProcesses.externalAccountNumber, 'KNOWN-1')))
      t.equal(process?.state, 'STAGED', 'the process is not skipped')
    })
  }

  t.test('the organisation key still obtains tokens afterwards', async (t) => {
    const res = await gql(app, OBTAIN_TOKEN, { input: { APIKey: tenant.apiKey } })
    t.type(expectOk(t, res, 'obtainToken')?.token, 'string')
  })

  t.test('the operator token works in every header form', async (t) => {
    const token = await operatorToken(app)
    for (const authorization of [token, `Token ${token}`, `JWT ${token}`, `Bearer ${token}`, `bearer ${token}`]) {
      const res = await app.inject({
        method: 'POST',
        url: '/graphql',
        headers: { authorization },
        payload: { query: '{ importSuppliers { code } }' }
      })
      t.equal(res.statusCode, 200)
      t.same(res.json().data?.importSuppliers, [{ code: 'TENANT_SUP' }], authorization.split(' ')[0]!.slice(0, 6))
      t.equal(res.json().errors, undefined)
    }
  })
})

// ---------------------------------------------------------------------------------------------
// GraphQL documents
// ---------------------------------------------------------------------------------------------

t.test('GraphQL documents', async (t) => {
  const { app, database } = await buildTestApp(t)
  const token = await operatorToken(app)
  const post = (payload: Record<string, unknown>) =>
    app.inject({ method: 'POST', url: '/graphql', headers: { authorization: `Bearer ${token}` }, payload })

  t.test('any operation name is accepted', async (t) => {
    const named = await post({ query: 'mutation Whatever { createOrganisation(input: {name: "Named One"}) { name } }' })
    t.equal(named.statusCode, 200)
    t.same(named.json(), { data: { createOrganisation: { name: 'Named One' } } })

    const withName = await post({
      query: 'mutation Whatever($n: String!) { createOrganisation(input: {name: $n}) { name } }',
      variables: { n: 'Named Two' },
      operationName: 'Whatever'
    })
    t.equal(withName.statusCode, 200)
    t.same(withName.json(), { data: { createOrganisation: { name: 'Named Two' } } }, 'with operationName sent')

    const chosen = await post({
      query:
        'query First { importSuppliers { code } } mutation Second { createOperationsTeam(input: {name: "Named Team"}) { name } }',
      operationName: 'Second'
    })
    t.equal(chosen.statusCode, 200)
    t.same(
      chosen.json(),
      { data: { createOperationsTeam: { name: 'Named Team' } } },
      'the named operation of several runs'
    )

    const query = await post({ query: 'query AnythingAtAll { importSuppliers { code } }' })
    t.equal(query.statusCode, 200)
    t.same(query.json(), { data: { importSuppliers: [] } })

    const anonymous = await post({ query: '{ migrationProgress(importSupplierCode: "NONE") { staged } }' })
    t.equal(anonymous.statusCode, 200)
    t.equal(anonymous.json().errors?.[0]?.extensions?.code, 'not_found', 'an anonymous query runs too')

    const names = (await database.db.select({ name: organisations.name }).from(organisations)).map((r) => r.name).sort()
    t.same(names, ['Named One', 'Named Two'])
  })

  t.test('a malformed document is HTTP 400', async (t) => {
    const before = await countRows(database)
    for (const query of [
      'mutation { createOrganisation(input: {name: "Broken"}) { id }',
      'mutation { createOrganisation(input: {name: "Broken"} { id } }',
      'this is not graphql',
      ''
    ]) {
      const res = await post({ query })
      t.equal(res.statusCode, 400, JSON.stringify(query))
      t.ok(Array.isArray(res.json().errors) && res.json().errors.length > 0, 'with errors')
      t.same(
        res.json().errors.map((e: { extensions?: { code?: string } }) => e.extensions?.code),
        res.json().errors.map(() => 'invalid'),
        'each with the code invalid'
      )
    }
    t.same(await countRows(database), before, 'nothing created')
  })

  t.test('a query of an unknown field is HTTP 400', async (t) => {
    const before = await countRows(database)
    const cases = [
      '{ noSuchField }',
      '{ importSuppliers { code noSuchField } }',
      'mutation { createOrganisation(input: {name: "Unknown Field"}) { id nope } }',
      'mutation { createOrganisation(input: {name: "Bad Arg", extra: 1}) { id } }',
      'mutation { deleteEverything }',
      '{ noSuchField anotherUnknownField }',
      'mutation { createOrganisation(input: {name: "Two Bad"}) { nope alsoNope } }'
    ]
    for (const query of cases) {
      const res = await post({ query })
      t.equal(res.statusCode, 400, query)
      t.ok(Array.isArray(res.json().errors) && res.json().errors.length > 0, 'with errors')
      t.same(
        res.json().errors.map((e: { extensions?: { code?: string } }) => e.extensions?.code),
        res.json().errors.map(() => 'invalid'),
        'each with the code invalid'
      )
      t.equal(res.json().data ?? null, null, 'no data')
    }
    t.same(await countRows(database), before, 'nothing created')
  })

  t.test('a wrongly typed variable is HTTP 400 and creates nothing', async (t) => {
    const before = await countRows(database)
    const res = await post({
      query: CREATE_SUPPLIER,
      variables: { input: { code: 'TYPED', organisation: 'Named One', status: 'Running' } }
    })
    t.equal(res.statusCode, 400)
    t.ok(Array.isArray(res.json().errors) && res.json().errors.length > 0, 'with errors')
    t.same(await countRows(database), before, 'nothing created')
  })
})

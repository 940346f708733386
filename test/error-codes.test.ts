import t from 'tap'
import { readFileSync } from 'node:fs'
import { ERROR_CODES } from '../schemas/error-codes.js'
import { API_DOC, errorCodesTable, tableIn } from '../scripts/error-codes-table.js'
import { importSetup } from './helpers/accounts.js'
import { createTenant, operatorToken } from './helpers/graphql.js'
import { expectStandalone } from './helpers/security.js'

/** `GET /v1/data-import/error-codes/`, and the table of docs/api.md, both from the catalogue. */

const URL = '/v1/data-import/error-codes/'

t.test(
  'every code of the catalogue, sorted, with its status, kind, meaning and steps; the same for every organisation',
  async (t) => {
    const { app, tenant } = await importSetup(t)
    const res = await app.inject({ url: URL, headers: { authorization: `Token ${tenant.token}` } })
    t.equal(res.statusCode, 200)
    const body = res.json() as Array<{ code: string; status: number; kind: string; meaning: string; steps: string[] }>
    const codes = Object.keys(ERROR_CODES).sort()
    t.same(
      body.map((c) => c.code),
      codes,
      'every code, sorted by code'
    )
    t.same(
      body.find((c) => c.code === 'invalid_postcode'),
      {
        code: 'invalid_postcode',
        status: 400,
        kind: 'entry',
        meaning: ERROR_CODES.invalid_postcode.meaning,
        steps: ['validate', 'stage', 'create']
      }
    )
    t.same(
      body.find((c) => c.code === 'throttled'),
      { code: 'throttled', status: 429, kind: 'top', meaning: ERROR_CODES.throttled.meaning, steps: [] }
    )
    for (const item of body) {
      t.same(Object.keys(item), ['code', 'status', 'kind', 'meaning', 'steps'], `${item.code}: no detail wording`)
    }
    t.equal(
      (await app.inject({ url: URL.slice(0, -1), headers: { authorization: `Bearer ${tenant.token}` } })).body,
      res.body,
      'the trailing slash is optional'
    )

    const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
    t.equal(
      (await app.inject({ url: URL, headers: { authorization: `Token ${other.token}` } })).body,
      res.body,
      'another organisation reads the same'
    )
  }
)

t.test("the token is needed, an organisation's", async (t) => {
  const { app } = await importSetup(t)
  expectStandalone(t, await app.inject({ url: URL }), 401, 'not_authenticated', 'no token')
  expectStandalone(
    t,
    await app.inject({ url: URL, headers: { authorization: 'Token nope' } }),
    401,
    'authentication_failed',
    'a bad token'
  )
  expectStandalone(
    t,
    await app.inject({ url: URL, headers: { authorization: `Token ${await operatorToken(app)}` } }),
    403,
    'permission_denied',
    "the operator's"
  )
})

t.test("the table of docs/api.md is the catalogue's", async (t) => {
  const written = tableIn(readFileSync(API_DOC, 'utf8'))
  const fix = 'run: npx tsx scripts/error-codes-table.ts --write'
  const rows = (table: string) =>
    new Map(
      table
        .split('\n')
        .slice(2)
        .filter((line) => line.startsWith('|'))
        .map((line) => {
          const [code, status, meaning] = line.split(' | ').map((cell) => cell.replace(/^\| |`| \|$/g, ''))
          return [code!, `${status} | ${meaning}`]
        })
    )
  const doc = rows(written)
  const catalogue = rows(errorCodesTable())
  t.ok(written.length > 0, `docs/api.md holds the table between its markers; ${fix}`)
  for (const [code, row] of catalogue) {
    if (!doc.has(code)) t.fail(`${code} is missing from the table of docs/api.md; ${fix}`)
    else t.equal(doc.get(code), row, `${code}: status and meaning as in schemas/error-codes.ts; ${fix}`)
  }
  for (const code of doc.keys()) {
    if (!catalogue.has(code)) t.fail(`${code} is in the table of docs/api.md but not in schemas/error-codes.ts; ${fix}`)
  }
  t.equal(written, errorCodesTable(), `the table is exactly the generated one; ${fix}`)
})

import t from 'tap'
import { importProcesses, importSuppliers } from '../drizzle/schema/index.js'
import { eq } from 'drizzle-orm'
import { buildTestApp } from './helpers/app.js'
import { createTenant } from './helpers/graphql.js'

const LISTS = ['all', 'pending', 'imported'] as const

t.test('the three lists are scoped to the caller organisation', async (t) => {
  const { app, database } = await buildTestApp(t)
  const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')
  const other = await createTenant(app, 'Other', 'OTHER_POWER')
  const get = (url: string, token: string) =>
    app.inject({ method: 'GET', url, headers: { authorization: `Token ${token}` } })

  t.test('empty lists are []', async (t) => {
    for (const list of LISTS) {
      const res = await get(`/v1/data-import/${list}-account-import-processes/ACME_ENERGY/`, acme.token)
      t.equal(res.statusCode, 200, list)
      t.same(res.json(), [], list)
    }
  })

  t.test('the trailing slash is optional', async (t) => {
    const res = await get('/v1/data-import/all-account-import-processes/ACME_ENERGY', acme.token)
    t.equal(res.statusCode, 200)
  })

  t.test('an unknown supplier and a foreign supplier give the same 404', async (t) => {
    for (const list of LISTS) {
      const unknown = await get(`/v1/data-import/${list}-account-import-processes/NO_SUCH/`, acme.token)
      const foreign = await get(`/v1/data-import/${list}-account-import-processes/OTHER_POWER/`, acme.token)
      t.equal(unknown.statusCode, 404)
      t.equal(foreign.statusCode, 404)
      t.equal(foreign.json().code, 'not_found')
      t.same(
        foreign.json().errors.map((e: any) => [e.code, e.attr]),
        [['import_process_does_not_exist', null]]
      )
      t.same(
        { ...foreign.json(), errors: foreign.json().errors.map((e: any) => e.code) },
        { ...unknown.json(), errors: unknown.json().errors.map((e: any) => e.code) },
        'nothing reveals that the foreign supplier exists'
      )
    }
  })

  t.test('codes that cannot exist (NUL, lower case, too long) are unknown suppliers: 404, never 500', async (t) => {
    for (const code of ['%00', 'ACME%00ENERGY', 'acme_energy', 'A'.repeat(33), '%F0%9F%98%80']) {
      const res = await get(`/v1/data-import/all-account-import-processes/${code}/`, acme.token)
      t.equal(res.statusCode, 404, code)
      t.equal(res.json().code, 'not_found')
    }
  })

  t.test('lists hold the right processes, ordered by code point', async (t) => {
    const [supplier] = await database.db
      .select({ id: importSuppliers.id })
      .from(importSuppliers)
      .where(eq(importSuppliers.code, 'ACME_ENERGY'))
    const created = new Date('2026-11-20T10:11:12.345Z')
    await database.db.insert(importProcesses).values([
      { supplierId: supplier!.id, externalAccountNumber: 'b-2', state: 'STAGED', firstStagedAt: created },
      {
        supplierId: supplier!.id,
        externalAccountNumber: 'B-1',
        state: 'IMPORTED',
        firstStagedAt: created,
        serviceAccountNumber: 'A-0000ABCD',
        accountCreatedAt: created
      },
      { supplierId: supplier!.id, externalAccountNumber: 'a-3', state: 'SKIPPED' },
      { supplierId: supplier!.id, externalAccountNumber: '_9', state: 'STAGED', firstStagedAt: created }
    ])
    const all = (await get('/v1/data-import/all-account-import-processes/ACME_ENERGY/', acme.token)).json()
    t.same(
      all.map((p: any) => p.external_account_number),
      ['B-1', '_9', 'a-3', 'b-2'],
      'upper case < _ < lower case'
    )
    t.same(all[0], {
      external_account_number: 'B-1',
      service_account_number: 'A-0000ABCD',
      account_created_at: '2026-11-20T10:11:12Z'
    })
    t.same(all[1], { external_account_number: '_9', service_account_number: null, account_created_at: null })
    const pending = (await get('/v1/data-import/pending-account-import-processes/ACME_ENERGY/', acme.token)).json()
    t.same(
      pending.map((p: any) => p.external_account_number),
      ['_9', 'b-2'],
      'skipped and imported are not pending'
    )
    const imported = (await get('/v1/data-import/imported-account-import-processes/ACME_ENERGY/', acme.token)).json()
    t.same(imported, [
      {
        external_account_number: 'B-1',
        service_account_number: 'A-0000ABCD',
        account_created_at: '2026-11-20T10:11:12Z'
      }
    ])
    const theirs = (await get('/v1/data-import/all-account-import-processes/OTHER_POWER/', other.token)).json()
    t.same(theirs, [], 'the other organisation sees none of them')
  })
})

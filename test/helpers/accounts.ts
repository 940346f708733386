import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildTestApp, type TestApp } from './app.js'
import { asOperator, createTenant, type Tenant } from './graphql.js'
import { exampleAccount } from './account-data.js'
import { waitFor } from './wait.js'

export { daysFromToday, exampleAccount } from './account-data.js'

export const TEAM = 'Migrations'

/** Calls of the account import endpoints with one tenant's token. */
export function importClient(app: FastifyInstance, tenant: Tenant) {
  const headers = { authorization: `Token ${tenant.token}` }
  const post = (url: string, payload: unknown) =>
    app.inject({ method: 'POST', url: `/v1/data-import/${url}`, headers, payload: payload as object })
  const get = (url: string) => app.inject({ method: 'GET', url: `/v1/data-import/${url}`, headers })
  const enc = encodeURIComponent
  return {
    validate: (account: unknown) => post('validate-account/', account),
    stage: (account: unknown) => post('account-import-process/create-or-update/', account),
    create: (external: string, options: { team?: string; dryRun?: boolean; supplier?: string } = {}) =>
      post('account-import-process/process/', {
        external_account_number: external,
        import_supplier_code: options.supplier ?? tenant.supplier,
        operations_team_name: options.team ?? TEAM,
        ...(options.dryRun !== undefined ? { dry_run: options.dryRun } : {})
      }),
    status: (external: string, supplier = tenant.supplier) =>
      get(`account-transfer-status/${enc(supplier)}/${enc(external)}/`),
    summary: (external: string, supplier = tenant.supplier) => get(`accounts/${enc(supplier)}/${enc(external)}/`),
    list: (kind: 'all' | 'pending' | 'imported', query = '', supplier = tenant.supplier) =>
      get(`${kind}-account-import-processes/${enc(supplier)}/${query}`)
  }
}

export type ImportClient = ReturnType<typeof importClient>

/** An app with one tenant (Acme, supplier ACME_ENERGY) and the operations team `Migrations`. */
export async function importSetup(
  t: Parameters<typeof buildTestApp>[0],
  options: Parameters<typeof buildTestApp>[1] = {}
) {
  const testApp: TestApp = await buildTestApp(t, options)
  const tenant = await createTenant(testApp.app, 'Acme', 'ACME_ENERGY')
  await asOperator(testApp.app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
  return { ...testApp, tenant, client: importClient(testApp.app, tenant) }
}

/**
 * The import job `id` read with `token` once it is in one of `states` (the runner works in the
 * background): waits with `waitFor`, so the test fails if the job is still elsewhere after `timeoutMs`.
 * `Job` is the type the caller reads it as (a plain object unless told).
 */
export async function jobSettled<Job = Record<string, any>>(
  app: FastifyInstance,
  token: string,
  id: string,
  { states = ['COMPLETED', 'CANCELLED'], timeoutMs = 60_000, intervalMs = 50 } = {}
): Promise<Job> {
  let job: Record<string, any> | undefined
  return waitFor(
    `job ${id} is ${states.join(' or ')}`,
    async () => {
      job = (
        await app.inject({ url: `/v1/data-import/import-jobs/${id}/`, headers: { authorization: `Bearer ${token}` } })
      ).json()
      return states.includes(job!.state) && (job as Job)
    },
    { timeoutMs, intervalMs, seen: () => `the job ${job?.state}` }
  )
}

/** `[code, attr]` pairs of an error response, in the order given. */
export function codes(res: LightMyRequestResponse): Array<[string, string | null]> {
  return (res.json().errors as Array<{ code: string; attr: string | null }>).map((e) => [e.code, e.attr])
}

/**
 * `importSetup` plus the example account staged and created, and `post(path, fields)` for the
 * post-import endpoints (the account reference is added to `fields`).
 */
export async function importedSetup(
  t: Parameters<typeof buildTestApp>[0],
  options: Parameters<typeof buildTestApp>[1] = {}
) {
  const setup = await importSetup(t, options)
  const staged = await setup.client.stage(exampleAccount())
  if (staged.statusCode !== 201) throw new Error('stage failed: ' + staged.body)
  const created = await setup.client.create('EXT-000123')
  if (created.statusCode !== 201) throw new Error('create failed: ' + created.body)
  const ref = { import_supplier: 'ACME_ENERGY', external_account_number: 'EXT-000123' }
  const post = (path: string, fields: Record<string, unknown>, query = '') =>
    setup.app.inject({
      method: 'POST',
      url: `/v1/data-import/${path}${query}`,
      headers: { authorization: `Token ${setup.tenant.token}` },
      payload: { ...ref, ...fields }
    })
  return {
    ...setup,
    ref,
    post,
    serviceAccountNumber: created.json().service_account_number as string,
    ledgerNumber: created.json().ledgers[0].ledger_number as string
  }
}

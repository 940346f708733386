import t, { type Test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { asc, eq, sql, type SQL } from 'drizzle-orm'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { importEvents, importProcesses, importSuppliers } from '../drizzle/schema/index.js'
import { openPostgres, type Database, type Db } from '../src/db/index.js'
import { ERASED_DETAIL } from '../src/modules/imports/service.js'
import { createRetentionService, type RetentionService } from '../src/modules/retention/service.js'
import { createRetentionWorker, RETENTION_INTERVAL_MS } from '../src/modules/retention/worker.js'
import { codes, exampleAccount, importSetup, TEAM, type ImportClient } from './helpers/accounts.js'
import { buildTestApp } from './helpers/app.js'
import { freshDatabase, holdLocks, rowsOf, tableCounts, testDatabaseUrl } from './helpers/database.js'
import { asOperator, createTenant, gql, operatorToken } from './helpers/graphql.js'
import { waitFor } from './helpers/wait.js'

/**
 * Personal-data retention: the staged data of an imported or skipped account is erased once the
 * retention period has passed, and the error entries stored with it lose their detail; the
 * operator's eraseStagedData does both at once for one pair. The job's clock is injected.
 */

const SUPPLIER = 'ACME_ENERGY'
const DAY_MS = 86_400_000
/** A clock `days` ahead of the real one. */
const ahead = (days: number) => () => new Date(Date.now() + days * DAY_MS)

const SKIP =
  'mutation($s: String!, $e: String!) { skipImportProcess(input: {importSupplierCode: $s, externalAccountNumber: $e}) { state } }'
const ERASE = `mutation($s: String!, $e: String!) {
  eraseStagedData(input: {importSupplierCode: $s, externalAccountNumber: $e}) { importSupplierCode externalAccountNumber state serviceAccountNumber }
}`
const EVENTS =
  'query($s: String!, $e: String!) { importProcessEvents(importSupplierCode: $s, externalAccountNumber: $e) { type actor detail } }'

type Detail = { errors?: Array<Record<string, unknown>> } & Record<string, unknown>

/** Error entries held by a stored value (`latest_error` or an event's detail). */
const entriesOf = (value: unknown): Array<Record<string, unknown>> => (value as Detail | null)?.errors ?? []

/** The value with its error entries reduced to `{code, attr}`. */
function reduced<T>(value: T): T {
  const v = value as Detail | null
  if (!v || !Array.isArray(v.errors)) return value
  return { ...v, errors: v.errors.map(({ code, attr }) => ({ code, attr })) } as T
}

const whole = (value: unknown) =>
  entriesOf(value).length > 0 && entriesOf(value).every((e) => typeof e.detail === 'string')
const withoutDetail = (value: unknown) => entriesOf(value).every((e) => Object.keys(e).sort().join() === 'attr,code')

async function supplierId(database: Database, code = SUPPLIER): Promise<string> {
  const [row] = await database.db
    .select({ id: importSuppliers.id })
    .from(importSuppliers)
    .where(eq(importSuppliers.code, code))
  return row!.id
}

async function processOf(database: Database, external: string) {
  const [row] = await database.db
    .select()
    .from(importProcesses)
    .where(eq(importProcesses.externalAccountNumber, external))
  if (!row) throw new Error(`no process ${external}`)
  return row
}

async function eventsOf(database: Database, processId: number) {
  return database.db
    .select()
    .from(importEvents)
    .where(eq(importEvents.importProcessId, processId))
    .orderBy(asc(importEvents.id))
}

/** Every process and event row and every table's row count. */
async function everything(database: Database) {
  return {
    processes: await database.db.select().from(importProcesses).orderBy(asc(importProcesses.id)),
    events: await database.db.select().from(importEvents).orderBy(asc(importEvents.id)),
    counts: await tableCounts(database)
  }
}
type Everything = Awaited<ReturnType<typeof everything>>

/**
 * Compares the tables with what they were, expecting only the erasure of the processes `erased`:
 * their staged data gone, their stored entries reduced, their erasure time set; nothing else.
 */
function expectErasedOnly(t: Test, before: Everything, after: Everything, erased: Set<number>) {
  const expectedProcesses = before.processes.map((p) => {
    if (!erased.has(p.id)) return p
    const now = after.processes.find((q) => q.id === p.id)
    t.type(now?.stagedDataErasedAt, Date, `process ${p.externalAccountNumber}: its erasure time is set`)
    return { ...p, stagedData: null, latestError: reduced(p.latestError), stagedDataErasedAt: now?.stagedDataErasedAt }
  })
  t.same(
    after.processes,
    expectedProcesses,
    'processes: only the staged data, the error details and the erasure time changed'
  )
  t.same(
    after.events,
    before.events.map((e) => (erased.has(e.importProcessId) ? { ...e, detail: reduced(e.detail) } : e)),
    'events: all kept, only the error details of erased processes reduced'
  )
  t.same(after.counts, before.counts, 'no row added or removed in any table (accounts included)')
}

/**
 * Four pairs at the end of their life: IMP imported (after a failed dry run and a failed create),
 * SKIP skipped after a failed create, PEND pending with a failed create, NEVER skipped without
 * ever being staged.
 */
async function lifecycle(app: FastifyInstance, client: ImportClient) {
  const stage = async (external: string) => {
    const res = await client.stage(exampleAccount({ external_account_number: external }))
    if (res.statusCode !== 201) throw new Error(res.body)
  }
  const fail = async (external: string, dryRun = false) => {
    const res = await client.create(external, { team: 'Nobody Ann Example', dryRun })
    if (res.statusCode !== 400) throw new Error(res.body)
  }
  await stage('IMP')
  await fail('IMP', true)
  await fail('IMP')
  const created = await client.create('IMP')
  if (created.statusCode !== 201) throw new Error(created.body)
  await stage('SKIP')
  await fail('SKIP')
  await asOperator(app, SKIP, { s: SUPPLIER, e: 'SKIP' })
  await stage('PEND')
  await fail('PEND')
  await asOperator(app, SKIP, { s: SUPPLIER, e: 'NEVER' })
}

t.test('the retention period, measured with an injected clock', async (t) => {
  const { app, database, client } = await importSetup(t)
  await lifecycle(app, client)
  const ids = Object.fromEntries(
    await Promise.all(
      ['IMP', 'SKIP', 'PEND', 'NEVER'].map(async (e) => [e, (await processOf(database, e)).id] as const)
    )
  )
  const start = await everything(database)
  t.ok(whole((await processOf(database, 'SKIP')).latestError), 'a stored error has its detail before the period ends')
  t.ok(
    (await eventsOf(database, ids.IMP!))
      .filter((e) => e.type === 'CREATE_FAILED' || e.type === 'DRY_RUN')
      .every((e) => whole(e.detail)),
    'so do the events'
  )
  t.type((await processOf(database, 'SKIP')).skippedAt, Date, 'the skip recorded when it happened')

  t.test('before the period ends nothing changes', async (t) => {
    const job = createRetentionService(database.db, { retentionDays: 30, now: ahead(29) })
    t.same(await job.runOnce(), { processes: 0, payloads: 0 })
    t.same(await everything(database), start)
  })

  t.test('after it, the payloads of imported and skipped accounts are erased and their errors reduced', async (t) => {
    const job = createRetentionService(database.db, { retentionDays: 30, now: ahead(31) })
    t.same(await job.runOnce(), { processes: 3, payloads: 2 }, 'IMP, SKIP and NEVER erased; NEVER had no payload')
    const after = await everything(database)
    expectErasedOnly(t, start, after, new Set([ids.IMP!, ids.SKIP!, ids.NEVER!]))
    t.not((await processOf(database, 'PEND')).stagedData, null, 'the pending payload is kept')
    t.ok(whole((await processOf(database, 'PEND')).latestError), 'with its whole error')
    t.ok(withoutDetail((await processOf(database, 'SKIP')).latestError), 'the skipped one keeps codes and attrs only')
    const impEvents = await eventsOf(database, ids.IMP!)
    t.same(
      impEvents.map((e) => e.type),
      ['STAGED', 'DRY_RUN', 'CREATE_ATTEMPTED', 'CREATE_FAILED', 'CREATE_ATTEMPTED', 'CREATED']
    )
    t.same(impEvents.find((e) => e.type === 'DRY_RUN')!.detail, {
      would_succeed: false,
      errors: [{ code: 'operations_team_name_does_not_exist', attr: 'operations_team_name' }]
    })
    t.same(impEvents.find((e) => e.type === 'CREATE_FAILED')!.detail, {
      errors: [{ code: 'operations_team_name_does_not_exist', attr: 'operations_team_name' }]
    })

    t.same(await job.runOnce(), { processes: 0, payloads: 0 }, 'a second run finds nothing left')
    t.same(await everything(database), after, 'and changes nothing')
  })

  t.test('the status, summary and event reads still answer', async (t) => {
    const summary = await client.summary('IMP')
    t.equal(summary.statusCode, 200, summary.body)
    t.equal(summary.json().counts.customers, exampleAccount().customers.length)
    t.same((await client.status('IMP')).json(), {
      status: 'COMPLETED',
      service_account_number: summary.json().service_account_number,
      latest_error: null
    })
    const status = await client.status('SKIP')
    t.equal(status.statusCode, 200)
    t.same(
      status.json().latest_error.errors,
      [{ detail: ERASED_DETAIL, code: 'operations_team_name_does_not_exist', attr: 'operations_team_name' }],
      'an erased detail is answered as a fixed sentence'
    )
    t.ok(whole((await client.status('PEND')).json().latest_error), 'a pending account still shows its whole error')
    const events = (await asOperator(app, EVENTS, { s: SUPPLIER, e: 'IMP' })).importProcessEvents
    t.equal(events.length, 6)
    t.equal((await client.list('all')).statusCode, 200)
  })

  t.test('a create of an erased account answers as before for imported ones, nothing staged otherwise', async (t) => {
    const imported = await client.create('IMP')
    t.equal(imported.statusCode, 400)
    t.equal(imported.json().code, 'account_already_imported')
    for (const external of ['SKIP', 'NEVER']) {
      const res = await client.create(external)
      t.equal(res.statusCode, 400, external)
      t.same(codes(res), [['import_process_does_not_exist', 'external_account_number']], external)
    }
  })
})

t.test('the period starts when the account was imported or skipped, measured against the real clock', async (t) => {
  const { app, database, client } = await importSetup(t)
  for (const external of ['OLD-IMP', 'NEW-IMP', 'OLD-SKIP', 'NEW-SKIP', 'LONG-STAGED']) {
    await client.stage(exampleAccount({ external_account_number: external }))
  }
  await client.create('OLD-IMP')
  await client.create('NEW-IMP')
  for (const external of ['OLD-SKIP', 'NEW-SKIP', 'LONG-STAGED']) {
    await asOperator(app, SKIP, { s: SUPPLIER, e: external })
  }
  const set = (external: string, assignment: SQL) =>
    database.db.execute(sql`update import_processes set ${assignment} where external_account_number = ${external}`)
  await set('OLD-IMP', sql`account_created_at = now() - interval '30 days 1 minute'`)
  await set('NEW-IMP', sql`account_created_at = now() - interval '29 days 23 hours 59 minutes'`)
  await set('OLD-SKIP', sql`skipped_at = now() - interval '30 days 1 minute'`)
  await set('NEW-SKIP', sql`skipped_at = now() - interval '29 days 23 hours 59 minutes'`)
  // Staged long ago, skipped just now: the period counts from the skip.
  await set(
    'LONG-STAGED',
    sql`created_at = now() - interval '90 days', first_staged_at = now() - interval '90 days', updated_at = now() - interval '90 days'`
  )

  const job = createRetentionService(database.db, { retentionDays: 30 })
  t.same(await job.runOnce(), { processes: 2, payloads: 2 })
  for (const [external, erased] of [
    ['OLD-IMP', true],
    ['NEW-IMP', false],
    ['OLD-SKIP', true],
    ['NEW-SKIP', false],
    ['LONG-STAGED', false]
  ] as const) {
    t.equal(
      (await processOf(database, external)).stagedData === null,
      erased,
      `${external} ${erased ? 'erased' : 'kept'}`
    )
  }
})

t.test('0 days: erased on the next run', async (t) => {
  const { database, client } = await importSetup(t)
  await client.stage(exampleAccount({ external_account_number: 'NOW' }))
  await client.stage(exampleAccount({ external_account_number: 'WAITING' }))
  t.equal((await client.create('NOW')).statusCode, 201)
  const job = createRetentionService(database.db, { retentionDays: 0 })
  t.same(await job.runOnce(), { processes: 1, payloads: 1 })
  t.equal((await processOf(database, 'NOW')).stagedData, null)
  t.not((await processOf(database, 'WAITING')).stagedData, null, 'a pending payload stays')
})

/** `n` imported processes (no account rows: the job never reads them), each with a failed create. */
async function insertImported(database: Database, prefix: string, n: number) {
  const failed = JSON.stringify({
    errors: [
      {
        detail: 'Ann Example <ann@example.test> is not a valid e-mail address.',
        code: 'invalid_email',
        attr: 'customers.0.email'
      }
    ]
  })
  await database.db.execute(sql`with p as (
      insert into import_processes (supplier_id, external_account_number, state, staged_data, first_staged_at, service_account_number, account_created_at, latest_error)
      select ${await supplierId(database)}::uuid, ${prefix} || g, 'IMPORTED', ${JSON.stringify(exampleAccount())}::jsonb, now(),
        'A-' || ${prefix} || g, now(), ${JSON.stringify({ at: '2026-01-01T00:00:00Z', ...JSON.parse(failed) })}::jsonb
      from generate_series(1, ${n}::int) as g
      returning id)
    insert into import_events (import_process_id, type, actor, detail)
    select id, 'CREATE_FAILED', 'organisation:Acme', ${failed}::jsonb from p`)
}

/** Per state of erasure, how many of the processes whose number starts with `prefix` are in it; a mix is a torn row. */
async function erasureStates(database: Database, prefix: string) {
  const rows = rowsOf<{ kind: string; n: number | string }>(
    await database.db.execute(sql`select case
      when p.staged_data is null and p.staged_data_erased_at is not null and not exists (select 1 from jsonb_array_elements(p.latest_error -> 'errors') e where e.value -> 'detail' is not null)
        and not exists (select 1 from import_events e, jsonb_array_elements(e.detail -> 'errors') x where e.import_process_id = p.id and x.value -> 'detail' is not null) then 'erased'
      when p.staged_data is not null and p.staged_data_erased_at is null and exists (select 1 from jsonb_array_elements(p.latest_error -> 'errors') e where e.value -> 'detail' is not null)
        and exists (select 1 from import_events e, jsonb_array_elements(e.detail -> 'errors') x where e.import_process_id = p.id and x.value -> 'detail' is not null) then 'untouched'
      else 'torn' end as kind, count(*) as n
    from import_processes p where p.external_account_number like ${prefix + '%'} group by 1 order by 1`)
  )
  return Object.fromEntries(rows.map((r) => [r.kind, Number(r.n)]))
}

t.test('a run stopped after its first batch leaves whole rows, and the next run finishes', async (t) => {
  const { database } = await importSetup(t)
  await insertImported(database, 'K-', 7)
  let batches = 0
  const failing = createRetentionService(database.db, {
    retentionDays: 30,
    now: ahead(31),
    batchSize: 3,
    afterBatch: () => {
      if (++batches === 1) throw new Error('killed')
    }
  })
  await t.rejects(failing.runOnce(), /killed/)
  t.same(
    await erasureStates(database, 'K-'),
    { erased: 3, untouched: 4 },
    'the first batch is erased, the others untouched'
  )
  const job = createRetentionService(database.db, { retentionDays: 30, now: ahead(31), batchSize: 3 })
  t.same(await job.runOnce(), { processes: 4, payloads: 4 }, 'the next run erases the rest')
  t.same(await erasureStates(database, 'K-'), { erased: 7 })
})

/** The database with calls of `db.transaction` or `db.execute` held on demand, to order a race. */
function gated(database: Database) {
  const pauses: Array<{
    method: string
    match: (args: unknown[]) => boolean
    reached: () => void
    released: Promise<void>
  }> = []
  const db = new Proxy(database.db, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      if (property !== 'transaction' && property !== 'execute') return value.bind(target)
      return (...args: unknown[]) => {
        const i = pauses.findIndex((p) => p.method === property && p.match(args))
        if (i < 0) return value.apply(target, args)
        const [pause] = pauses.splice(i, 1)
        return (async () => {
          pause!.reached()
          await pause!.released
          return await value.apply(target, args)
        })()
      }
    }
  }) as Db
  return {
    database: { ...database, db },
    /** Holds the next call of `method` that `match`es until `release()`. */
    pause(method: 'transaction' | 'execute', match: (args: unknown[]) => boolean = () => true) {
      let reached!: () => void
      let release!: () => void
      const reachedP = new Promise<void>((resolve) => {
        reached = resolve
      })
      pauses.push({
        method,
        match,
        reached,
        released: new Promise<void>((resolve) => {
          release = resolve
        })
      })
      return { reached: reachedP, release: () => release() }
    }
  }
}

/** The SQL text of a Drizzle SQL object (its string chunks). */
function sqlText(chunk: unknown): string {
  const c = chunk as { queryChunks?: unknown[]; value?: unknown }
  if (Array.isArray(c?.queryChunks)) return c.queryChunks.map(sqlText).join('')
  return Array.isArray(c?.value) ? c.value.join('') : ''
}

t.test('an erasure between the steps of a create, in each order', async (t) => {
  const fresh = await freshDatabase()
  const gate = gated(fresh.database)
  const { database, client } = await importSetup(t, { database: gate.database })
  t.teardown(async () => {
    await fresh.database.close()
    await fresh.drop()
  })
  // The erasure goes around the gate.
  const retention = createRetentionService(fresh.database.db, { retentionDays: 30 })
  const supplier = { id: await supplierId(database), code: SUPPLIER }
  const accountsOf = async (processId: number) =>
    Number(
      rowsOf<{ n: string | number }>(
        await database.db.execute(sql`select count(*) as n from accounts where import_process_id = ${processId}`)
      )[0]!.n
    )

  t.test('after the look-up, before the create reads the staged data: nothing staged', async (t) => {
    await client.stage(exampleAccount({ external_account_number: 'GAP-1' }))
    const hold = gate.pause('transaction')
    const creating = client.create('GAP-1')
    await hold.reached
    await retention.eraseStagedData(supplier, 'GAP-1', async () => {})
    hold.release()
    const res = await creating
    t.equal(res.statusCode, 400, res.body)
    t.same(codes(res), [['import_process_does_not_exist', 'external_account_number']])
    const process = await processOf(database, 'GAP-1')
    t.equal(process.state, 'STAGED')
    t.equal(await accountsOf(process.id), 0, 'no account')
    t.same(
      (await eventsOf(database, process.id)).map((e) => e.type),
      ['STAGED', 'STAGED_DATA_ERASED']
    )

    t.equal(
      (await client.stage(exampleAccount({ external_account_number: 'GAP-1' }))).statusCode,
      200,
      'staged again: a restage'
    )
    t.equal((await processOf(database, 'GAP-1')).stagedDataErasedAt, null, 'no longer erased')
    t.equal((await client.create('GAP-1')).statusCode, 201, 'and created')
  })

  t.test('after a failed create, before its failure is recorded: stored without details', async (t) => {
    await client.stage(exampleAccount({ external_account_number: 'GAP-2' }))
    let transactions = 0
    const hold = gate.pause('transaction', () => ++transactions === 2)
    const creating = client.create('GAP-2', { team: 'Nobody' })
    await hold.reached
    await retention.eraseStagedData(supplier, 'GAP-2', async () => {})
    hold.release()
    const res = await creating
    t.same(codes(res), [['operations_team_name_does_not_exist', 'operations_team_name']])
    const process = await processOf(database, 'GAP-2')
    t.same(process.latestError, {
      at: (process.latestError as { at: string }).at,
      errors: [{ code: 'operations_team_name_does_not_exist', attr: 'operations_team_name' }]
    })
    const failed = (await eventsOf(database, process.id)).find((e) => e.type === 'CREATE_FAILED')
    t.same(failed?.detail, { errors: [{ code: 'operations_team_name_does_not_exist', attr: 'operations_team_name' }] })
  })

  t.test('after a failed dry run, before it is recorded: stored without details', async (t) => {
    await client.stage(exampleAccount({ external_account_number: 'GAP-3' }))
    const hold = gate.pause('execute', (args) => sqlText(args[0]).includes("'DRY_RUN'"))
    const creating = client.create('GAP-3', { team: 'Nobody', dryRun: true })
    await hold.reached
    await retention.eraseStagedData(supplier, 'GAP-3', async () => {})
    hold.release()
    t.equal((await creating).statusCode, 400)
    const dryRun = (await eventsOf(database, (await processOf(database, 'GAP-3')).id)).find((e) => e.type === 'DRY_RUN')
    t.same(dryRun?.detail, {
      would_succeed: false,
      errors: [{ code: 'operations_team_name_does_not_exist', attr: 'operations_team_name' }]
    })
  })
})

t.test('eraseStagedData', async (t) => {
  const { app, database, client, tenant } = await importSetup(t)
  await lifecycle(app, client)
  const op = await operatorToken(app)
  const erase = (s: string, e: string, token = op) => gql(app, ERASE, { s, e }, token)

  t.test('a pending account: payload and error details at once, an event, and it can be staged again', async (t) => {
    const process = await processOf(database, 'PEND')
    const before = await everything(database)
    const res = await erase(SUPPLIER, 'PEND')
    t.same(res.body, {
      data: {
        eraseStagedData: {
          importSupplierCode: SUPPLIER,
          externalAccountNumber: 'PEND',
          state: 'STAGED',
          serviceAccountNumber: null
        }
      }
    })
    const after = await everything(database)
    const event = after.events.at(-1)!
    t.match(event, {
      importProcessId: process.id,
      type: 'STAGED_DATA_ERASED',
      actor: 'operator',
      organisationId: null,
      detail: { payloadErased: true }
    })
    expectErasedOnly(
      t,
      {
        ...before,
        counts: {
          ...before.counts,
          import_events: before.counts.import_events! + 1,
          // The operator's erasure is audited.
          audit_events: before.counts.audit_events! + 1
        }
      },
      { ...after, events: after.events.slice(0, -1) },
      new Set([process.id])
    )

    const create = await client.create('PEND')
    t.equal(create.statusCode, 400)
    t.same(codes(create), [['import_process_does_not_exist', 'external_account_number']], 'create: nothing staged')
    const status = await client.status('PEND')
    t.equal(status.json().status, 'UNKNOWN')
    t.equal(status.json().latest_error.errors[0].detail, ERASED_DETAIL)
    t.equal(
      (await client.stage(exampleAccount({ external_account_number: 'PEND' }))).statusCode,
      200,
      'staged again (a restage)'
    )
    t.equal((await client.create('PEND')).statusCode, 201, 'then created')
  })

  t.test('a skipped account, and erasing twice', async (t) => {
    t.same((await erase(SUPPLIER, 'SKIP')).data?.eraseStagedData?.state, 'SKIPPED')
    t.ok(withoutDetail((await processOf(database, 'SKIP')).latestError))
    const again = await erase(SUPPLIER, 'SKIP')
    t.equal(again.errors, undefined)
    const events = await eventsOf(database, (await processOf(database, 'SKIP')).id)
    t.same(
      events.filter((e) => e.type === 'STAGED_DATA_ERASED').map((e) => e.detail),
      [{ payloadErased: true }, { payloadErased: false }]
    )
  })

  t.test(
    'an imported account within the period: erased now, the account kept, the job does not count it again',
    async (t) => {
      await client.stage(exampleAccount({ external_account_number: 'FRESH' }))
      const created = (await client.create('FRESH')).json()
      const summary = (await client.summary('FRESH')).json()
      const res = await erase(SUPPLIER, 'FRESH')
      t.same(res.data?.eraseStagedData, {
        importSupplierCode: SUPPLIER,
        externalAccountNumber: 'FRESH',
        state: 'IMPORTED',
        serviceAccountNumber: created.service_account_number
      })
      t.equal((await processOf(database, 'FRESH')).stagedData, null)
      const after = (await client.summary('FRESH')).json()
      t.same({ ...after, latest_event: null }, { ...summary, latest_event: null }, 'the account summary is unchanged')
      t.equal(after.latest_event.type, 'STAGED_DATA_ERASED')
      const job = createRetentionService(database.db, { retentionDays: 0 })
      await job.runOnce()
      t.same(
        (await eventsOf(database, (await processOf(database, 'FRESH')).id)).filter(
          (e) => e.type === 'STAGED_DATA_ERASED'
        ).length,
        1
      )
    }
  )

  t.test('refusals change nothing', async (t) => {
    const before = await everything(database)
    const refused = async (res: Awaited<ReturnType<typeof erase>>, code: string) => {
      t.equal(res.status, 200)
      t.equal(res.errors?.[0]?.extensions?.code, code, JSON.stringify(res.errors))
      t.same(res.data, { eraseStagedData: null })
    }
    await refused(await erase(SUPPLIER, 'NO-SUCH'), 'not_found')
    await refused(await erase('NO_SUCH', 'IMP'), 'not_found')
    await refused(await erase(SUPPLIER, 'IMP', tenant.token), 'permission_denied')
    await refused(await erase(SUPPLIER, 'IMP\u0000'), 'invalid')
    await refused(await gql(app, ERASE, { s: SUPPLIER, e: 'IMP' }), 'not_authenticated')
    // Another organisation's token is refused the same way, its own supplier or not.
    const other = await createTenant(app, 'Other', 'OTHER')
    await refused(await erase('OTHER', 'IMP', other.token), 'permission_denied')
    const after = await everything(database)
    t.same([after.processes, after.events], [before.processes, before.events], 'no process or event changed')
  })
})

t.test('metrics: payloads erased, by the job and by request', async (t) => {
  const { app, database, client } = await importSetup(t, { env: { STAGED_DATA_RETENTION_DAYS: '0' } })
  const op = await operatorToken(app)
  const erased = async () => {
    const text = (await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${op}` } })).body
    const value = (reason: string) =>
      Number(new RegExp(`^amis_staged_data_erased_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(text)?.[1])
    return { retention: value('retention'), request: value('request') }
  }
  t.same(await erased(), { retention: 0, request: 0 }, 'both series from the start')
  for (const external of ['M-1', 'M-2', 'M-3']) {
    await client.stage(exampleAccount({ external_account_number: external }))
  }
  await client.create('M-1')
  await client.create('M-2')
  await asOperator(app, SKIP, { s: SUPPLIER, e: 'M-NEVER' })
  t.same(await app.retention.runOnce(), { processes: 3, payloads: 2 })
  t.same(await erased(), { retention: 2, request: 0 }, 'a process skipped without a payload is not counted')
  await gql(app, ERASE, { s: SUPPLIER, e: 'M-3' }, op)
  await gql(app, ERASE, { s: SUPPLIER, e: 'M-3' }, op)
  await gql(app, ERASE, { s: SUPPLIER, e: 'M-1' }, op)
  t.same(await erased(), { retention: 2, request: 1 }, 'a request counts only a payload it erased')
  t.equal((await processOf(database, 'M-3')).stagedData, null)
})

t.test('a server runs the erasure by itself at start', async (t) => {
  const fresh = await freshDatabase()
  const first = await importSetup(t, { database: fresh.database })
  await first.client.stage(exampleAccount({ external_account_number: 'AT-START' }))
  await first.client.create('AT-START')
  await first.database.db.execute(sql`update import_processes set account_created_at = now() - interval '31 days'`)
  const second = await buildTestApp(t, { database: fresh.database })
  t.teardown(async () => {
    await fresh.database.close()
    await fresh.drop()
  })
  await second.app.ready()
  await waitFor(
    'the staged data is erased',
    async () => (await processOf(fresh.database, 'AT-START')).stagedData === null,
    { timeoutMs: 10_000 }
  )
  t.equal((await processOf(fresh.database, 'AT-START')).stagedData, null, 'erased without being asked')
})

t.test('the worker runs at start, then again after each interval, and stop waits for the run in flight', async (t) => {
  const runs: number[] = []
  let stopAsked = false
  const service = {
    runOnce: async (control: { shouldStop?: () => boolean }) => {
      runs.push(Date.now())
      // The fourth run lasts until it is told to stop.
      while (runs.length >= 4 && control.shouldStop?.() !== true) await sleep(5)
      stopAsked ||= control.shouldStop?.() === true
      return { processes: 0, payloads: 0 }
    },
    eraseJobInputs: async () => ({ jobs: 0, lines: 0 })
  } as unknown as RetentionService
  const silent = { info: () => {}, error: () => {} } as unknown as FastifyBaseLogger
  const worker = createRetentionWorker(service, silent, { intervalMs: 30 })
  worker.start()
  t.equal(runs.length, 1, 'a run at start')
  await waitFor('four runs', () => runs.length >= 4, { intervalMs: 10 })
  await worker.stop()
  t.ok(stopAsked, 'the run in flight was told to stop')
  const count = runs.length
  await sleep(100)
  t.equal(runs.length, count, 'no run after stop')
  t.ok(RETENTION_INTERVAL_MS <= 3_600_000, 'the server runs it at least hourly')
})

if (!testDatabaseUrl) {
  t.skip(
    'concurrent erasures and a connection lost mid-batch are tested against the PostgreSQL server (set TEST_DATABASE_URL)',
    () => {}
  )
} else {
  t.test('on the PostgreSQL server', async (t) => {
    const fresh = await freshDatabase()
    const { app, database, client } = await importSetup(t, { database: fresh.database })
    const second = await openPostgres(fresh.url!, 4)
    t.teardown(async () => {
      await second.close()
      await fresh.database.close()
      await fresh.drop()
    })

    t.test('a connection lost in the middle of a batch leaves it untouched; the next run finishes', async (t) => {
      await insertImported(database, 'T-', 6)
      const [first] = rowsOf<{ id: string }>(
        await database.db.execute(sql`select e.id from import_events e
        join import_processes p on p.id = e.import_process_id where p.external_account_number = 'T-3'`)
      )
      const release = await holdLocks(
        t,
        fresh.url!,
        (s) => s`select id from import_events where id = ${first!.id} for update`
      )
      const job = createRetentionService(database.db, { retentionDays: 30, now: ahead(31), batchSize: 10 })
      const run = job.runOnce()
      const pid = await waitFor(
        'the batch waits on the held event row',
        async () => {
          const rows = rowsOf<{ pid: number }>(
            await second.db.execute(sql`select pid from pg_stat_activity where datname = current_database()
          and state = 'active' and wait_event_type = 'Lock' and query like 'update import_events%'`)
          )
          return rows.length === 1 && Number(rows[0]!.pid)
        },
        { timeoutMs: 20_000, intervalMs: 20 }
      )
      t.not(pid, 0, 'the batch waits on the held event row')
      // Expected before the terminate is answered: the lost connection may reject the run first.
      const failed = t.rejects(run, 'the run fails')
      await second.db.execute(sql`select pg_terminate_backend(${pid})`)
      await failed
      await release()
      t.same(await erasureStates(database, 'T-'), { untouched: 6 }, 'the processes of the batch are untouched')
      t.same(await createRetentionService(database.db, { retentionDays: 30, now: ahead(31) }).runOnce(), {
        processes: 6,
        payloads: 6
      })
      t.same(await erasureStates(database, 'T-'), { erased: 6 })
    })

    t.test('two servers running the job at once erase each payload once, and both finish', async (t) => {
      await insertImported(database, 'C-', 3000)
      const counted = { a: 0, b: 0 }
      const jobA = createRetentionService(database.db, { retentionDays: 30, now: ahead(31), batchSize: 200 })
      const jobB = createRetentionService(second.db, { retentionDays: 30, now: ahead(31), batchSize: 200 })
      jobA.onErased(({ payloads }) => {
        counted.a += payloads
      })
      jobB.onErased(({ payloads }) => {
        counted.b += payloads
      })
      const [a, b] = await Promise.all([jobA.runOnce(), jobB.runOnce()])
      t.equal(a.payloads + b.payloads, 3000, `every payload counted once (${a.payloads} + ${b.payloads})`)
      t.same(counted, { a: a.payloads, b: b.payloads }, 'as the listeners were told')
      t.same(await erasureStates(database, 'C-'), { erased: 3000 })
      t.same(await jobA.runOnce(), { processes: 0, payloads: 0 }, 'nothing left')
    })

    t.test(
      'an erasure racing a create: either the create succeeds whole, or nothing was staged; never a 500',
      async (t) => {
        const op = await operatorToken(app)
        const reference = (await client.stage(exampleAccount({ external_account_number: 'REF' })),
        await client.create('REF'),
        await client.summary('REF')).json().counts
        const outcomes: Record<string, number> = {}
        for (let i = 0; i < 36; i++) {
          const external = `RACE-${i}`
          const kind = (['create', 'failing', 'dry run'] as const)[i % 3]!
          t.equal((await client.stage(exampleAccount({ external_account_number: external }))).statusCode, 201)
          const [created, erased] = await Promise.all([
            client.create(
              external,
              kind === 'create' ? {} : { team: kind === 'failing' ? 'Nobody' : TEAM, dryRun: kind === 'dry run' }
            ),
            gql(app, ERASE, { s: SUPPLIER, e: external }, op)
          ])
          t.equal(erased.errors, undefined, `${external}: erased`)
          const answer =
            created.statusCode === 201
              ? 'created'
              : codes(created)
                  .map((c) => c[0])
                  .join(',') || created.json().code
          const outcome = `${kind}: ${created.statusCode} ${answer}`
          outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
          const process = await processOf(database, external)
          const summary = await client.summary(external)
          if (created.statusCode === 201) {
            t.equal(process.state, 'IMPORTED', `${external}: imported`)
            t.same(summary.json().counts, reference, `${external}: the account has every row`)
          } else {
            t.equal(created.statusCode, 400, `${external}: ${created.body}`)
            t.ok(
              ['import_process_does_not_exist', 'operations_team_name_does_not_exist', 'dry_run_rolled_back'].includes(
                answer
              ),
              `${external}: an expected refusal (${created.body})`
            )
            t.equal(summary.statusCode, 404, `${external}: no account`)
          }
          t.equal(process.stagedData, null, `${external}: the payload is gone`)
          const stored = [process.latestError, ...(await eventsOf(database, process.id)).map((e) => e.detail)]
          t.ok(stored.every(withoutDetail), `${external}: no error detail left`)
        }
        t.comment(`outcomes: ${JSON.stringify(outcomes)}`)
      }
    )
  })
}

import { randomUUID } from 'node:crypto'
import Fastify from 'fastify'
import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import postgres from 'postgres'
import { AccountData } from '../schemas/account.js'
import { openPostgres } from '../src/db/index.js'
import { accountWriter } from './ceilings.js'

/**
 * The ceilings of the benchmark: what this machine does without our service's work, on the same
 * ~3 KB account JSON. `/parse-validate`: parse and validate with a plain JSON schema (our account
 * schema without the custom keywords); `/upsert`: that plus one `INSERT … ON CONFLICT DO UPDATE`
 * of the payload as jsonb; `/normalised`: that plus one normalised account written in one
 * transaction with multi-row inserts; `/create-prebuilt` (with OURS_DATABASE_URL): every row one
 * create of ours writes, prebuilt, in one pipelined transaction on our own tables.
 */

const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv
const CUSTOM = new Set(['decimal', 'omitEmpty', 'jsonValue', 'errorCodes'])
function plain(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(plain)
  if (schema === null || typeof schema !== 'object') return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) if (!CUSTOM.has(key)) out[key] = plain(value)
  return out
}
const ajv = new Ajv({ allErrors: true, discriminator: true, allowUnionTypes: true, strict: false })
addFormats(ajv)
const validate = ajv.compile(plain(AccountData) as object)

const sql = postgres(process.env.DATABASE_URL!, { max: Number(process.env.POOL ?? 10), onnotice: () => {} })
await sql`create table if not exists bench_staging (key text primary key, data jsonb not null)`
await sql`create table if not exists bench_accounts (id uuid primary key, number text not null unique, data_key text not null)`
await sql`create table if not exists bench_customers (id uuid primary key, account_id uuid not null references bench_accounts(id), given_name text not null, email text)`
await sql`create table if not exists bench_ledgers (id uuid primary key, account_id uuid not null references bench_accounts(id), code text not null, balance numeric(20,10) not null)`
await sql`create table if not exists bench_transactions (id uuid primary key, ledger_id uuid not null references bench_ledgers(id), transaction_id text not null, amount numeric(20,10) not null, unique (ledger_id, transaction_id))`
await sql`create table if not exists bench_supply_addresses (id uuid primary key, account_id uuid not null references bench_accounts(id), street text not null)`
await sql`create table if not exists bench_supply_points (id uuid primary key, supply_address_id uuid not null references bench_supply_addresses(id), identifier text not null)`
await sql`create table if not exists bench_agreements (id uuid primary key, supply_point_id uuid not null references bench_supply_points(id), tariff text not null, effective_from date not null)`

const app = Fastify({ logger: false, bodyLimit: 10 * 1024 * 1024 })
let counter = 0

app.post('/parse-validate', async (request, reply) => {
  if (!validate(request.body)) return reply.code(400).send({ errors: validate.errors })
  return { ok: true }
})

app.post('/upsert', async (request, reply) => {
  if (!validate(request.body)) return reply.code(400).send({ errors: validate.errors })
  const body = request.body as { external_account_number: string }
  await sql`insert into bench_staging (key, data) values (${body.external_account_number}, ${sql.json(body as never)})
    on conflict (key) do update set data = excluded.data`
  return { ok: true }
})

app.post('/normalised', async (request, reply) => {
  if (!validate(request.body)) return reply.code(400).send({ errors: validate.errors })
  const body = request.body as { external_account_number: string }
  const account = randomUUID()
  const ledger = randomUUID()
  const address = randomUUID()
  const points = [randomUUID(), randomUUID()]
  const n = counter++
  await sql.begin(async (tx) => {
    await tx`insert into bench_accounts (id, number, data_key) values (${account}, ${`B-${process.pid}-${n}`}, ${body.external_account_number})`
    await tx`insert into bench_customers ${tx([1, 2].map((i) => ({ id: randomUUID(), account_id: account, given_name: `C${i}`, email: `c${i}@mailbox.org` })))}`
    await tx`insert into bench_ledgers (id, account_id, code, balance) values (${ledger}, ${account}, 'ENERGY', 6.26)`
    await tx`insert into bench_transactions ${tx(Array.from({ length: 10 }, (_, i) => ({ id: randomUUID(), ledger_id: ledger, transaction_id: `T-${i}`, amount: '1.10' })))}`
    await tx`insert into bench_supply_addresses (id, account_id, street) values (${address}, ${account}, '12 Harbour Row')`
    await tx`insert into bench_supply_points ${tx(points.map((id, i) => ({ id, supply_address_id: address, identifier: `SP-${n}-${i}` })))}`
    await tx`insert into bench_agreements ${tx(points.map((p) => ({ id: randomUUID(), supply_point_id: p, tariff: 'E-1R', effective_from: '2024-04-01' })))}`
  })
  return { ok: true }
})

// The create ceiling: the rows of one create, built once and sent as they are, on our own tables.
if (process.env.OURS_DATABASE_URL) {
  const database = await openPostgres(process.env.OURS_DATABASE_URL, Number(process.env.POOL ?? 10))
  const writer = accountWriter(database, process.env.CEILING_SUPPLIER_ID!, process.env.CEILING_TEAM_ID!)
  let created = 0
  app.post('/create-prebuilt', async () => {
    await writer.write([`CC-${process.pid}-${created++}`])
    return { ok: true }
  })
}

await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) })
process.stdout.write(`ceiling listening at http://127.0.0.1:${(app.server.address() as { port: number }).port}\n`)
process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => sql.end())
    .then(() => process.exit(0))
})

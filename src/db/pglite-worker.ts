/**
 * The embedded PGlite's own thread (started by `startPgliteWorker` in pglite-client.ts): PGlite
 * runs PostgreSQL in WebAssembly, synchronously, so on the server's thread every statement held
 * every request. Here it is created, migrated, queried and closed; the server's thread sends
 * requests over the worker's port and gets plain results (or errors' fields) back.
 *
 * One session, so one transaction at a time. Statements sent outside a transaction run before
 * the next transaction starts: a read waits at most for the transaction in progress, never for
 * every transaction queued before it.
 */
import { parentPort } from 'node:worker_threads'
import { PGlite, type Transaction } from '@electric-sql/pglite'
import { drizzle } from 'drizzle-orm/pglite'
import { migrate } from 'drizzle-orm/pglite/migrator'
import type { WorkerReply, WorkerRequest } from './pglite-protocol.js'

if (!parentPort) throw new Error('pglite-worker.ts runs as a worker thread')
const port = parentPort

/** Statements outside a transaction run at most this many in a row while a transaction waits. */
const OUTSIDE_BEFORE_TRANSACTION = 32

/** The snapshot as PGlite reads it (its whole `arrayBuffer()`), without copying it in chunks. */
class BytesBlob extends Blob {
  constructor(private readonly content: Uint8Array) {
    super([])
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    const { buffer, byteOffset, byteLength } = this.content
    return byteOffset === 0 && byteLength === buffer.byteLength
      ? (buffer as ArrayBuffer)
      : (buffer.slice(byteOffset, byteOffset + byteLength) as ArrayBuffer)
  }
}

let pg: PGlite | undefined
type Job = () => Promise<void>
const outside: Job[] = []
const transactions: Job[] = []
let busy = false
let outsideInARow = 0
const open = new Map<number, { tx: Transaction; end: (how: 'commit' | 'rollback', id: number) => void }>()
let nextTx = 1

function reply(message: WorkerReply): void {
  port.postMessage(message)
}

function fail(id: number, err: unknown): void {
  reply({ id, error: errorFields(err) })
}

/** An error's message, name and plain fields (a PostgreSQL error's code, constraint, …): functions and objects cannot cross. */
function errorFields(err: unknown): Record<string, string | number | boolean> {
  const e = (err ?? {}) as Record<string, unknown>
  const out: Record<string, string | number | boolean> = {
    message: typeof e.message === 'string' ? e.message : String(err),
    name: typeof e.name === 'string' ? e.name : 'Error'
  }
  for (const [key, value] of Object.entries(e)) {
    if (key === 'params' || key === 'queryOptions') continue
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') out[key] = value
  }
  return out
}

/** Drizzle keeps these types as the text PostgreSQL sends (its parsers are functions, which cannot cross): by OID. */
const textParsers = new Map<string, Record<number, (value: string) => string>>()
function parsersFor(oids: number[] | undefined): Record<number, (value: string) => string> | undefined {
  if (!oids || oids.length === 0) return undefined
  const key = oids.join(',')
  let parsers = textParsers.get(key)
  if (!parsers) {
    parsers = Object.fromEntries(oids.map((oid) => [oid, (value: string) => value]))
    textParsers.set(key, parsers)
  }
  return parsers
}

function pump(): void {
  if (busy) return
  let job: Job | undefined
  if (outside.length > 0 && (transactions.length === 0 || outsideInARow < OUTSIDE_BEFORE_TRANSACTION)) {
    job = outside.shift()
    outsideInARow++
  } else {
    job = transactions.shift()
    outsideInARow = 0
  }
  if (!job) return
  busy = true
  void job().finally(() => {
    busy = false
    pump()
  })
}

async function run(request: Extract<WorkerRequest, { op: 'query' | 'exec' }>, on: PGlite | Transaction) {
  if (request.op === 'exec') {
    const results = await on.exec(request.text)
    return results.map(({ rows, fields, affectedRows }) => ({ rows, fields, affectedRows }))
  }
  const parsers = parsersFor(request.textTypes)
  const { rows, fields, affectedRows } = await on.query(request.text, request.params, {
    ...(request.rowMode ? { rowMode: request.rowMode } : {}),
    ...(parsers ? { parsers } : {})
  })
  return { rows, fields, affectedRows }
}

/** A transaction: BEGIN, then its statements as they come, until the server's thread commits or rolls back. */
function transactionJob(id: number): Job {
  return async () => {
    const txId = nextTx++
    let ending: { how: 'commit' | 'rollback'; id: number } | undefined
    try {
      await pg!.transaction(async (tx) => {
        ending = await new Promise<{ how: 'commit' | 'rollback'; id: number }>((resolve) => {
          open.set(txId, { tx, end: (how, endId) => resolve({ how, id: endId }) })
          reply({ id, result: txId })
        })
        if (ending.how === 'rollback') await tx.rollback()
      })
      if (ending) reply({ id: ending.id, result: null })
    } catch (err) {
      fail(ending?.id ?? id, err)
    } finally {
      open.delete(txId)
    }
  }
}

async function openDatabase(request: Extract<WorkerRequest, { op: 'open' }>): Promise<void> {
  pg = await PGlite.create(request.dataDir, request.load ? { loadDataDir: new BytesBlob(request.load) } : {})
  await migrate(drizzle({ client: pg }), { migrationsFolder: request.migrationsFolder })
}

port.on('message', (request: WorkerRequest) => {
  const { id } = request
  switch (request.op) {
    case 'open':
      openDatabase(request).then(
        () => reply({ id, result: null }),
        (err: unknown) => fail(id, err)
      )
      return
    case 'query':
    case 'exec': {
      if (request.tx !== undefined) {
        const tx = open.get(request.tx)
        if (!tx) return fail(id, new Error('the transaction has ended'))
        run(request, tx.tx).then(
          (result) => reply({ id, result }),
          (err: unknown) => fail(id, err)
        )
        return
      }
      outside.push(() =>
        run(request, pg!).then(
          (result) => reply({ id, result }),
          (err: unknown) => fail(id, err)
        )
      )
      return pump()
    }
    case 'begin':
      transactions.push(transactionJob(id))
      return pump()
    case 'commit':
    case 'rollback': {
      const tx = open.get(request.tx)
      if (!tx) return fail(id, new Error('the transaction has ended'))
      return tx.end(request.op, id)
    }
    case 'close':
      outside.push(async () => {
        try {
          await pg?.close()
          reply({ id, result: null })
        } catch (err) {
          fail(id, err)
        }
        port.close()
      })
      return pump()
  }
})

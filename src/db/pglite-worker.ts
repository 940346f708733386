/**
 * The embedded PGlite's own thread (started by `startPgliteWorker` in pglite-client.ts): PGlite
 * runs PostgreSQL in WebAssembly, synchronously, so on the server's thread every statement held
 * every request. Here it is created, migrated, queried and closed; the server's thread sends
 * requests over the worker's port and gets plain results (or errors' fields) back.
 *
 * One session, so one transaction at a time. Statements sent outside a transaction run before
 * the next transaction starts: a read waits at most for the transaction in progress, never for
 * every transaction queued before it. A transaction begins only once its first statement (or its
 * end) has arrived, so the time the server's thread spends before sending it holds nobody up; the
 * server's thread sends its statements without waiting for BEGIN.
 */
import { parentPort } from 'node:worker_threads'
import { PGlite, type Transaction } from '@electric-sql/pglite'
import { drizzle } from 'drizzle-orm/pglite'
import { migrate } from 'drizzle-orm/pglite/migrator'
import type { WorkerReply, WorkerRequest } from './pglite-protocol.js'
import { pgliteErrorMessage } from './pglite-errors.js'
import { baselineCompilerOnly, pgliteStartParams } from './pglite-settings.js'

if (!parentPort) throw new Error('pglite-worker.ts runs as a worker thread')
baselineCompilerOnly()
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
type Statement = Extract<WorkerRequest, { op: 'query' | 'exec' }>
type Ending = { how: 'commit' | 'rollback'; id: number }

/** A transaction asked for: its statements until it begins, then its own handle; its end once sent. */
interface Pending {
  beginId: number
  queued: Statement[]
  tx?: Transaction
  ending?: Ending
  ended?: (ending: Ending) => void
}

const outside: Job[] = []
/** Transactions asked for and not yet begun, in the order asked. */
const transactions: number[] = []
const open = new Map<number, Pending>()
let busy = false
let outsideInARow = 0

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
    message: pgliteErrorMessage(err),
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

/** The first transaction asked for that is ready to begin: something of it has arrived. */
function readyTransaction(): number {
  return transactions.findIndex((txId) => {
    const pending = open.get(txId)!
    return pending.queued.length > 0 || pending.ending !== undefined
  })
}

function pump(): void {
  if (busy) return
  let job: Job | undefined
  const ready = transactions.length > 0 ? readyTransaction() : -1
  if (outside.length > 0 && (ready < 0 || outsideInARow < OUTSIDE_BEFORE_TRANSACTION)) {
    job = outside.shift()
    outsideInARow++
  } else if (ready >= 0) {
    job = transactionJob(transactions.splice(ready, 1)[0]!)
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

function runStatement(request: Statement, on: PGlite | Transaction): Promise<void> {
  return run(request, on).then(
    (result) => reply({ id: request.id, result }),
    (err: unknown) => fail(request.id, err)
  )
}

/** A transaction: BEGIN, the statements sent so far, then the rest as they come, until the server's thread ends it. */
function transactionJob(txId: number): Job {
  return async () => {
    const pending = open.get(txId)!
    const began = performance.now()
    try {
      await pg!.transaction(async (tx) => {
        pending.tx = tx
        reply({ id: pending.beginId, result: null })
        for (const request of pending.queued.splice(0)) runStatement(request, tx).catch(() => {})
        const ending = pending.ending ?? (await new Promise<Ending>((resolve) => (pending.ended = resolve)))
        if (ending.how === 'rollback') await tx.rollback()
      })
      reply({ id: pending.ending!.id, result: { heldMs: performance.now() - began } })
    } catch (err) {
      // BEGIN failed (nothing of it ran: each statement sent fails with its error) or its end did.
      if (!pending.tx) reply({ id: pending.beginId, error: errorFields(err) })
      for (const request of pending.queued) fail(request.id, err)
      if (pending.ending) fail(pending.ending.id, err)
    } finally {
      open.delete(txId)
    }
  }
}

async function openDatabase(request: Extract<WorkerRequest, { op: 'open' }>): Promise<void> {
  pg = await PGlite.create(request.dataDir, {
    ...(request.load ? { loadDataDir: new BytesBlob(request.load) } : {}),
    startParams: pgliteStartParams()
  })
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
        const pending = open.get(request.tx)
        if (!pending) return fail(id, new Error('the transaction has ended'))
        if (!pending.tx) {
          pending.queued.push(request)
          return pump()
        }
        runStatement(request, pending.tx).catch(() => {})
        return
      }
      outside.push(() => runStatement(request, pg!))
      return pump()
    }
    case 'begin':
      open.set(request.tx, { beginId: id, queued: [] })
      transactions.push(request.tx)
      return pump()
    case 'commit':
    case 'rollback': {
      const pending = open.get(request.tx)
      if (!pending || pending.ending) return fail(id, new Error('the transaction has ended'))
      pending.ending = { how: request.op, id }
      if (pending.ended) pending.ended(pending.ending)
      return pump()
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

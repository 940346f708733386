import { AsyncLocalStorage } from 'node:async_hooks'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { WorkerReply, WorkerRequest } from './pglite-protocol.js'
import { tracedStatement, tracedTransaction } from './traced.js'

/** A PostgreSQL error from the embedded database, with its fields (`code`, `constraint`, …) as PGlite gives them. */
export class DatabaseError extends Error {}

interface Results {
  rows: unknown[]
  fields: Array<{ name: string; dataTypeID: number }>
  affectedRows?: number
}
interface QueryOptions {
  rowMode?: 'array' | 'object'
  parsers?: Record<number, unknown>
}
type Request = WorkerRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never

/** What Drizzle's PGlite session calls on a transaction. */
export interface PgliteWorkerTransaction {
  query(text: string, params?: unknown[], options?: QueryOptions): Promise<Results>
  exec(text: string): Promise<Results[]>
  rollback(): Promise<void>
  readonly closed: boolean
}

/** What a transaction run inside `transactionBox.run(box, …)` shares with the code that runs it. */
export interface TransactionBox {
  /** How long it held the database, as the worker measured it (BEGIN to its end; not the time it waited to begin). */
  ms?: number
  /** Set while its function runs: see `commitAfterSent`. */
  commitNow?: () => void
}
export const transactionBox = new AsyncLocalStorage<TransactionBox>()

/**
 * Inside a transaction run in a `transactionBox`: sends the commit now, right behind the
 * statements sent so far, without waiting for their answers, so the transaction holds the
 * database only while they run, not while this thread reads their answers. If one of them fails,
 * the transaction rolls back instead and the commit fails with it. The caller must not need to
 * roll back for any other reason afterwards. Elsewhere, nothing.
 */
export function commitAfterSent(): void {
  transactionBox.getStore()?.commitNow?.()
}

/** Where the worker's code is: compiled beside this file, or its TypeScript (run through tsx's loader). */
function workerOf(): Worker {
  if (import.meta.url.endsWith('.js')) return new Worker(new URL('./pglite-worker.js', import.meta.url))
  const source = new URL('./pglite-worker.ts', import.meta.url).href
  const tsx = import.meta.resolve('tsx/esm/api')
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}) })`,
    { eval: true }
  )
}

/**
 * Makes a new embedded database in `dataDir` (initdb, the migrations) in a child process of its own
 * (pglite-init.ts), compiled beside this file or its TypeScript through tsx's loader. Rejects with
 * the child's reason.
 */
export function makePgliteDatabase(dataDir: string, migrationsFolder: string): Promise<void> {
  const compiled = import.meta.url.endsWith('.js')
  const entry = fileURLToPath(new URL(compiled ? './pglite-init.js' : './pglite-init.ts', import.meta.url))
  const args = [...(compiled ? [] : ['--import', 'tsx']), entry, dataDir, migrationsFolder]
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 1024 * 1024 }, (err, _stdout, stderr) => {
      if (err) reject(new Error(stderr.trim() || err.message))
      else resolve()
    })
  })
}

/**
 * The embedded PGlite, run in a worker thread: what Drizzle's PGlite driver and migrator call on a
 * PGlite (`query`, `exec`, `transaction`), forwarded to it. The server's thread never runs the
 * database's work. A worker that stops fails every call in flight and every later one.
 */
export class PgliteWorkerClient {
  private readonly worker: Worker
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>()
  private nextId = 1
  private nextTx = 1
  private failure: Error | undefined
  private closing = false

  private constructor() {
    this.worker = workerOf()
    this.worker.unref()
    this.worker.on('message', (message: WorkerReply) => {
      const call = this.pending.get(message.id)
      if (!call) return
      this.settled(message.id)
      if ('error' in message) {
        call.reject(Object.assign(new DatabaseError(String(message.error.message)), message.error))
      } else call.resolve(message.result)
    })
    this.worker.on('error', (err) => this.stopped(new Error(`the embedded database's thread failed: ${err.message}`)))
    this.worker.on('exit', (code) => {
      this.stopped(
        new Error(
          this.closing ? 'the embedded database is closed' : `the embedded database's thread exited (code ${code})`
        )
      )
    })
  }

  /** Starts the worker and opens (and migrates) the database in it. */
  static async open(options: {
    dataDir: string
    load?: Uint8Array
    migrationsFolder: string
  }): Promise<PgliteWorkerClient> {
    const client = new PgliteWorkerClient()
    try {
      await client.call({ op: 'open', ...options })
    } catch (err) {
      await client.worker.terminate()
      throw err
    }
    return client
  }

  private call(request: Request): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure)
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      // A call in flight keeps the process alive, as a query on the thread itself would.
      if (this.pending.size === 0) this.worker.ref()
      this.pending.set(id, { resolve, reject })
      this.worker.postMessage({ ...request, id })
    })
  }

  private settled(id: number): void {
    this.pending.delete(id)
    if (this.pending.size === 0) this.worker.unref()
  }

  private stopped(err: Error): void {
    this.failure ??= err
    for (const [id, call] of this.pending) {
      this.settled(id)
      call.reject(this.failure)
    }
  }

  /** `parsers`: Drizzle's, which keep some types as text; they cross as the types' OIDs. */
  query(text: string, params?: unknown[], options?: QueryOptions, tx?: number): Promise<Results> {
    return tracedStatement(text, () => this.send(text, params, options, tx))
  }

  private send(text: string, params?: unknown[], options?: QueryOptions, tx?: number): Promise<Results> {
    return this.call({
      op: 'query',
      text,
      params,
      ...(options?.rowMode ? { rowMode: options.rowMode } : {}),
      ...(options?.parsers ? { textTypes: Object.keys(options.parsers).map(Number) } : {}),
      ...(tx !== undefined ? { tx } : {})
    }) as Promise<Results>
  }

  exec(text: string, tx?: number): Promise<Results[]> {
    return tracedStatement(
      text,
      () => this.call({ op: 'exec', text, ...(tx !== undefined ? { tx } : {}) }) as Promise<Results[]>
    )
  }

  /**
   * Runs `fn` in a transaction: committed when it resolves, rolled back when it throws. Its
   * statements are sent as `fn` makes them, without waiting for BEGIN; the worker begins the
   * transaction when the first of them arrives.
   */
  transaction<T>(fn: (tx: PgliteWorkerTransaction) => Promise<T>): Promise<T> {
    return tracedTransaction(() => this.runTransaction(fn))
  }

  private async runTransaction<T>(fn: (tx: PgliteWorkerTransaction) => Promise<T>): Promise<T> {
    const txId = this.nextTx++
    const begun = this.call({ op: 'begin', tx: txId })
    begun.catch(() => {}) // its failure fails the statements too; awaited below
    let closed = false
    /** The commit or rollback, once sent. */
    let ending: Promise<void> | undefined
    const ensureOpen = () => {
      if (closed) throw new Error('Transaction is closed')
    }
    const box = transactionBox.getStore()
    const end = (op: 'commit' | 'rollback') => {
      closed = true
      ending = this.call({ op, tx: txId }).then((reply) => {
        if (box) box.ms = (reply as { heldMs: number }).heldMs
      })
      return ending
    }
    const tx: PgliteWorkerTransaction = {
      query: async (text, params, options) => {
        ensureOpen()
        return this.query(text, params, options, txId)
      },
      exec: async (text) => {
        ensureOpen()
        return this.exec(text, txId)
      },
      rollback: async () => {
        ensureOpen()
        await end('rollback')
      },
      get closed() {
        return closed
      }
    }
    if (box) {
      box.commitNow = () => {
        if (!closed) end('commit').catch(() => {}) // awaited below
      }
    }
    let result: T
    try {
      result = await fn(tx)
    } catch (err) {
      // A commit sent early fails too when a statement did (the worker rolls back).
      await (closed ? ending : end('rollback'))?.catch(() => {})
      throw err
    }
    await (closed ? ending : end('commit'))
    await begun
    return result
  }

  /** Ends the worker at once, as a crash of its thread would: every call in flight and every later one fails. */
  async terminate(): Promise<void> {
    await this.worker.terminate()
  }

  /** Closes the database (after the transaction in progress) and ends the worker. */
  async close(timeoutMs = 10_000): Promise<void> {
    if (this.closing) return
    this.closing = true
    if (this.failure) return this.worker.terminate().then(() => {})
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        this.call({ op: 'close' }),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(
            () => reject(new Error(`the embedded database did not close within ${timeoutMs} ms`)),
            timeoutMs
          )
          timer.unref()
        })
      ])
    } finally {
      clearTimeout(timer)
      await this.worker.terminate()
    }
  }
}

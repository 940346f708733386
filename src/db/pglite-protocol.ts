/** The messages between the server's thread (pglite-client.ts) and the embedded database's (pglite-worker.ts). */
export type WorkerRequest =
  | { id: number; op: 'open'; dataDir: string; load?: Uint8Array; migrationsFolder: string }
  | {
      id: number
      op: 'query'
      text: string
      params?: unknown[]
      rowMode?: 'array' | 'object'
      /** Types to keep as PostgreSQL's text (Drizzle's parsers, by OID). */
      textTypes?: number[]
      tx?: number
    }
  | { id: number; op: 'exec'; text: string; tx?: number }
  /** `tx` is chosen by the server's thread, which sends the transaction's statements without waiting for this answer. */
  | { id: number; op: 'begin'; tx: number }
  /** Answered with `{ heldMs }`: how long the transaction held the database, BEGIN to its end. */
  | { id: number; op: 'commit' | 'rollback'; tx: number }
  | { id: number; op: 'close' }

export type WorkerReply =
  { id: number; result: unknown } | { id: number; error: Record<string, string | number | boolean> }

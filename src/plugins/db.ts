import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Database, Db } from '../db/index.js'
import { createReads, type Reads, type Replica } from '../db/replica.js'

declare module 'fastify' {
  interface FastifyInstance {
    database: Database
    db: Db
    /** The reads that may lag by a moment: on the read replica when there is one (src/db/replica.ts). */
    reads: Reads
  }
}

/**
 * Exposes the opened database (and the read replica, if any) to the app and closes them last,
 * after in-flight requests finished.
 */
export default fp(
  async function dbPlugin(app: FastifyInstance, opts: { database: Database; replica?: Replica }) {
    app.decorate('database', opts.database)
    app.decorate('db', opts.database.db)
    app.decorate('reads', createReads(opts.database.db, opts.replica, app.log.child({ component: 'replica' })))
    app.addHook('onClose', async function closeDatabase() {
      try {
        await opts.replica?.close()
      } finally {
        await opts.database.close()
      }
    })
  },
  { name: 'db' }
)

import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Database, Db } from '../db/index.js'
import { createReads, type Reads, type Replica } from '../db/replica.js'
import { othersActivity, type OthersActivity } from '../modules/batches/chunks.js'

declare module 'fastify' {
  interface FastifyInstance {
    database: Database
    db: Db
    /** The reads that may lag by a moment: on the read replica when there is one (src/db/replica.ts). */
    reads: Reads
    /** Whether requests other than the migration's own reached the server lately (sizes PGlite batch transactions). */
    othersActivity: OthersActivity
  }
  interface FastifyContextConfig {
    /** A route of the migration's own bulk work (batches, import jobs): not counted in `othersActivity`. */
    bulk?: boolean
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
    const activity = othersActivity()
    app.decorate('othersActivity', activity)
    app.addHook('onRequest', async function markOthers(request) {
      if (!request.routeOptions.config?.bulk && request.routeOptions.url !== '/healthz') activity.mark()
    })
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

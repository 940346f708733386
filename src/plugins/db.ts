import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Database, Db } from '../db/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    database: Database
    db: Db
  }
}

/** Exposes the opened database to the app and closes it last, after in-flight requests finished. */
export default fp(
  async function dbPlugin(app: FastifyInstance, opts: { database: Database }) {
    app.decorate('database', opts.database)
    app.decorate('db', opts.database.db)
    app.addHook('onClose', async function closeDatabase() {
      await opts.database.close()
    })
  },
  { name: 'db' }
)

import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { createRetentionService, type RetentionService } from '../modules/retention/service.js'
import { createRetentionWorker } from '../modules/retention/worker.js'

declare module 'fastify' {
  interface FastifyInstance {
    retention: RetentionService
  }
}

/** Personal-data retention and the audit trail's: the erasure runs in every server process, at start and then regularly. */
export default fp(
  async function retentionPlugin(app: FastifyInstance, opts: { config: Config }) {
    const retention = createRetentionService(app.db, { retentionDays: opts.config.stagedDataRetentionDays })
    app.decorate('retention', retention)
    const worker = createRetentionWorker(retention, app.log.child({ component: 'retention' }), {
      audit: { log: app.audit, days: opts.config.auditRetentionDays }
    })
    app.addHook('onReady', async function startRetention() {
      worker.start()
    })
    app.addHook('preClose', async function stopRetention() {
      await worker.stop()
    })
  },
  { name: 'retention', dependencies: ['db', 'audit'] }
)

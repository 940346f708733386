import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { createWebhooksService, type WebhooksService } from '../modules/webhooks/service.js'
import { createWebhookWorker, type WebhookWorker } from '../modules/webhooks/worker.js'

declare module 'fastify' {
  interface FastifyInstance {
    webhooks: WebhooksService
    webhookWorker: WebhookWorker
  }
}

/**
 * Webhooks: endpoint management for GraphQL, and the delivery worker, which every server process
 * runs (WEBHOOK_CONCURRENCY deliveries at once; 0: none). Events are queued by the database
 * (drizzle/migrations/0008_webhooks.sql), in the transaction of what they report.
 */
export default fp(
  async function webhooksPlugin(app: FastifyInstance, opts: { config: Config }) {
    const { config } = opts
    app.decorate('webhooks', createWebhooksService(app.db, { allowPrivate: config.webhookAllowPrivate }))
    const worker = createWebhookWorker(app.db, app.log.child({ component: 'webhooks' }), {
      concurrency: config.webhookConcurrency,
      timeoutMs: config.webhookTimeoutMs,
      retryDelays: config.webhookRetryDelays,
      allowPrivate: config.webhookAllowPrivate,
      traceRoot: app.traceRoot
    })
    app.decorate('webhookWorker', worker)
    app.addHook('onReady', async function startWebhookWorker() {
      worker.start()
    })
    app.addHook('preClose', async function stopWebhookWorker() {
      await worker.stop()
    })
  },
  { name: 'webhooks', dependencies: ['db', 'tracing'] }
)

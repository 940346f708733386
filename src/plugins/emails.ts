import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { createEmailWorker } from '../modules/emails/worker.js'

/** With SMTP_URL set, each server process delivers queued migration e-mails; otherwise they stay queued. */
export default fp(
  async function emailsPlugin(app: FastifyInstance, opts: { config: Config }) {
    const { smtpUrl, emailFrom } = opts.config
    if (!smtpUrl) return
    const worker = createEmailWorker(app.db, app.log.child({ component: 'emails' }), { smtpUrl, from: emailFrom })
    app.addHook('onReady', async function startEmailWorker() {
      worker.start()
    })
    app.addHook('preClose', async function stopEmailWorker() {
      await worker.stop()
    })
  },
  { name: 'emails', dependencies: ['db'] }
)

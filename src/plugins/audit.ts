import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { createAuditRepository } from '../modules/audit/repository.js'
import { createAuditLog, type AuditLog } from '../modules/audit/service.js'

type WrittenListener = (action: string, outcome: 'succeeded' | 'refused') => void

declare module 'fastify' {
  interface FastifyInstance {
    audit: AuditLog & { onWritten(listener: WrittenListener): void }
  }
}

/** The audit trail: who did what, written with each administrative action. */
export default fp(
  async function auditPlugin(app: FastifyInstance) {
    const listeners: WrittenListener[] = []
    const log = createAuditLog(app.db, createAuditRepository(app.db), (action, outcome) => {
      for (const listener of listeners) listener(action, outcome)
    })
    app.decorate('audit', {
      ...log,
      onWritten: (listener: WrittenListener) => {
        listeners.push(listener)
      }
    })
  },
  { name: 'audit', dependencies: ['db'] }
)

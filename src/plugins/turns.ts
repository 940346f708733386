import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { createLimiter, holdWhileOpen, type Limiter } from '../limiter.js'
import { organisationOf } from '../modules/auth/service.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Requests of the write endpoints this process works on at once, shared between organisations. */
    turns: Limiter
    /**
     * preValidation hook of the write endpoints (validate, stage, create and the post-import ones
     * but the payment instruction): waits for the organisation's turn once the body has arrived,
     * so a slow or stalled upload holds none, and before the body is validated, so one
     * organisation's queued work does not take the thread from another's.
     */
    takeTurn(request: FastifyRequest, reply: FastifyReply): Promise<void>
  }
}

/** Turns of work: as many as the process has database connections. */
export default fp(
  async function turnsPlugin(app: FastifyInstance, opts: { config: Config }) {
    const limiter = createLimiter(opts.config.databasePoolSize)
    app.decorate('turns', limiter)

    const takeTurn = async function takeTurn(request: FastifyRequest, reply: FastifyReply) {
      const key = organisationOf(request.principal).organisationId
      // The client left while waiting: its turn is given on at once, and the request goes no further.
      if (!(await holdWhileOpen(reply.raw, () => limiter.acquire(key)))) return reply.hijack()
      await app.parseHeldBody(request)
    }
    app.decorate('takeTurn', takeTurn)
    // A route that waits for a turn keeps its body as bytes until then.
    app.addHook('onRoute', (route) => {
      const hooks = [route.preValidation].flat()
      if (hooks.includes(takeTurn)) route.config = { ...route.config, parseInTurn: true }
    })
  },
  { name: 'turns', dependencies: ['auth', 'bodies'] }
)

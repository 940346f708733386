import { isUtf8 } from 'node:buffer'
import { Transform } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { invalidBody, payloadTooLarge } from '../errors.js'
import { shapeProblem } from '../json-shape.js'
import { createByteBudget, holdWhileOpen, type ByteBudget } from '../limiter.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Bytes of request bodies held at once, shared fairly between organisations. */
    bodyBudget: ByteBudget
    /**
     * onRequest step of an authenticated route: waits until the body's bytes fit the caller's
     * share of `bodyBudget`, and gives them back when the answer is sent or the client leaves.
     */
    reserveBody(request: FastifyRequest, reply: FastifyReply, key: string): Promise<void>
    /** Parses a body kept as bytes until its route's turn (routes whose config says `parseInTurn`). */
    parseHeldBody(request: FastifyRequest): Promise<void>
    /** onRequest step of a route open to anyone: its body may be at most `limit` bytes (413). */
    capBody(request: FastifyRequest, limit: number): void
  }
  interface FastifyRequest {
    /** Set by `capBody`: the body may be at most this many bytes. */
    bodyCap: number | undefined
  }
}

export { MAX_BODY_DEPTH, MAX_OBJECT_KEYS, shapeProblem } from '../json-shape.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's body is parsed once the request has its turn (`parseHeldBody`), not on arrival. */
    parseInTurn?: boolean
  }
}

/** A JSON body checked (UTF-8, shape) but not yet parsed. */
class HeldBody {
  constructor(readonly bytes: Buffer) {}
}

/**
 * Request bodies: JSON that is valid UTF-8 and of a sane shape, parsed only once those hold (and
 * only for callers the route lets in: authentication runs on the headers, before the body is read);
 * the memory of bodies in flight shared between organisations.
 */
export default fp(
  async function bodiesPlugin(app: FastifyInstance, opts: { config: Config }) {
    const parseJson = app.getDefaultJsonParser('error', 'error')
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, function parseBody(request, body, done) {
      const bytes = body as Buffer
      // Decoding invalid UTF-8 would store replacement characters in place of what was sent.
      if (!isUtf8(bytes)) return done(invalidBody('The request body is not valid UTF-8.'), undefined)
      const problem = shapeProblem(bytes)
      if (problem) return done(invalidBody(problem), undefined)
      // A body waiting for its turn is kept as its bytes: parsed, it would take several times
      // their memory for as long as it waits.
      if (request.routeOptions.config.parseInTurn === true) return done(null, new HeldBody(bytes))
      void parseJson(request, bytes.toString('utf8'), done)
    })
    app.decorate('parseHeldBody', async function parseHeldBody(request: FastifyRequest) {
      const held = request.body
      if (!(held instanceof HeldBody)) return
      request.body = await new Promise<unknown>((resolve, reject) => {
        void parseJson(request, held.bytes.toString('utf8'), (err, parsed) => (err ? reject(err) : resolve(parsed)))
      })
    })

    const budget = createByteBudget(opts.config.bodyMemoryBytes)
    app.decorate('bodyBudget', budget)

    app.decorate('reserveBody', async function reserveBody(request: FastifyRequest, reply: FastifyReply, key: string) {
      const declared = Number(request.headers['content-length'])
      const chunked = request.headers['transfer-encoding'] !== undefined
      // No body, or one over the limit (413 once parsing starts): nothing to hold.
      if ((!chunked && !(declared > 0)) || declared > opts.config.bodyLimitBytes) return
      // A body of unknown length may be as long as the limit.
      const bytes = Number.isFinite(declared) && declared > 0 ? declared : opts.config.bodyLimitBytes
      await holdWhileOpen(reply.raw, () => budget.acquire(key, bytes))
    })

    app.decorateRequest('bodyCap', undefined)
    app.decorate('capBody', function capBody(request: FastifyRequest, limit: number) {
      if (Number(request.headers['content-length']) > limit) throw payloadTooLarge()
      request.bodyCap = limit
    })

    // A client that asks before sending its body (Expect: 100-continue, as curl does past 1 MB) is
    // told to go on only once the request has passed its onRequest hooks (the token above all): a
    // caller refused there never uploads. Node answers 100 itself unless the server listens for it.
    app.server.on('checkContinue', function deferContinue(req, res) {
      app.server.emit('request', req, res)
    })
    app.addHook('preParsing', async function sendContinue(request, reply, payload) {
      if (/^100-continue$/i.test(request.headers.expect ?? '') && !reply.raw.headersSent) reply.raw.writeContinue()
      return payload
    })

    // A capped body of unknown length is counted as it arrives.
    app.addHook('preParsing', async function countCappedBody(request, _reply, payload) {
      const limit = request.bodyCap
      if (limit === undefined) return payload
      let seen = 0
      return payload.pipe(
        new Transform({
          transform(chunk: Buffer, _encoding, callback) {
            seen += chunk.length
            callback(seen > limit ? payloadTooLarge() : null, chunk)
          }
        })
      )
    })
  },
  { name: 'bodies' }
)

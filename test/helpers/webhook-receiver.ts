import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { Webhook } from 'standardwebhooks'
import { WEBHOOK_BODIES, WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../schemas/webhooks.js'
import { waitFor } from './wait.js'

const ajv = new Ajv({ strict: false, allErrors: true })
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv
addFormats(ajv)
const bodyValidators = new Map(WEBHOOK_EVENT_TYPES.map((type) => [type, ajv.compile(WEBHOOK_BODIES[type])]))

/** Throws unless `body` is one of the documented webhook bodies (schemas/webhooks.ts), exactly. */
export function checkBody(body: unknown): void {
  const type = (body as { type?: unknown } | null)?.type
  const validate = bodyValidators.get(type as WebhookEventType)
  if (validate === undefined) throw new Error(`unknown webhook type ${String(type)}`)
  if (!validate(body)) {
    throw new Error(`${String(type)} body differs from its schema: ${ajv.errorsText(validate.errors)}`)
  }
}

export interface Received {
  headers: IncomingHttpHeaders
  body: string
  at: number
}

/**
 * What the receiver does with a request: answer a status (at once, or once a promise gives it), or
 * hold it (never answer), or reset it.
 */
export type Behaviour = number | Promise<number> | 'hang' | 'reset' | { redirect: string }

/**
 * A real webhook receiver on loopback: records every request (headers and raw body) and answers
 * as `behaviour` says for the request's number (from 1); `answered(n)` is called right after the
 * answer to request n is sent. Closed at teardown.
 */
export async function webhookReceiver(
  t: { teardown(fn: () => unknown): void },
  behaviour: (n: number) => Behaviour = () => 200,
  answered?: (n: number) => void
) {
  const received: Received[] = []
  const held = new Set<ServerResponse>()
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (c: Buffer) => chunks.push(c))
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() })
      const n = received.length
      const what = behaviour(n)
      const answer = (status: number) => {
        response.writeHead(status, { 'content-type': 'text/plain' }).end('ok')
        answered?.(n)
      }
      if (what === 'hang') held.add(response)
      else if (what === 'reset') request.socket.destroy()
      else if (what instanceof Promise) {
        held.add(response)
        void what.then((status) => {
          held.delete(response)
          answer(status)
        })
      } else if (typeof what === 'object') response.writeHead(302, { location: what.redirect }).end()
      else answer(what)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const close = async () => {
    for (const r of held) r.socket?.destroy()
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  t.teardown(close)
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    /**
     * The bodies, parsed, of the requests: each one's signature verified with `secret` and its body
     * checked against its documented schema (throws on one that fails either).
     */
    verified(secret: string): Array<{ type: string; timestamp: string; data: Record<string, unknown> }> {
      const wh = new Webhook(secret)
      return received.map(
        (r) =>
          wh.verify(r.body, {
            'webhook-id': String(r.headers['webhook-id']),
            'webhook-timestamp': String(r.headers['webhook-timestamp']),
            'webhook-signature': String(r.headers['webhook-signature'])
          }) as { type: string; timestamp: string; data: Record<string, unknown> }
      )
    },
    /** Waits until at least `n` requests have arrived (fails after `ms`). */
    async waitFor(n: number, ms = 15_000): Promise<void> {
      await waitFor(`the receiver got ${n} requests`, () => received.length >= n, {
        timeoutMs: ms,
        intervalMs: 20,
        seen: () => `${received.length} requests`
      })
    },
    close
  }
}

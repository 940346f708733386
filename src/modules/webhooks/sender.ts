import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import type { LookupFunction } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { addressProblem, webhookUrlProblem } from '../../rules/webhook-urls.js'

/** How one attempt went. */
export interface SendResult {
  status: number | null
  error: string | null
  durationMs: number
  delivered: boolean
}

/** One signed message (Standard Webhooks): its id stays the same across attempts. */
export interface Message {
  id: string
  timestamp: Date
  body: string
}

/** Bytes of an answer's body read before the connection is closed (the body is not used). */
const ANSWER_BYTES = 64 * 1024

/**
 * A lookup that resolves the host and refuses it unless every address is allowed, so the
 * connection is made to an address that was checked, at every delivery (no rebinding between the
 * check and the connection).
 */
function checkedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    dnsLookup(
      hostname,
      { all: true, verbatim: true, family: options.family ?? 0 },
      (err, addresses: LookupAddress[]) => {
        if (err) return callback(err, '', 0)
        const problem = addresses.map((a) => addressProblem(a.address, allowPrivate)).find((p) => p !== undefined)
        if (problem !== undefined || addresses.length === 0) {
          const refused = Object.assign(new Error(`${hostname}: ${problem ?? 'no address'}`), { code: 'EADDRREFUSED' })
          return callback(refused, '', 0)
        }
        if (options.all === true) return (callback as (e: null, a: LookupAddress[]) => void)(null, addresses)
        callback(null, addresses[0]!.address, addresses[0]!.family)
      }
    )
  }
}

/** An error of the connection in a few words. */
function errorText(err: NodeJS.ErrnoException): string {
  if (err.code === 'EADDRREFUSED') return `refused: ${err.message}`
  const words: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'connection reset',
    ENOTFOUND: 'host not found',
    EAI_AGAIN: 'host name lookup failed for now',
    EHOSTUNREACH: 'host unreachable',
    ENETUNREACH: 'network unreachable',
    EPIPE: 'connection closed while sending'
  }
  const text = (err.code !== undefined && words[err.code]) || err.message || String(err)
  return text.slice(0, 500)
}

/** Sends signed webhook messages over HTTP(S), one connection each, no redirect followed. */
export function createSender(options: { allowPrivate: boolean; timeoutMs: number }) {
  const lookup = checkedLookup(options.allowPrivate)

  return {
    /** Posts `message` to `url` signed with `secret`; never throws. */
    send(url: string, secret: string, message: Message): Promise<SendResult> {
      const started = performance.now()
      const took = () => Math.round(performance.now() - started)
      const problem = webhookUrlProblem(url, options.allowPrivate)
      if (problem !== undefined) {
        return Promise.resolve({ status: null, error: `refused: ${problem}`, durationMs: 0, delivered: false })
      }
      const signature = new Webhook(secret).sign(message.id, message.timestamp, message.body)
      const target = new URL(url)
      const client = target.protocol === 'https:' ? https : http
      return new Promise((resolve) => {
        let settled = false
        const finish = (result: Omit<SendResult, 'durationMs'>) => {
          if (settled) return
          settled = true
          clearTimeout(timer)
          resolve({ ...result, durationMs: took() })
        }
        const request = client.request(target, {
          method: 'POST',
          agent: false,
          lookup,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(message.body),
            'user-agent': 'account-migration-webhooks/1',
            'webhook-id': message.id,
            'webhook-timestamp': String(Math.floor(message.timestamp.getTime() / 1000)),
            'webhook-signature': signature
          }
        })
        const timer = setTimeout(() => {
          finish({ status: null, error: `no answer within ${options.timeoutMs} ms`, delivered: false })
          request.destroy()
        }, options.timeoutMs)
        request.on('error', (err: NodeJS.ErrnoException) =>
          finish({ status: null, error: errorText(err), delivered: false })
        )
        request.on('response', (response) => {
          const status = response.statusCode ?? 0
          let read = 0
          // The answer counts once its body has arrived (or its first 64 KiB), within the time allowed.
          const done = () => {
            const delivered = status >= 200 && status < 300
            const error = delivered
              ? null
              : status >= 300 && status < 400
                ? `redirect not followed (HTTP ${status})`
                : `HTTP ${status}`
            finish({ status, error, delivered })
            request.destroy()
          }
          response.on('data', (chunk: Buffer) => {
            read += chunk.length
            if (read >= ANSWER_BYTES) done()
          })
          response.on('end', done)
          response.on('error', (err: NodeJS.ErrnoException) =>
            finish({ status, error: errorText(err), delivered: false })
          )
        })
        request.end(message.body)
      })
    }
  }
}

export type Sender = ReturnType<typeof createSender>

import { setTimeout as sleep } from 'node:timers/promises'
import { VendorAnswer } from '../../../schemas/payment-instruction.js'
import { compileBody } from '../../validation.js'
import { span, type SpanNote } from '../../tracing.js'

/** What a vendor says about one payment instruction (`GET <base>/payment-instructions/<reference>`). */
export interface VendorInstruction {
  reference: string
  type: string
  status: string
  /** The vendor's `details` object, as sent (`{}` when it sent none). */
  details: Record<string, unknown>
}

/** The outcome of one look-up, after retries. */
export type VendorOutcome =
  | { kind: 'found'; instruction: VendorInstruction }
  | { kind: 'absent' }
  /** 401/403: the vendor refuses our credentials. */
  | { kind: 'refused'; status: number }
  /** The vendor's circuit breaker is open: it was not called. */
  | { kind: 'circuit_open' }
  /** Timeouts, connection failures or 5xx after every retry, or an answer we cannot use. */
  | { kind: 'failed'; reason: string; attempts: number }

export interface VendorClientOptions {
  /** Vendor code → base URL (no trailing slash). */
  vendors: Record<string, string>
  /** Vendor code → bearer token. */
  tokens?: Record<string, string>
  /** Per attempt, including reading the body. */
  timeoutMs: number
  /** Attempts after the first one, on retryable failures only. */
  retries: number
  /** First backoff delay; it doubles per retry, capped at `maxBackoffMs`, with jitter. */
  backoffMs?: number
  maxBackoffMs?: number
  /** The breaker opens when every call has failed for this long, and stays open as long. */
  breakerWindowMs: number
  now?: () => number
  random?: () => number
  fetch?: typeof fetch
}

/** Larger answers are not a payment instruction. */
const MAX_ANSWER_BYTES = 1024 * 1024

/**
 * Per vendor: closed while calls succeed; open (calls refused without trying) once every call has
 * failed for `windowMs`; after `windowMs` open, one trial call is let through: its success closes
 * the breaker, its failure opens it for another window. A 404 is an answer, so it counts as success.
 */
export class CircuitBreaker {
  #failingSince: number | undefined
  #openUntil: number | undefined
  #trialRunning = false

  constructor(readonly windowMs: number) {}

  /** `call`, `trial` (the one call after an open window), or `refuse`. */
  admit(now: number): 'call' | 'trial' | 'refuse' {
    if (this.#openUntil === undefined) return 'call'
    if (now < this.#openUntil || this.#trialRunning) return 'refuse'
    this.#trialRunning = true
    return 'trial'
  }

  succeeded(): void {
    this.#failingSince = undefined
    this.#openUntil = undefined
    this.#trialRunning = false
  }

  /** A call that started at `startedAt` failed at `now`. */
  failed(startedAt: number, now: number, trial: boolean): void {
    this.#failingSince ??= startedAt
    if (trial || now - this.#failingSince >= this.windowMs) this.#openUntil = now + this.windowMs
    if (trial) this.#trialRunning = false
  }

  get open(): boolean {
    return this.#openUntil !== undefined
  }
}

type Attempt = { outcome: VendorOutcome } | { retry: string }

/**
 * Asks payment vendors about instructions over HTTP (Node's `fetch`): a timeout per attempt
 * (`AbortSignal.timeout`), retries with exponential backoff and jitter on timeouts, connection failures,
 * 408, 429 and 5xx, and a circuit breaker per vendor. Holds no database resource: call it outside
 * any transaction.
 */
export function createVendorClient(options: VendorClientOptions) {
  const now = options.now ?? Date.now
  const random = options.random ?? Math.random
  const fetchImpl = options.fetch ?? fetch
  const backoffMs = options.backoffMs ?? 200
  const maxBackoffMs = options.maxBackoffMs ?? 5000
  const breakers = new Map<string, CircuitBreaker>()

  function breakerOf(vendor: string): CircuitBreaker {
    let breaker = breakers.get(vendor)
    if (!breaker) breakers.set(vendor, (breaker = new CircuitBreaker(options.breakerWindowMs)))
    return breaker
  }

  /** Equal jitter: half the exponential delay, plus up to as much again at random. */
  function delay(retry: number): number {
    const full = Math.min(maxBackoffMs, backoffMs * 2 ** retry)
    return full / 2 + random() * (full / 2)
  }

  /** One attempt, in a span of its own (the vendor, the attempt's number and the answer's status; not the URL, which holds the reference). */
  function attempt(
    vendor: string,
    url: string,
    headers: Record<string, string>,
    reference: string,
    number: number
  ): Promise<Attempt> {
    return span('payment vendor call', { 'amis.payment_vendor': vendor, 'amis.attempt': number }, (note) =>
      call(url, headers, reference, number, note)
    )
  }

  async function call(
    url: string,
    headers: Record<string, string>,
    reference: string,
    number: number,
    note: SpanNote
  ): Promise<Attempt> {
    const signal = AbortSignal.timeout(options.timeoutMs)
    try {
      const res = await fetchImpl(url, { headers, signal, redirect: 'manual' })
      const status = res.status
      note.set({ 'http.response.status_code': status })
      if (status !== 200) await res.body?.cancel().catch(() => {})
      if (status === 404) return { outcome: { kind: 'absent' } }
      if (status === 401 || status === 403) return { outcome: { kind: 'refused', status } }
      if (status >= 500 || status === 408 || status === 429) return { retry: `HTTP ${status}` }
      if (status !== 200) return { outcome: { kind: 'failed', reason: `unexpected HTTP ${status}`, attempts: number } }
      const instruction = parseInstruction(await readLimited(res, MAX_ANSWER_BYTES), reference)
      if (!instruction) {
        return { outcome: { kind: 'failed', reason: 'answer is not a payment instruction', attempts: number } }
      }
      return { outcome: { kind: 'found', instruction } }
    } catch {
      return { retry: signal.aborted ? `no answer within ${options.timeoutMs} ms` : 'connection failed' }
    }
  }

  async function withRetries(vendor: string, reference: string): Promise<VendorOutcome> {
    const url = `${options.vendors[vendor]}/payment-instructions/${encodeURIComponent(reference)}`
    const token = options.tokens?.[vendor]
    const headers: Record<string, string> = {
      accept: 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {})
    }
    for (let retry = 0; ; retry++) {
      const result = await attempt(vendor, url, headers, reference, retry + 1)
      if ('outcome' in result) return result.outcome
      if (retry >= options.retries) return { kind: 'failed', reason: result.retry, attempts: retry + 1 }
      await sleep(delay(retry))
    }
  }

  return {
    /** What `vendor` (a configured code) says about `reference`. Never throws. */
    async lookup(vendor: string, reference: string): Promise<VendorOutcome> {
      if (options.vendors[vendor] === undefined) {
        return { kind: 'failed', reason: `vendor ${vendor} is not configured`, attempts: 0 }
      }
      const breaker = breakerOf(vendor)
      const admission = breaker.admit(now())
      if (admission === 'refuse') return { kind: 'circuit_open' }
      const startedAt = now()
      let outcome: VendorOutcome = { kind: 'failed', reason: 'unexpected error', attempts: 0 }
      try {
        outcome = await withRetries(vendor, reference)
      } finally {
        if (outcome.kind === 'found' || outcome.kind === 'absent') breaker.succeeded()
        else breaker.failed(startedAt, now(), admission === 'trial')
      }
      return outcome
    },

    /** Whether the vendor's breaker is open (for logs and tests). */
    breakerOpen(vendor: string): boolean {
      return breakers.get(vendor)?.open ?? false
    }
  }
}

export type VendorClient = ReturnType<typeof createVendorClient>

/** The body, or undefined when it is larger than `max` bytes. */
async function readLimited(res: Response, max: number): Promise<string | undefined> {
  if (!res.body) return ''
  const reader = res.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  while (true) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > max) {
      await reader.cancel().catch(() => {})
      return undefined
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}

const isVendorAnswer = compileBody(VendorAnswer) as (value: unknown) => value is VendorAnswer

/** `{reference, type, status, details}` for the reference asked about, storable as jsonb; else undefined. */
function parseInstruction(text: string | undefined, reference: string): VendorInstruction | undefined {
  if (text === undefined) return undefined
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!isVendorAnswer(body) || body.reference !== reference) return undefined
  return { reference, type: body.type, status: body.status, details: body.details ?? {} }
}

import type { FastifyBaseLogger } from 'fastify'
import { DELIVERY_RETENTION_DAYS } from '../../../schemas/webhooks.js'
import type { Db } from '../../db/index.js'
import { formatDateTime } from '../../format.js'
import { createWebhooksRepository, type AttemptResult, type ClaimedDelivery } from './repository.js'
import { createSender } from './sender.js'
import { rootSpan, type SpanNote, type TraceRoot } from '../../tracing.js'

export interface WebhookWorkerOptions {
  /** Deliveries this process makes at once. */
  concurrency: number
  timeoutMs: number
  /** Seconds before each retry; after the last, the delivery is FAILED. */
  retryDelays: number[]
  allowPrivate: boolean
  /** How often the outbox is looked at when nothing is in flight. */
  pollMs?: number
  /** Attempts are traced under it (undefined: traces are off). */
  traceRoot?: TraceRoot | undefined
}

/** Attempts recorded in one statement at most, and how long the first waits for others. */
const RECORD_BATCH = 50
const RECORD_DELAY_MS = 20

/** What an attempt came to, for /metrics. */
export type AttemptOutcome = 'delivered' | 'retrying' | 'failed'
export type AttemptListener = (endpointId: string, outcome: AttemptOutcome) => void

/** The body of a webhook: `{type, timestamp, data}`. */
export function webhookBody(delivery: Pick<ClaimedDelivery, 'type' | 'occurredAt' | 'data'>): string {
  return JSON.stringify({ type: delivery.type, timestamp: formatDateTime(delivery.occurredAt), data: delivery.data })
}

/**
 * Delivers the webhook outbox, at least once, with retries on the schedule. Safe in every server
 * process: each attempt is claimed by one (see `claimDue`). No transaction is held while a
 * receiver answers, and one endpoint holds at most half of this process's deliveries, so a slow
 * or dead receiver delays only its own events.
 */
export function createWebhookWorker(db: Db, log: FastifyBaseLogger, options: WebhookWorkerOptions) {
  const repo = createWebhooksRepository(db)
  const sender = createSender({ allowPrivate: options.allowPrivate, timeoutMs: options.timeoutMs })
  const pollMs = options.pollMs ?? 500
  const perEndpoint = Math.max(1, Math.floor(options.concurrency / 2))
  // A claim outlives the attempt's time limit, so only a process that died gives one up.
  const leaseSeconds = Math.ceil(options.timeoutMs / 1000) + 30
  const inFlight = new Map<string, number>()
  const attempts = new Set<Promise<void>>()
  const listeners: AttemptListener[] = []
  let active = 0
  let timer: NodeJS.Timeout | undefined
  let polling: Promise<void> | undefined
  let lookAgain = false
  let stopped = true
  let lastPurge = 0

  // Attempts are recorded together, a few milliseconds apart: one statement for many deliveries
  // (a process that dies before recording leaves them to be tried again when their lease ends).
  let unrecorded: Array<{ delivery: ClaimedDelivery; result: AttemptResult; done: (err?: unknown) => void }> = []
  let flushing: NodeJS.Timeout | undefined
  function flushRecords(): void {
    flushing = undefined
    const batch = unrecorded
    unrecorded = []
    repo.recordAttempts(batch).then(
      () => batch.forEach((r) => r.done()),
      (err: unknown) => batch.forEach((r) => r.done(err))
    )
  }
  function record(delivery: ClaimedDelivery, result: AttemptResult): Promise<void> {
    return new Promise((resolve, reject) => {
      unrecorded.push({ delivery, result, done: (err) => (err === undefined ? resolve() : reject(err)) })
      if (unrecorded.length >= RECORD_BATCH) {
        clearTimeout(flushing)
        flushRecords()
      } else flushing ??= setTimeout(flushRecords, RECORD_DELAY_MS)
    })
  }

  /** One attempt; `sent` is called once the receiver has answered (or not), before it is recorded. */
  async function attempt(delivery: ClaimedDelivery, sent: () => void, note: SpanNote): Promise<void> {
    const result = await sender.send(delivery.url, delivery.secret, {
      id: `msg_${delivery.eventId}`,
      // The signature's time is the attempt's: receivers refuse one older than a few minutes
      // (Standard Webhooks), and a retry or a redelivery can come hours after the event.
      timestamp: new Date(),
      body: webhookBody(delivery)
    })
    note.set({
      'amis.webhook.delivered': result.delivered,
      ...(result.status !== null ? { 'http.response.status_code': result.status } : {})
    })
    sent()
    const retryInSeconds = result.delivered ? undefined : options.retryDelays[delivery.attempt - 1]
    await record(delivery, { ...result, retryInSeconds })
    const outcome: AttemptOutcome = result.delivered
      ? 'delivered'
      : retryInSeconds === undefined
        ? 'failed'
        : 'retrying'
    for (const listener of listeners) listener(delivery.endpointId, outcome)
    if (!result.delivered) {
      log.warn(
        {
          deliveryId: delivery.id,
          endpointId: delivery.endpointId,
          attempt: delivery.attempt,
          error: result.error,
          outcome
        },
        'webhook not delivered'
      )
    }
  }

  function start(delivery: ClaimedDelivery): void {
    active++
    inFlight.set(delivery.endpointId, (inFlight.get(delivery.endpointId) ?? 0) + 1)
    let released = false
    // The slot is free once the receiver has answered: the claim's lease keeps the delivery from
    // being claimed again until its attempt is recorded (unless a redelivery makes it due).
    const release = () => {
      if (released) return
      released = true
      active--
      const left = (inFlight.get(delivery.endpointId) ?? 1) - 1
      if (left > 0) inFlight.set(delivery.endpointId, left)
      else inFlight.delete(delivery.endpointId)
      if (!stopped) schedule(0)
    }
    const running: Promise<void> = rootSpan(
      options.traceRoot,
      'webhook delivery attempt',
      {
        'amis.webhook.endpoint_id': delivery.endpointId,
        'amis.webhook.delivery_id': delivery.id,
        'amis.webhook.event_type': delivery.type,
        'amis.webhook.attempt': delivery.attempt
      },
      (note) => attempt(delivery, release, note)
    )
      .catch((err) => log.error({ err, deliveryId: delivery.id }, 'webhook attempt could not be recorded'))
      .finally(() => {
        release()
        attempts.delete(running)
      })
    attempts.add(running)
  }

  /** One look at the outbox: claims what the free slots can take. Returns how many were claimed. */
  async function poll(): Promise<number> {
    if (Date.now() - lastPurge > 3600_000) {
      lastPurge = Date.now()
      const removed = await repo.purge(DELIVERY_RETENTION_DAYS)
      if (removed > 0) log.info({ removed }, 'webhook events older than the retention removed')
    }
    const busy = [...inFlight].filter(([, n]) => n >= perEndpoint).map(([id]) => id)
    const claimed = await repo.claimDue({ limit: options.concurrency - active, perEndpoint, leaseSeconds, busy })
    for (const delivery of claimed) start(delivery)
    return claimed.length
  }

  /** Looks at the outbox after `delay` ms (0: as soon as the look in progress, if any, ends). */
  function schedule(delay: number): void {
    if (stopped) return
    if (polling !== undefined) {
      // A slot freed during a look: look again right after it.
      if (delay === 0) lookAgain = true
      return
    }
    if (timer) clearTimeout(timer)
    timer = setTimeout(() => {
      timer = undefined
      lookAgain = false
      let claimed = 0
      polling = poll()
        .then((n) => {
          claimed = n
        })
        .catch((err) => log.error({ err }, 'webhook outbox poll failed'))
        .finally(() => {
          polling = undefined
          // Claimed some, or a slot freed meanwhile: there may be more due at once; else look again after a while.
          schedule(claimed > 0 || lookAgain ? 0 : pollMs)
        })
    }, delay)
    timer.unref()
  }

  return {
    /** One poll, for tests: claims and starts due deliveries, then waits for their attempts. */
    async runOnce(): Promise<number> {
      const claimed = await poll()
      await Promise.all([...attempts])
      return claimed
    },
    onAttempt(listener: AttemptListener): void {
      listeners.push(listener)
    },
    start(): void {
      if (options.concurrency <= 0) return
      stopped = false
      schedule(0)
    },
    /** Stops claiming and waits for the attempts in flight (each ends within the time limit). */
    async stop(): Promise<void> {
      stopped = true
      if (timer) clearTimeout(timer)
      await polling
      await Promise.all([...attempts])
    }
  }
}

export type WebhookWorker = ReturnType<typeof createWebhookWorker>

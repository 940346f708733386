import { and, asc, count, desc, eq, lt, sql, type SQL } from 'drizzle-orm'
import {
  organisations,
  webhookAttempts,
  webhookDeliveries,
  webhookEndpoints,
  webhookEvents
} from '../../../drizzle/schema/index.js'
import type { DeliveryState, WebhookEventType } from '../../../schemas/webhooks.js'
import { rowsOf, type Db, type Tx } from '../../db/index.js'

export interface EndpointRow {
  id: string
  organisation: string
  url: string
  events: WebhookEventType[]
  createdAt: Date
}

export interface DeliveryRow {
  id: number
  eventId: number
  event: WebhookEventType
  state: DeliveryState
  attempts: number
  lastStatus: number | null
  lastError: string | null
  nextAttemptAt: Date
  createdAt: Date
}

/** A delivery claimed for one attempt, with what the attempt sends. */
export interface ClaimedDelivery {
  id: number
  endpointId: string
  url: string
  secret: string
  /** This attempt's number, from 1. */
  attempt: number
  /** The delivery's redeliveries asked for when this attempt was claimed. */
  redeliveries: number
  eventId: number
  type: WebhookEventType
  data: unknown
  occurredAt: Date
}

/** How an attempt ended. */
export interface AttemptResult {
  status: number | null
  error: string | null
  durationMs: number
  delivered: boolean
  /** Seconds until the next attempt; undefined: no more attempts (FAILED), unless delivered. */
  retryInSeconds: number | undefined
}

const endpointColumns = {
  id: webhookEndpoints.id,
  organisation: organisations.name,
  url: webhookEndpoints.url,
  events: webhookEndpoints.events,
  createdAt: webhookEndpoints.createdAt
}

const deliveryColumns = {
  id: webhookDeliveries.id,
  eventId: webhookDeliveries.eventId,
  event: webhookEvents.type,
  state: webhookDeliveries.state,
  attempts: webhookDeliveries.attempts,
  lastStatus: webhookDeliveries.lastStatus,
  lastError: webhookDeliveries.lastError,
  nextAttemptAt: webhookDeliveries.nextAttemptAt,
  createdAt: webhookDeliveries.createdAt
}

/** SQL of webhook endpoints and deliveries. The outbox rows themselves are written by triggers. */
export function createWebhooksRepository(db: Db) {
  return {
    async organisationId(name: string): Promise<string | undefined> {
      const [row] = await db.select({ id: organisations.id }).from(organisations).where(eq(organisations.name, name))
      return row?.id
    },

    /**
     * Adds an endpoint unless the organisation has `max` already (undefined then); `record` writes
     * the action's audit record in the same transaction.
     */
    async insertEndpoint(
      organisationId: string,
      endpoint: { url: string; events: WebhookEventType[]; secret: string },
      max: number,
      record: (tx: Tx, id: string) => Promise<void>
    ): Promise<{ id: string; createdAt: Date } | undefined> {
      // The organisation's row is locked so that two creates at once cannot both pass the count.
      const result = await db.transaction(async (tx) => {
        await tx.execute(sql`select 1 from organisations where id = ${organisationId}::uuid for update`)
        const [{ n }] = (await tx
          .select({ n: count() })
          .from(webhookEndpoints)
          .where(eq(webhookEndpoints.organisationId, organisationId))) as [{ n: number }]
        if (n >= max) return undefined
        const [row] = await tx
          .insert(webhookEndpoints)
          .values({ organisationId, ...endpoint })
          .returning({ id: webhookEndpoints.id, createdAt: webhookEndpoints.createdAt })
        await record(tx, row!.id)
        return row
      })
      return result
    },

    /** Endpoints, oldest first: of one organisation, or every one (undefined). */
    async endpoints(organisationId: string | undefined): Promise<EndpointRow[]> {
      return db
        .select(endpointColumns)
        .from(webhookEndpoints)
        .innerJoin(organisations, eq(organisations.id, webhookEndpoints.organisationId))
        .where(organisationId === undefined ? undefined : eq(webhookEndpoints.organisationId, organisationId))
        .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id)) as Promise<EndpointRow[]>
    },

    /** One endpoint, if it is the organisation's (any for undefined). */
    async endpoint(id: string, organisationId: string | undefined): Promise<EndpointRow | undefined> {
      const conditions: SQL[] = [eq(webhookEndpoints.id, id)]
      if (organisationId !== undefined) conditions.push(eq(webhookEndpoints.organisationId, organisationId))
      const [row] = await db
        .select(endpointColumns)
        .from(webhookEndpoints)
        .innerJoin(organisations, eq(organisations.id, webhookEndpoints.organisationId))
        .where(and(...conditions))
      return row as EndpointRow | undefined
    },

    /**
     * Removes an endpoint with its deliveries; false when it is gone already. `record` writes the
     * action's audit record in the same transaction, while the endpoint still says whose it is.
     */
    async deleteEndpoint(id: string, record: (tx: Tx) => Promise<void>): Promise<boolean> {
      return db.transaction(async (tx) => {
        const [row] = await tx
          .select({ id: webhookEndpoints.id })
          .from(webhookEndpoints)
          .where(eq(webhookEndpoints.id, id))
          .for('update')
        if (!row) return false
        await record(tx)
        await tx.delete(webhookEndpoints).where(eq(webhookEndpoints.id, id))
        return true
      })
    },

    /** A page of an endpoint's deliveries, newest first; `after` is a delivery id. */
    async deliveries(
      endpointId: string,
      filter: { state?: DeliveryState; after?: number; limit: number }
    ): Promise<DeliveryRow[]> {
      const conditions: SQL[] = [eq(webhookDeliveries.endpointId, endpointId)]
      if (filter.state !== undefined) conditions.push(eq(webhookDeliveries.state, filter.state))
      if (filter.after !== undefined) conditions.push(lt(webhookDeliveries.id, filter.after))
      return db
        .select(deliveryColumns)
        .from(webhookDeliveries)
        .innerJoin(webhookEvents, eq(webhookEvents.id, webhookDeliveries.eventId))
        .where(and(...conditions))
        .orderBy(desc(webhookDeliveries.id))
        .limit(filter.limit)
    },

    /** Every attempt of a delivery, first first. */
    async attempts(deliveryId: number) {
      return db
        .select({
          attempt: webhookAttempts.attempt,
          at: webhookAttempts.at,
          status: webhookAttempts.status,
          error: webhookAttempts.error,
          durationMs: webhookAttempts.durationMs
        })
        .from(webhookAttempts)
        .where(eq(webhookAttempts.deliveryId, deliveryId))
        .orderBy(asc(webhookAttempts.attempt))
    },

    /** The delivery's endpoint and organisation, to check who may see it. */
    async deliveryOwner(deliveryId: number): Promise<{ endpointId: string; organisationId: string } | undefined> {
      const [row] = await db
        .select({ endpointId: webhookEndpoints.id, organisationId: webhookEndpoints.organisationId })
        .from(webhookDeliveries)
        .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
        .where(eq(webhookDeliveries.id, deliveryId))
      return row
    },

    /**
     * Makes a delivery due again at once (a DELIVERED or FAILED one included), its attempts kept,
     * and counts the request: an attempt claimed before it does not end the delivery
     * (`recordAttempts`), so one claimed after it is made, even when an attempt is in flight.
     * False when the delivery is gone; `record` writes the action's audit record in the same transaction.
     */
    async redeliver(deliveryId: number, record: (tx: Tx) => Promise<void>): Promise<boolean> {
      return db.transaction(async (tx) => {
        const rows = await tx
          .update(webhookDeliveries)
          .set({
            state: 'PENDING',
            nextAttemptAt: sql`now()`,
            redeliveries: sql`${webhookDeliveries.redeliveries} + 1`
          })
          .where(eq(webhookDeliveries.id, deliveryId))
          .returning({ id: webhookDeliveries.id })
        if (rows.length === 0) return false
        await record(tx)
        return true
      })
    },

    async delivery(deliveryId: number): Promise<DeliveryRow | undefined> {
      const [row] = await db
        .select(deliveryColumns)
        .from(webhookDeliveries)
        .innerJoin(webhookEvents, eq(webhookEvents.id, webhookDeliveries.eventId))
        .where(eq(webhookDeliveries.id, deliveryId))
      return row
    },

    /**
     * Claims due deliveries for one attempt each: at most `perEndpoint` of each endpoint not in
     * `busy`, `limit` in all. The claim counts the attempt and moves its next attempt past the
     * lease in the same statement, so no other process makes this attempt; a process that dies
     * while sending leaves the delivery to be tried again when the lease ends (at least once).
     */
    async claimDue(options: {
      limit: number
      perEndpoint: number
      leaseSeconds: number
      busy: string[]
    }): Promise<ClaimedDelivery[]> {
      if (options.limit <= 0) return []
      const result = await db.execute(sql`
        with picked as (
          select d.id from webhook_endpoints w
          cross join lateral (
            select d.id, d.next_attempt_at from webhook_deliveries d
            where d.endpoint_id = w.id and d.state = 'PENDING' and d.next_attempt_at <= now()
            order by d.next_attempt_at, d.id limit ${options.perEndpoint}
            for update of d skip locked
          ) d
          where not (w.id = any(${`{${options.busy.join(',')}}`}::uuid[]))
          order by d.next_attempt_at, d.id
          limit ${options.limit}
        )
        update webhook_deliveries d
        set attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => ${options.leaseSeconds})
        from picked, webhook_endpoints w, webhook_events e
        where d.id = picked.id and w.id = d.endpoint_id and e.id = d.event_id
        returning d.id, d.endpoint_id as "endpointId", w.url, w.secret, d.attempts as attempt, d.redeliveries,
          e.id as "eventId", e.type, e.data, e.occurred_at as "occurredAt"`)
      return rowsOf<ClaimedDelivery & { occurredAt: Date | string; id: number | string; eventId: number | string }>(
        result
      ).map((r) => ({ ...r, id: Number(r.id), eventId: Number(r.eventId), occurredAt: new Date(r.occurredAt) }))
    },

    /**
     * Records attempts and their deliveries' new states, in one statement. A delivery claimed
     * again since (this claim's lease ran out, or a redelivery made it due) keeps its state. So
     * does one redelivered since this attempt was claimed, whatever the attempt's outcome: it
     * stays due at once (the redelivery's request), and the attempt claimed next carries the
     * count that lets it end the delivery. Its last status and error become this attempt's unless
     * it was claimed again.
     */
    async recordAttempts(attempts: Array<{ delivery: ClaimedDelivery; result: AttemptResult }>): Promise<void> {
      if (attempts.length === 0) return
      const rows = attempts.map(({ delivery, result }) => ({
        id: delivery.id,
        attempt: delivery.attempt,
        redeliveries: delivery.redeliveries,
        status: result.status,
        error: result.error,
        duration_ms: result.durationMs,
        outcome: result.delivered ? 'delivered' : result.retryInSeconds === undefined ? 'failed' : 'retrying',
        retry_in: result.retryInSeconds ?? null
      }))
      await db.execute(sql`
        with r as (
          select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
            as r(id bigint, attempt int, redeliveries int, status smallint, error text, duration_ms int,
              outcome text, retry_in float8)
        ), logged as (
          insert into webhook_attempts (delivery_id, attempt, status, error, duration_ms)
          select id, attempt, status, error, duration_ms from r
        )
        update webhook_deliveries d set
          state = case when d.redeliveries <> r.redeliveries then d.state
            when r.outcome = 'delivered' then 'DELIVERED'::webhook_delivery_state
            when r.outcome = 'failed' then 'FAILED'::webhook_delivery_state else d.state end,
          delivered_at = case when r.outcome = 'delivered' and d.redeliveries = r.redeliveries then now()
            else d.delivered_at end,
          last_status = r.status,
          last_error = r.error,
          next_attempt_at = case when r.outcome = 'retrying' and d.redeliveries = r.redeliveries
            then now() + make_interval(secs => r.retry_in) else d.next_attempt_at end
        from r where d.id = r.id and d.attempts = r.attempt`)
    },

    /** Removes events (and so their deliveries) older than `days`. Returns how many. */
    async purge(days: number): Promise<number> {
      const result = await db.execute(sql`with removed as (
          delete from webhook_events where occurred_at < now() - make_interval(days => ${days}) returning 1
        ) select count(*)::int as n from removed`)
      return rowsOf<{ n: number }>(result)[0]?.n ?? 0
    },

    /** Queue depth and the age of the oldest undelivered delivery (PENDING), for /metrics. */
    async queue(): Promise<{ pending: number; oldestSeconds: number }> {
      const [row] = await db
        .select({
          pending: count(),
          oldestSeconds:
            sql<number>`coalesce(extract(epoch from now() - min(${webhookDeliveries.createdAt})), 0)`.mapWith(Number)
        })
        .from(webhookDeliveries)
        .where(eq(webhookDeliveries.state, 'PENDING'))
      return row ?? { pending: 0, oldestSeconds: 0 }
    }
  }
}

export type WebhooksRepository = ReturnType<typeof createWebhooksRepository>

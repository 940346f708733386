import type { FastifyInstance } from 'fastify'
import { sql } from 'drizzle-orm'
import type { Database } from '../../src/db/index.js'
import { rowsOf } from './database.js'
import { gql, operatorToken } from './graphql.js'
import { waitFor } from './wait.js'

/** Webhook endpoints and deliveries through GraphQL, and the outbox read from the database, for tests. */

export const CREATE_ENDPOINT = `mutation($i: CreateWebhookEndpointInput!) {
  createWebhookEndpoint(input: $i) { id organisation url events secret createdAt }
}`
export const LIST_ENDPOINTS = `query($o: String) { webhookEndpoints(organisation: $o) { id organisation url events createdAt } }`
export const DELETE_ENDPOINT = `mutation($id: ID!) { deleteWebhookEndpoint(input: {id: $id}) { id url } }`
export const DELIVERIES = `query($e: ID!, $s: String) {
  webhookDeliveries(endpointId: $e, state: $s) {
    id eventId event state attempts lastStatus lastError nextAttemptAt createdAt
    attemptLog { attempt at status error durationMs }
  }
}`
export const REDELIVER = `mutation($id: ID!) { redeliverWebhook(input: {deliveryId: $id}) { id eventId state attempts } }`

export interface Attempt {
  attempt: number
  at: string
  status: number | null
  error: string | null
  durationMs: number
}

export interface Delivery {
  id: string
  eventId: string
  event: string
  state: string
  attempts: number
  lastStatus: number | null
  lastError: string | null
  nextAttemptAt: string | null
  createdAt: string
  attemptLog: Attempt[]
}

/** The first GraphQL error's code. */
export const errorCode = (res: Awaited<ReturnType<typeof gql>>) => res.errors?.[0]?.extensions?.code

/** Registers an endpoint with `token` (the operator's when omitted); throws on an error. */
export async function createEndpoint(
  app: FastifyInstance,
  input: { organisation: string; url: string; events: string[] },
  token?: string
): Promise<{ id: string; secret: string; url: string; events: string[]; organisation: string }> {
  const res = await gql(app, CREATE_ENDPOINT, { i: input }, token ?? (await operatorToken(app)))
  if (res.errors) throw new Error('createWebhookEndpoint failed: ' + JSON.stringify(res.errors))
  return res.data!.createWebhookEndpoint
}

/** An endpoint's deliveries, newest first (operator's token unless given). */
export async function deliveriesOf(app: FastifyInstance, endpointId: string, token?: string): Promise<Delivery[]> {
  const res = await gql(app, DELIVERIES, { e: endpointId }, token ?? (await operatorToken(app)))
  if (res.errors) throw new Error('webhookDeliveries failed: ' + JSON.stringify(res.errors))
  return res.data!.webhookDeliveries as Delivery[]
}

/** The deliveries of the endpoint once `ready` holds for them (fails after `ms`, showing the last ones read). */
export async function deliveriesWhen(
  app: FastifyInstance,
  endpointId: string,
  ready: (deliveries: Delivery[]) => boolean,
  ms = 20_000
): Promise<Delivery[]> {
  let deliveries: Delivery[] = []
  return waitFor(
    `the deliveries of endpoint ${endpointId} are ready`,
    async () => {
      deliveries = await deliveriesOf(app, endpointId)
      return ready(deliveries) && deliveries
    },
    { timeoutMs: ms, seen: () => JSON.stringify(deliveries) }
  )
}

/** The outbox as stored: every webhook_events row, oldest first. */
export async function webhookEvents(
  database: Database
): Promise<Array<{ organisation: string; type: string; data: Record<string, unknown> }>> {
  return rowsOf<{ organisation: string; type: string; data: Record<string, unknown> }>(
    await database.db.execute(sql`select o.name as organisation, e.type::text as type, e.data
      from webhook_events e join organisations o on o.id = e.organisation_id order by e.id`)
  )
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

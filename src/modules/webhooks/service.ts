import { randomBytes } from 'node:crypto'
import { lookup } from 'node:dns/promises'
import { CODE } from '../../../schemas/error-codes.js'
import {
  DELIVERY_STATES,
  MAX_ENDPOINTS_PER_ORGANISATION,
  WEBHOOK_EVENT_TYPES,
  type DeliveryState,
  type WebhookEventType
} from '../../../schemas/webhooks.js'
import type { Db } from '../../db/index.js'
import { fieldError } from '../../errors.js'
import { formatDateTime } from '../../format.js'
import { addressProblem, ipLiteral, webhookUrlProblem } from '../../rules/webhook-urls.js'
import type { RecordChange } from '../audit/service.js'
import { createWebhooksRepository, type DeliveryRow, type EndpointRow } from './repository.js'

/** Who asks: an organisation (its own endpoints only) or the operator (`organisationId` undefined). */
export interface WebhookCaller {
  organisationId: string | undefined
  organisationName: string | undefined
}

const invalid = (detail: string) => fieldError(CODE.invalid, { detail })
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const DELIVERY_ID = /^[1-9][0-9]{0,15}$/

const endpointNotFound = (id: string) => fieldError(CODE.not_found, { what: `Webhook endpoint ${id}` })
const deliveryNotFound = (id: string) => fieldError(CODE.not_found, { what: `Webhook delivery ${id}` })

export const endpointFields = (row: EndpointRow) => ({
  id: row.id,
  organisation: row.organisation,
  url: row.url,
  events: row.events,
  createdAt: formatDateTime(row.createdAt)
})

export const deliveryFields = (row: DeliveryRow) => ({
  id: String(row.id),
  eventId: `msg_${row.eventId}`,
  event: row.event,
  state: row.state,
  attempts: row.attempts,
  lastStatus: row.lastStatus,
  lastError: row.lastError,
  nextAttemptAt: row.state === 'PENDING' ? formatDateTime(row.nextAttemptAt) : null,
  createdAt: formatDateTime(row.createdAt)
})

/** Endpoint management and the delivery records, as the operator and organisations see them. */
export function createWebhooksService(db: Db, options: { allowPrivate: boolean }) {
  const repo = createWebhooksRepository(db)

  /** The URL's problem, its host resolved now (it is resolved again at every delivery). */
  async function urlProblem(url: string): Promise<string | undefined> {
    const problem = webhookUrlProblem(url, options.allowPrivate)
    if (problem !== undefined || options.allowPrivate) return problem
    const host = new URL(url).hostname
    if (ipLiteral(host) !== undefined) return undefined
    let addresses: Array<{ address: string }>
    try {
      addresses = await lookup(host, { all: true, verbatim: true })
    } catch {
      return `The host ${host} could not be resolved.`
    }
    const refused = addresses.map((a) => addressProblem(a.address, false)).find((p) => p !== undefined)
    return refused === undefined ? undefined : `The host ${host} is refused: ${refused}`
  }

  async function ownEndpoint(caller: WebhookCaller, id: string): Promise<EndpointRow> {
    if (!UUID.test(id)) throw endpointNotFound(id)
    const endpoint = await repo.endpoint(id, caller.organisationId)
    if (endpoint === undefined) throw endpointNotFound(id)
    return endpoint
  }

  async function ownDelivery(caller: WebhookCaller, id: string): Promise<number> {
    if (!DELIVERY_ID.test(id)) throw deliveryNotFound(id)
    const owner = await repo.deliveryOwner(Number(id))
    if (
      owner === undefined ||
      (caller.organisationId !== undefined && owner.organisationId !== caller.organisationId)
    ) {
      throw deliveryNotFound(id)
    }
    return Number(id)
  }

  return {
    /** `record` writes the action's audit record in the transaction of the change (as do remove's and redeliver's). */
    async create(
      caller: WebhookCaller,
      input: { organisation: string; url: string; events: string[] },
      record: RecordChange
    ) {
      const organisationId =
        caller.organisationId === undefined
          ? await repo.organisationId(input.organisation)
          : input.organisation === caller.organisationName
            ? caller.organisationId
            : undefined
      if (organisationId === undefined) {
        throw fieldError(CODE.not_found, { what: `Organisation ${input.organisation}` })
      }
      const url = input.url.trim()
      const problem = await urlProblem(url)
      if (problem !== undefined) throw invalid(problem)
      const events = [...new Set(input.events)]
      if (events.length === 0) throw invalid(`events must name at least one of ${WEBHOOK_EVENT_TYPES.join(', ')}.`)
      const unknown = events.filter((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e))
      if (unknown.length > 0) {
        throw invalid(`Unknown event type ${unknown.join(', ')}: events are ${WEBHOOK_EVENT_TYPES.join(', ')}.`)
      }
      const secret = `whsec_${randomBytes(24).toString('base64')}`
      const inserted = await repo.insertEndpoint(
        organisationId,
        { url, events: events as WebhookEventType[], secret },
        MAX_ENDPOINTS_PER_ORGANISATION,
        (tx, id) => record(tx, { type: 'webhook_endpoint', id })
      )
      if (inserted === undefined) {
        throw invalid(
          `The organisation has ${MAX_ENDPOINTS_PER_ORGANISATION} webhook endpoints, the most it may have: delete one first.`
        )
      }
      const endpoint = await repo.endpoint(inserted.id, organisationId)
      return { ...endpointFields(endpoint!), secret }
    },

    async list(caller: WebhookCaller, organisation: string | undefined) {
      if (caller.organisationId !== undefined) {
        if (organisation !== undefined && organisation !== caller.organisationName) return []
        return (await repo.endpoints(caller.organisationId)).map(endpointFields)
      }
      if (organisation === undefined) return (await repo.endpoints(undefined)).map(endpointFields)
      const organisationId = await repo.organisationId(organisation)
      if (organisationId === undefined) {
        throw fieldError(CODE.not_found, { what: `Organisation ${organisation}` })
      }
      return (await repo.endpoints(organisationId)).map(endpointFields)
    },

    async remove(caller: WebhookCaller, id: string, record: RecordChange) {
      const endpoint = await ownEndpoint(caller, id)
      if (
        !(await repo.deleteEndpoint(endpoint.id, (tx) => record(tx, { type: 'webhook_endpoint', id: endpoint.id })))
      ) {
        throw endpointNotFound(id)
      }
      return endpointFields(endpoint)
    },

    async deliveries(
      caller: WebhookCaller,
      args: { endpointId: string; state?: string; first?: number; after?: string }
    ) {
      const endpoint = await ownEndpoint(caller, args.endpointId)
      const first = args.first ?? 100
      if (!Number.isInteger(first) || first < 1 || first > 1000) throw invalid('first must be 1–1000.')
      if (args.state !== undefined && !(DELIVERY_STATES as readonly string[]).includes(args.state)) {
        throw invalid(`state must be one of ${DELIVERY_STATES.join(', ')}.`)
      }
      if (args.after !== undefined && !DELIVERY_ID.test(args.after)) {
        throw invalid('after must be the id of a delivery.')
      }
      const rows = await repo.deliveries(endpoint.id, {
        ...(args.state !== undefined ? { state: args.state as DeliveryState } : {}),
        ...(args.after !== undefined ? { after: Number(args.after) } : {}),
        limit: first
      })
      return rows.map(deliveryFields)
    },

    /** Every attempt of a delivery (the GraphQL field `attemptLog`). */
    async attempts(deliveryId: string) {
      const rows = await repo.attempts(Number(deliveryId))
      return rows.map((a) => ({ ...a, at: formatDateTime(a.at) }))
    },

    async redeliver(caller: WebhookCaller, id: string, record: RecordChange) {
      const deliveryId = await ownDelivery(caller, id)
      if (
        !(await repo.redeliver(deliveryId, (tx) => record(tx, { type: 'webhook_delivery', id: String(deliveryId) })))
      ) {
        throw deliveryNotFound(id)
      }
      return deliveryFields((await repo.delivery(deliveryId))!)
    },

    queue: repo.queue
  }
}

export type WebhooksService = ReturnType<typeof createWebhooksService>

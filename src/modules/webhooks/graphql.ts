import type { Audited } from '../audit/graphql.js'
import type { GraphqlResolvers, Guard } from '../auth/guard.js'
import type { Principal } from '../auth/service.js'
import type { WebhookCaller, WebhooksService } from './service.js'

/** The webhook service's view of a caller: an organisation's own endpoints, every one for the operator. */
const webhookCaller = (who: Principal): WebhookCaller =>
  who.kind === 'organisation'
    ? { organisationId: who.organisationId, organisationName: who.organisationName }
    : { organisationId: undefined, organisationName: undefined }

/** The webhook fields: an organisation's own endpoints and deliveries, every one for the operator. */
export function webhooksResolvers(deps: {
  guard: Guard
  audited: Audited
  webhooks: WebhooksService
}): GraphqlResolvers {
  const { guard, audited, webhooks } = deps
  return {
    Mutation: {
      createWebhookEndpoint: audited(
        'createWebhookEndpoint',
        () => null,
        ({ input }: { input: { organisation: string; url: string; events: string[] } }, record, caller) =>
          webhooks.create(webhookCaller(caller), input, record),
        'anyone'
      ),
      deleteWebhookEndpoint: audited(
        'deleteWebhookEndpoint',
        ({ input }: { input: { id: string } }) => ({ type: 'webhook_endpoint', id: input.id }),
        ({ input }, record, caller) => webhooks.remove(webhookCaller(caller), input.id, record),
        'anyone'
      ),
      redeliverWebhook: audited(
        'redeliverWebhook',
        ({ input }: { input: { deliveryId: string } }) => ({ type: 'webhook_delivery', id: input.deliveryId }),
        ({ input }, record, caller) => webhooks.redeliver(webhookCaller(caller), input.deliveryId, record),
        'anyone'
      )
    },
    WebhookDelivery: {
      attemptLog: (delivery: { id: string }) => webhooks.attempts(delivery.id)
    },
    Query: {
      webhookEndpoints: guard.resolver('anyone', (args: { organisation?: string | null }, caller) =>
        webhooks.list(webhookCaller(caller), args.organisation ?? undefined)
      ),
      webhookDeliveries: guard.resolver(
        'anyone',
        (args: { endpointId: string; state?: string | null; first?: number | null; after?: string | null }, caller) =>
          webhooks.deliveries(webhookCaller(caller), {
            endpointId: args.endpointId,
            ...(args.state != null ? { state: args.state } : {}),
            ...(args.first != null ? { first: args.first } : {}),
            ...(args.after != null ? { after: args.after } : {})
          })
      )
    }
  }
}

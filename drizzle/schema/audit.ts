import { bigint, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'

/**
 * The audit trail: one row per administrative action, succeeded or refused, append-only. Ids
 * increase with time. `actor_organisation_id` and `target_organisation_id` say which
 * organisations a record concerns (its actor's, and the one its target belongs to).
 */
export const auditEvents = pgTable(
  'audit_events',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    at: timestamp('at', { withTimezone: true, precision: 0 }).notNull(),
    action: text('action').notNull(),
    outcome: text('outcome', { enum: ['succeeded', 'refused'] }).notNull(),
    code: text('code'),
    actorKind: text('actor_kind', { enum: ['operator', 'organisation', 'anonymous'] }).notNull(),
    actorOrganisation: text('actor_organisation'),
    actorApiKeyId: uuid('actor_api_key_id'),
    actorOrganisationId: uuid('actor_organisation_id'),
    targetType: text('target_type'),
    targetId: text('target_id'),
    targetOrganisationId: uuid('target_organisation_id'),
    changes: jsonb('changes'),
    ip: text('ip'),
    requestId: text('request_id').notNull()
  },
  (t) => [
    index('audit_events_at').on(t.at),
    index('audit_events_actor_organisation').on(t.actorOrganisationId, t.id),
    index('audit_events_target_organisation').on(t.targetOrganisationId, t.id)
  ]
)

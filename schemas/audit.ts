/**
 * The audit trail's actions and target types: what `auditEvents` records (docs/operator-guide.md,
 * "Audit trail"). The admin command line checks `audit --action` against this list.
 */
export const AUDIT_ACTIONS = [
  'obtainToken',
  'createOrganisation',
  'createApiKey',
  'revokeApiKey',
  'createImportSupplier',
  'updateImportSupplier',
  'createOperationsTeam',
  'skipImportProcess',
  'eraseStagedData',
  'createWebhookEndpoint',
  'deleteWebhookEndpoint',
  'redeliverWebhook',
  'createImportJob',
  'startImportJob',
  'cancelImportJob'
] as const
export type AuditAction = (typeof AUDIT_ACTIONS)[number]

export type AuditTargetType =
  | 'organisation'
  | 'api_key'
  | 'import_supplier'
  | 'operations_team'
  | 'import_process'
  | 'webhook_endpoint'
  | 'webhook_delivery'
  | 'import_job'

/**
 * What a record's action acted on: `id` is what the API names it by (a name, a code, a key's,
 * endpoint's, delivery's or job's id, "<supplier>/<account>").
 */
export interface AuditTarget {
  type: AuditTargetType
  id: string
}

/** `{field: {from, to}}` of the fields an action changed. */
export type AuditChanges = Record<string, { from: unknown; to: unknown }>

/** A record as the API shows it. */
export interface AuditEvent {
  id: string
  at: string
  action: string
  outcome: 'succeeded' | 'refused'
  code: string | null
  actor: { kind: 'operator' | 'organisation' | 'anonymous'; organisation: string | null; apiKeyId: string | null }
  target: AuditTarget | null
  changes: AuditChanges | null
  ip: string | null
  requestId: string
}

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

/**
 * The GraphQL surface on `POST /graphql`: `obtainToken` for everyone, the operator's
 * mutations and queries for operator tokens only. Input objects are named input types.
 */
import { STEP_NAMES } from './failures.js'
import { SECTION_COUNTS } from './sections.js'

/** A wire name as GraphQL spells it: `historical_statements` → `historicalStatements`. */
export const camelCase = (name: string) => name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())

/** Fields of `Int!`, one per name, camel-cased. */
const intFields = (names: readonly string[], except: readonly string[] = []) =>
  names
    .filter((name) => !except.includes(name))
    .map((name) => `${camelCase(name)}: Int!`)
    .join('\n    ')

export const graphqlSchema = /* GraphQL */ `
  scalar JSON

  enum ImportSupplierStatus {
    Ongoing
    Paused
    Complete
  }
  "What a supplier checks of its accounts' supply point identifiers besides their length. NONE: nothing more. GB: an ELECTRICITY supply point's identifier must be a 13-digit MPAN core (a distributor id of 10 or above, its check digit last; invalid_mpan), a GAS one's an MPRN of 6-10 digits (invalid_mprn)."
  enum SupplyPointChecks {
    NONE
    GB
  }
  enum ImportProcessState {
    STAGED
    SKIPPED
    IMPORTED
  }
  enum ImportEventType {
    STAGED
    RESTAGED
    CREATE_ATTEMPTED
    CREATED
    DRY_RUN
    CREATE_FAILED
    SKIPPED
    POST_IMPORT_WRITE
    STAGED_DATA_ERASED
  }

  input ObtainTokenInput {
    "An organisation's or the operator's API key. Exactly one of APIKey and refreshToken."
    APIKey: String
    "A refresh token from an earlier obtainToken; single use."
    refreshToken: String
  }
  type ObtainTokenPayload {
    token: String!
    "Lifetime of token, in seconds."
    expiresIn: Int!
    refreshToken: String!
    "Unix time at which refreshToken expires."
    refreshExpiresIn: Int!
  }

  type Organisation {
    id: ID!
    name: String!
  }
  "The key is shown only here, at creation."
  type CreatedApiKey {
    id: ID!
    key: String!
    organisation: String!
  }
  "An API key as listed: never the key itself (only its hash is stored)."
  type ApiKey {
    id: ID!
    organisation: String!
    createdAt: String
    revokedAt: String
  }
  type ImportSupplier {
    code: String!
    organisation: String!
    status: ImportSupplierStatus!
    documentRoot: String!
    sendMigrationEmails: Boolean!
    maxConcurrentProcessing: Int
    supplyPointChecks: SupplyPointChecks!
  }
  type OperationsTeam {
    id: ID!
    name: String!
  }
  type ImportProcess {
    importSupplierCode: String!
    externalAccountNumber: String!
    state: ImportProcessState!
    serviceAccountNumber: String
  }
  type ImportEvent {
    type: ImportEventType!
    at: String!
    actor: String!
    detail: JSON
  }
  type MigrationProgress {
    staged: Int!
    pending: Int!
    imported: Int!
    skipped: Int!
    "Pending accounts whose latest create failed."
    failed: Int!
    "Accounts with an open failure record of any step."
    failing: Int!
  }
  type FailureEntry {
    code: String!
    attr: String
  }
  "The latest failure of one step of one account: codes and attrs only."
  type Failure {
    externalAccountNumber: String!
    step: String!
    failedAt: String!
    "Failures of this step since it last succeeded."
    attempts: Int!
    httpStatus: Int!
    code: String!
    errors: [FailureEntry!]!
  }
  type FailureCountsByStep {
    ${intFields(STEP_NAMES)}
  }
  type FailureCodeCount {
    step: String!
    code: String!
    accounts: Int!
  }
  "A ledger code's created accounts and the exact sum of their balances (a decimal string)."
  type ReconciliationLedger {
    ledgerCode: String!
    accounts: Int!
    balanceSum: String!
  }
  type ReconciliationTransactions {
    count: Int!
    "What the transactions add to the balances (credits and payments plus, the rest minus): a decimal string."
    amountSum: String!
  }
  "A supplier's totals, as GET /v1/data-import/reconciliation/<supplier>/ answers them."
  type ReconciliationTotals {
    accountsCreated: Int!
    accountsSkipped: Int!
    "Staged, not created, not skipped."
    accountsPending: Int!
    ledgers: [ReconciliationLedger!]!
    transactions: ReconciliationTransactions!
    ${intFields(SECTION_COUNTS, ['transactions'])}
  }
  "A post-import section, in the order sections run after an account is created."
  type Section {
    "Its step name (failure records, batch results, a batch entry's key)."
    name: String!
    "What people call it."
    label: String!
    "Its count in the account summary and reconciliation: a field of ReconciliationTotals (camel-cased)."
    count: String!
    "What people call what that count counts."
    countLabel: String!
    "Its endpoint under /v1/data-import."
    path: String!
  }
  type FailureSummary {
    failingAccounts: Int!
    byStep: FailureCountsByStep!
    byCode: [FailureCodeCount!]!
  }
  "One code of the error catalogue: a fixed text per code, the same for everyone (never input values)."
  type ErrorCodeInfo {
    code: String!
    "The HTTP status of an answer carrying it."
    status: Int!
    "top, entry, both or graphql: where it appears."
    kind: String!
    "What went wrong and what to do, in one sentence."
    meaning: String!
    "The steps whose failure records can carry it."
    steps: [String!]!
  }
  type TimelineMinute {
    minute: String!
    staged: Int!
    created: Int!
    failed: Int!
  }

  enum ImportJobState {
    OPEN
    QUEUED
    RUNNING
    PAUSED
    COMPLETED
    CANCELLED
  }
  "An import job's lines by outcome: done counts every line that has its result, total every line uploaded."
  type ImportJobLines {
    total: Int!
    done: Int!
    created: Int!
    alreadyImported: Int!
    wouldCreate: Int!
    failed: Int!
    "Lines of a cancelled job that never began."
    notProcessed: Int!
    skippedBlank: Int!
  }
  "Failed lines holding a code (a line counts once for each distinct code it holds)."
  type ImportJobFailureCode {
    code: String!
    lines: Int!
  }
  "A whole file migrated by the service, as GET /v1/data-import/import-jobs/<id>/ answers it."
  type ImportJob {
    id: ID!
    importSupplier: String!
    state: ImportJobState!
    dryRun: Boolean!
    createdAt: String!
    startedAt: String
    finishedAt: String
    "No line begins before it; null when not set (a QUEUED job waits for it)."
    notBefore: String
    "No line begins from it on; null when not set."
    notAfter: String
    "Null unless CANCELLED: cancelled, window_ended, supplier_complete, never_started or paused_too_long."
    cancelledReason: String
    "Codes of the failed lines' results, most lines first, at most 20."
    failureCodes: [ImportJobFailureCode!]!
    lines: ImportJobLines!
    "Lines given their result per second over the last minute."
    ratePerSecond: Float!
    "Seconds until every line has its result at the current rate; null unless RUNNING."
    etaSeconds: Int
    "Its lines that are not JSON (each failed with invalid_request, one entry invalid at null), in line order, at most first of them (1–100, default 20)."
    notJsonLines(first: Int): [ImportJobNotJsonLine!]!
  }
  "A line of an import job that is not JSON."
  type ImportJobNotJsonLine {
    line: Int!
    "Where the parser found the first problem and what it expected there; null once the job's input is erased (its results are kept longer)."
    reason: String
  }

  input CreateOrganisationInput {
    name: String!
  }
  input CreateApiKeyInput {
    organisation: String!
  }
  input RevokeApiKeyInput {
    id: ID!
  }
  input CreateImportSupplierInput {
    code: String!
    organisation: String!
    documentRoot: String
    status: ImportSupplierStatus
    sendMigrationEmails: Boolean
    maxConcurrentProcessing: Int
    "Default NONE."
    supplyPointChecks: SupplyPointChecks
  }
  input UpdateImportSupplierInput {
    code: String!
    status: ImportSupplierStatus
    documentRoot: String
    sendMigrationEmails: Boolean
    maxConcurrentProcessing: Int
    "Applies to every later validate, stage and create, creates of accounts staged before included; null sets NONE."
    supplyPointChecks: SupplyPointChecks
  }
  input CreateOperationsTeamInput {
    name: String!
  }
  input SkipImportProcessInput {
    importSupplierCode: String!
    externalAccountNumber: String!
  }
  input EraseStagedDataInput {
    importSupplierCode: String!
    externalAccountNumber: String!
  }

  input CancelImportJobInput {
    id: ID!
  }

  "An organisation's webhook endpoint: its events are posted there, signed (Standard Webhooks)."
  type WebhookEndpoint {
    id: ID!
    organisation: String!
    url: String!
    "Event types it receives (see createWebhookEndpoint)."
    events: [String!]!
    createdAt: String!
  }
  "A new endpoint with its signing secret (whsec_...): shown only here, keep it to verify signatures."
  type CreatedWebhookEndpoint {
    id: ID!
    organisation: String!
    url: String!
    events: [String!]!
    createdAt: String!
    secret: String!
  }
  "One attempt of a delivery: the HTTP status, or the error when there was none to read."
  type WebhookAttempt {
    attempt: Int!
    at: String!
    status: Int
    error: String
    durationMs: Int!
  }
  "An event's delivery to one endpoint. state: PENDING (to be tried at nextAttemptAt), DELIVERED (a 2xx came back) or FAILED (every attempt failed; redeliverWebhook tries again)."
  type WebhookDelivery {
    id: ID!
    "The event's webhook-id header: the same on every attempt and for every endpoint."
    eventId: String!
    event: String!
    state: String!
    attempts: Int!
    lastStatus: Int
    lastError: String
    nextAttemptAt: String
    createdAt: String!
    "Every attempt, first first."
    attemptLog: [WebhookAttempt!]!
  }
  input CreateWebhookEndpointInput {
    organisation: String!
    "https:// and public addresses only (unless the service runs with WEBHOOK_ALLOW_PRIVATE=1); no user name or password."
    url: String!
    "One or more of import_process.created, import_process.create_failed, import_process.dry_run, import_process.skipped, post_import.written, post_import.failed, import_job.completed, import_job.cancelled."
    events: [String!]!
  }
  input DeleteWebhookEndpointInput {
    id: ID!
  }
  input RedeliverWebhookInput {
    deliveryId: ID!
  }

  type Mutation {
    obtainToken(input: ObtainTokenInput!): ObtainTokenPayload
    createOrganisation(input: CreateOrganisationInput!): Organisation
    createApiKey(input: CreateApiKeyInput!): CreatedApiKey
    revokeApiKey(input: RevokeApiKeyInput!): ApiKey
    createImportSupplier(input: CreateImportSupplierInput!): ImportSupplier
    updateImportSupplier(input: UpdateImportSupplierInput!): ImportSupplier
    createOperationsTeam(input: CreateOperationsTeamInput!): OperationsTeam
    skipImportProcess(input: SkipImportProcessInput!): ImportProcess
    "Erases one account's staged data and the details of its stored errors at once, whatever its state (a person's erasure request)."
    eraseStagedData(input: EraseStagedDataInput!): ImportProcess
    "Cancels an import job not yet COMPLETED or CANCELLED: an organisation's own, any for the operator. Lines not yet begun get the outcome not_processed."
    cancelImportJob(input: CancelImportJobInput!): ImportJob
    "Registers a webhook endpoint for an organisation (an organisation's token: its own; at most 10 each). The secret is in this answer only."
    createWebhookEndpoint(input: CreateWebhookEndpointInput!): CreatedWebhookEndpoint
    "Removes an endpoint and its delivery records; nothing more is sent to it."
    deleteWebhookEndpoint(input: DeleteWebhookEndpointInput!): WebhookEndpoint
    "Makes a delivery due again at once (a FAILED or DELIVERED one included): one more attempt, with the same webhook-id."
    redeliverWebhook(input: RedeliverWebhookInput!): WebhookDelivery
  }

  "Who did an audited action: kind is operator, organisation or anonymous (no valid token)."
  type AuditActor {
    kind: String!
    organisation: String
    apiKeyId: ID
  }
  "What an audited action acted on: type organisation, api_key, import_supplier, operations_team, import_process (id <supplier>/<external account number>), webhook_endpoint, webhook_delivery or import_job."
  type AuditTarget {
    type: String!
    id: String!
  }
  "One record of the audit trail."
  type AuditEvent {
    id: ID!
    "UTC, whole seconds."
    at: String!
    action: String!
    "succeeded or refused."
    outcome: String!
    "A refusal's error code; null when it succeeded."
    code: String
    actor: AuditActor!
    "null when the action had no target, or a refusal's target does not exist or is another organisation's."
    target: AuditTarget
    "updateImportSupplier: {field: {from, to}} of the fields it changed; null otherwise."
    changes: JSON
    "The client's address; null for organisations' tokens."
    ip: String
    "The id of the HTTP request (X-Request-Id), as in the server's log."
    requestId: String!
  }

  type Query {
    "Every supplier for the operator; an organisation's token sees its own."
    importSuppliers: [ImportSupplier!]!
    organisations: [Organisation!]!
    apiKeys(organisation: String): [ApiKey!]!
    operationsTeams: [OperationsTeam!]!
    "Whether an operations team of this name exists: organisations check the team they will create accounts with."
    operationsTeamExists(name: String!): Boolean!
    importProcessEvents(importSupplierCode: String!, externalAccountNumber: String!): [ImportEvent!]!
    migrationProgress(importSupplierCode: String!): MigrationProgress
    migrationFailureSummary(importSupplierCode: String!): FailureSummary
    "A supplier's totals: its import processes by state, and what its created accounts hold."
    reconciliation(importSupplierCode: String!): ReconciliationTotals
    "Open failure records by external account number then step; first 1-10000 (default 100), after: an external account number or <external>:<step>; externalAccountNumber: that account's records only."
    migrationFailures(
      importSupplierCode: String!
      step: String
      code: String
      first: Int
      after: String
      externalAccountNumber: String
    ): [Failure!]!
    "One entry per minute of the last minutes (1-10080, default 60), oldest first."
    migrationTimeline(importSupplierCode: String!, minutes: Int): [TimelineMinute!]!
    "The error catalogue (as GET /v1/data-import/error-codes/ answers it), for any signed-in token, the operator's included."
    errorCodes: [ErrorCodeInfo!]!
    "The post-import sections, in the order they run (for any signed-in token)."
    sections: [Section!]!
    "Import jobs newest first: an organisation's own, every job for the operator. state: one of ImportJobState's values; first 1-10000 (default 100); after: a job id."
    importJobs(importSupplierCode: String, state: String, first: Int, after: String): [ImportJob!]!
    "One import job; null for an id that is none of the caller's (every job is the operator's to read)."
    importJob(id: ID!): ImportJob
    "Webhook endpoints, oldest first: an organisation's own; every one (or organisation's) for the operator."
    webhookEndpoints(organisation: String): [WebhookEndpoint!]!
    "An endpoint's deliveries, newest first (kept 30 days). state: PENDING, DELIVERED or FAILED; first 1-1000 (default 100); after: a delivery id."
    webhookDeliveries(endpointId: ID!, state: String, first: Int, after: String): [WebhookDelivery!]!
    "The audit trail, newest first: every record for the operator, those concerning its own organisation for an organisation's token. since/until: UTC date-times, inclusive; first 1-1000 (default 100); after: an event id."
    auditEvents(
      organisation: String
      action: String
      since: String
      until: String
      first: Int
      after: String
    ): [AuditEvent!]!
  }
`

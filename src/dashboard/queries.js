// The GraphQL documents the dashboard sends (POST /graphql).

export const Q_OBTAIN_TOKEN = `mutation ObtainToken($input: ObtainTokenInput!) {
  obtainToken(input: $input) { token expiresIn refreshToken refreshExpiresIn }
}`
export const Q_SUPPLIERS = 'query Suppliers { importSuppliers { code organisation status } }'
/** Operator-only: answers the operator, and permission_denied to an organisation's token. */
export const Q_ROLE = 'query Role { operationsTeams { id } }'
export const Q_SECTIONS = 'query Sections { sections { name label count countLabel } }'
/** The overview: its counts and steps are the sections' (`stepFields`, `otherCounts` of sections.js). */
export const overviewQuery = (stepFields, countFields) => `query Overview($supplier: String!, $minutes: Int!) {
  migrationProgress(importSupplierCode: $supplier) { staged pending imported skipped failed failing }
  migrationTimeline(importSupplierCode: $supplier, minutes: $minutes) { minute staged created failed }
  reconciliation(importSupplierCode: $supplier) {
    accountsCreated accountsSkipped accountsPending
    ledgers { ledgerCode accounts balanceSum }
    transactions { count amountSum }
    ${countFields.join(' ')}
  }
  migrationFailureSummary(importSupplierCode: $supplier) {
    failingAccounts
    byStep { ${stepFields.join(' ')} }
    byCode { step code accounts }
  }
}`
export const Q_FAILURES = `query Failures($supplier: String!, $step: String, $code: String, $first: Int, $after: String) {
  migrationFailures(importSupplierCode: $supplier, step: $step, code: $code, first: $first, after: $after) {
    externalAccountNumber step failedAt attempts httpStatus code errors { code attr }
  }
}`
export const Q_EVENTS = `query Events($supplier: String!, $account: String!) {
  importProcessEvents(importSupplierCode: $supplier, externalAccountNumber: $account) { type at actor detail }
}`
/** Apart from the events: an account never staged has failures but no events (importProcessEvents: not_found). */
export const Q_ACCOUNT_FAILURES = `query AccountFailures($supplier: String!, $account: String!) {
  migrationFailures(importSupplierCode: $supplier, externalAccountNumber: $account, first: 100) {
    step failedAt attempts httpStatus code errors { code attr }
  }
}`
export const Q_CODES = 'query Codes { errorCodes { code meaning } }'
/** The supplier's import jobs, newest first (the operator's token: every organisation's). */
export const Q_JOBS = `query Jobs($supplier: String!, $first: Int!) {
  importJobs(importSupplierCode: $supplier, first: $first) {
    id state dryRun createdAt startedAt finishedAt notBefore notAfter cancelledReason ratePerSecond etaSeconds
    lines { total done created alreadyImported wouldCreate failed notProcessed skippedBlank }
    failureCodes { code lines }
    notJsonLines(first: 6) { line reason }
  }
}`
export const Q_CANCEL_JOB = `mutation CancelJob($id: ID!) {
  cancelImportJob(input: {id: $id}) {
    id state dryRun createdAt startedAt finishedAt notBefore notAfter cancelledReason ratePerSecond etaSeconds
    lines { total done created alreadyImported wouldCreate failed notProcessed skippedBlank }
    failureCodes { code lines }
    notJsonLines(first: 6) { line reason }
  }
}`

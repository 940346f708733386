/**
 * The operator's admin command line: `npm run admin -- <command> [arguments] [options]`.
 * A thin HTTP client of the GraphQL operator surface: it obtains an operator token with the
 * operator API key, runs one operator mutation or query and prints the result.
 *
 * Exit codes: 0 success, 1 refused by the service or service unreachable, 2 usage error.
 */
import { createGraphQLClient, ServiceError, UnreachableError } from './graphql-client.js'
import { isEntryPoint, parseCommandLine } from './entry.js'
import { CODE, meaningOf } from '../../schemas/error-codes.js'
import { STEP_NAMES } from '../../schemas/failures.js'
import { SUPPLY_POINT_CHECKS } from '../../schemas/common.js'
import { DELIVERY_STATES, WEBHOOK_EVENT_TYPES } from '../../schemas/webhooks.js'
import { AUDIT_ACTIONS, type AuditEvent } from '../../schemas/audit.js'
import { camelCase } from '../../schemas/graphql.js'
import { SECTIONS } from '../../schemas/sections.js'

export interface AdminIO {
  env: Record<string, string | undefined>
  stdout: (s: string) => void
  stderr: (s: string) => void
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch
  /** Standard output is a terminal: `progress --watch` redraws the screen instead of appending. */
  tty?: boolean
  /** Ends `progress --watch` (Ctrl-C). */
  signal?: AbortSignal
  /** Seconds between `progress --watch` redraws (default 5). */
  watchIntervalSeconds?: number
}

export const DEFAULT_URL = 'http://127.0.0.1:3000'
const PROGRAM = 'npm run admin --'
const STATUSES = ['Ongoing', 'Paused', 'Complete'] as const
/** GraphQL `Int` is a signed 32-bit integer. */
const MAX_GRAPHQL_INT = 2_147_483_647

/** A mistake on the command line: reported with exit code 2, before any request is made. */
class UsageError extends Error {
  override name = 'UsageError'
}

// ---------------------------------------------------------------------------------------------
// Options

const OPTIONS = {
  url: { type: 'string' },
  'operator-key': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  organisation: { type: 'string' },
  'document-root': { type: 'string' },
  status: { type: 'string' },
  'send-migration-emails': { type: 'string' },
  'max-concurrent-processing': { type: 'string' },
  'supply-point-checks': { type: 'string' },
  step: { type: 'string' },
  code: { type: 'string' },
  limit: { type: 'string' },
  watch: { type: 'boolean' },
  events: { type: 'string' },
  state: { type: 'string' },
  action: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' }
} as const

type OptionName = keyof typeof OPTIONS
type Flags = Partial<Record<OptionName, string | boolean>>

/** Options every command accepts. */
const GLOBAL_OPTIONS: OptionName[] = ['url', 'operator-key', 'json', 'help']
const SUPPLIER_OPTIONS: OptionName[] = [
  'document-root',
  'status',
  'send-migration-emails',
  'max-concurrent-processing',
  'supply-point-checks'
]

const OPTION_HELP: Record<OptionName, [string, string]> = {
  organisation: [
    '--organisation <name>',
    'Owning organisation (required for create-supplier; filters list-api-keys, webhooks list and audit).'
  ],
  'document-root': ['--document-root <path>', 'Relative prefix in the document bucket ("" for the root).'],
  status: ['--status <Ongoing|Paused|Complete>', 'Migration status (create default: Ongoing).'],
  'send-migration-emails': ['--send-migration-emails <true|false>', 'Send migration e-mails (create default: false).'],
  'max-concurrent-processing': [
    '--max-concurrent-processing <n|none>',
    'Accounts processing at once; none = no limit (the create default).'
  ],
  'supply-point-checks': [
    `--supply-point-checks <${SUPPLY_POINT_CHECKS.join('|')}>`,
    'GB: ELECTRICITY supply point identifiers must be MPAN cores, GAS ones MPRNs (create default: NONE).'
  ],
  url: [
    '--url <url>',
    `Service URL (env ADMIN_URL, or AMIS_URL as the migration client reads it; default ${DEFAULT_URL}).`
  ],
  'operator-key': ['--operator-key <key>', 'Operator API key (env OPERATOR_API_KEY; prefer the env variable).'],
  json: [
    '--json',
    'Print the GraphQL data object as JSON (failures: at most --limit records, and with --step or --code a matchingFailureSummary of the records that match; audit: one record per line).'
  ],
  step: ['--step <step>', `Only failures of this step: ${STEP_NAMES.join(', ')}.`],
  code: ['--code <code>', 'Only failures holding this error code (e.g. invalid_postcode).'],
  limit: [
    '--limit <n>',
    'How many to list: failure records (one per account and step) 1–10000, webhook deliveries 1–1000 (default 50), audit records 1–10000 (default 100).'
  ],
  watch: ['--watch', 'Redraw every few seconds until Ctrl-C.'],
  events: [
    '--events <a,b,…>',
    `Event types the endpoint receives (default: every one): ${WEBHOOK_EVENT_TYPES.join(', ')}.`
  ],
  state: ['--state <state>', `Only deliveries in this state: ${DELIVERY_STATES.join(', ')}.`],
  action: ['--action <action>', `Only records of this action: ${AUDIT_ACTIONS.join(', ')}.`],
  since: [
    '--since <time>',
    'Only records at or after this time: a date-time with an offset or Z (2026-11-28T09:00:00Z), or a UTC date.'
  ],
  until: ['--until <time>', 'Only records at or before this time (a date: until the end of that UTC day).'],
  help: ['-h, --help', 'Show help (for a command: <command> --help).']
}

/** A whole number flag within bounds. */
function integerFlag(flags: Flags, name: OptionName, min: number, max: number, fallback: number): number {
  const value = stringFlag(flags, name)
  if (value === undefined) return fallback
  const n = /^[0-9]+$/.test(value.trim()) ? Number(value.trim()) : NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, not "${value}"`)
  }
  return n
}

/** A string flag's value, or undefined when it was not given. */
function stringFlag(flags: Flags, name: OptionName): string | undefined {
  const value = flags[name]
  return typeof value === 'string' ? value : undefined
}

function parseStatus(value: string): string {
  const status = STATUSES.find((s) => s.toLowerCase() === value.trim().toLowerCase())
  if (!status) throw new UsageError(`--status must be one of ${STATUSES.join(', ')}, not "${value}"`)
  return status
}

function parseBoolean(name: string, value: string): boolean {
  const v = value.trim().toLowerCase()
  if (v === 'true') return true
  if (v === 'false') return false
  throw new UsageError(`--${name} must be true or false, not "${value}"`)
}

function parseChecks(value: string): string {
  const checks = SUPPLY_POINT_CHECKS.find((s) => s.toLowerCase() === value.trim().toLowerCase())
  if (!checks) {
    throw new UsageError(`--supply-point-checks must be one of ${SUPPLY_POINT_CHECKS.join(', ')}, not "${value}"`)
  }
  return checks
}

/** A positive integer, or `none` for no limit (sent as an explicit null). */
function parseLimit(value: string): number | null {
  const v = value.trim()
  if (v.toLowerCase() === 'none') return null
  const n = /^[0-9]+$/.test(v) ? Number(v) : NaN
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_GRAPHQL_INT) {
    throw new UsageError(`--max-concurrent-processing must be a whole number of at least 1, or none, not "${value}"`)
  }
  return n
}

/** The supplier fields given on the command line; an omitted flag is left out (unchanged). */
function supplierFields(flags: Flags): Record<string, unknown> {
  const fields: Record<string, unknown> = {}
  const documentRoot = stringFlag(flags, 'document-root')
  const status = stringFlag(flags, 'status')
  const emails = stringFlag(flags, 'send-migration-emails')
  const limit = stringFlag(flags, 'max-concurrent-processing')
  const checks = stringFlag(flags, 'supply-point-checks')
  if (documentRoot !== undefined) fields.documentRoot = documentRoot
  if (status !== undefined) fields.status = parseStatus(status)
  if (emails !== undefined) fields.sendMigrationEmails = parseBoolean('send-migration-emails', emails)
  if (limit !== undefined) fields.maxConcurrentProcessing = parseLimit(limit)
  if (checks !== undefined) fields.supplyPointChecks = parseChecks(checks)
  return fields
}

// ---------------------------------------------------------------------------------------------
// Human output

interface Supplier {
  code: string
  organisation: string
  status: string
  documentRoot: string
  sendMigrationEmails: boolean
  maxConcurrentProcessing: number | null
  supplyPointChecks: string
}

interface ImportEvent {
  type: string
  at: string
  actor: string
  detail: unknown
}

interface Organisation {
  id: string
  name: string
}

interface OperationsTeam {
  id: string
  name: string
}

interface CreatedApiKey {
  id: string
  key: string
  organisation: string
}

interface ApiKey {
  id: string
  organisation: string
  createdAt: string | null
  revokedAt: string | null
}

interface ImportProcess {
  importSupplierCode: string
  externalAccountNumber: string
  state: string
  serviceAccountNumber: string | null
}

interface Progress {
  staged: number
  pending: number
  imported: number
  skipped: number
  failed: number
  failing: number
}

interface ReconciliationTotals {
  accountsCreated: number
  accountsSkipped: number
  accountsPending: number
  ledgers: Array<{ ledgerCode: string; accounts: number; balanceSum: string }>
  transactions: { count: number; amountSum: string }
  /** The other sections' counts, camel-cased (`historicalStatements`). */
  [count: string]: unknown
}

interface FailureSummary {
  failingAccounts: number
  byCode: Array<{ step: string; code: string; accounts: number }>
}

/** `key: value` lines with the values aligned, indented under a title. */
function keyValues(title: string, rows: Array<[string, string]>): string {
  const width = Math.max(...rows.map(([key]) => key.length)) + 1
  return [title, ...rows.map(([key, value]) => `  ${(key + ':').padEnd(width)}  ${value}`)].join('\n') + '\n'
}

/** A plain text table: upper-case headers, columns padded to their widest cell. */
function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  return [line(headers), ...rows.map(line)].join('\n') + '\n'
}

const showLimit = (limit: number | null) => (limit === null ? 'no limit' : String(limit))
const showRoot = (root: string) => (root === '' ? '(bucket root)' : root)
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

function renderSupplier(title: string, s: Supplier): string {
  return keyValues(title, [
    ['code', s.code],
    ['organisation', s.organisation],
    ['status', s.status],
    ['document root', showRoot(s.documentRoot)],
    ['send migration emails', String(s.sendMigrationEmails)],
    ['max concurrent processing', showLimit(s.maxConcurrentProcessing)],
    ['supply point checks', s.supplyPointChecks]
  ])
}

function renderSuppliers(suppliers: Supplier[]): string {
  if (suppliers.length === 0) return 'No import suppliers.\n'
  return (
    table(
      ['CODE', 'ORGANISATION', 'STATUS', 'EMAILS', 'MAX CONCURRENT', 'CHECKS', 'DOCUMENT ROOT'],
      suppliers.map((s) => [
        s.code,
        s.organisation,
        s.status,
        String(s.sendMigrationEmails),
        showLimit(s.maxConcurrentProcessing),
        s.supplyPointChecks,
        showRoot(s.documentRoot)
      ])
    ) + `\n${plural(suppliers.length, 'import supplier')}\n`
  )
}

function renderEvents(supplier: string, account: string, events: ImportEvent[]): string {
  const title = `Events of ${supplier} / ${account}`
  if (events.length === 0) return `${title}: none\n`
  const detail = (d: unknown) => (d === null || d === undefined ? '' : JSON.stringify(d))
  return (
    `${title}\n\n` +
    table(
      ['AT', 'TYPE', 'ACTOR', 'DETAIL'],
      events.map((e) => [e.at, e.type, e.actor, detail(e.detail)])
    )
  )
}

/**
 * Progress as key/value lines, each with what it counts (in the dashboard's words), then what tells
 * `failed` from `failing`; `at` adds when it was read (the watch mode).
 */
function renderProgress(supplier: string, p: Progress | null, at?: Date): string {
  if (!p) return `No progress reported for ${supplier}.\n`
  const title = `Migration progress of ${supplier}` + (at ? ` at ${at.toISOString().slice(11, 19)} UTC` : '')
  const width = Math.max(
    ...[p.staged, p.pending, p.imported, p.skipped, p.failed, p.failing].map((n) => String(n).length)
  )
  const row = (key: string, n: number, what: string): [string, string] => [key, `${String(n).padEnd(width)}  (${what})`]
  return (
    keyValues(title, [
      row('staged', p.staged, 'accounts staged so far'),
      row('pending', p.pending, 'staged, not yet created'),
      row('imported', p.imported, 'created on the platform'),
      row('skipped', p.skipped, 'set aside by the operator'),
      row('failed', p.failed, 'pending accounts with a failed create: their latest create attempt failed'),
      row('failing', p.failing, 'accounts with an open failure, at any step')
    ]) +
    '\n' +
    'failed counts only creates: pending accounts whose latest create attempt failed.\n' +
    'failing counts every account with an open failure record, at any step (validate, stage, create or\n' +
    'post-import data), staged or not: an account refused at validate is failing but not failed. A record\n' +
    `closes when the step next succeeds. The failing accounts and why: ${PROGRAM} failures ${supplier}\n`
  )
}

/** A supplier's totals: the processes by state, then what its created accounts hold; decimals exactly as the service gives them. */
/** The sections' counts in the totals besides the transactions' (a count and a sum). */
const OTHER_COUNTS = SECTIONS.map((s) => s.counted).filter((c) => c.name !== 'transactions')

function renderReconciliation(supplier: string, r: ReconciliationTotals | null): string {
  if (!r) return `No totals reported for ${supplier}.\n`
  const n = (value: number) => String(value)
  return (
    keyValues(`Reconciliation totals of ${supplier}`, [
      ['accounts created', n(r.accountsCreated)],
      ['accounts skipped', n(r.accountsSkipped)],
      ['accounts pending', `${r.accountsPending} (staged, not created, not skipped)`],
      ['transactions', n(r.transactions.count)],
      ['transaction sum', `${r.transactions.amountSum} (what the transactions add to the balances)`],
      ...OTHER_COUNTS.map((c): [string, string] => [c.label.toLowerCase(), n(r[camelCase(c.name)] as number)])
    ]) +
    '\n' +
    (r.ledgers.length === 0
      ? 'No ledgers: no account is created yet.\n'
      : table(
          ['LEDGER', 'ACCOUNTS', 'BALANCE SUM'],
          r.ledgers.map((l) => [l.ledgerCode, String(l.accounts), l.balanceSum])
        ))
  )
}

interface Failure {
  externalAccountNumber: string
  step: string
  failedAt: string
  attempts: number
  httpStatus: number
  code: string
  errors: Array<{ code: string; attr: string | null }>
}

interface ProgressData {
  migrationProgress: Progress | null
}

/** A failure record as the filtered summary counts it. */
type MatchingRecord = Pick<Failure, 'externalAccountNumber' | 'step' | 'code'> & { errors: Array<{ code: string }> }

interface FailuresData {
  migrationFailureSummary: FailureSummary
  migrationFailures: Failure[]
  /** With --step or --code: every record that matches (read page by page), for the summary of what is shown. */
  matching?: MatchingRecord[]
}

/** Records read per page for the summary of a filtered list (the most `first` takes). */
const MATCHING_PAGE = 10_000

const MATCHING_FIELDS = 'externalAccountNumber step code errors { code }'

/**
 * The summary of the records that match --step and --code, counted as the service counts the
 * whole: distinct accounts, and per step and code the accounts whose record holds it (each
 * `errors[].code`, the top-level code when there are none; with --code, that code).
 */
function matchingSummary(records: MatchingRecord[], code: string | undefined): FailureSummary {
  const counts = new Map<string, { step: string; code: string; accounts: number }>()
  for (const r of records) {
    const codes =
      code !== undefined ? [code] : r.errors.length > 0 ? [...new Set(r.errors.map((e) => e.code))] : [r.code]
    for (const c of codes) {
      const key = `${r.step} ${c}`
      const row = counts.get(key) ?? { step: r.step, code: c, accounts: 0 }
      row.accounts++
      counts.set(key, row)
    }
  }
  const stepOrder = (step: string) => (STEP_NAMES as readonly string[]).indexOf(step)
  return {
    failingAccounts: new Set(records.map((r) => r.externalAccountNumber)).size,
    byCode: [...counts.values()].sort(
      (a, b) =>
        b.accounts - a.accounts ||
        stepOrder(a.step) - stepOrder(b.step) ||
        (a.code < b.code ? -1 : a.code > b.code ? 1 : 0)
    )
  }
}

/** What --step and --code ask for, in words ("step create, code invalid_postcode"), or '' for neither. */
function filterWords(flags: Flags): string {
  const step = stringFlag(flags, 'step')
  const code = stringFlag(flags, 'code')
  return [step !== undefined && `step ${step}`, code !== undefined && `code ${code}`].filter(Boolean).join(', ')
}

/** The failures of a supplier: a table by step and code with what each code means, then the failing accounts with their attrs. */
function renderFailures(supplier: string, data: FailuresData, flags: Flags, limit: number): string {
  const all = data.migrationFailureSummary
  const failures = data.migrationFailures
  if (all.failingAccounts === 0) {
    return `No failures on record for ${supplier}: every account passed its latest attempt.\n`
  }
  const filter = filterWords(flags)
  // Filtered, the counts are those of the matching records; the supplier's whole is given beside them.
  const summary = data.matching ? matchingSummary(data.matching, stringFlag(flags, 'code')) : all
  const codes = summary.byCode
  const out = [
    filter
      ? `Failures of ${supplier} with ${filter}: ${plural(summary.failingAccounts, 'account')} failing ` +
        `(of ${plural(all.failingAccounts, 'account')} failing in all)`
      : `Failures of ${supplier}: ${plural(all.failingAccounts, 'account')} failing`,
    ''
  ]
  out.push(
    codes.length === 0
      ? 'No failures match.\n'
      : table(
          ['STEP', 'CODE', 'ACCOUNTS', 'MEANING'],
          codes.map((c) => [c.step, c.code, String(c.accounts), meaningOf(c.code) ?? ''])
        )
  )
  if (failures.length > 0) {
    const more = failures.length > limit ? ` (the first ${limit}; --limit for more, --json for every field)` : ''
    out.push(`Accounts${more}:`, '')
    const attrs = (f: Failure) =>
      f.errors.length === 0
        ? f.code
        : f.errors.map((e) => `${e.code}${e.attr === null ? '' : ` at ${e.attr}`}`).join('; ')
    out.push(
      table(
        ['EXTERNAL ACCOUNT NUMBER', 'STEP', 'ATTEMPTS', 'FAILED AT', 'HTTP', 'PROBLEMS'],
        failures
          .slice(0, limit)
          .map((f) => [f.externalAccountNumber, f.step, String(f.attempts), f.failedAt, String(f.httpStatus), attrs(f)])
      )
    )
  }
  return out.join('\n')
}

function renderApiKey(key: CreatedApiKey): string {
  return (
    keyValues(`API key created for organisation ${key.organisation}`, [
      ['id', key.id],
      ['organisation', key.organisation]
    ]) +
    [
      '',
      '  API key (shown only once — store it securely now, it cannot be shown again):',
      '',
      `    ${key.key}`,
      '',
      `  Revoke it with: ${PROGRAM} revoke-api-key ${key.id}`,
      ''
    ].join('\n')
  )
}

interface WebhookEndpoint {
  id: string
  organisation: string
  url: string
  events: string[]
  createdAt: string
}

interface WebhookDelivery {
  id: string
  eventId: string
  event: string
  state: string
  attempts: number
  lastStatus: number | null
  lastError: string | null
  nextAttemptAt: string | null
  createdAt: string
}

const WEBHOOK_ENDPOINT_SELECTION = 'id organisation url events createdAt'
const WEBHOOK_DELIVERY_SELECTION = 'id eventId event state attempts lastStatus lastError nextAttemptAt createdAt'

/** The event types given with --events (every one when omitted), each checked before anything is sent. */
function parseEvents(flags: Flags): string[] {
  const value = stringFlag(flags, 'events')
  if (value === undefined) return [...WEBHOOK_EVENT_TYPES]
  const events = value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
  if (events.length === 0) throw new UsageError(`--events needs at least one of ${WEBHOOK_EVENT_TYPES.join(', ')}`)
  const unknown = events.filter((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e))
  if (unknown.length > 0) {
    throw new UsageError(
      `--events: unknown event type ${unknown.map((e) => `"${e}"`).join(', ')}; event types are ${WEBHOOK_EVENT_TYPES.join(', ')}`
    )
  }
  return events
}

/** An endpoint's events, or "all" when it receives every event type. */
const showEvents = (events: string[]) =>
  WEBHOOK_EVENT_TYPES.every((e) => events.includes(e)) ? 'all' : events.join(', ')

function renderCreatedWebhook(endpoint: WebhookEndpoint & { secret: string }): string {
  return (
    keyValues(`Webhook endpoint created for organisation ${endpoint.organisation}`, [
      ['id', endpoint.id],
      ['organisation', endpoint.organisation],
      ['url', endpoint.url],
      ['events', showEvents(endpoint.events)],
      ['created at', endpoint.createdAt]
    ]) +
    [
      '',
      '  Signing secret (shown only now — store it securely, it cannot be shown again):',
      '',
      `    ${endpoint.secret}`,
      '',
      "  The receiver verifies each delivery's webhook-signature with it (docs/webhooks.md).",
      `  Remove the endpoint with: ${PROGRAM} webhooks remove ${endpoint.id}`,
      ''
    ].join('\n')
  )
}

function renderWebhookEndpoints(endpoints: WebhookEndpoint[], organisation: string | undefined): string {
  if (endpoints.length === 0) {
    return organisation === undefined ? 'No webhook endpoints.\n' : `No webhook endpoints for ${organisation}.\n`
  }
  return (
    table(
      ['ID', 'ORGANISATION', 'URL', 'EVENTS', 'CREATED'],
      endpoints.map((e) => [e.id, e.organisation, e.url, showEvents(e.events), e.createdAt])
    ) + `\n${plural(endpoints.length, 'webhook endpoint')}\n`
  )
}

/** The last attempt's outcome: its error, else its HTTP status; "-" before the first attempt. */
const lastOutcome = (d: WebhookDelivery) => d.lastError ?? (d.lastStatus !== null ? `HTTP ${d.lastStatus}` : '-')

function renderDeliveries(endpointId: string, deliveries: WebhookDelivery[], flags: Flags, limit: number): string {
  const state = stringFlag(flags, 'state')?.trim().toUpperCase()
  const which = state === undefined ? '' : ` in state ${state}`
  if (deliveries.length === 0) return `No deliveries${which} to webhook endpoint ${endpointId}.\n`
  const shown = deliveries.slice(0, limit)
  const more = deliveries.length > limit ? ` (the newest ${limit}; --limit for more)` : ''
  const failed = shown.find((d) => d.state === 'FAILED')
  return (
    `Deliveries${which} to webhook endpoint ${endpointId}, newest first${more}:\n\n` +
    table(
      ['ID', 'EVENT', 'STATE', 'ATTEMPTS', 'LAST STATUS/ERROR', 'NEXT ATTEMPT', 'CREATED'],
      shown.map((d) => [
        d.id,
        d.event,
        d.state,
        String(d.attempts),
        lastOutcome(d),
        d.nextAttemptAt ?? '-',
        d.createdAt
      ])
    ) +
    (failed ? `\nTry a FAILED one again with: ${PROGRAM} webhooks redeliver ${failed.id}\n` : '')
  )
}

function renderRedelivery(d: WebhookDelivery): string {
  return (
    keyValues(`Webhook delivery ${d.id} is due again`, [
      ['id', d.id],
      ['webhook-id', d.eventId],
      ['event', d.event],
      ['state', d.state],
      ['attempts so far', String(d.attempts)],
      ['last status/error', lastOutcome(d)],
      ['next attempt', d.nextAttemptAt ?? '-']
    ]) + `\nOne more attempt is made at once, with the same webhook-id (${d.eventId}).\n`
  )
}

const AUDIT_SELECTION =
  'id at action outcome code actor { kind organisation apiKeyId } target { type id } changes ip requestId'
const AUDIT_QUERY = `query AuditEvents($o: String, $a: String, $s: String, $u: String, $first: Int, $after: String) {
  auditEvents(organisation: $o, action: $a, since: $s, until: $u, first: $first, after: $after) { ${AUDIT_SELECTION} }
}`
/** Records read per request (the most `first` takes). */
const AUDIT_PAGE = 1000
const AUDIT_LIMIT_DEFAULT = 100

/** The same bound as the service's: a date-time with an offset or Z. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i
const DATE = /^\d{4}-\d{2}-\d{2}$/

/**
 * A --since or --until value as the service takes it: a date-time with an offset or Z as given,
 * or a date as the first (--since) or last (--until) second of that UTC day.
 */
function parseTime(name: 'since' | 'until', value: string): string {
  const v = value.trim()
  const text = DATE.test(v) ? `${v}T${name === 'since' ? '00:00:00' : '23:59:59'}Z` : v
  const at = new Date(text)
  const sameDay = !DATE.test(v) || at.toISOString().slice(0, 10) === v
  if (!DATE_TIME.test(text) || Number.isNaN(at.getTime()) || !sameDay || text.startsWith('0000')) {
    throw new UsageError(
      `--${name} must be a date-time with an offset or Z (e.g. 2026-11-28T09:00:00Z) or a date (2026-11-28), not "${value}"`
    )
  }
  return text
}

/** The audit filters of the command line, checked; GraphQL variables. */
function auditFilters(flags: Flags): { o: string | null; a: string | null; s: string | null; u: string | null } {
  const action = stringFlag(flags, 'action')?.trim()
  if (action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(action)) {
    throw new UsageError(`--action must be one of ${AUDIT_ACTIONS.join(', ')}, not "${action}"`)
  }
  const sinceFlag = stringFlag(flags, 'since')
  const untilFlag = stringFlag(flags, 'until')
  const since = sinceFlag === undefined ? undefined : parseTime('since', sinceFlag)
  const until = untilFlag === undefined ? undefined : parseTime('until', untilFlag)
  if (since !== undefined && until !== undefined && new Date(since) > new Date(until)) {
    throw new UsageError(`--since (${sinceFlag}) is after --until (${untilFlag})`)
  }
  return { o: stringFlag(flags, 'organisation') ?? null, a: action ?? null, s: since ?? null, u: until ?? null }
}

const auditLimit = (flags: Flags) => integerFlag(flags, 'limit', 1, 10_000, AUDIT_LIMIT_DEFAULT)

/** Who acted, in a few words: operator, anonymous, or the organisation and the start of its key's id. */
function showActor(actor: AuditEvent['actor']): string {
  if (actor.kind !== 'organisation') return actor.kind
  return `${actor.organisation ?? '?'}${actor.apiKeyId ? ` (key ${actor.apiKeyId.slice(0, 8)})` : ''}`
}

/** The filters asked for, in words ("of Acme, action revokeApiKey, since …"), or '' for none. */
function auditFilterWords(flags: Flags): string {
  const f = auditFilters(flags)
  return [
    f.o !== null && `of ${f.o}`,
    f.a !== null && `action ${f.a}`,
    f.s !== null && `since ${f.s}`,
    f.u !== null && `until ${f.u}`
  ]
    .filter(Boolean)
    .join(', ')
}

function renderAudit(events: AuditEvent[], flags: Flags): string {
  const filter = auditFilterWords(flags)
  if (events.length === 0) return filter ? `No audit records ${filter}.\n` : 'No audit records.\n'
  const limit = auditLimit(flags)
  const shown = events.slice(0, limit)
  const more = events.length > limit ? ` (the newest ${limit}; --limit for more)` : ''
  return (
    `Audit records${filter ? ` ${filter}` : ''}, newest first${more}:\n\n` +
    table(
      ['AT', 'ACTION', 'OUTCOME', 'ACTOR', 'TARGET', 'IP'],
      shown.map((e) => [
        e.at,
        e.action,
        e.outcome === 'refused' ? `refused: ${e.code ?? '?'}` : e.outcome,
        showActor(e.actor),
        e.target === null ? '-' : `${e.target.type} ${e.target.id}`,
        e.ip ?? '-'
      ])
    ) +
    `\n${plural(shown.length, 'record')}; every field (changes, request ids, key ids) with --json\n`
  )
}

// ---------------------------------------------------------------------------------------------
// Commands

const SUPPLIER_SELECTION =
  'code organisation status documentRoot sendMigrationEmails maxConcurrentProcessing supplyPointChecks'

/** A command; `T` is the data its query answers (a mutation refused comes as an error, never a null result). */
interface Command<T = unknown> {
  name: string
  /** Positional arguments, e.g. `<code>`. */
  args: string[]
  /** Options of this command besides the global ones. */
  options: OptionName[]
  summary: string
  /** The GraphQL request for the command line; throws `UsageError` for bad values. */
  build(args: string[], flags: Flags): { query: string; variables: Record<string, unknown> }
  render(data: T, args: string[], flags: Flags): string
  /** Further requests the answer needs (pages of a list); the data as it is by default. */
  complete?(
    data: T,
    request: (query: string, variables: Record<string, unknown>) => Promise<unknown>,
    args: string[],
    flags: Flags
  ): Promise<T>
  /** The data --json prints; the GraphQL data object by default. */
  json?(data: T, flags: Flags): unknown
  /** With --json, one JSON object per line (these) instead of the data object. */
  jsonLines?(data: T, flags: Flags): unknown[]
}

/** Types a command by its data; the list holds them as `Command` (method parameters are bivariant). */
const defineCommand = <T>(c: Command<T>): Command => c

const COMMANDS: Command[] = [
  defineCommand<{ createOrganisation: Organisation }>({
    name: 'create-organisation',
    args: ['<name>'],
    options: [],
    summary: 'Create a client organisation (the name is unique).',
    build: ([name]) => ({
      query:
        'mutation CreateOrganisation($input: CreateOrganisationInput!) { createOrganisation(input: $input) { id name } }',
      variables: { input: { name } }
    }),
    render: (data) =>
      keyValues('Organisation created', [
        ['id', data.createOrganisation.id],
        ['name', data.createOrganisation.name]
      ])
  }),
  defineCommand<{ createApiKey: CreatedApiKey }>({
    name: 'create-api-key',
    args: ['<organisation>'],
    options: [],
    summary: 'Issue an API key for an organisation. The key is printed only this once.',
    build: ([organisation]) => ({
      query:
        'mutation CreateApiKey($input: CreateApiKeyInput!) { createApiKey(input: $input) { id key organisation } }',
      variables: { input: { organisation } }
    }),
    render: (data) => renderApiKey(data.createApiKey)
  }),
  defineCommand<{ revokeApiKey: ApiKey }>({
    name: 'revoke-api-key',
    args: ['<id>'],
    options: [],
    summary:
      'Revoke an API key by its id; its tokens stop working within 5 seconds (at once on the server that revoked it).',
    build: ([id]) => ({
      query:
        'mutation RevokeApiKey($input: RevokeApiKeyInput!) { revokeApiKey(input: $input) { id organisation revokedAt } }',
      variables: { input: { id } }
    }),
    render: (data) =>
      keyValues('API key revoked', [
        ['id', data.revokeApiKey.id],
        ['organisation', data.revokeApiKey.organisation],
        ['revoked at', data.revokeApiKey.revokedAt ?? '']
      ])
  }),
  defineCommand<{ createImportSupplier: Supplier }>({
    name: 'create-supplier',
    args: ['<code>'],
    options: ['organisation', ...SUPPLIER_OPTIONS],
    summary: 'Create an import supplier owned by an organisation.',
    build([code], flags) {
      const organisation = stringFlag(flags, 'organisation')
      if (organisation === undefined) throw new UsageError('create-supplier needs --organisation <name>')
      return {
        query: `mutation CreateImportSupplier($input: CreateImportSupplierInput!) { createImportSupplier(input: $input) { ${SUPPLIER_SELECTION} } }`,
        variables: { input: { code, organisation, ...supplierFields(flags) } }
      }
    },
    render: (data) => renderSupplier('Import supplier created', data.createImportSupplier)
  }),
  defineCommand<{ updateImportSupplier: Supplier }>({
    name: 'update-supplier',
    args: ['<code>'],
    options: SUPPLIER_OPTIONS,
    summary: 'Change an import supplier. Omitted options leave their value unchanged.',
    build([code], flags) {
      const fields = supplierFields(flags)
      if (Object.keys(fields).length === 0) {
        throw new UsageError(
          `update-supplier needs at least one of ${SUPPLIER_OPTIONS.map((o) => '--' + o).join(', ')}`
        )
      }
      return {
        query: `mutation UpdateImportSupplier($input: UpdateImportSupplierInput!) { updateImportSupplier(input: $input) { ${SUPPLIER_SELECTION} } }`,
        variables: { input: { code, ...fields } }
      }
    },
    render: (data) => renderSupplier('Import supplier updated', data.updateImportSupplier)
  }),
  defineCommand<{ importSuppliers: Supplier[] }>({
    name: 'list-suppliers',
    args: [],
    options: [],
    summary: 'List every import supplier, by code.',
    build: () => ({ query: `query ImportSuppliers { importSuppliers { ${SUPPLIER_SELECTION} } }`, variables: {} }),
    render: (data) => renderSuppliers(data.importSuppliers)
  }),
  defineCommand<{ createOperationsTeam: OperationsTeam }>({
    name: 'create-team',
    args: ['<name>'],
    options: [],
    summary: 'Create an operations team (the name is unique).',
    build: ([name]) => ({
      query:
        'mutation CreateOperationsTeam($input: CreateOperationsTeamInput!) { createOperationsTeam(input: $input) { id name } }',
      variables: { input: { name } }
    }),
    render: (data) =>
      keyValues('Operations team created', [
        ['id', data.createOperationsTeam.id],
        ['name', data.createOperationsTeam.name]
      ])
  }),
  defineCommand<{ skipImportProcess: ImportProcess }>({
    name: 'skip',
    args: ['<supplier-code>', '<external-account-number>'],
    options: [],
    summary: 'Mark an import process as skipped: staging or creating it then fails.',
    build: ([importSupplierCode, externalAccountNumber]) => ({
      query:
        'mutation SkipImportProcess($input: SkipImportProcessInput!) { skipImportProcess(input: $input) { importSupplierCode externalAccountNumber state serviceAccountNumber } }',
      variables: { input: { importSupplierCode, externalAccountNumber } }
    }),
    render(data) {
      const p = data.skipImportProcess
      return keyValues('Import process skipped', [
        ['supplier', p.importSupplierCode],
        ['external account number', p.externalAccountNumber],
        ['state', p.state],
        ...(p.serviceAccountNumber ? [['service account number', p.serviceAccountNumber] as [string, string]] : [])
      ])
    }
  }),
  defineCommand<{ eraseStagedData: ImportProcess }>({
    name: 'erase',
    args: ['<supplier-code>', '<external-account-number>'],
    options: [],
    summary: "Erase one account's staged data and error details now, whatever its state (a person's erasure request).",
    build: ([importSupplierCode, externalAccountNumber]) => ({
      query:
        'mutation EraseStagedData($input: EraseStagedDataInput!) { eraseStagedData(input: $input) { importSupplierCode externalAccountNumber state serviceAccountNumber } }',
      variables: { input: { importSupplierCode, externalAccountNumber } }
    }),
    render(data) {
      const p = data.eraseStagedData
      return keyValues('Staged data erased', [
        ['supplier', p.importSupplierCode],
        ['external account number', p.externalAccountNumber],
        ['state', p.state],
        ...(p.serviceAccountNumber ? [['service account number', p.serviceAccountNumber] as [string, string]] : [])
      ])
    }
  }),
  defineCommand<{ importProcessEvents: ImportEvent[] }>({
    name: 'events',
    args: ['<supplier-code>', '<external-account-number>'],
    options: [],
    summary: 'Show the event history of one import process, oldest first.',
    build: ([importSupplierCode, externalAccountNumber]) => ({
      query:
        'query ImportProcessEvents($importSupplierCode: String!, $externalAccountNumber: String!) { importProcessEvents(importSupplierCode: $importSupplierCode, externalAccountNumber: $externalAccountNumber) { type at actor detail } }',
      variables: { importSupplierCode, externalAccountNumber }
    }),
    render: (data, [supplier, account]) => renderEvents(supplier!, account!, data.importProcessEvents)
  }),
  defineCommand<ProgressData>({
    name: 'progress',
    args: ['<supplier-code>'],
    options: ['watch'],
    summary:
      'Show how far the migration of one import supplier has got (--watch: redraw every few seconds until Ctrl-C).',
    build: ([importSupplierCode]) => ({
      query:
        'query MigrationProgress($importSupplierCode: String!) { migrationProgress(importSupplierCode: $importSupplierCode) { staged pending imported skipped failed failing } }',
      variables: { importSupplierCode }
    }),
    render: (data, [supplier]) => renderProgress(supplier!, data.migrationProgress)
  }),
  defineCommand<{ reconciliation: ReconciliationTotals | null }>({
    name: 'reconcile',
    args: ['<supplier-code>'],
    options: [],
    summary:
      "Show one import supplier's totals: accounts created, skipped and pending; balances summed per ledger code, transactions and counts of its created accounts.",
    build: ([importSupplierCode]) => ({
      query: `query Reconciliation($importSupplierCode: String!) { reconciliation(importSupplierCode: $importSupplierCode) { accountsCreated accountsSkipped accountsPending ledgers { ledgerCode accounts balanceSum } transactions { count amountSum } ${OTHER_COUNTS.map((c) => camelCase(c.name)).join(' ')} } }`,
      variables: { importSupplierCode }
    }),
    render: (data, [supplier]) => renderReconciliation(supplier!, data.reconciliation)
  }),
  defineCommand<FailuresData>({
    name: 'failures',
    args: ['<supplier-code>'],
    options: ['step', 'code', 'limit'],
    summary: 'What fails for one import supplier: accounts by step and error code, then the failing accounts.',
    build([importSupplierCode], flags) {
      const step = stringFlag(flags, 'step')
      if (step !== undefined && !(STEP_NAMES as readonly string[]).includes(step)) {
        throw new UsageError(`--step must be one of ${STEP_NAMES.join(', ')}, not "${step}"`)
      }
      const limit = integerFlag(flags, 'limit', 1, 10_000, 50)
      const filtered = step !== undefined || stringFlag(flags, 'code') !== undefined
      return {
        query: `query MigrationFailures($s: String!, $step: String, $code: String, $first: Int) {
          migrationFailureSummary(importSupplierCode: $s) { failingAccounts byCode { step code accounts } }
          migrationFailures(importSupplierCode: $s, step: $step, code: $code, first: $first) { externalAccountNumber step failedAt attempts httpStatus code errors { code attr } }
          ${filtered ? `matching: migrationFailures(importSupplierCode: $s, step: $step, code: $code, first: ${MATCHING_PAGE}) { ${MATCHING_FIELDS} }` : ''}
        }`,
        // One more than shown says whether there are more.
        variables: {
          s: importSupplierCode,
          step: step ?? null,
          code: stringFlag(flags, 'code') ?? null,
          first: Math.min(limit + 1, 10_000)
        }
      }
    },
    render: (data, [supplier], flags) =>
      renderFailures(supplier!, data, flags, integerFlag(flags, 'limit', 1, 10_000, 50)),
    /** The rest of the matching records, a page at a time, when the first page was full. */
    async complete(data, request, [supplier], flags) {
      const matching = data.matching
      if (!matching) return data
      let page = matching
      while (page.length === MATCHING_PAGE) {
        const last = page.at(-1)!
        const next = (await request(
          `query MatchingFailures($s: String!, $step: String, $code: String, $after: String) {
            matching: migrationFailures(importSupplierCode: $s, step: $step, code: $code, first: ${MATCHING_PAGE}, after: $after) { ${MATCHING_FIELDS} }
          }`,
          {
            s: supplier,
            step: stringFlag(flags, 'step') ?? null,
            code: stringFlag(flags, 'code') ?? null,
            after: `${last.externalAccountNumber}:${last.step}`
          }
        )) as { matching: MatchingRecord[] }
        page = next.matching
        matching.push(...page)
      }
      return data
    },
    /** At most --limit records (one more is read to tell whether there are more), and the summary of those that match. */
    json(data, flags) {
      const limit = integerFlag(flags, 'limit', 1, 10_000, 50)
      return {
        migrationFailureSummary: data.migrationFailureSummary,
        ...(data.matching
          ? {
              matchingFailureSummary: {
                filter: filterWords(flags),
                ...matchingSummary(data.matching, stringFlag(flags, 'code'))
              }
            }
          : {}),
        migrationFailures: data.migrationFailures.slice(0, limit)
      }
    }
  }),
  defineCommand<{ organisations: Organisation[] }>({
    name: 'list-organisations',
    args: [],
    options: [],
    summary: 'List the client organisations.',
    build: () => ({ query: 'query Organisations { organisations { id name } }', variables: {} }),
    render: (data) =>
      data.organisations.length === 0
        ? 'No organisations.\n'
        : table(
            ['NAME', 'ID'],
            data.organisations.map((o) => [o.name, o.id])
          ) + `\n${plural(data.organisations.length, 'organisation')}\n`
  }),
  defineCommand<{ apiKeys: ApiKey[] }>({
    name: 'list-api-keys',
    args: [],
    options: ['organisation'],
    summary:
      'List API keys (their ids, for revoke-api-key; never the keys themselves), optionally of one organisation.',
    build: (_args, flags) => ({
      query: 'query ApiKeys($o: String) { apiKeys(organisation: $o) { id organisation createdAt revokedAt } }',
      variables: { o: stringFlag(flags, 'organisation') ?? null }
    }),
    render: (data) =>
      data.apiKeys.length === 0
        ? 'No API keys.\n'
        : table(
            ['ID', 'ORGANISATION', 'CREATED', 'REVOKED'],
            data.apiKeys.map((k) => [k.id, k.organisation, k.createdAt ?? '', k.revokedAt ?? '-'])
          ) +
          `\n${plural(data.apiKeys.length, 'API key')}, ${data.apiKeys.filter((k) => k.revokedAt === null).length} active\n`
  }),
  defineCommand<{ operationsTeams: OperationsTeam[] }>({
    name: 'list-teams',
    args: [],
    options: [],
    summary: 'List the operations teams (accounts are assigned to one at creation).',
    build: () => ({ query: 'query OperationsTeams { operationsTeams { id name } }', variables: {} }),
    render: (data) =>
      data.operationsTeams.length === 0
        ? `No operations teams (create one with: ${PROGRAM} create-team <name>).\n`
        : table(
            ['NAME', 'ID'],
            data.operationsTeams.map((o) => [o.name, o.id])
          ) + `\n${plural(data.operationsTeams.length, 'operations team')}\n`
  }),
  defineCommand<{ auditEvents: AuditEvent[] }>({
    name: 'audit',
    args: [],
    options: ['organisation', 'action', 'since', 'until', 'limit'],
    summary:
      'The audit trail, newest first: who did which administrative action, when, from where, succeeded or refused (--json: one record per line).',
    build(_args, flags) {
      const limit = auditLimit(flags)
      // One more than shown says whether there are more.
      return { query: AUDIT_QUERY, variables: { ...auditFilters(flags), first: Math.min(limit + 1, AUDIT_PAGE) } }
    },
    /** Further pages, until one more than --limit is read or the trail ends. */
    async complete(data, request, _args, flags) {
      const wanted = auditLimit(flags) + 1
      let asked = Math.min(wanted, AUDIT_PAGE)
      let page = data.auditEvents
      while (page.length === asked && data.auditEvents.length < wanted) {
        asked = Math.min(wanted - data.auditEvents.length, AUDIT_PAGE)
        const next = (await request(AUDIT_QUERY, {
          ...auditFilters(flags),
          first: asked,
          after: page.at(-1)!.id
        })) as { auditEvents: AuditEvent[] }
        page = next.auditEvents
        data.auditEvents.push(...page)
      }
      return data
    },
    render: (data, _args, flags) => renderAudit(data.auditEvents, flags),
    jsonLines: (data, flags) => data.auditEvents.slice(0, auditLimit(flags))
  }),
  defineCommand<{ createWebhookEndpoint: WebhookEndpoint & { secret: string } }>({
    name: 'webhooks add',
    args: ['<organisation>', '<url>'],
    options: ['events'],
    summary:
      'Register a webhook endpoint for an organisation (at most 10 each; https:// and public addresses only). Prints its signing secret this once.',
    build: ([organisation, url], flags) => ({
      query: `mutation CreateWebhookEndpoint($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { ${WEBHOOK_ENDPOINT_SELECTION} secret } }`,
      variables: { input: { organisation, url, events: parseEvents(flags) } }
    }),
    render: (data) => renderCreatedWebhook(data.createWebhookEndpoint)
  }),
  defineCommand<{ webhookEndpoints: WebhookEndpoint[] }>({
    name: 'webhooks list',
    args: [],
    options: ['organisation'],
    summary: 'List webhook endpoints, oldest first (never their secrets), optionally of one organisation.',
    build: (_args, flags) => ({
      query: `query WebhookEndpoints($o: String) { webhookEndpoints(organisation: $o) { ${WEBHOOK_ENDPOINT_SELECTION} } }`,
      variables: { o: stringFlag(flags, 'organisation') ?? null }
    }),
    render: (data, _args, flags) => renderWebhookEndpoints(data.webhookEndpoints, stringFlag(flags, 'organisation'))
  }),
  defineCommand<{ deleteWebhookEndpoint: WebhookEndpoint }>({
    name: 'webhooks remove',
    args: ['<endpoint-id>'],
    options: [],
    summary: 'Remove a webhook endpoint and its delivery records; nothing more is sent to it.',
    build: ([id]) => ({
      query: `mutation DeleteWebhookEndpoint($input: DeleteWebhookEndpointInput!) { deleteWebhookEndpoint(input: $input) { ${WEBHOOK_ENDPOINT_SELECTION} } }`,
      variables: { input: { id } }
    }),
    render: (data) =>
      keyValues('Webhook endpoint removed, with its delivery records', [
        ['id', data.deleteWebhookEndpoint.id],
        ['organisation', data.deleteWebhookEndpoint.organisation],
        ['url', data.deleteWebhookEndpoint.url]
      ])
  }),
  defineCommand<{ webhookDeliveries: WebhookDelivery[] }>({
    name: 'webhooks deliveries',
    args: ['<endpoint-id>'],
    options: ['state', 'limit'],
    summary: "A webhook endpoint's deliveries, newest first (kept 30 days): state, attempts, the last answer or error.",
    build([endpointId], flags) {
      const given = stringFlag(flags, 'state')
      const state = given === undefined ? undefined : DELIVERY_STATES.find((s) => s === given.trim().toUpperCase())
      if (given !== undefined && state === undefined) {
        throw new UsageError(`--state must be one of ${DELIVERY_STATES.join(', ')}, not "${given}"`)
      }
      const limit = integerFlag(flags, 'limit', 1, 1000, 50)
      return {
        query: `query WebhookDeliveries($id: ID!, $state: String, $first: Int) { webhookDeliveries(endpointId: $id, state: $state, first: $first) { ${WEBHOOK_DELIVERY_SELECTION} } }`,
        // One more than shown says whether there are more.
        variables: { id: endpointId, state: state ?? null, first: Math.min(limit + 1, 1000) }
      }
    },
    render: (data, [endpointId], flags) =>
      renderDeliveries(endpointId!, data.webhookDeliveries, flags, integerFlag(flags, 'limit', 1, 1000, 50)),
    json: (data, flags) => ({
      webhookDeliveries: data.webhookDeliveries.slice(0, integerFlag(flags, 'limit', 1, 1000, 50))
    })
  }),
  defineCommand<{ redeliverWebhook: WebhookDelivery }>({
    name: 'webhooks redeliver',
    args: ['<delivery-id>'],
    options: [],
    summary: 'Make a webhook delivery (FAILED, DELIVERED or PENDING) due again now: one more attempt, same webhook-id.',
    build: ([deliveryId]) => ({
      query: `mutation RedeliverWebhook($input: RedeliverWebhookInput!) { redeliverWebhook(input: $input) { ${WEBHOOK_DELIVERY_SELECTION} } }`,
      variables: { input: { deliveryId } }
    }),
    render: (data) => renderRedelivery(data.redeliverWebhook)
  })
]

// ---------------------------------------------------------------------------------------------
// Help

const usageLine = (c: Command) =>
  [
    c.name,
    ...c.args,
    ...(c.name === 'create-supplier' ? ['--organisation <name>'] : []),
    ...(c.options.length > 0 ? ['[options]'] : [])
  ].join(' ')

function optionLines(names: OptionName[]): string[] {
  const width = Math.max(...names.map((n) => OPTION_HELP[n][0].length))
  return names.map((n) => `  ${OPTION_HELP[n][0].padEnd(width)}  ${OPTION_HELP[n][1]}`)
}

function generalHelp(): string {
  return [
    'Account Migration Import Service — operator admin command line',
    '',
    `Usage: ${PROGRAM} <command> [arguments] [options]`,
    '',
    'Commands:',
    ...COMMANDS.flatMap((c) => [`  ${usageLine(c)}`, `      ${c.summary}`]),
    '  help [command]',
    '      Show this help, or the help of one command.',
    '',
    'Supplier options (create-supplier, update-supplier; --organisation also filters list-api-keys):',
    ...optionLines(['organisation', ...SUPPLIER_OPTIONS]),
    '',
    'Failure and progress options (failures, progress):',
    ...optionLines(['step', 'code', 'limit', 'watch']),
    '',
    'Webhook options (webhooks add, webhooks deliveries; --limit too):',
    ...optionLines(['events', 'state']),
    '',
    'Audit options (audit; --organisation and --limit too):',
    ...optionLines(['action', 'since', 'until']),
    '',
    'Options of every command:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'Exit codes: 0 success, 1 refused by the service or service unreachable, 2 usage error.',
    ''
  ].join('\n')
}

function commandHelp(c: Command): string {
  return [
    `Usage: ${PROGRAM} ${usageLine(c)}`,
    '',
    c.summary,
    '',
    'Options:',
    ...optionLines([...c.options, ...GLOBAL_OPTIONS]),
    ''
  ].join('\n')
}

// ---------------------------------------------------------------------------------------------
// Running

/** Commands of two words, such as `webhooks add`: the first word names the group. */
const GROUPS = [...new Set(COMMANDS.filter((c) => c.name.includes(' ')).map((c) => c.name.split(' ')[0]!))]
const subcommands = (group: string) =>
  COMMANDS.filter((c) => c.name.startsWith(`${group} `)).map((c) => c.name.slice(group.length + 1))

/**
 * The command the first positionals name (one word, or a group and its subcommand), and the
 * arguments after it.
 */
function findCommand(positionals: string[]): { command: Command; args: string[] } {
  const [name, ...rest] = positionals
  if (name !== undefined && GROUPS.includes(name)) {
    const [sub, ...args] = rest
    if (sub === undefined) {
      throw new UsageError(
        `${name} needs one of ${subcommands(name).join(', ')} (run "${PROGRAM} help ${name}" for their usage)`
      )
    }
    const command = COMMANDS.find((c) => c.name === `${name} ${sub}`)
    if (!command) {
      throw new UsageError(`unknown ${name} command "${sub}": one of ${subcommands(name).join(', ')}`)
    }
    return { command, args }
  }
  const command = COMMANDS.find((c) => c.name === name)
  if (!command) throw new UsageError(`unknown command "${name}" (run "${PROGRAM} help" for the list of commands)`)
  return { command, args: rest }
}

/** The help of a group: each of its commands' usage and summary. */
function groupHelp(group: string): string {
  const commands = COMMANDS.filter((c) => c.name.startsWith(`${group} `))
  return [
    `Usage: ${PROGRAM} ${group} <${subcommands(group).join('|')}> [arguments] [options]`,
    '',
    ...commands.flatMap((c) => [`  ${usageLine(c)}`, `      ${c.summary}`]),
    '',
    `Options of one: ${PROGRAM} help ${group} <command>`,
    ''
  ].join('\n')
}

/** Arguments and options must fit the command, checked before anything is sent. */
function checkCommandLine(command: Command, args: string[], flags: Flags): void {
  for (const name of Object.keys(flags) as OptionName[]) {
    if (!GLOBAL_OPTIONS.includes(name) && !command.options.includes(name)) {
      throw new UsageError(`${command.name} does not take --${name} (run "${PROGRAM} ${command.name} --help")`)
    }
  }
  if (args.length < command.args.length) {
    throw new UsageError(
      `${command.name} needs ${command.args.slice(args.length).join(' ')} (usage: ${PROGRAM} ${usageLine(command)})`
    )
  }
  if (args.length > command.args.length) {
    throw new UsageError(
      `${command.name} takes ${plural(command.args.length, 'argument')} but was given ${args.length}; ` +
        'quote values that contain spaces'
    )
  }
}

/** The service's GraphQL endpoint and the operator key, from options or environment. */
function connection(flags: Flags, env: AdminIO['env']): { url: string; endpoint: string; key: string } {
  const raw = (stringFlag(flags, 'url') ?? (env.ADMIN_URL || env.AMIS_URL || DEFAULT_URL)).trim()
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new UsageError(`--url must be an http(s) URL such as ${DEFAULT_URL}, not "${raw}"`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`--url must be an http(s) URL such as ${DEFAULT_URL}, not "${raw}"`)
  }
  const url = raw.replace(/\/+$/, '')
  // The base URL of the service; a URL already ending in /graphql is taken as it is.
  if (!/\/graphql\/?$/.test(parsed.pathname)) parsed.pathname = parsed.pathname.replace(/\/+$/, '') + '/graphql'
  const key = stringFlag(flags, 'operator-key') ?? env.OPERATOR_API_KEY
  if (!key) throw new UsageError('no operator key: pass --operator-key <key> or set OPERATOR_API_KEY')
  return { url, endpoint: parsed.href, key }
}

/** One stderr line per problem the service reported, with the HTTP status and notes when useful. */
function serviceErrorLines(err: ServiceError, duringLogin: boolean): string {
  const facts = [...(err.status !== undefined ? [`HTTP ${err.status}`] : []), ...err.notes]
  const suffix = facts.length > 0 ? ` (${facts.join(', ')})` : ''
  const seen = new Set<string>()
  return err.problems
    .filter((p) => !seen.has(`${p.code} ${p.message}`) && seen.add(`${p.code} ${p.message}`))
    .map((p) => {
      const hint =
        duringLogin && p.code === CODE.authentication_failed
          ? ' The operator key was refused: check --operator-key or OPERATOR_API_KEY.'
          : ''
      return `error: ${p.code}: ${p.message}${hint}${suffix}\n`
    })
    .join('')
}

/**
 * `progress --watch`: reads and shows the progress every few seconds until the signal (Ctrl-C).
 * On a terminal the screen is redrawn; otherwise each reading is appended.
 */
async function watchProgress(
  client: ReturnType<typeof createGraphQLClient>,
  request: { query: string; variables: Record<string, unknown> },
  supplier: string,
  io: AdminIO
): Promise<number> {
  const intervalMs = (io.watchIntervalSeconds ?? 5) * 1000
  for (;;) {
    const data = await client.request<ProgressData>(request.query, request.variables)
    const text =
      renderProgress(supplier, data.migrationProgress, new Date()) +
      `\nRefreshing every ${intervalMs / 1000} s; Ctrl-C to stop.\n`
    io.stdout(io.tty ? '\x1b[H\x1b[2J' + text : text + '\n')
    if (io.signal?.aborted) return 0
    const stopped = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        io.signal?.removeEventListener('abort', stop)
        resolve(false)
      }, intervalMs)
      function stop(): void {
        clearTimeout(timer)
        resolve(true)
      }
      io.signal?.addEventListener('abort', stop, { once: true })
    })
    if (stopped) return 0
  }
}

/** Runs the admin command line; returns the exit code. Never calls `process.exit` itself. */
export async function runAdmin(argv: string[], io: AdminIO): Promise<number> {
  let loggingIn = false
  try {
    const { positionals, flags } = parseCommandLine<Flags>(argv, OPTIONS, (message) => new UsageError(message))
    const [name, ...rest] = positionals

    if (name === undefined) {
      if (flags.help) {
        io.stdout(generalHelp())
        return 0
      }
      io.stderr(generalHelp())
      return 2
    }
    if (name === 'help' || (flags.help && GROUPS.includes(name) && rest.length === 0)) {
      const topic = name === 'help' ? rest : [name]
      const group = topic.length === 1 && GROUPS.includes(topic[0]!)
      if (topic.length > (GROUPS.includes(topic[0] ?? '') ? 2 : 1)) {
        throw new UsageError('help takes at most one command name')
      }
      io.stdout(
        topic.length === 0 ? generalHelp() : group ? groupHelp(topic[0]!) : commandHelp(findCommand(topic).command)
      )
      return 0
    }
    const { command, args } = findCommand(positionals)
    if (flags.help) {
      io.stdout(commandHelp(command))
      return 0
    }
    checkCommandLine(command, args, flags)
    const request = command.build(args, flags)
    const { url, endpoint, key } = connection(flags, io.env)

    const client = createGraphQLClient({ url, endpoint, fetch: io.fetch ?? globalThis.fetch })
    loggingIn = true
    await client.login(key)
    loggingIn = false
    if (command.name === 'progress' && flags.watch) return await watchProgress(client, request, args[0]!, io)
    const answer = await client.request<unknown>(request.query, request.variables)
    const data = command.complete
      ? await command.complete(answer, (query, variables) => client.request<unknown>(query, variables), args, flags)
      : answer
    if (flags.json && command.jsonLines) {
      io.stdout(
        command
          .jsonLines(data, flags)
          .map((item) => JSON.stringify(item) + '\n')
          .join('')
      )
      return 0
    }
    const shown = flags.json ? (command.json ? command.json(data, flags) : data) : undefined
    io.stdout(flags.json ? JSON.stringify(shown, null, 2) + '\n' : command.render(data, args, flags))
    return 0
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`error: ${err.message}\n`)
      return 2
    }
    if (err instanceof UnreachableError) {
      // Something answered but not the service, or nothing answered at all.
      const hint = /GraphQL/.test(err.reason)
        ? "Set --url or ADMIN_URL to the import service's address."
        : 'Is the service running there? Set --url or ADMIN_URL to its address.'
      io.stderr(`error: ${err.message}\n  ${hint}\n`)
      return 1
    }
    if (err instanceof ServiceError) {
      io.stderr(serviceErrorLines(err, loggingIn))
      return 1
    }
    throw err
  }
}

if (isEntryPoint(import.meta.url)) {
  const interrupted = new AbortController()
  process.once('SIGINT', () => interrupted.abort())
  process.exit(
    await runAdmin(process.argv.slice(2), {
      env: process.env,
      stdout: (s) => process.stdout.write(s),
      stderr: (s) => process.stderr.write(s),
      tty: process.stdout.isTTY === true,
      signal: interrupted.signal
    })
  )
}

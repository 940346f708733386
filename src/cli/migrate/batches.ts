import { CLIENT_CODE } from '../../../schemas/error-codes.js'
import { isObject, type Json } from '../http.js'
import { LIST_LIMITS } from '../../../schemas/section-requests.js'
import { SECTION_NAMES as SERVER_ORDER } from '../../../schemas/sections.js'
import type { Item, Problem, Section } from './input.js'
import type { ReportEntry, Step } from './report.js'
import type { Answer, ServiceClient } from './service-client.js'

/** A line ready for a batch. */
export interface BatchLine {
  line: number
  item: Item
  external: string | null
  supplier: string
}

/** Whether a line can go in a batch: its supplier is known and its lists fit one request each. */
export function batchable(item: Item): boolean {
  if (typeof item.account.import_supplier !== 'string') return false
  // The largest lists one request of a section takes (its schema's); a longer list is sent account by account.
  return [...LIST_LIMITS].every(([section, limit]) => {
    const value = item.sections[section]
    return !Array.isArray(value) || value.length <= limit
  })
}

/** Items the report counts per section (documents for billing documents, one for a payment instruction). */
function sizeOf(section: Section, value: unknown): number {
  if (section === 'historical_billing_documents') {
    return (Array.isArray(value) ? value : [value]).reduce(
      (n: number, doc) =>
        n +
        (isObject(doc) && Array.isArray(doc.historical_billing_documents)
          ? doc.historical_billing_documents.length
          : 0),
      0
    )
  }
  if (Array.isArray(value)) return value.length
  return isObject(value) ? 1 : 0
}

/** The sections of a line sent before the step that failed (all of them when none failed), in the order the service runs them. */
function sent(item: Item, failedStep: string | null): Partial<Record<Section, number>> | undefined {
  const out: Partial<Record<Section, number>> = {}
  for (const section of SERVER_ORDER) {
    if (section === failedStep) break
    const value = item.sections[section]
    if (value !== undefined && !(Array.isArray(value) && value.length === 0)) out[section] = sizeOf(section, value)
  }
  return Object.keys(out).length > 0 ? out : undefined
}

/**
 * Sends lines as one `POST batches/` and turns its answer into one report entry per line. A body
 * the service finds too large (413) is split in two and sent again; a single line that is still
 * too large goes back to the caller (`tooLarge`) for the account-by-account path.
 */
export async function sendBatch(
  client: ServiceClient,
  lines: BatchLine[],
  options: { team: string; dryRun: boolean },
  failures = 0
): Promise<{ entries: ReportEntry[]; tooLarge: BatchLine[] }> {
  if (lines.length === 0) return { entries: [], tooLarge: [] }
  const body = {
    import_supplier: lines[0]!.supplier,
    operations_team_name: options.team,
    dry_run: options.dryRun,
    accounts: lines.map(({ item }) => ({ account: item.account, ...item.sections }))
  }
  const answer = await client.post('batches/', body)
  if (answer.status === 413 && lines.length > 1) {
    const half = Math.ceil(lines.length / 2)
    const [a, b] = await Promise.all([
      sendBatch(client, lines.slice(0, half), options),
      sendBatch(client, lines.slice(half), options)
    ])
    return { entries: [...a.entries, ...b.entries], tooLarge: [...a.tooLarge, ...b.tooLarge] }
  }
  if (answer.status === 413) return { entries: [], tooLarge: lines }
  if (answer.status !== 200 || !isObject(answer.body) || !Array.isArray(answer.body.results)) {
    return { entries: lines.map((l) => wholeBatchFailed(l, answer)), tooLarge: [] }
  }
  const results = answer.body.results as Json[]
  const entries = lines.map((l, i) => entryOf(l, results[i], options.dryRun))
  // Entries answered 503 lost the database mid-batch (a restart, a failover): sent again, as a
  // whole request answered 503 would be. Safe: an account created meanwhile comes back
  // already_imported, and its sections are written again retry-safe.
  const unavailable = lines.filter((_, i) => entries[i]!.status === 503)
  if (unavailable.length === 0 || !(await client.beforeResend(failures + 1))) return { entries, tooLarge: [] }
  const again = await sendBatch(client, unavailable, options, failures + 1)
  const byLine = new Map(again.entries.map((e) => [e.line, e]))
  return {
    entries: entries.map((e) => byLine.get(e.line) ?? e).filter((e) => !again.tooLarge.some((l) => l.line === e.line)),
    tooLarge: again.tooLarge
  }
}

/** Every line of a batch the service refused as a whole (its supplier, its team, or no answer). */
function wholeBatchFailed(l: BatchLine, answer: Answer): ReportEntry {
  const body = answer.body
  const errors: Problem[] =
    isObject(body) && Array.isArray(body.errors) && body.errors.length > 0
      ? (body.errors as Problem[]).map((e) => ({ code: e.code, attr: e.attr, detail: e.detail }))
      : [
          {
            code: isObject(body) && typeof body.code === 'string' ? body.code : CLIENT_CODE.network_error,
            attr: null,
            detail: isObject(body) && typeof body.detail === 'string' ? body.detail : 'No answer from the service.'
          }
        ]
  return {
    line: l.line,
    external_account_number: l.external,
    outcome: 'failed',
    service_account_number: null,
    step: 'stage',
    status: answer.status,
    code: isObject(body) && typeof body.code === 'string' ? body.code : errors[0]!.code,
    errors,
    ...(isObject(body) && typeof body.request_id === 'string' ? { request_id: body.request_id } : {})
  }
}

function entryOf(l: BatchLine, result: Json | undefined, dryRun: boolean): ReportEntry {
  const base = { line: l.line, external_account_number: l.external }
  if (!isObject(result)) {
    return {
      ...base,
      outcome: 'failed',
      service_account_number: null,
      step: 'stage',
      status: 0,
      code: CLIENT_CODE.client_error,
      errors: [{ code: CLIENT_CODE.client_error, attr: null, detail: 'The batch answer had no result for this line.' }]
    }
  }
  const serviceAccountNumber = typeof result.service_account_number === 'string' ? result.service_account_number : null
  switch (result.outcome) {
    case 'created':
    case 'already_imported': {
      const postImport = dryRun ? undefined : sent(l.item, null)
      return {
        ...base,
        outcome: result.outcome === 'created' ? 'created' : 'already_completed',
        service_account_number: serviceAccountNumber,
        ...(postImport ? { post_import: postImport } : {})
      }
    }
    case 'would_create':
      return { ...base, outcome: 'would_create', service_account_number: null }
    default: {
      const step = String(result.step) as Step
      const errors = Array.isArray(result.errors)
        ? (result.errors as Problem[]).map((e) => ({ code: e.code, attr: e.attr, detail: e.detail }))
        : []
      const postImport = sent(l.item, step)
      return {
        ...base,
        outcome: 'failed',
        service_account_number: serviceAccountNumber,
        step: dryRun && step === 'create' ? 'dry_run' : step,
        status: typeof result.status === 'number' ? result.status : 0,
        code: typeof result.code === 'string' ? result.code : (errors[0]?.code ?? 'failed'),
        errors,
        ...(postImport && (SERVER_ORDER as readonly string[]).includes(step) ? { post_import: postImport } : {})
      }
    }
  }
}

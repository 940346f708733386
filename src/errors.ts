import type { ErrorObject } from 'ajv'
import type { FastifyRequest } from 'fastify'
import type { ErrorEntry } from '../schemas/common.js'
import { TRIMMED_PATTERN, WELL_FORMED_CHARACTERS } from '../schemas/text.js'

export type { ErrorEntry }

/** Our own error: becomes the contract's error body with its status. */
export class AppError extends Error {
  override name = 'AppError'
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly errors: ErrorEntry[] = [],
    /** Endpoint-specific fields added to the body (e.g. `service_account_number`). */
    readonly extra: Record<string, unknown> = {},
    /** Response headers (e.g. `Retry-After`). */
    readonly headers: Record<string, string> = {}
  ) {
    super(message)
  }
}

export function entry(code: string, attr: string | null, detail: string): ErrorEntry {
  return { detail, code, attr }
}

/**
 * An error entry as stored with an import process: whole, or once its staged data was erased,
 * reduced to its code and attr (its detail may quote the input).
 */
export type StoredEntry = Pick<ErrorEntry, 'code' | 'attr'> & { detail?: string }

/** The entries reduced to `{code, attr}`. */
export function withoutDetails(entries: readonly StoredEntry[]): StoredEntry[] {
  return entries.map(({ code, attr }) => ({ code, attr }))
}

export const notAuthenticated = (): AppError =>
  new AppError(401, 'not_authenticated', 'Authentication credentials were not provided.')
export const authenticationFailed = (): AppError =>
  new AppError(401, 'authentication_failed', 'Incorrect authentication credentials.')
export const tokenExpired = (): AppError => new AppError(401, 'token_expired', 'The token has expired.')
export const permissionDenied = (detail = 'You do not have permission to perform this action.'): AppError =>
  new AppError(403, 'permission_denied', detail)
export const notFound = (code: string, detail: string): AppError =>
  new AppError(404, 'not_found', 'Not found.', [entry(code, null, detail)])
/** The body as a whole cannot be read (not JSON, not UTF-8, a pathological shape): one `invalid` at `null`. */
export const invalidBody = (detail: string): AppError =>
  new AppError(400, 'invalid_request', 'Invalid request.', [entry('invalid', null, detail)])
export const payloadTooLarge = (): AppError =>
  new AppError(413, 'payload_too_large', 'The request body is larger than the service accepts.')
export const throttled = (retryAfterSeconds: number): AppError =>
  new AppError(429, 'throttled', `Request was throttled. Expected available in ${retryAfterSeconds} seconds.`, [], {}, {
    'retry-after': String(retryAfterSeconds)
  })

/** Which Ajv keyword gives which contract code, unless the schema names its own (`errorCodes`). */
const codeByKeyword: Record<string, string> = {
  required: 'required',
  additionalProperties: 'unexpected_field',
  unevaluatedProperties: 'unexpected_field',
  type: 'invalid',
  enum: 'invalid_choice',
  const: 'invalid_choice',
  discriminator: 'invalid_choice',
  maxLength: 'max_length',
  // Only stated minimums above 1 reach it: an empty or whitespace string is `blank`.
  minLength: 'min_length',
  minimum: 'min_value',
  exclusiveMinimum: 'min_value',
  maximum: 'max_value',
  exclusiveMaximum: 'max_value',
  minItems: 'min_items',
  maxItems: 'max_items',
  uniqueItems: 'duplicate_items',
  pattern: 'invalid',
  format: 'invalid'
}

/** What a person reads for a value of the wrong JSON type. */
const typeDetail: Record<string, string> = {
  string: 'A string is required.',
  integer: 'A whole number is required.',
  number: 'A number is required.',
  boolean: 'Must be true or false.',
  array: 'A list is required.',
  object: 'An object is required.'
}

/** Enumerations longer than this are not spelt out in a detail. */
const MAX_LISTED_CHOICES = 20

/**
 * The detail of a schema error, in the same words as the service's other details: the limit or
 * the allowed values named, so that nobody has to look them up (Ajv's own message otherwise).
 */
function schemaDetail(e: ErrorObject): string {
  const params = e.params as Record<string, unknown>
  const limit = params.limit
  switch (e.keyword) {
    case 'type': {
      const first = String(params.type).split(',')[0]!
      return typeDetail[first] ?? `A ${first} is required.`
    }
    case 'enum': {
      const allowed = params.allowedValues
      return Array.isArray(allowed) && allowed.length <= MAX_LISTED_CHOICES
        ? `Not a valid choice: one of ${allowed.map(String).join(', ')}.`
        : 'Not a valid choice.'
    }
    case 'const': return `Must be ${JSON.stringify(params.allowedValue)}.`
    case 'maxLength': return `Ensure this field has no more than ${limit} characters.`
    case 'minLength': return `Ensure this field has at least ${limit} characters.`
    case 'maxItems': return `Ensure this list has no more than ${limit} items.`
    case 'minItems': return limit === 1 ? 'This list may not be empty.' : `Ensure this list has at least ${limit} items.`
    case 'uniqueItems': return `Items ${params.i} and ${params.j} are the same; each may appear once.`
    case 'minimum': return `Ensure this value is greater than or equal to ${limit}.`
    case 'exclusiveMinimum': return `Ensure this value is greater than ${limit}.`
    case 'maximum': return `Ensure this value is less than or equal to ${limit}.`
    case 'exclusiveMaximum': return `Ensure this value is less than ${limit}.`
    case 'format':
      if (params.format === 'date') return 'Not a valid date: a real calendar day as YYYY-MM-DD is required.'
      if (params.format === 'date-time') return 'Not a valid date and time: ISO 8601 with a time zone is required, e.g. 2026-11-01T09:00:00Z.'
      return `Not a valid ${String(params.format)}.`
    case 'pattern': {
      const pattern = String(params.pattern)
      if (pattern === TRIMMED_PATTERN) return 'May not start or end with whitespace, nor hold U+0000 or a lone UTF-16 surrogate.'
      if (pattern.includes(WELL_FORMED_CHARACTERS)) return 'May not hold U+0000 or a lone UTF-16 surrogate.'
      return `Does not match the pattern ${pattern}.`
    }
    case 'required': return 'This field is required.'
    case 'additionalProperties': return 'This field is not expected here.'
    default: return e.message ?? 'is invalid'
  }
}

/** A blank string failing one of these is reported as `blank`, whatever else it breaks. */
const BLANK_KEYWORDS = new Set(['minLength', 'pattern', 'enum', 'format'])

/** Splits an Ajv JSON pointer into path segments (`/customers/0/landline` → customers, 0, landline). */
function pointerSegments(pointer: string): string[] {
  if (pointer === '') return []
  return pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
}

/**
 * Turns Ajv errors into contract entries. `prefix` roots the path (a query parameter's attr is its
 * name, so querystring and params use no prefix). Errors of `anyOf`/`oneOf` wrappers are dropped:
 * the branch errors say what is wrong.
 */
/**
 * The input of a route that validates with `attachValidation`, as what it is: a body not known to
 * be valid, and its schema problems. The service decides what to answer.
 */
export interface AttachedInput { body: unknown; schemaErrors: ErrorEntry[] }

export function attachedInput(request: FastifyRequest): AttachedInput {
  // Fastify types these with its own narrower interface; they are the ajv error objects.
  const validation = request.validationError?.validation as readonly ErrorObject[] | undefined
  return { body: request.body, schemaErrors: validation ? entriesFromAjv(validation) : [] }
}

export function entriesFromAjv(errors: readonly ErrorObject[], prefix: string[] = []): ErrorEntry[] {
  const out: ErrorEntry[] = []
  const seen = new Set<string>()
  for (const e of errors) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue
    // A value of the wrong JSON type (or null) is reported once, by its `type` keyword.
    if (e.keyword === 'enum' && typeof e.data !== 'string' && (e.parentSchema as { type?: unknown } | undefined)?.type === 'string') continue
    const path = [...prefix, ...pointerSegments(e.instancePath)]
    const params = e.params as Record<string, unknown>
    if (e.keyword === 'required') path.push(String(params.missingProperty))
    if (e.keyword === 'additionalProperties') path.push(String(params.additionalProperty))
    if (e.keyword === 'discriminator' && typeof params.tag === 'string') path.push(params.tag)
    const schemaCodes = (e.parentSchema as { errorCodes?: Record<string, string> } | undefined)?.errorCodes
    let code = schemaCodes?.[e.keyword] ?? codeByKeyword[e.keyword] ?? 'invalid'
    let detail = schemaDetail(e)
    if (typeof params.code === 'string') {
      code = params.code // our own keywords (decimal, jsonValue) name their code and detail
      detail = e.message ?? 'is invalid'
    } else if (e.keyword === 'type' && e.data === null) {
      code = 'null'
      detail = 'This field may not be null.'
    } else if (e.keyword === 'discriminator' && params.tagValue === undefined) {
      code = 'required' // Ajv always sets `tagValue`; it is undefined when the tag is missing
      detail = 'This field is required.'
    } else if (e.keyword === 'discriminator' && params.tagValue === null) {
      code = 'null'
      detail = 'This field may not be null.'
    } else if (e.keyword === 'discriminator' && typeof params.tagValue !== 'string') {
      code = 'invalid'
      detail = 'A string is required.'
    } else if (e.keyword === 'discriminator' && (params.tagValue as string).trim() === '') {
      code = 'blank'
      detail = 'This field may not be blank.'
    } else if (typeof e.data === 'string' && e.data.trim() === '' && BLANK_KEYWORDS.has(e.keyword)) {
      code = 'blank'
      detail = 'This field may not be blank.'
    }
    const attr = path.length > 0 ? path.join('.') : null
    const key = `${attr}\u0000${code}`
    if (seen.has(key)) continue
    seen.add(key)
    out.push(entry(code, attr, detail))
  }
  return out
}

/** Compares two attrs: null first, segments left to right, indexes numerically, names by code point, a path before its extensions. */
export function compareAttr(a: string | null, b: string | null): number {
  if (a === b) return 0
  if (a === null) return -1
  if (b === null) return 1
  const as = a.split('.')
  const bs = b.split('.')
  const n = Math.min(as.length, bs.length)
  for (let i = 0; i < n; i++) {
    const x = as[i] as string
    const y = bs[i] as string
    if (x === y) continue
    const xi = /^\d+$/.test(x)
    const yi = /^\d+$/.test(y)
    if (xi && yi) return Number(x) - Number(y)
    if (xi !== yi) return xi ? -1 : 1
    return codePointCompare(x, y)
  }
  return as.length - bs.length
}

/** Sorts entries by attr then code, and keeps the first 100. */
export function sortEntries(entries: ErrorEntry[]): ErrorEntry[] {
  return [...entries]
    .sort((p, q) => compareAttr(p.attr, q.attr) || codePointCompare(p.code, q.code))
    .slice(0, 100)
}

function codePointCompare(a: string, b: string): number {
  if (a === b) return 0
  const x = Array.from(a)
  const y = Array.from(b)
  const n = Math.min(x.length, y.length)
  for (let i = 0; i < n; i++) {
    const d = (x[i] as string).codePointAt(0)! - (y[i] as string).codePointAt(0)!
    if (d !== 0) return d
  }
  return x.length - y.length
}

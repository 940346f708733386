import type { ErrorObject } from 'ajv'
import type { FastifyRequest } from 'fastify'
import type { ErrorEntry } from '../schemas/common.js'
import { databaseUnavailable } from './db/errors.js'
import {
  CODE,
  ERROR_CODES,
  formatDetail,
  formatSchemaDetail,
  type CodeSpec,
  type DetailParams,
  type ErrorCode,
  type SchemaDetailName
} from '../schemas/error-codes.js'
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
 * An answer whose top-level code is `code`, with the catalogue's status (unless `status` says
 * another: 414 for a path segment too long) and wording (its `answerDetail` where it has one),
 * and `errors` sorted.
 */
export function answer<C extends ErrorCode>(
  code: C,
  errors: ErrorEntry[] = [],
  options: AnswerOptions = {},
  ...args: AnswerArgs<C>
): AppError {
  const spec: CodeSpec = ERROR_CODES[code]
  const message = spec.answerDetail ?? formatDetail(code, (args[0] ?? {}) as DetailParams<C>)
  return new AppError(options.status ?? spec.status, code, message, sortEntries(errors), options.extra, options.headers)
}

/**
 * The answer to an error no code path expected: 503 `service_unavailable` (with `Retry-After`) when
 * the database cannot be used right now (lost mid-request, restarting, failing over), so that the
 * request is sent again; otherwise 500 `server_error`.
 */
export function unexpected(err: unknown): AppError {
  return databaseUnavailable(err) ? answer(CODE.service_unavailable) : answer(CODE.server_error)
}

export interface AnswerOptions {
  /** Endpoint-specific fields added to the body. */
  extra?: Record<string, unknown>
  /** Response headers. */
  headers?: Record<string, string>
  /** The HTTP status, where it is not the catalogue's. */
  status?: number
}

/**
 * A GraphQL field's error: `code` at the catalogue's status, its message the code's wording (a
 * GraphQL error has no entries): `fieldError(CODE.already_exists, { what: 'Organisation Acme' })`.
 */
export function fieldError<C extends ErrorCode>(code: C, ...args: DetailArgs<C>): AppError {
  const params = (args[0] ?? {}) as DetailParams<C>
  return new AppError(ERROR_CODES[code].status, code, formatDetail(code, params))
}

/** 400 `invalid_request` listing every problem, sorted (every endpoint but validate, stage and create). */
export const invalidRequest = (errors: ErrorEntry[], extra: Record<string, unknown> = {}): AppError =>
  answer(CODE.invalid_request, errors, { extra })

/**
 * 400 `account_failed_validation` listing every problem (validate, stage, create); an answer
 * whose only problem says how the account stands (skipped, in progress) takes its wording.
 */
export function accountFailed(errors: ErrorEntry[]): AppError {
  const only = errors.length === 1 ? (ERROR_CODES as Record<string, CodeSpec>)[errors[0]!.code] : undefined
  const error = answer(CODE.account_failed_validation, errors)
  return only?.answerDetail ? new AppError(error.statusCode, error.code, only.answerDetail, error.errors) : error
}

/** The values a code's wording needs: none for a fixed wording (then no argument is passed). */
export type DetailArgs<C extends ErrorCode> = keyof DetailParams<C> extends never ? [] : [DetailParams<C>]

/** The values of an answer's wording: optional, and unused, where the answer has its own fixed one (`answerDetail`). */
export type AnswerArgs<C extends ErrorCode> = (typeof ERROR_CODES)[C] extends { answerDetail: string }
  ? [params?: DetailParams<C>]
  : DetailArgs<C>

/**
 * An entry of `code` at `attr`, its detail in the catalogue's one wording (schemas/error-codes.ts):
 * `problem(CODE.date_in_future, 'end_date', { field: 'end_date' })`.
 */
export function problem<C extends ErrorCode>(code: C, attr: string | null, ...args: DetailArgs<C>): ErrorEntry {
  const params = (args[0] ?? {}) as DetailParams<C>
  return entry(code, attr, formatDetail(code, params))
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

export const notAuthenticated = (): AppError => answer(CODE.not_authenticated)
export const authenticationFailed = (): AppError => answer(CODE.authentication_failed)
export const tokenExpired = (): AppError => answer(CODE.token_expired)
/** 403 `permission_denied`: who alone may do what was asked (`'the service operator'`, `'read metrics'`). */
export const permissionDenied = (who: string, action: string): AppError =>
  answer(CODE.permission_denied, [], {}, { who, action })
/** 404 `not_found` whose one entry, at `null`, says what does not exist: `notFound(CODE.account_not_found)`. */
export const notFound = <C extends ErrorCode>(code: C, ...args: DetailArgs<C>): AppError =>
  answer(CODE.not_found, [problem(code, null, ...args)])
/**
 * A GraphQL field's `not_found`, its message the wording of the entry `code` a REST answer gives
 * for the same thing (`notFound`): `fieldNotFound(CODE.does_not_exist, { supplier: 'ACME' })`.
 */
export const fieldNotFound = <C extends ErrorCode>(code: C, ...args: DetailArgs<C>): AppError =>
  new AppError(ERROR_CODES.not_found.status, CODE.not_found, formatDetail(code, (args[0] ?? {}) as DetailParams<C>))
/** The body as a whole cannot be read (not JSON, not UTF-8, a pathological shape): one `invalid` at `null`. */
export const invalidBody = (detail: string): AppError => invalidRequest([problem(CODE.invalid, null, { detail })])
export const payloadTooLarge = (): AppError => answer(CODE.payload_too_large)

/**
 * The media types a route's body may be sent as, from its schema (what the OpenAPI document shows
 * too): `body.content`'s, else `consumes`, else JSON.
 */
export function bodyMediaTypes(schema: unknown): string[] {
  const { body, consumes } = (schema ?? {}) as { body?: { content?: Record<string, unknown> }; consumes?: string[] }
  if (body?.content) return Object.keys(body.content)
  return consumes && consumes.length > 0 ? consumes : ['application/json']
}

/** 415 `unsupported_media_type`, naming the media types the route takes. */
export const unsupportedMediaType = (types: readonly string[]): AppError =>
  answer(CODE.unsupported_media_type, [], {}, { media_types: types.join(' or ') })
/**
 * 429 `throttled` from a request-rate limit: `Retry-After` is the seconds until its window resets
 * (at least 1), and `headers` the limit's own (src/plugins/rate-limits.ts: `RateLimit-*`).
 */
export function throttled(resetSeconds: number, headers: Record<string, string> = {}): AppError {
  const seconds = Math.max(1, Math.ceil(resetSeconds))
  return answer(CODE.throttled, [], { headers: { ...headers, 'retry-after': String(seconds) } }, { seconds })
}

/** Statuses whose answers always carry `Retry-After`. */
export const RETRY_AFTER_STATUSES: readonly number[] = [429, 503]
/** `Retry-After` of a 429 or 503 whose code has no wait in the catalogue (another code given such a status). */
const DEFAULT_RETRY_AFTER_SECONDS = 5

/**
 * An error's response headers: its own and, for a 429 or 503 without `Retry-After`, the wait of
 * its code in the catalogue (`retryAfterSeconds`). The error plugin sends every error with these.
 */
export function errorHeaders(error: AppError): Record<string, string> {
  if (!RETRY_AFTER_STATUSES.includes(error.statusCode)) return error.headers
  if (Object.keys(error.headers).some((name) => name.toLowerCase() === 'retry-after')) return error.headers
  const spec: CodeSpec | undefined = (ERROR_CODES as Record<string, CodeSpec>)[error.code]
  return { ...error.headers, 'retry-after': String(spec?.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS) }
}

/** The codes whose wording is the whole detail (`'{detail}'`): those a schema keyword reports, its detail built from the keyword. */
export type SchemaCode = {
  [C in ErrorCode]: (typeof ERROR_CODES)[C]['detail'] extends '{detail}' ? C : never
}[ErrorCode]

/** Which Ajv keyword gives which contract code, unless the schema names its own (`errorCodes`). */
const codeByKeyword: Record<string, SchemaCode> = {
  required: CODE.required,
  dependentRequired: CODE.required,
  additionalProperties: CODE.unexpected_field,
  unevaluatedProperties: CODE.unexpected_field,
  type: CODE.invalid,
  enum: CODE.invalid_choice,
  const: CODE.invalid_choice,
  discriminator: CODE.invalid_choice,
  maxLength: CODE.max_length,
  // Only stated minimums above 1 reach it: an empty or whitespace string is `blank`.
  minLength: CODE.min_length,
  minimum: CODE.min_value,
  exclusiveMinimum: CODE.min_value,
  maximum: CODE.max_value,
  exclusiveMaximum: CODE.max_value,
  minItems: CODE.min_items,
  maxItems: CODE.max_items,
  uniqueItems: CODE.duplicate_items,
  pattern: CODE.invalid,
  format: CODE.invalid
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

/** A value quoted in a detail is cut to this many characters. */
const MAX_QUOTED = 64

const choiceDetail = (allowed: unknown[]): string =>
  allowed.length > 0 && allowed.length <= MAX_LISTED_CHOICES
    ? `Not a valid choice: one of ${allowed.map(String).join(', ')}.`
    : 'Not a valid choice.'

/** The values a union's discriminator tag may take: each branch's constant (or enumeration) of the tag. */
function tagValues(e: ErrorObject, tag: string): unknown[] {
  type Branch = { properties?: Record<string, { const?: unknown; enum?: unknown[] }> }
  const branches = (e.parentSchema as { oneOf?: Branch[] } | undefined)?.oneOf ?? []
  return branches.flatMap((b) => {
    const property = b.properties?.[tag]
    return property?.const !== undefined ? [property.const] : (property?.enum ?? [])
  })
}

/** The catalogue's wording a schema names for this keyword (`errorDetails`), filled in. */
function namedDetail(e: ErrorObject): string | undefined {
  const names = (e.parentSchema as { errorDetails?: Record<string, SchemaDetailName> } | undefined)?.errorDetails
  const name = names?.[e.keyword]
  if (name === undefined) return undefined
  const allowed = (e.params as { allowedValues?: unknown }).allowedValues
  const text = typeof e.data === 'string' ? e.data : JSON.stringify(e.data)
  return formatSchemaDetail(name, {
    value: text.length > MAX_QUOTED ? text.slice(0, MAX_QUOTED) + '…' : text,
    allowed: Array.isArray(allowed) && allowed.length > 0 ? allowed.map(String).join(', ') : 'none'
  })
}

/**
 * The detail of a schema error, in the same words as the service's other details: the limit or
 * the allowed values named, so that nobody has to look them up. Never Ajv's own message ("must
 * NOT be valid"): a keyword without a wording here gets a plain one.
 */
function schemaDetail(e: ErrorObject): string {
  const named = namedDetail(e)
  if (named !== undefined) return named
  const params = e.params as Record<string, unknown>
  const limit = params.limit
  switch (e.keyword) {
    case 'type': {
      const first = String(params.type).split(',')[0]!
      return typeDetail[first] ?? `A ${first} is required.`
    }
    case 'enum':
      return choiceDetail(Array.isArray(params.allowedValues) ? params.allowedValues : [])
    case 'discriminator':
      return choiceDetail(tagValues(e, String(params.tag)))
    case 'const':
      return `Must be ${JSON.stringify(params.allowedValue)}.`
    case 'maxLength':
      return `Ensure this field has no more than ${limit} characters.`
    case 'minLength':
      return `Ensure this field has at least ${limit} characters.`
    case 'maxItems':
      return `Ensure this list has no more than ${limit} items.`
    case 'minItems':
      return limit === 1 ? 'This list may not be empty.' : `Ensure this list has at least ${limit} items.`
    case 'uniqueItems':
      return `Items ${params.i} and ${params.j} are the same; each may appear once.`
    case 'minimum':
      return `Ensure this value is greater than or equal to ${limit}.`
    case 'exclusiveMinimum':
      return `Ensure this value is greater than ${limit}.`
    case 'maximum':
      return `Ensure this value is less than or equal to ${limit}.`
    case 'exclusiveMaximum':
      return `Ensure this value is less than ${limit}.`
    case 'format':
      if (params.format === 'date') return 'Not a valid date: a real calendar day as YYYY-MM-DD is required.'
      if (params.format === 'date-time') {
        return 'Not a valid date and time: ISO 8601 with a time zone is required, e.g. 2026-11-01T09:00:00Z.'
      }
      return `Not a valid ${String(params.format)}.`
    case 'pattern': {
      const pattern = String(params.pattern)
      if (pattern === TRIMMED_PATTERN) {
        return 'May not start or end with whitespace, nor hold U+0000 or a lone UTF-16 surrogate.'
      }
      if (pattern.includes(WELL_FORMED_CHARACTERS)) return 'May not hold U+0000 or a lone UTF-16 surrogate.'
      return `Does not match the pattern ${pattern}.`
    }
    case 'multipleOf':
      return `Ensure this value is a multiple of ${params.multipleOf}.`
    case 'minProperties':
      return `Ensure this object has at least ${limit} fields.`
    case 'maxProperties':
      return `Ensure this object has no more than ${limit} fields.`
    case 'additionalItems':
    case 'items':
    case 'unevaluatedItems':
      return typeof limit === 'number'
        ? `Ensure this list has no more than ${limit} items.`
        : 'This item is not expected here.'
    case 'contains':
    case 'minContains':
    case 'maxContains':
      return 'The list does not hold the items required.'
    case 'propertyNames':
      return 'This field name is not allowed here.'
    case 'required':
    case 'dependentRequired':
    case 'dependencies':
      return 'This field is required.'
    case 'additionalProperties':
    case 'unevaluatedProperties':
      return 'This field is not expected here.'
    default:
      // `not`, a `false` schema, or a keyword added later: a plain wording, never Ajv's.
      return 'This value is not allowed here.'
  }
}

/** A blank string failing one of these is reported as `blank`, whatever else it breaks. */
const BLANK_KEYWORDS = new Set(['minLength', 'pattern', 'enum', 'not', 'format'])

/** Splits an Ajv JSON pointer into path segments (`/customers/0/landline` → customers, 0, landline). */
function pointerSegments(pointer: string): string[] {
  if (pointer === '') return []
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
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
export interface AttachedInput {
  body: unknown
  schemaErrors: ErrorEntry[]
}

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
    if (
      (e.keyword === 'enum' || e.keyword === 'not') &&
      typeof e.data !== 'string' &&
      (e.parentSchema as { type?: unknown } | undefined)?.type === 'string'
    ) {
      continue
    }
    const path = [...prefix, ...pointerSegments(e.instancePath)]
    const params = e.params as Record<string, unknown>
    if (e.keyword === 'required' || e.keyword === 'dependentRequired' || e.keyword === 'dependencies') {
      path.push(String(params.missingProperty))
    }
    if (e.keyword === 'additionalProperties') path.push(String(params.additionalProperty))
    if (e.keyword === 'unevaluatedProperties') path.push(String(params.unevaluatedProperty))
    if (e.keyword === 'discriminator' && typeof params.tag === 'string') path.push(params.tag)
    const schemaCodes = (e.parentSchema as { errorCodes?: Record<string, SchemaCode> } | undefined)?.errorCodes
    let code: SchemaCode = schemaCodes?.[e.keyword] ?? codeByKeyword[e.keyword] ?? CODE.invalid
    let detail = schemaDetail(e)
    if (typeof params.code === 'string') {
      code = params.code as SchemaCode // our own keywords (decimal, jsonValue) name their code and detail
      detail = e.message ?? 'is invalid'
    } else if (e.keyword === 'type' && e.data === null) {
      code = CODE.null
      detail = 'This field may not be null.'
    } else if (e.keyword === 'discriminator' && params.tagValue === undefined) {
      code = CODE.required // Ajv always sets `tagValue`; it is undefined when the tag is missing
      detail = 'This field is required.'
    } else if (e.keyword === 'discriminator' && params.tagValue === null) {
      code = CODE.null
      detail = 'This field may not be null.'
    } else if (e.keyword === 'discriminator' && typeof params.tagValue !== 'string') {
      code = CODE.invalid
      detail = 'A string is required.'
    } else if (e.keyword === 'discriminator' && (params.tagValue as string).trim() === '') {
      code = CODE.blank
      detail = 'This field may not be blank.'
    } else if (typeof e.data === 'string' && e.data.trim() === '' && BLANK_KEYWORDS.has(e.keyword)) {
      code = CODE.blank
      detail = 'This field may not be blank.'
    }
    const attr = path.length > 0 ? path.join('.') : null
    const key = `${attr}\u0000${code}`
    if (seen.has(key)) continue
    seen.add(key)
    out.push(problem(code, attr, { detail }))
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
  return [...entries].sort((p, q) => compareAttr(p.attr, q.attr) || codePointCompare(p.code, q.code)).slice(0, 100)
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

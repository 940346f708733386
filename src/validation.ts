import { Ajv, type ErrorObject, type FuncKeywordDefinition, type Options, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify'
import fastJsonStringify from 'fast-json-stringify'
import { CODE } from '../schemas/error-codes.js'
import { isWellFormedJson } from '../schemas/text.js'
import { decimalProblems, parseDecimal, toBig, type DecimalBounds, type DecimalProblem } from './decimal.js'
import type { SchemaCode } from './errors.js'

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv

/**
 * Validation builds no more errors than this: a hostile body could raise one per key or item, and
 * an answer lists 100. Up to this many, the answer's 100 are the first in sort order of all.
 */
export const MAX_SCHEMA_ERRORS = 1000
const TOO_MANY = '__tooManySchemaErrors'

/**
 * Makes a validator's generated code stop once it holds MAX_SCHEMA_ERRORS errors (Ajv has no such
 * option): after each error it raises, and at each turn of a loop over an array or an object's keys
 * (where a keyword's errors, complete by then, may have taken it past). It throws the errors, and
 * `capped` below catches them.
 */
function stopAtMaxErrors(code: string): string {
  const stop = `if(errors>=${MAX_SCHEMA_ERRORS}){throw {${TOO_MANY}: vErrors};}`
  return code
    .replace(/\berrors\+\+;/g, `errors++;${stop}`)
    .replace(/for\((?:const key\d+ in \w+|let i\d+=0; i\d+<len\d+; i\d+\+\+)\)\{/g, (loop) => loop + stop)
}

function makeAjv(coerceTypes: boolean, allErrors = true): Ajv {
  const options: Options = {
    removeAdditional: false, // the contract rejects unknown fields instead of dropping them
    allErrors, // one response lists every problem
    ...(allErrors ? { code: { process: stopAtMaxErrors } } : {}),
    useDefaults: true,
    discriminator: true,
    strict: true,
    allowUnionTypes: true, // decimals are a string or a number
    coerceTypes,
    verbose: true // errors carry their data and schema: `null` detection and per-schema codes
  }
  const ajv = new Ajv(options)
  addFormats(ajv)
  withoutYearZero(ajv, 'date')
  withoutYearZero(ajv, 'date-time')
  // `errorCodes: {keyword: code}` on a schema names the contract code its failures report.
  ajv.addKeyword({ keyword: 'errorCodes', schemaType: 'object' })
  // `errorDetails: {keyword: name}` names the catalogue's wording of its failures (SCHEMA_DETAILS).
  ajv.addKeyword({ keyword: 'errorDetails', schemaType: 'object' })
  ajv.addKeyword(decimalKeyword)
  ajv.addKeyword(omitEmptyKeyword)
  ajv.addKeyword(jsonValueKeyword)
  return ajv
}

/**
 * Year 0000 is a date to ajv-formats (ISO 8601's year zero) but not to PostgreSQL, which has no
 * year 0 and refuses it on insert: such a date is `invalid_date` here, not a failed create later.
 */
function withoutYearZero(ajv: Ajv, name: 'date' | 'date-time'): void {
  const format = ajv.formats[name] as {
    validate: (s: string) => boolean
    compare?: (a: string, b: string) => number | undefined
  }
  ajv.addFormat(name, {
    type: 'string',
    validate: (s: string) => !s.startsWith('0000') && format.validate(s),
    ...(format.compare ? { compare: format.compare } : {})
  })
}

type KeywordError = { keyword: string; message: string; params: { code: SchemaCode } }
type ValidateWithErrors = ((...args: never[]) => boolean) & { errors?: KeywordError[] }

/**
 * The detail of each problem of a decimal (`min_value` for a decimal that must be positive), in
 * words that fit a decimal string and a JSON number alike.
 */
const DECIMAL_MESSAGES: Record<
  DecimalProblem | typeof CODE.blank | typeof CODE.min_value,
  (bounds: DecimalBounds) => string
> = {
  invalid_decimal: () => 'A valid decimal number is required (a decimal string or a JSON number).',
  max_digits: (bounds) => 'Ensure that there are no more than ' + bounds.integer + ' digits before the decimal point.',
  max_decimal_places: (bounds) => 'Ensure that there are no more than ' + bounds.scale + ' decimal places.',
  blank: () => 'This field may not be blank.',
  min_value: () => 'Ensure this value is greater than zero.'
}

/** `max_digits` of a JSON number that cannot be exact (more than 15 significant digits): only it is told to come as a string. */
const TOO_PRECISE = 'A JSON number may carry at most 15 significant digits: send this value as a decimal string.'

/**
 * `decimal: {integer, scale, positive?}`: an exact decimal within its bounds. Every decimal may be
 * sent as a decimal string or as a JSON number, so a schema whose `type` leaves either out does not
 * compile (its numbers would be refused by `type` before this keyword saw them): build decimals
 * with `Decimal` of schemas/fields.ts.
 */
const decimalKeyword = {
  keyword: 'decimal',
  schemaType: 'object',
  errors: true,
  compile(bounds: DecimalBounds & { positive?: boolean }, parentSchema: { type?: unknown }) {
    const types = [parentSchema.type].flat()
    if (!types.includes('string') || !types.includes('number')) {
      throw new Error(
        `a decimal schema must take a string and a number (type ${JSON.stringify(parentSchema.type)}): use Decimal()`
      )
    }
    return function validateDecimal(data: unknown): boolean {
      const self = validateDecimal as ValidateWithErrors
      if (typeof data !== 'string' && typeof data !== 'number') return true // the type keyword reports it
      // A required decimal sent as an empty or whitespace-only string is `blank`.
      const problems: Array<keyof typeof DECIMAL_MESSAGES> =
        typeof data === 'string' && data.trim() === '' ? [CODE.blank] : decimalProblems(data, bounds)
      if (problems.length === 0 && bounds.positive && !toBig(data).gt(0)) problems.push(CODE.min_value)
      if (problems.length === 0) return true
      const inexact = typeof data === 'number' && typeof parseDecimal(data) === 'string'
      self.errors = problems.map((code) => ({
        keyword: 'decimal',
        message: code === CODE.max_digits && inexact ? TOO_PRECISE : DECIMAL_MESSAGES[code](bounds),
        params: { code }
      }))
      return false
    }
  }
} as unknown as FuncKeywordDefinition

/**
 * `omitEmpty: true` on an object ("Empty values"): an optional field sent as `null` or as a
 * blank string is treated as omitted (its default, if any, applies).
 */
const omitEmptyKeyword = {
  keyword: 'omitEmpty',
  type: 'object',
  schemaType: 'boolean',
  modifying: true,
  before: 'required',
  validate: function omitEmpty(
    _on: boolean,
    data: Record<string, unknown>,
    parentSchema: { required?: string[]; properties?: Record<string, { default?: unknown }> }
  ): boolean {
    const properties = parentSchema.properties ?? {}
    const required = parentSchema.required ?? []
    for (const key of Object.keys(data)) {
      const value = data[key]
      if (value !== null && !(typeof value === 'string' && value.trim() === '')) continue
      const property = properties[key]
      if (!property || required.includes(key)) continue
      delete data[key]
      if (property.default !== undefined) data[key] = structuredClone(property.default)
    }
    return true
  }
} as unknown as FuncKeywordDefinition

/** `jsonValue: {maxBytes, maxDepth}`: any JSON value that PostgreSQL can store, bounded. */
const jsonValueKeyword = {
  keyword: 'jsonValue',
  schemaType: 'object',
  errors: true,
  validate: function validateJsonValue(limits: { maxBytes: number; maxDepth: number }, data: unknown): boolean {
    const self = validateJsonValue as ValidateWithErrors
    const fail = (code: SchemaCode, message: string) => {
      self.errors = [{ keyword: 'jsonValue', message, params: { code } }]
      return false
    }
    if (data === null) return fail(CODE.null, 'This field may not be null.')
    if (data === undefined) return true
    const depth = jsonDepth(data, limits.maxDepth + 1)
    if (depth > limits.maxDepth) {
      return fail(CODE.max_depth, `Ensure this value is nested at most ${limits.maxDepth} levels deep.`)
    }
    if (!isWellFormedJson(data)) return fail(CODE.invalid, 'Text must be well-formed Unicode without U+0000.')
    if (Buffer.byteLength(JSON.stringify(data), 'utf8') > limits.maxBytes) {
      return fail(CODE.max_length, `Ensure this value is at most ${limits.maxBytes} bytes serialised.`)
    }
    return true
  }
} as unknown as FuncKeywordDefinition

/** Nesting depth of a JSON value (a scalar is 0), counting no further than `stopAt`. */
function jsonDepth(value: unknown, stopAt: number): number {
  if (value === null || typeof value !== 'object') return 0
  if (stopAt <= 0) return 1
  let deepest = 0
  for (const child of Object.values(value)) {
    deepest = Math.max(deepest, jsonDepth(child, stopAt - 1))
    if (deepest >= stopAt) break
  }
  return deepest + 1
}

/** Bodies are never coerced ("22" is not 22); query strings, params and headers are. */
const bodyAjv = makeAjv(false)
const coercingAjv = makeAjv(true)
/** Validators that stop at the first error: the judge when a full one stopped at MAX_SCHEMA_ERRORS. */
const firstErrorAjv = { body: makeAjv(false, false), coerced: makeAjv(true, false) }

/** What the answer says when validation stopped early. */
const tooManyErrors = {
  keyword: 'maxErrors',
  instancePath: '',
  schemaPath: '#',
  params: { code: CODE.invalid },
  message: `The body has too many problems: validation stopped after ${MAX_SCHEMA_ERRORS}; the first of those are listed.`
} as ErrorObject

/**
 * A validator whose errors stop at MAX_SCHEMA_ERRORS. When they do, the errors may include some of
 * a union's branch that another branch would have excused: a validator that stops at the first
 * error (compiled on first need) then decides whether the data is valid at all.
 */
function capped(full: ValidateFunction, firstError: () => ValidateFunction): ValidateFunction {
  const validate = function cappedValidate(data: unknown): boolean {
    try {
      const valid = full(data)
      validate.errors = full.errors
      return valid
    } catch (err) {
      if (typeof err !== 'object' || err === null || !(TOO_MANY in err)) throw err
      if (firstError()(data)) {
        validate.errors = null
        return true
      }
      validate.errors = [...(err as Record<typeof TOO_MANY, ErrorObject[]>)[TOO_MANY], tooManyErrors]
      return false
    }
  } as ValidateFunction
  validate.schema = full.schema
  return validate
}

/**
 * Validators and response serialisers are compiled once per schema and process, not once per
 * app: the tests build hundreds of apps in one process, and Fastify hands each app its own copy
 * of a route's schema. Validators are found by the schema's text, serialisers by the schema.
 */
const validators = new Map<string, ValidateFunction>()
const serializers = new WeakMap<object, (data: unknown) => string>()

function compileOnce(ajv: Ajv, schema: object): ValidateFunction {
  const kind = ajv === bodyAjv ? 'body' : 'coerced'
  const key = kind + ' ' + JSON.stringify(schema)
  let validate = validators.get(key)
  if (!validate) {
    let firstError: ValidateFunction | undefined
    validate = capped(ajv.compile(schema), () => (firstError ??= firstErrorAjv[kind].compile(schema)))
    validators.set(key, validate)
  }
  return validate
}

/** A validator for a body schema, for services that validate by hand (the order in which checks win). */
export function compileBody(schema: object): ValidateFunction {
  return compileOnce(bodyAjv, schema)
}

/** An integer as a path or a query string must write it: plain digits, no sign but a minus, no leading zero. */
const CANONICAL_INTEGER = /^(0|-?[1-9][0-9]*)$/

const NOT_CANONICAL =
  'A whole number written in plain digits is required (no plus sign, leading zero, point, exponent or space).'

/**
 * A validator of path parameters or a query string that refuses an integer not written as one:
 * coercion would take `1.0`, `+1`, `01`, `1e0` or `0x1` as 1, so another spelling of a part number
 * would name the same part. Each such value is `invalid` at its name, in place of the other
 * problems found there.
 */
function canonicalIntegers(validate: ValidateFunction, schema: object): ValidateFunction {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {}
  const integers = Object.keys(properties).filter((name) => properties[name]!.type === 'integer')
  if (integers.length === 0) return validate
  const check = function checkCanonical(data: unknown): boolean {
    const values = (data ?? {}) as Record<string, unknown>
    const spelled = integers.filter((name) => typeof values[name] === 'string' && !CANONICAL_INTEGER.test(values[name]))
    const raw = spelled.map((name) => values[name])
    const valid = validate(data)
    if (spelled.length === 0) {
      check.errors = validate.errors
      return valid
    }
    const paths = new Set(spelled.map((name) => `/${name}`))
    check.errors = [
      ...(validate.errors ?? []).filter((e) => !paths.has(e.instancePath)),
      ...spelled.map((name, i): ErrorObject => ({
        keyword: 'type',
        instancePath: `/${name}`,
        schemaPath: `#/properties/${name}/type`,
        params: { code: CODE.invalid },
        message: NOT_CANONICAL,
        data: raw[i]
      }))
    ]
    return false
  } as ValidateFunction
  check.schema = validate.schema
  return check
}

/** Bodies are validated as sent; path parameters and query strings are coerced, their integers written plainly. */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return compileOnce(bodyAjv, schema as object) as ReturnType<FastifySchemaCompiler<unknown>>
  const validate = compileOnce(coercingAjv, schema as object)
  return (
    httpPart === 'params' || httpPart === 'querystring' ? canonicalIntegers(validate, schema as object) : validate
  ) as ReturnType<FastifySchemaCompiler<unknown>>
}

/** Fastify's default serialiser (fast-json-stringify), compiled once per schema. */
export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) => {
  let serialize = serializers.get(schema as object)
  if (!serialize) {
    serialize = fastJsonStringify(schema as object) as (data: unknown) => string
    serializers.set(schema as object, serialize)
  }
  return serialize
}

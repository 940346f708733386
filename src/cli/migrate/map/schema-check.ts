import type { ValidateFunction } from 'ajv'
import { CODE } from '../../../../schemas/error-codes.js'
import { SECTIONS, type SectionListing } from '../../../../schemas/sections.js'
import { entriesFromAjv, AppError } from '../../../errors.js'
import { examineEntry, requestsOf } from '../../../modules/batches/entries.js'
import { isObject } from '../../../objects.js'
import { compileBody } from '../../../validation.js'

/**
 * The local check of `map check`: each line checked against the service's published schemas
 * (its OpenAPI document, `GET /openapi.json`) before anything is sent. The document writes the
 * service's own Ajv keywords as `x-` extensions (`x-decimal`, `x-error-codes`, …); they are put
 * back, and the schemas compiled by the service's own validator (src/validation.ts), so that each
 * problem comes out with the code and attr the service answers. An entry is taken apart as a
 * batch takes it (src/modules/batches/entries.ts): the account against the validate endpoint's
 * body, each section's requests against its endpoint's body. The rules the document states in
 * plain JSON Schema beside a schema (a note has a body or document paths) are kept: a dry run
 * checks the account only, never its sections, so this is where a section's problems show
 * before the real job (in the schema's codes: `required` at the note's `body` and
 * `document_paths`, where the service says `note_body_or_document_path_not_found`).
 */

/** One problem, as a job's results and the error body give it. */
export interface CheckError {
  code: string
  attr: string | null
  detail?: string
}

/** What failed in one line: the step (`stage` for the account, or the section's name), its code and problems. */
export interface StepFailure {
  step: string | null
  code: string
  errors: CheckError[]
}

type Schema = Record<string, unknown>

const COMPONENT_REF = '#/components/schemas/'
const DATA_IMPORT = '/v1/data-import'

/** The document does not hold what the check needs: an older or other service. */
export class DocumentError extends Error {
  override name = 'DocumentError'
}

/** The `x-` extensions of the document that name the service's own Ajv keywords. */
const KEYWORDS: Record<string, string> = {
  'x-error-codes': 'errorCodes',
  'x-error-details': 'errorDetails',
  'x-omit-empty': 'omitEmpty',
  'x-json-value': 'jsonValue',
  'x-decimal': 'decimal'
}
/** What the document adds for people and other tools, which the service's validator does not take. */
const FOR_PEOPLE = new Set(['description', 'example', 'examples', 'title', 'deprecated', 'readOnly', 'writeOnly'])

const isEmptyValueRef = (s: unknown) => isObject(s) && s.$ref === `${COMPONENT_REF}EmptyValue`

/**
 * A schema of the document as the service validates with it: references resolved, `x-` keywords
 * back to the service's keywords, an optional field's "or an empty value" unwrapped (`omitEmpty`
 * takes care of empty values), a decimal's standard-keyword copy of its bounds dropped (the
 * `decimal` keyword checks them, with its own codes), and annotations left out.
 */
export function serviceSchema(schema: unknown, components: Record<string, unknown>, depth = 0): unknown {
  if (depth > 64) throw new DocumentError('the OpenAPI document nests its schemas too deep to read')
  if (Array.isArray(schema)) return schema.map((s) => serviceSchema(s, components, depth + 1))
  if (!isObject(schema)) return schema
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.startsWith(COMPONENT_REF) ? schema.$ref.slice(COMPONENT_REF.length) : undefined
    const target = name !== undefined ? components[name] : undefined
    if (target === undefined) throw new DocumentError(`the OpenAPI document refers to ${schema.$ref}, which it lacks`)
    return serviceSchema(target, components, depth + 1)
  }
  // `{anyOf: [own, EmptyValue], description?, default?}`: an omittable field of an omitEmpty object.
  const anyOf = schema.anyOf
  if (Array.isArray(anyOf) && anyOf.length === 2 && isEmptyValueRef(anyOf[1])) {
    const own = serviceSchema(anyOf[0], components, depth + 1) as Schema
    return 'default' in schema ? { ...own, default: schema.default } : own
  }
  const out: Schema = {}
  for (const [key, value] of Object.entries(schema)) {
    if (FOR_PEOPLE.has(key)) continue
    if (key in KEYWORDS) out[KEYWORDS[key]!] = structuredClone(value)
    else if (key.startsWith('x-')) continue
    else if (key === 'discriminator' && isObject(value)) out[key] = { propertyName: value.propertyName }
    else if (key === 'properties' && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [name, serviceSchema(sub, components, depth + 1)])
      )
    } else if (value !== null && typeof value === 'object') out[key] = serviceSchema(value, components, depth + 1)
    else out[key] = value
  }
  if (out.decimal !== undefined) {
    // The document's copy of the bounds: a pattern and, for JSON numbers, an integer range.
    delete out.pattern
    delete out.exclusiveMinimum
    delete out.exclusiveMaximum
    out.type = [out.type].flat().map((t) => (t === 'integer' ? 'number' : t))
  }
  if (out.jsonValue !== undefined && isObject(out.not) && out.not.type === 'null') delete out.not
  return out
}

/** The JSON body schema of `POST <path>` in the document. */
function bodySchema(document: Schema, path: string): unknown {
  const paths = isObject(document.paths) ? document.paths : {}
  const operation = isObject(paths[path]) && isObject(paths[path].post) ? paths[path].post : undefined
  const content = isObject(operation?.requestBody) ? operation.requestBody.content : undefined
  const json = isObject(content) ? content['application/json'] : undefined
  if (!isObject(json) || json.schema === undefined) {
    throw new DocumentError(`the service's OpenAPI document has no JSON body for POST ${path}: is it this service?`)
  }
  return json.schema
}

const withoutSlash = (path: string) => path.replace(/\/+$/, '')

/** The account's problems as the service's stage reports them: `account_failed_validation`, attrs in the account. */
const accountFailure = (errors: CheckError[]): StepFailure => ({
  step: 'stage',
  code: CODE.account_failed_validation,
  errors
})

/** Ledger numbers are the service's to give: a stand-in lets a per-ledger section's request be checked. */
const LOCAL_LEDGER = 'L-CHECKED-LOCALLY'

/**
 * A checker of batch entries built from the service's OpenAPI document: for each entry the
 * failures its schemas find (none: the line passes the local check). Business rules that need
 * the service (an account already imported, a supplier's settings, dates against today) are the
 * dry run's to find.
 */
export function entryChecker(document: unknown, sections: readonly SectionListing[] = SECTIONS) {
  if (!isObject(document) || !isObject(document.paths)) {
    throw new DocumentError("the service's answer at /openapi.json is not an OpenAPI document")
  }
  const components =
    isObject(document.components) && isObject(document.components.schemas) ? document.components.schemas : {}
  const compile = (path: string): ValidateFunction =>
    compileBody(serviceSchema(bodySchema(document, path), components) as object)
  const account = compile(`${DATA_IMPORT}/validate-account`)
  const validators = new Map(sections.map((s) => [s.name, compile(DATA_IMPORT + withoutSlash(s.path))]))
  const names = sections.map((s) => s.name)

  return function checkEntry(entry: unknown): StepFailure[] {
    const supplier = isObject(entry) && isObject(entry.account) ? entry.account.import_supplier : undefined
    const examined = examineEntry(entry, 0, typeof supplier === 'string' ? supplier : '', names)
    if (examined.failure) {
      const error = examined.failure.error
      return [{ step: examined.failure.step, code: error.code, errors: error.errors }]
    }
    const raw = examined.raw
    const failures: StepFailure[] = []
    // The validator may fill in defaults: it is given a copy, the line stays as written.
    const data = structuredClone(raw.account)
    if (!account(data)) failures.push(accountFailure(entriesFromAjv(account.errors ?? [])))
    const ref = {
      import_supplier: typeof supplier === 'string' ? supplier : '',
      external_account_number: examined.external ?? ''
    }
    const ledgers =
      isObject(raw.account) && Array.isArray(raw.account.ledgers)
        ? raw.account.ledgers.flatMap((l) =>
            isObject(l) && typeof l.ledger_code === 'string'
              ? [{ ledger_code: l.ledger_code, ledger_number: LOCAL_LEDGER }]
              : []
          )
        : [{ ledger_code: 'ENERGY', ledger_number: LOCAL_LEDGER }]
    for (const section of sections) {
      const value = raw[section.name]
      if (value === undefined) continue
      const validate = validators.get(section.name)!
      const errors: CheckError[] = []
      let code: string = CODE.invalid_request
      try {
        for (const { request, root } of requestsOf(section, structuredClone(value), ref, ledgers)) {
          if (validate(request)) continue
          for (const e of entriesFromAjv(validate.errors ?? [])) {
            errors.push({ ...e, attr: e.attr === null ? (root ? root.slice(0, -1) : null) : root + e.attr })
          }
        }
      } catch (err) {
        if (!(err instanceof AppError)) throw err
        code = err.code
        errors.push(...err.errors)
      }
      if (errors.length > 0) failures.push({ step: section.name, code, errors })
    }
    return failures
  }
}

/** A line that is not JSON, as a job reports it (`invalid_request`, `invalid` at the whole line). */
export function notJson(text: string): StepFailure {
  let detail = 'The line is not JSON.'
  try {
    JSON.parse(text)
  } catch (err) {
    detail = `The line is not JSON: ${(err as Error).message}`
  }
  return { step: 'stage', code: CODE.invalid_request, errors: [{ code: CODE.invalid, attr: null, detail }] }
}

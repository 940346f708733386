import fc from 'fast-check'
import { AccountData } from '../../schemas/account.js'
import { TRIMMED_PATTERN } from '../../schemas/text.js'
import { TRANSACTION_TYPES } from '../../schemas/transactions.js'
import { branchFor, type Account, type Schema } from './arbitraries.js'

/**
 * One broken field of a valid account: the body to send (`raw` replaces the RAW placeholder in
 * the JSON text, for numbers JSON.stringify cannot write) and the attr the service must report.
 */
export interface Mutation {
  kind: string
  attr: string
  body: Account
  raw?: string
}

/** Stands in for a raw JSON number (`1e999`) until the body is serialised. */
const RAW = '@@RAW@@'

/** The JSON text of a mutated body. */
export function serialise(m: Mutation): string {
  const json = JSON.stringify(m.body)
  return m.raw === undefined ? json : json.replace(JSON.stringify(RAW), m.raw)
}

/** A place in a valid account: its path, schema and value, and whether its parent requires it. */
interface Site {
  path: Array<string | number>
  schema: Schema
  value: unknown
  required: boolean
}

/** Every field, object and array item of `value` against `schema` (metadata values are not entered). */
function sites(
  value: unknown,
  schema: Schema,
  path: Array<string | number> = [],
  required = true,
  out: Site[] = []
): Site[] {
  if (schema.oneOf) {
    const branch = branchFor(schema, value)
    if (!branch) return out
    schema = branch
  }
  out.push({ path, schema, value, required })
  if (schema.jsonValue || value === null || typeof value !== 'object') return out
  if (Array.isArray(value)) {
    value.forEach((item, i) => sites(item, schema.items, [...path, i], true, out))
  } else {
    const requiredKeys: string[] = schema.required ?? []
    for (const [key, child] of Object.entries(value)) {
      if (schema.properties?.[key]) {
        sites(child, schema.properties[key], [...path, key], requiredKeys.includes(key), out)
      }
    }
  }
  return out
}

type Change = { kind: string; value?: unknown; drop?: boolean; key?: string; raw?: string }

/** Nested arrays or objects `depth` levels deep around a scalar, as raw JSON text (JSON.stringify would overflow the stack). */
function nested(depth: number, asObject: boolean): string {
  return asObject ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '['.repeat(depth) + '1' + ']'.repeat(depth)
}

const deep = (min: number, max: number) =>
  fc.tuple(fc.integer({ min, max }), fc.boolean()).map(([d, o]) => nested(d, o))

/** A non-blank string of exactly `n` code points (with astral and combining characters). */
const longText = (n: number) =>
  fc.constantFrom('a', 'é', '\u{1F600}', 'e\u0301').map((c) => {
    const unitLength = Array.from(c).length
    return c.repeat(Math.floor(n / unitLength)) + 'a'.repeat(n % unitLength)
  })

const NAN_LIKE = [
  'NaN',
  'Infinity',
  '-Infinity',
  '1e999',
  '1e5',
  '1E2',
  '0x10',
  '\u0661\u0662',
  '\uFF11\uFF12',
  ' 1',
  '+1',
  '.5',
  '1.',
  '--1',
  '1_000',
  'null'
]
const BAD_DATES = [
  '2023-02-30',
  '0000-01-01',
  '2023-13-01',
  '2023-1-01',
  '20230101',
  '\u0662\u0660\u0662\u0663-\u0660\u0661-\u0660\u0661',
  '\uFF12\uFF10\uFF12\uFF13-01-01',
  '2023-01-01T00:00:00Z',
  'NaN',
  'Infinity',
  'today',
  '2023-01-01\u0000'
]
const ILL_FORMED = ['\uD800', '\uDC00', '\u0000', 'a\uDBFF', '\uDFFFz']

/** Inserts `piece` into `s` at a code point boundary chosen by `at` (0–1). */
function insertAt(s: string, piece: string, at: number): string {
  const cps = Array.from(s)
  const i = Math.floor(at * (cps.length + 1))
  return [...cps.slice(0, i), piece, ...cps.slice(i)].join('')
}

const wrongTypeFor = (schema: Schema): unknown[] => {
  if (schema.decimal) return [true, false, [], {}, ['1'], { value: 1 }]
  switch (schema.type) {
    case 'string':
      return [1, 0, true, [], ['x'], {}, { x: 'y' }]
    case 'integer':
      return ['5', true, [], {}, 1.5]
    case 'boolean':
      return ['true', 'false', 1, 0, [], {}]
    case 'object':
      return ['x', 1, true, [], [{}]]
    case 'array':
      return ['x', 1, true, {}]
  }
  return []
}

/** The changes that break a site, each with the attr it must be reported at (relative to the site). */
function changesFor(site: Site): Array<fc.Arbitrary<Change>> {
  const { schema, value, required } = site
  const out: Array<fc.Arbitrary<Change>> = []
  const isRoot = site.path.length === 0
  if (schema.jsonValue) {
    out.push(deep(33, 300).map((raw) => ({ kind: 'metadata value too deep', value: RAW, raw })))
    out.push(fc.constantFrom(...ILL_FORMED).map((c) => ({ kind: 'metadata value ill-formed', value: { text: c } })))
    out.push(fc.constantFrom(...ILL_FORMED).map((c) => ({ kind: 'metadata key ill-formed', value: { [`k${c}`]: 1 } })))
    out.push(
      fc
        .integer({ min: 16 * 1024, max: 20 * 1024 })
        .map((n) => ({ kind: 'metadata value too large', value: 'v'.repeat(n) }))
    )
    out.push(fc.constant({ kind: 'metadata value null', value: null }))
    return out
  }
  if (!isRoot) {
    out.push(fc.constantFrom(...wrongTypeFor(schema)).map((v) => ({ kind: 'wrong type', value: v })))
    if (schema.type !== 'object' && schema.type !== 'array') {
      out.push(fc.oneof(deep(2, 50), deep(1000, 100_000)).map((raw) => ({ kind: 'deep nesting', value: RAW, raw })))
    }
    if (required) out.push(fc.constant({ kind: 'null', value: null }))
  }
  if (schema.decimal) {
    const { integer, scale, positive } = schema.decimal
    out.push(
      fc.boolean().map((neg) => ({ kind: 'too many digits', value: (neg ? '-' : '') + '1' + '0'.repeat(integer) }))
    )
    out.push(
      fc
        .integer({ min: 0, max: 99 })
        .map((n) => ({ kind: 'too many decimal places', value: `${n}.${'0'.repeat(scale)}1` }))
    )
    // Numbers JavaScript itself cannot hold exactly: the point of the case.
    out.push(
      fc
        // eslint-disable-next-line @typescript-eslint/no-loss-of-precision
        .constantFrom(0.12345678901234567, 1234567.123456789, 12345678901234567890)
        .map((v) => ({ kind: 'number too precise', value: v }))
    )
    out.push(fc.constantFrom(...NAN_LIKE).map((v) => ({ kind: 'NaN-like string', value: v })))
    out.push(fc.constantFrom('1e999', '-1e999', '1e400').map((raw) => ({ kind: 'huge JSON number', value: RAW, raw })))
    if (positive) {
      out.push(fc.constantFrom('0', '-1', 0, -0.5, '-0.01', '0.000').map((v) => ({ kind: 'not positive', value: v })))
    }
    if (required) out.push(fc.constantFrom('', '  ').map((v) => ({ kind: 'blank', value: v })))
    return out
  }
  switch (schema.type) {
    case 'string': {
      const choices: string[] | undefined =
        schema.enum ?? (schema.const !== undefined ? [...TRANSACTION_TYPES] : undefined)
      if (choices) {
        out.push(
          fc
            .oneof(
              fc.constantFrom('\u0301', '\u{1F600}', ' ', '\u200F', '\u0000').map((c) => `${value}${c}`),
              fc.constant(String(value).toLowerCase()),
              fc.string({ minLength: 1, maxLength: 20 }),
              longText(100_000)
            )
            .filter((v) => !choices.includes(v) && v.trim() !== '')
            .map((v) => ({ kind: 'bad choice', value: v }))
        )
      } else if (schema.format === 'date') {
        out.push(fc.constantFrom(...BAD_DATES).map((v) => ({ kind: 'bad date', value: v })))
      } else {
        const max: number = schema.maxLength
        out.push(
          fc
            .oneof(fc.integer({ min: max + 1, max: max + 3 }), fc.constant(100_000), fc.constant(3 * 1024 * 1024))
            .chain(longText)
            .map((v) => ({ kind: 'too long', value: v }))
        )
        out.push(
          fc
            .tuple(fc.constantFrom(...ILL_FORMED), fc.double({ min: 0, max: 1, noNaN: true }))
            .map(([c, at]) => ({ kind: 'ill-formed text', value: insertAt(String(value), c, at) }))
        )
        if (schema.pattern === TRIMMED_PATTERN) {
          out.push(
            fc.constantFrom(' ', '\t', '\u00A0', '\u3000').map((c) => ({ kind: 'untrimmed', value: c + String(value) }))
          )
        }
      }
      if (required) out.push(fc.constantFrom('', ' ', '\n\t', '\u3000').map((v) => ({ kind: 'blank', value: v })))
      break
    }
    case 'integer':
      out.push(
        fc
          .constantFrom(schema.minimum - 1, schema.maximum + 1, -1e9, 1e21)
          .map((v) => ({ kind: 'out of range', value: v }))
      )
      out.push(fc.constantFrom('1e999', '-1e999').map((raw) => ({ kind: 'huge JSON number', value: RAW, raw })))
      break
    case 'object': {
      const present = ((schema.required as string[]) ?? []).filter((k) => (value as Account)[k] !== undefined)
      if (present.length > 0) {
        out.push(fc.constantFrom(...present).map((key) => ({ kind: 'required field dropped', drop: true, key })))
      }
      out.push(
        fc
          .tuple(
            fc.oneof(
              fc.string({ minLength: 0, maxLength: 12 }),
              fc.constantFrom('Type', 'ledger_balance ', 'amount\u0301', 'x'.repeat(5000), '\u{1F600}', 'a.b', '0')
            ),
            fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant(null))
          )
          .filter(
            ([key]) => !(key in (schema.properties ?? {})) && !['__proto__', 'constructor', 'prototype'].includes(key)
          )
          .map(([key, v]) => ({ kind: 'unknown field', key, value: v }))
      )
      break
    }
    case 'array': {
      const items = value as unknown[]
      const { maxItems, minItems } = schema
      if (items.length > 0 && maxItems !== undefined) {
        out.push(
          fc.integer({ min: 1, max: 2 }).map((extra) => ({
            kind: 'too many items',
            value: Array.from({ length: maxItems + extra }, (_, i) => structuredClone(items[i % items.length]))
          }))
        )
      }
      if (minItems) out.push(fc.constant({ kind: 'too few items', value: [] }))
      if (schema.uniqueItems && items.length > 0) {
        out.push(fc.constant({ kind: 'duplicate items', value: [items[0], items[0]] }))
      }
      break
    }
  }
  return out
}

function parentAt(body: Account, path: Array<string | number>): any {
  let node: any = body
  for (const part of path) node = node[part]
  return node
}

/** Breaks one field of `account` (never inside a metadata value) and names the attr it must be reported at. */
export function mutation(account: Account): fc.Arbitrary<Mutation> {
  const all = sites(account, AccountData as Schema)
    .map((site) => ({ site, changes: changesFor(site) }))
    .filter((s) => s.changes.length > 0)
  return fc.constantFrom(...all).chain(({ site, changes }) =>
    fc.oneof(...changes).map((change): Mutation => {
      const body = structuredClone(account)
      const attrPath = change.key !== undefined ? [...site.path, change.key] : site.path
      if (change.drop) {
        delete parentAt(body, site.path)[change.key!]
      } else if (attrPath.length === 0) {
        throw new Error('the root is not replaced')
      } else {
        parentAt(body, attrPath.slice(0, -1))[attrPath[attrPath.length - 1]!] = change.value
      }
      return {
        kind: change.kind,
        attr: attrPath.join('.'),
        body,
        ...(change.raw !== undefined ? { raw: change.raw } : {})
      }
    })
  )
}

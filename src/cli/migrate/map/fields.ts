/**
 * A mapping's fields against the batch entry's schema (the service's own TypeBox schemas): a
 * field the entry does not have, at any depth, is named before a line is written or sent.
 * Checked on every line as it is written (the line parsed once, to take out its null members too);
 * the partly written files are removed when a field is unknown.
 */
import { Type } from 'typebox'
import { AccountData } from '../../../../schemas/account.js'
import { accountRef } from '../../../../schemas/post-import.js'
import { SECTION_REQUESTS } from '../../../../schemas/section-requests.js'
import { SECTIONS, type SectionName } from '../../../../schemas/sections.js'
import { MapError } from './errors.js'

type Schema = Record<string, unknown>

/**
 * What an entry holds under each section's name, by its form (schemas/sections.ts): a list section
 * its list; one object the request; per ledger, the request without the account and the ledger
 * number (the entry's own), or a list of them.
 */
const SECTION_VALUES = Object.fromEntries(
  SECTIONS.map((s) => {
    const request = SECTION_REQUESTS[s.name]
    if ('list' in s.entry) return [s.name, (request.properties as Record<string, object>)[s.entry.list]]
    if ('object' in s.entry) return [s.name, request]
    const { ledger_number: _number, ...fields } = request.properties as Record<string, object>
    for (const name of Object.keys(accountRef)) delete fields[name]
    const perLedger = Type.Object(fields as Record<string, never>, { additionalProperties: false })
    return [s.name, { anyOf: [perLedger, Type.Array(perLedger)] }]
  })
) as Record<SectionName, object>

export const ENTRY_SCHEMA: object = {
  type: 'object',
  additionalProperties: false,
  properties: { account: AccountData, ...SECTION_VALUES }
}

const variants = (s: Schema): Schema[] => [
  s,
  ...(['anyOf', 'oneOf', 'allOf'] as const).flatMap((k) =>
    Array.isArray(s[k]) ? (s[k] as Schema[]).flatMap(variants) : []
  )
]

/** The fields an object may have, each with its schemas; null when any field goes (free JSON). */
function fieldsOf(schemas: Schema[]): Map<string, Schema[]> | null {
  const fields = new Map<string, Schema[]>()
  let closed = false
  for (const v of schemas.flatMap(variants)) {
    if (v.properties && typeof v.properties === 'object') {
      closed = true
      for (const [k, s] of Object.entries(v.properties as Record<string, Schema>)) {
        fields.set(k, [...(fields.get(k) ?? []), s])
      }
    }
  }
  return closed ? fields : null
}

const itemsOf = (schemas: Schema[]): Schema[] =>
  schemas.flatMap(variants).flatMap((v) => (v.items && typeof v.items === 'object' ? [v.items as Schema] : []))

/** What the schemas allow at one place of an entry: its fields (null: any), and its items'. */
interface Place {
  path: string
  schemas: Schema[]
  fields?: Map<string, Place> | null
  known?: string[]
  items?: Place
}

const place = (path: string, schemas: Schema[]): Place => ({ path, schemas })

/**
 * Checks the fields of every entry written, and takes out the members whose value is null (an
 * empty cell means the field is not given), in one walk of each parsed line. What the schemas
 * allow at each place is worked out once, the first time an entry reaches it.
 */
export function createEntryChecker() {
  const root = place('', [ENTRY_SCHEMA as Schema])
  const unknown = new Map<string, string[]>()

  const fieldsAt = (at: Place): Map<string, Place> | null => {
    if (at.fields === undefined) {
      const fields = fieldsOf(at.schemas)
      at.known = fields ? [...fields.keys()] : []
      at.fields = fields
        ? new Map([...fields].map(([k, schemas]) => [k, place(at.path === '' ? k : `${at.path}.${k}`, schemas)]))
        : null
    }
    return at.fields
  }

  const walk = (value: unknown, at: Place | undefined): unknown => {
    if (Array.isArray(value)) {
      if (at) at.items ??= place(`${at.path}[]`, itemsOf(at.schemas))
      const items = at?.items && at.items.schemas.length > 0 ? at.items : undefined
      return value.map((v) => walk(v, items))
    }
    if (value === null || typeof value !== 'object') return value
    const fields = at ? fieldsAt(at) : null
    const out: Record<string, unknown> = {}
    for (const [key, inner] of Object.entries(value)) {
      if (inner === null) continue
      const next = fields?.get(key)
      if (fields && !next && at) {
        const path = at.path === '' ? key : `${at.path}.${key}`
        if (!unknown.has(path)) unknown.set(path, at.known!)
      }
      out[key] = walk(inner, next)
    }
    return out
  }

  return {
    /** The entry without its null members; its unknown fields noted. */
    line: (entry: unknown): unknown => walk(entry, root),
    /** Throws, naming every field of the entries seen that a batch entry does not have. */
    check(label: string): void {
      if (unknown.size === 0) return
      const lines = [...unknown].map(
        ([path, known]) =>
          `  ${path}: not a field of ${path.includes('.') ? path.slice(0, path.lastIndexOf('.')) : 'a batch entry'} (it has ${known.join(', ')})`
      )
      throw new MapError(
        `${label} gives ${unknown.size === 1 ? 'a field' : `${unknown.size} fields`} a batch entry does not have (nothing was written):\n${lines.join('\n')}`
      )
    }
  }
}

/**
 * The migration client's input: newline-delimited JSON, one account per line. A line is either
 * an envelope `{"account": {...}, "notes": [...], ...}` carrying the account and its post-import
 * data, or a bare account object (no post-import data). Each post-import key holds what the
 * endpoint's request body holds without the account reference (`import_supplier`,
 * `external_account_number`, which the client adds from the account).
 */
import { CLIENT_CODE, CODE } from '../../../schemas/error-codes.js'
import { SECTION_NAMES, SECTIONS as LISTINGS, type SectionName } from '../../../schemas/sections.js'
import { isObject, type Json } from '../http.js'

/** Post-import data an envelope may carry, in the order it is sent after creation. */
export const SECTIONS = SECTION_NAMES
export type Section = SectionName

/** A problem in the client's own words, shaped like an entry of the service's error body. */
export interface Problem {
  code: string
  attr: string | null
  detail: string
}

export interface Item {
  account: Json
  /** Post-import data by section; a section not given is absent. */
  sections: Partial<Record<Section, unknown>>
}

/** How a line holds each section: a list of items, one object, or one object per ledger (one or a list). */
const FORM = new Map<string, (typeof LISTINGS)[number]['entry']>(LISTINGS.map((s) => [s.name, s.entry]))

/** The account and its post-import data of one input line, or why the line cannot be used. */
export function parseLine(text: string): { item: Item } | { problems: Problem[] } {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    return {
      problems: [
        { code: CLIENT_CODE.invalid_json, attr: null, detail: `The line is not JSON: ${(err as Error).message}` }
      ]
    }
  }
  if (!isObject(value)) {
    return { problems: [{ code: CLIENT_CODE.invalid_line, attr: null, detail: 'The line is not a JSON object.' }] }
  }
  if (!('account' in value)) return { item: { account: value, sections: {} } }

  const problems: Problem[] = []
  const sections: Item['sections'] = {}
  for (const [key, section] of Object.entries(value)) {
    if (key === 'account') continue
    if (!(SECTIONS as readonly string[]).includes(key)) {
      problems.push({
        code: CODE.unexpected_field,
        attr: key,
        detail: `Unknown key ${key}: a line holds account, ${SECTIONS.join(', ')}.`
      })
      continue
    }
    const name = key as Section
    if (section === null || section === undefined) continue
    const form = FORM.get(name)!
    const wanted = 'list' in form ? 'an array' : 'object' in form ? 'an object' : 'an object or an array of objects'
    const fits =
      'list' in form
        ? Array.isArray(section)
        : 'object' in form
          ? isObject(section)
          : isObject(section) || (Array.isArray(section) && section.every(isObject))
    if (!fits) problems.push({ code: CLIENT_CODE.invalid_line, attr: key, detail: `${key} must be ${wanted}.` })
    else sections[name] = section
  }
  if (!isObject(value.account)) {
    problems.push({ code: CLIENT_CODE.invalid_line, attr: 'account', detail: 'account must be an object.' })
  }
  if (problems.length > 0) return { problems }
  return { item: { account: value.account as Json, sections } }
}

/** The external account number of a line, when it can be read (for the report), else null. */
export function externalOf(account: Json | undefined): string | null {
  const value = account?.external_account_number
  return typeof value === 'string' ? value : null
}

/** The external account number as written in a line (also one that is not JSON), when it can be seen. */
export function guessExternal(text: string): string | null {
  const m = /"external_account_number"\s*:\s*"((?:[^"\\]|\\.){1,128})"/.exec(text)
  if (!m) return null
  try {
    return JSON.parse(`"${m[1]}"`) as string
  } catch {
    return null
  }
}

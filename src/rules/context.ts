import type { ErrorCode } from '../../schemas/error-codes.js'
import { problem, type DetailArgs, type ErrorEntry } from '../errors.js'

/**
 * What a business rule needs: today's date, whether a field passed its schema checks (a rule runs
 * only when every field it reads did), and where to report.
 */
export interface RuleContext {
  /** Today (UTC) as `YYYY-MM-DD`. */
  today: string
  /** True when the value at `path` (and everything inside it) passed its schema checks. */
  clean(...paths: string[]): boolean
  /**
   * True when the value at `path` itself passed its checks (its type, its length), whatever is
   * wrong inside it: for a rule that reads a list's length, or reads only some of its items' fields.
   */
  shallow(...paths: string[]): boolean
  /** Reports `code` at `attr`, in the catalogue's wording (`problem` in src/errors.ts). */
  report<C extends ErrorCode>(code: C, attr: string | null, ...args: DetailArgs<C>): void
  readonly errors: ErrorEntry[]
}

/** Today's UTC date. */
export function utcToday(now: Date = new Date()): string {
  return now.toISOString().slice(0, 10)
}

/** A context over the schema errors already found; rule errors are added to the same list. */
export function ruleContext(schemaErrors: ErrorEntry[], today: string): RuleContext {
  const errorAttrs = new Set<string>()
  const dirty = new Set<string>()
  let wholeBody = false
  for (const e of schemaErrors) {
    if (e.attr === null) {
      wholeBody = true
      continue
    }
    errorAttrs.add(e.attr)
    const parts = e.attr.split('.')
    for (let i = 1; i <= parts.length; i++) dirty.add(parts.slice(0, i).join('.'))
  }
  const shallowOne = (path: string): boolean => {
    if (wholeBody || errorAttrs.has(path)) return false
    let at = path.lastIndexOf('.')
    while (at > 0) {
      if (errorAttrs.has(path.slice(0, at))) return false
      at = path.lastIndexOf('.', at - 1)
    }
    return true
  }
  const cleanOne = (path: string): boolean => !dirty.has(path) && shallowOne(path)
  const errors = [...schemaErrors]
  return {
    today,
    errors,
    // Without schema errors everything is clean: the common case costs nothing.
    clean: schemaErrors.length === 0 ? () => true : (...paths) => paths.every(cleanOne),
    shallow: schemaErrors.length === 0 ? () => true : (...paths) => paths.every(shallowOne),
    report: (code, attr, ...args) => {
      errors.push(problem(code, attr, ...args))
    }
  }
}

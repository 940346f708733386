/**
 * Well-formed text: no U+0000, and no UTF-16 surrogate standing alone. PostgreSQL cannot store
 * either. The one definition, used by the schemas' patterns and by code that checks text by hand.
 */
const UNSTORABLE = '\\u0000\\uD800-\\uDFFF'

/** A pattern fragment: any number of well-formed characters (in a `u`-flag or Ajv pattern). */
export const WELL_FORMED_CHARACTERS = `[^${UNSTORABLE}]*`

/** Text with something besides whitespace (the default pattern of a text field). */
export const TEXT_PATTERN = `^(?=[\\s\\S]*\\S)${WELL_FORMED_CHARACTERS}$`

/** Text without leading or trailing whitespace (an identifier). */
export const TRIMMED_PATTERN = `^(?![\\s])${WELL_FORMED_CHARACTERS}(?<![\\s])$`

// With the `u` flag a surrogate range matches only lone surrogates, never a pair.
const ILL_FORMED = new RegExp(`[${UNSTORABLE}]`, 'u')

export function isWellFormed(text: string): boolean {
  return !ILL_FORMED.test(text)
}

const ILL_FORMED_ALL = new RegExp(`[${UNSTORABLE}]`, 'gu')

/**
 * Text that PostgreSQL can store, for what a client sent that is kept only to be shown (an error's
 * attr, which names the keys sent): each U+0000 and lone surrogate becomes U+FFFD, the replacement
 * character. Never for a value that is looked up or compared: such a value is well formed or not kept.
 */
export function storableText(text: string): string {
  return isWellFormed(text) ? text : text.replace(ILL_FORMED_ALL, '\uFFFD')
}

/** True when every string and object key inside a JSON value is well formed. */
export function isWellFormedJson(value: unknown): boolean {
  if (typeof value === 'string') return isWellFormed(value)
  if (value === null || typeof value !== 'object') return true
  return Object.entries(value).every(([key, child]) => isWellFormed(key) && isWellFormedJson(child))
}

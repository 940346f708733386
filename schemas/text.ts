/**
 * Well-formed text: no U+0000, and no UTF-16 surrogate standing alone. PostgreSQL cannot store
 * either. The one definition, used by the schemas' patterns and by code that checks text by hand.
 *
 * The patterns go into the OpenAPI document, so other languages' engines must take them too:
 * JavaScript's (with and without the `u` or `v` flag), Python's `re` and Rust's `regex` and
 * `fancy-regex`. Rust's engines refuse a surrogate code point anywhere in a pattern (its strings
 * cannot hold one) and `regex` refuses lookaround, so the patterns name no surrogate and look
 * nowhere: they list the characters allowed instead, `\uXXXX` escapes for the Basic Multilingual
 * Plane (written the same in all three) and "anything beyond it" as `[^\u0000-\uFFFF]` (a
 * supplementary character is one code point in Python, Rust and JavaScript's `u` mode, where a
 * surrogate standing alone is also one, inside the range, and so refused).
 */
const UNSTORABLE = '\\u0000\\uD800-\\uDFFF'

/** Beyond the Basic Multilingual Plane: U+10000 and up. */
const SUPPLEMENTARY = '[^\\u0000-\\uFFFF]'

/**
 * The characters `String.prototype.trim` removes (JavaScript's `\s`), spelled out because `\s`
 * means other characters in other engines (Python's takes U+001C, not U+FEFF). Inside a class.
 */
export const BLANK_CHARACTERS =
  '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff'

/** One well-formed character. */
const WELL_FORMED = `(?:[\\u0001-\\uD7FF\\uE000-\\uFFFF]|${SUPPLEMENTARY})`

/** One well-formed character that is not blank: the Basic Multilingual Plane less U+0000, surrogates and BLANK_CHARACTERS. */
const NOT_BLANK =
  '(?:[\\u0001-\\u0008\\u000e-\\u001f\\u0021-\\u009f\\u00a1-\\u167f\\u1681-\\u1fff\\u200b-\\u2027\\u202a-\\u202e' +
  `\\u2030-\\u205e\\u2060-\\u2fff\\u3001-\\uD7FF\\uE000-\\ufefe\\uff00-\\uFFFF]|${SUPPLEMENTARY})`

/** A pattern fragment: any number of well-formed characters (in a `u`-flag or Ajv pattern). */
export const WELL_FORMED_CHARACTERS = `${WELL_FORMED}*`

/** Text with something besides whitespace (the default pattern of a text field): blanks, then one that is not, then anything. */
export const TEXT_PATTERN = `^[${BLANK_CHARACTERS}]*${NOT_BLANK}${WELL_FORMED_CHARACTERS}$`

/** Text without leading or trailing whitespace (an identifier): one character that is not blank, or two with anything between. */
export const TRIMMED_PATTERN = `^${NOT_BLANK}(?:${WELL_FORMED_CHARACTERS}${NOT_BLANK})?$`

/** Empty, or only what `trim` removes. */
export const BLANK_PATTERN = `^[${BLANK_CHARACTERS}]*$`

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

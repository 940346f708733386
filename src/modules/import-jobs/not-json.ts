import { MAX_BODY_DEPTH, MAX_OBJECT_KEYS, shapeProblem } from '../../json-shape.js'

/** A character as a reason shows it: printable ASCII quoted, anything else by its code point. */
function shown(text: string, at: number): string {
  const c = text.codePointAt(at)!
  if (c >= 0x20 && c < 0x7f) return c === 0x27 ? `"'"` : `'${String.fromCodePoint(c)}'`
  return `U+${c.toString(16).toUpperCase().padStart(4, '0')}`
}

class Stop {
  constructor(readonly reason: string) {}
}

/**
 * Why a line is not JSON, as the parser finds it: where the first problem is and what was expected
 * there, e.g. `a value was expected at character 1, found 'n'`; undefined when the line is JSON. The
 * reason quotes nothing of the line but the one character at fault (a line is personal data, and a
 * reason outlives it). A line nested deeper, or with an object wider, than a request may be is not
 * read either: its reason says so.
 */
export function whyNotJson(text: string): string | undefined {
  const shape = shapeProblem(Buffer.from(text))
  if (shape !== undefined) {
    return shape.includes('nested')
      ? `it is nested deeper than ${MAX_BODY_DEPTH} levels`
      : `an object of it has more than ${MAX_OBJECT_KEYS} keys`
  }
  try {
    JSON.parse(text)
    return undefined
  } catch {
    // Found below, in words of our own (the engine's message quotes the line).
  }
  const n = text.length
  let i = 0
  /** The place of `i` as a person counts it: characters (code points) from 1. */
  const place = () => [...text.slice(0, i)].length + 1
  const expect = (expected: string): never => {
    throw new Stop(
      i >= n
        ? `it ends too soon: ${expected} was expected at character ${place()}`
        : `${expected} was expected at character ${place()}, found ${shown(text, i)}`
    )
  }
  const space = () => {
    while (i < n && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++
  }
  const digits = () => {
    if (!(text[i]! >= '0' && text[i]! <= '9')) expect('a digit')
    while (text[i]! >= '0' && text[i]! <= '9') i++
  }
  function string() {
    i++ // the opening quote
    for (;;) {
      if (i >= n) throw new Stop('it ends too soon: a string has no closing quote')
      const c = text.charCodeAt(i)
      if (c === 0x22) {
        i++
        return
      }
      if (c < 0x20) {
        throw new Stop(`a string holds the control character ${shown(text, i)} at character ${place()} unescaped`)
      }
      if (c === 0x5c) {
        i++
        if (i < n && '"\\/bfnrt'.includes(text[i]!)) i++
        else if (text[i] === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) i += 5
        else expect('an escape (\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u and four hex digits)')
      } else i++
    }
  }
  function value(): void {
    space()
    const c = text[i]
    if (c === '{') {
      i++
      space()
      if (text[i] === '}') {
        i++
        return
      }
      for (;;) {
        space()
        if (text[i] !== '"') expect('a property name in double quotes')
        string()
        space()
        if (text[i] !== ':') expect("':' after a property name")
        i++
        value()
        space()
        if (text[i] === ',') i++
        else if (text[i] === '}') {
          i++
          return
        } else expect("',' or '}'")
      }
    }
    if (c === '[') {
      i++
      space()
      if (text[i] === ']') {
        i++
        return
      }
      for (;;) {
        value()
        space()
        if (text[i] === ',') i++
        else if (text[i] === ']') {
          i++
          return
        } else expect("',' or ']'")
      }
    }
    if (c === '"') return string()
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
      if (c === '-') i++
      if (text[i] === '0') i++
      else digits()
      if (text[i] === '.') {
        i++
        digits()
      }
      if (text[i] === 'e' || text[i] === 'E') {
        i++
        if (text[i] === '+' || text[i] === '-') i++
        digits()
      }
      return
    }
    for (const word of ['true', 'false', 'null']) {
      if (text.startsWith(word, i)) {
        i += word.length
        return
      }
      // Cut short at the end of the line: it ends too soon.
      if (i < n && word.startsWith(text.slice(i))) throw new Stop(`it ends too soon, inside '${word}'`)
    }
    expect('a value')
  }
  try {
    value()
    space()
    if (i < n) throw new Stop(`more follows its JSON value: ${shown(text, i)} at character ${place()}`)
  } catch (stop) {
    if (stop instanceof Stop) return stop.reason
    throw stop
  }
  return 'it is not valid JSON'
}

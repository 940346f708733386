import { isUtf8 } from 'node:buffer'
import { isWellFormed } from '../../../schemas/text.js'

/** A line of an uploaded part, as it will be stored. */
export interface UploadedLine {
  /** Its place in the part, from 1. */
  idx: number
  text: string
  /** The external account number it names, when it is a JSON entry naming one as a string. */
  external: string | null
}

/** Why a part cannot be read as lines. */
export type PartProblem = 'partial' | 'encoding' | 'oversized'

export class PartError extends Error {
  constructor(readonly problem: PartProblem) {
    super(problem)
  }
}

const EXTERNAL = /"external_account_number"\s*:\s*("(?:[^"\\]|\\.)*")/

/**
 * What an entry line names as its external account number (null: none as a string, or one that
 * text cannot hold, such as `"\u0000"`: no account can have it, so the line fails alone when it
 * runs). Read from the text, not by parsing the line: a key's quotes inside a string value are
 * escaped, so only a real key matches; the runner parses the line when it runs it.
 */
export function externalOf(text: string): string | null {
  const found = EXTERNAL.exec(text)
  if (!found) return null
  try {
    return usableExternal(JSON.parse(found[1]!))
  } catch {
    return null
  }
}

/** An external account number a line's record and result can hold: a non-empty well-formed string, else null. */
export function usableExternal(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 && isWellFormed(value) ? value : null
}

/** A NUL cannot be stored in text: it is kept as its JSON escape (a line holding one is no valid entry either way). */
const stored = (text: string) => (text.includes('\u0000') ? text.replaceAll('\u0000', '\\u0000') : text)

/**
 * The lines of a part's body, in groups of about `groupBytes` (256 KB), as the body arrives: each line
 * ends at `\n` (a `\r` before it is dropped), the body must end with one, be valid UTF-8 and hold
 * at most `maxBytes`. Memory holds one group and one partial line, whatever the size of the part.
 */
export async function* linesOf(
  body: AsyncIterable<Buffer>,
  maxBytes: number,
  groupBytes = 1 << 18
): AsyncGenerator<{ lines: UploadedLine[]; bytes: number }> {
  let pending: Buffer[] = []
  let pendingBytes = 0
  let bytes = 0
  let idx = 0
  let group: UploadedLine[] = []
  let groupSize = 0
  for await (const chunk of body) {
    bytes += chunk.length
    if (bytes > maxBytes) throw new PartError('oversized')
    let start = 0
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, at)
      const whole = pending.length === 0 ? piece : Buffer.concat([...pending, piece], pendingBytes + piece.length)
      pending = []
      pendingBytes = 0
      const line = whole.length > 0 && whole[whole.length - 1] === 13 ? whole.subarray(0, whole.length - 1) : whole
      if (!isUtf8(line)) throw new PartError('encoding')
      const text = stored(line.toString('utf8'))
      group.push({ idx: ++idx, text, external: externalOf(text) })
      groupSize += line.length + 64
      start = at + 1
      if (groupSize >= groupBytes) {
        yield { lines: group, bytes }
        group = []
        groupSize = 0
      }
    }
    if (start < chunk.length) {
      pending.push(chunk.subarray(start))
      pendingBytes += chunk.length - start
    }
  }
  if (pendingBytes > 0 || idx === 0) throw new PartError('partial')
  yield { lines: group, bytes }
}

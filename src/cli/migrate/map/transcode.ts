/**
 * An extract file made ready for DuckDB's CSV reader: UTF-8 (its reader takes no Windows-1252),
 * without a byte-order mark, with LF line ends (its row numbers of rejected rows were seen to
 * drift by one on large CRLF files, never on LF ones). Streamed: memory does not grow with the file.
 *
 * Windows-1252 leaves five bytes undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D): each becomes U+FFFD,
 * and the engine reports the rows holding one as rejected.
 */
import { createReadStream, createWriteStream } from 'node:fs'
import { once } from 'node:events'
import iconv from 'iconv-lite'
import type { Encoding } from './header.js'

export interface PreparedFile {
  /** The UTF-8, LF copy DuckDB reads. */
  path: string
  /** The encoding it was read as (a byte-order mark makes it UTF-8 whatever was declared). */
  encoding: Encoding
  /** Nothing but white space (or nothing at all). */
  empty: boolean
  /** Its first line: the column names. */
  headerLine: string
  /** The undefined bytes found, in the order found (Windows-1252 only). */
  undefinedBytes: number[]
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf])
const UNDEFINED_1252 = new Set([0x81, 0x8d, 0x8f, 0x90, 0x9d])
const MAX_HEADER = 1024 * 1024

export async function prepareFile(source: string, declared: Encoding, target: string): Promise<PreparedFile> {
  const input = createReadStream(source, { highWaterMark: 1024 * 1024 })
  const output = createWriteStream(target)
  let encoding = declared
  let first = true
  let pendingCR = false
  let empty = true
  let header = ''
  let headerDone = false
  const undefinedBytes: number[] = []
  let converter = encoding === 'utf-8' ? undefined : singleByteConverter(encoding)
  try {
    for await (const raw of input) {
      let chunk = raw as Buffer
      if (first) {
        first = false
        if (chunk.subarray(0, 3).equals(BOM)) {
          // A byte-order mark: UTF-8, whatever was declared.
          encoding = 'utf-8'
          converter = undefined
          chunk = chunk.subarray(3)
        }
      }
      await put(chunk)
    }
    await flush()
  } finally {
    output.end()
    await once(output, 'close')
  }
  return { path: target, encoding, empty, headerLine: header.replace(/\r$/, ''), undefinedBytes }

  async function put(chunk: Buffer): Promise<void> {
    // UTF-8 bytes pass through (invalid ones stay invalid: DuckDB rejects their row); a
    // single-byte encoding becomes UTF-8 byte by byte. Only CR LF becomes LF.
    const out = converter ? converter(chunk, pendingCR, undefinedBytes) : crlfToLf(chunk, pendingCR)
    pendingCR = out.pendingCR
    await emit(out.bytes)
  }

  async function flush(): Promise<void> {
    if (pendingCR) await emit(Buffer.from([0x0d]))
    pendingCR = false
  }

  async function emit(bytes: Buffer): Promise<void> {
    if (bytes.length === 0) return
    if (empty && /\S/.test(bytes.toString('utf8'))) empty = false
    if (!headerDone) {
      const nl = bytes.indexOf(0x0a)
      header += bytes.subarray(0, nl < 0 ? bytes.length : nl).toString('utf8')
      if (nl >= 0 || header.length > MAX_HEADER) headerDone = true
    }
    if (!output.write(bytes)) await once(output, 'drain')
  }
}

type Converted = { bytes: Buffer; pendingCR: boolean }

/**
 * A single-byte encoding to UTF-8, CR LF to LF, in one pass over the bytes (a table of each
 * byte's UTF-8 form, taken from iconv-lite): several times faster than decoding to a string and
 * encoding it again. Windows-1252's undefined bytes become U+FFFD and are noted in order.
 */
function singleByteConverter(
  encoding: 'windows-1252' | 'latin-1'
): (chunk: Buffer, pendingCR: boolean, undefinedBytes: number[]) => Converted {
  const forms = Array.from({ length: 256 }, (_, b) =>
    Buffer.from(iconv.decode(Buffer.from([b]), encoding === 'latin-1' ? 'latin1' : 'windows-1252'), 'utf8')
  )
  const undefinedHere = encoding === 'windows-1252' ? UNDEFINED_1252 : new Set<number>()
  return (chunk, pendingCR, undefinedBytes) => {
    const out = Buffer.allocUnsafe(chunk.length * 3 + 1)
    let o = 0
    if (pendingCR && chunk[0] !== 0x0a) out[o++] = 0x0d
    const last = chunk.length - 1
    for (let i = 0; i <= last; i++) {
      const b = chunk[i]!
      if (b < 0x80) {
        if (b === 0x0d) {
          if (i === last) return { bytes: out.subarray(0, o), pendingCR: true }
          if (chunk[i + 1] === 0x0a) continue
        }
        out[o++] = b
        continue
      }
      if (undefinedHere.has(b)) undefinedBytes.push(b)
      const form = forms[b]!
      for (let k = 0; k < form.length; k++) out[o++] = form[k]!
    }
    return { bytes: out.subarray(0, o), pendingCR: false }
  }
}

/** CR LF → LF in a byte chunk; a CR at its end waits for the next chunk. */
function crlfToLf(chunk: Buffer, pendingCR: boolean): Converted {
  const parts: Buffer[] = []
  if (pendingCR && chunk[0] !== 0x0a) parts.push(Buffer.from([0x0d]))
  let from = 0
  for (let cr = chunk.indexOf(0x0d); cr >= 0; cr = chunk.indexOf(0x0d, cr + 1)) {
    if (cr === chunk.length - 1) {
      parts.push(chunk.subarray(from, cr))
      return { bytes: Buffer.concat(parts), pendingCR: true }
    }
    if (chunk[cr + 1] === 0x0a) {
      parts.push(chunk.subarray(from, cr))
      from = cr + 1
    }
  }
  parts.push(chunk.subarray(from))
  return { bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts), pendingCR: false }
}

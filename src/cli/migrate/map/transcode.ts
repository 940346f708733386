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
  const write = async (text: string) => {
    if (!headerDone) {
      const nl = text.indexOf('\n')
      header += nl < 0 ? text : text.slice(0, nl)
      if (nl >= 0 || header.length > MAX_HEADER) headerDone = true
    }
    if (empty && /\S/.test(text)) empty = false
    if (!output.write(text)) await once(output, 'drain')
  }
  try {
    for await (const raw of input) {
      let chunk = raw as Buffer
      if (first) {
        first = false
        if (chunk.subarray(0, 3).equals(BOM)) {
          encoding = 'utf-8'
          chunk = chunk.subarray(3)
        }
      }
      if (encoding === 'windows-1252') {
        for (let i = 0; i < chunk.length; i++) {
          const byte = chunk[i]!
          if (byte > 0x80 && byte < 0x9e && UNDEFINED_1252.has(byte)) undefinedBytes.push(byte)
        }
      }
      // A single-byte encoding decodes chunk by chunk; UTF-8 is split at a character's boundary by
      // the decoder (StringDecoder inside iconv-lite's streaming API is not needed: invalid UTF-8
      // stays invalid bytes that DuckDB rejects with the row).
      let text = encoding === 'utf-8' ? null : iconv.decode(chunk, encoding === 'latin-1' ? 'latin1' : 'windows-1252')
      if (text === null) {
        // UTF-8 bytes pass through; only CR LF becomes LF.
        const out = crlfToLf(chunk, pendingCR)
        pendingCR = out.pendingCR
        if (out.bytes.length > 0) {
          if (empty && /\S/.test(out.bytes.toString('latin1'))) empty = false
          if (!headerDone) {
            const nl = out.bytes.indexOf(0x0a)
            header += out.bytes.subarray(0, nl < 0 ? out.bytes.length : nl).toString('utf8')
            if (nl >= 0 || header.length > MAX_HEADER) headerDone = true
          }
          if (!output.write(out.bytes)) await once(output, 'drain')
        }
        continue
      }
      if (pendingCR) text = '\r' + text
      pendingCR = text.endsWith('\r')
      if (pendingCR) text = text.slice(0, -1)
      await write(text.replace(/\r\n/g, '\n'))
    }
    if (pendingCR) await write('\r')
  } finally {
    output.end()
    await once(output, 'close')
  }
  return { path: target, encoding, empty, headerLine: header.replace(/\r$/, ''), undefinedBytes }
}

/** CR LF → LF in a byte chunk; a CR at its end waits for the next chunk. */
function crlfToLf(chunk: Buffer, pendingCR: boolean): { bytes: Buffer; pendingCR: boolean } {
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

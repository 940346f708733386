import { isUtf8 } from 'node:buffer'
import { createHash } from 'node:crypto'
import { createReadStream, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'

/**
 * An import job's input file cut into parts (whole lines, each part at most a part size), and
 * the small state file kept beside it (`<file>.job.json`) that lets `submit` continue an upload:
 * the job, the part size, each part's byte range and hash, and the parts the service took.
 */

/** The highest part number the service takes. */
export const MAX_PARTS = 10_000
/** Below the service's default body limit (10 MiB), with room to spare. */
export const DEFAULT_PART_BYTES = 8 * 1024 * 1024
export const MIN_PART_BYTES = 1024

export interface PartPlan {
  /** 1-based part number. */
  part: number
  /** Byte range of the file, `end` excluded. */
  start: number
  end: number
  /** The part's lines (blank ones included: the service numbers them too). */
  lines: number
  /** sha256 of the bytes sent (the file's range, and a `\n` when the file's last line has none). */
  sha256: string
  /** The file's last line has no `\n`: one is added when the part is sent. */
  newline_added?: boolean
}

export interface FilePlan {
  size: number
  partBytes: number
  parts: PartPlan[]
}

/** The file cannot be sent as it is: a line too long for a part, not UTF-8, or too many parts. */
export class PlanError extends Error {
  override name = 'PlanError'
}

/**
 * Cuts the file into parts at line breaks, each at most `partBytes` (greedy: a part takes lines
 * while they fit), hashing each part, in one pass that holds at most one line.
 */
export async function planParts(path: string, partBytes: number): Promise<FilePlan> {
  const parts: PartPlan[] = []
  let offset = 0
  let lineNumber = 0
  // The part being built.
  let partStart = 0
  let partLength = 0
  let partLines = 0
  let hash = createHash('sha256')
  // The line being read (its pieces, across chunks).
  let pieces: Buffer[] = []
  let pieceBytes = 0

  const closePart = (newlineAdded = false) => {
    parts.push({
      part: parts.length + 1,
      start: partStart,
      end: partStart + partLength - (newlineAdded ? 1 : 0),
      lines: partLines,
      sha256: hash.digest('hex'),
      ...(newlineAdded ? { newline_added: true } : {})
    })
    partStart += partLength
    partLength = 0
    partLines = 0
    hash = createHash('sha256')
  }

  /** A whole line, its `\n` included. */
  const addLine = (line: Buffer) => {
    lineNumber++
    if (line.length > partBytes) {
      throw new PlanError(
        `line ${lineNumber} is ${line.length} bytes, longer than a part (${partBytes} bytes): pass a larger --part-size (at most the service's body limit)`
      )
    }
    if (!isUtf8(line)) throw new PlanError(`line ${lineNumber} is not valid UTF-8: the service takes UTF-8 text only`)
    if (partLength + line.length > partBytes) closePart()
    hash.update(line)
    partLength += line.length
    partLines++
  }

  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    let from = 0
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, from)) {
      const piece = chunk.subarray(from, at + 1)
      addLine(pieces.length === 0 ? piece : Buffer.concat([...pieces, piece], pieceBytes + piece.length))
      pieces = []
      pieceBytes = 0
      from = at + 1
    }
    if (from < chunk.length) {
      // Copied: the stream may reuse its buffer. A line longer than a part is refused once it is whole.
      pieces.push(Buffer.from(chunk.subarray(from)))
      pieceBytes += chunk.length - from
      if (pieceBytes > partBytes) addLine(Buffer.concat(pieces, pieceBytes))
    }
    offset += chunk.length
  }
  let newlineAdded = false
  if (pieceBytes > 0) {
    addLine(Buffer.concat([...pieces, Buffer.from('\n')], pieceBytes + 1))
    newlineAdded = true
  }
  if (partLength > 0) closePart(newlineAdded)
  if (parts.length > MAX_PARTS) {
    throw new PlanError(
      `the file needs ${parts.length} parts of at most ${partBytes} bytes, more than the ${MAX_PARTS} a job takes: pass a larger --part-size, or split the file into several jobs`
    )
  }
  return { size: offset, partBytes, parts }
}

/** The bytes of a part as they are sent, checked against the hash the plan made. */
export async function partBytes(path: string, plan: PartPlan): Promise<Buffer> {
  const file = await open(path, 'r')
  try {
    const length = plan.end - plan.start
    const bytes = Buffer.alloc(length + (plan.newline_added ? 1 : 0))
    let read = 0
    while (read < length) {
      const { bytesRead } = await file.read(bytes, read, length - read, plan.start + read)
      if (bytesRead === 0) break
      read += bytesRead
    }
    if (plan.newline_added) bytes[length] = 10
    if (read !== length || createHash('sha256').update(bytes).digest('hex') !== plan.sha256) {
      throw new PlanError(
        `the file changed while it was being uploaded (part ${plan.part}): run submit again to send it as it is now`
      )
    }
    return bytes
  } finally {
    await file.close()
  }
}

/** The state file: what `submit` needs to continue an upload, and to tell the job it made. */
export interface JobState {
  version: 1
  /** The service the job is on. */
  url: string
  job_id: string
  import_supplier: string
  operations_team_name: string
  dry_run: boolean
  file_bytes: number
  part_bytes: number
  parts: Array<PartPlan & { acknowledged: boolean }>
  /** The job was started: no more parts. */
  started: boolean
}

export const stateFileOf = (input: string) => `${input}.job.json`

/** The state kept beside the input, or undefined when there is none; a file that cannot be read is a PlanError. */
export function readState(path: string): JobState | undefined {
  if (!existsSync(path)) return undefined
  let state: Partial<JobState>
  try {
    state = JSON.parse(readFileSync(path, 'utf8')) as Partial<JobState>
  } catch (err) {
    throw new PlanError(`${path} cannot be read (${(err as Error).message}): remove it to submit the file as a new job`)
  }
  if (state.version !== 1 || typeof state.job_id !== 'string' || !Array.isArray(state.parts)) {
    throw new PlanError(`${path} is not a job state file of this client: remove it to submit the file as a new job`)
  }
  return state as JobState
}

/** Written whole (a new file renamed over the old), so a client killed while writing leaves the last state. */
export function writeState(path: string, state: JobState): void {
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, JSON.stringify(state, null, 2) + '\n')
  renameSync(temporary, path)
}

/** Parts of the state the plan of the file as it is now still holds unchanged (same range, same bytes). */
export function unchangedParts(state: JobState, plan: FilePlan): Set<number> {
  const now = new Map(plan.parts.map((p) => [p.part, p]))
  const same = new Set<number>()
  for (const old of state.parts) {
    const current = now.get(old.part)
    if (
      current &&
      current.start === old.start &&
      current.end === old.end &&
      current.sha256 === old.sha256 &&
      current.newline_added === old.newline_added
    ) {
      same.add(old.part)
    }
  }
  return same
}

import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'

/** Bytes read from the file at a time: small, so a paused reader holds few lines beyond its limit. */
const CHUNK_BYTES = 16 * 1024

export interface LineReader {
  /** The next line and its 1-based number, or undefined at the end of the file. */
  next(): Promise<{ text: string; number: number } | undefined>
  /** Most lines held unread at once (read ahead), for tests and the curious. */
  readonly maxQueued: number
  close(): void
}

/**
 * The lines of a file, read with back-pressure: the file is paused while `limit` lines wait to be
 * taken, so memory does not grow with the file (readline's own async iterator reads up to about a
 * thousand lines ahead). Lines already split from the current 16 KiB chunk can still arrive after
 * the pause, which bounds the overshoot.
 */
export function readLines(path: string, limit: number): LineReader {
  const input = createReadStream(path, { highWaterMark: CHUNK_BYTES })
  const rl = createInterface({ input, crlfDelay: Infinity })
  const queue: string[] = []
  let taken = 0
  let ended = false
  let failure: Error | undefined
  let paused = false
  let maxQueued = 0
  let wake: (() => void) | undefined

  const notify = () => {
    const resolve = wake
    wake = undefined
    resolve?.()
  }
  rl.on('line', (text) => {
    queue.push(text)
    maxQueued = Math.max(maxQueued, queue.length)
    if (queue.length >= limit && !paused) {
      paused = true
      rl.pause()
    }
    notify()
  })
  rl.on('close', () => {
    ended = true
    notify()
  })
  input.on('error', (err) => {
    failure = err
    ended = true
    notify()
  })

  return {
    async next() {
      // `ended` is set by the input's event handlers while this waits.
      // eslint-disable-next-line no-unmodified-loop-condition
      while (queue.length === 0 && !ended) {
        await new Promise<void>((resolve) => {
          wake = resolve
        })
      }
      if (failure) throw failure
      const text = queue.shift()
      if (paused && !ended && queue.length < Math.max(1, limit / 2)) {
        paused = false
        rl.resume()
      }
      if (text === undefined) return undefined
      taken++
      return { text, number: taken }
    },
    get maxQueued() {
      return maxQueued
    },
    close() {
      rl.close()
      input.destroy()
    }
  }
}

/** Lines holding anything but white space, counted without keeping the file in memory. */
export async function countLines(path: string): Promise<number> {
  let count = 0
  let content = false
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!
      if (byte === 0x0a) {
        if (content) count++
        content = false
      } else if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) {
        content = true
      }
    }
  }
  return content ? count + 1 : count
}

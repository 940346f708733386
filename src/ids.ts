import { randomFillSync } from 'node:crypto'
import { v7 } from 'uuid'

/** Random bytes for ids, drawn 4 KiB at a time: asking the system for each id's 16 bytes cost more than the rest of the id. */
const pool = new Uint8Array(4096)
let taken = pool.length
/** The last id's time and counter: ids made in the same millisecond count up from a random start. */
let lastMs = -Infinity
let seq = 0

/**
 * A new row id: a UUID whose first 48 bits are the time in milliseconds (version 7), so ids made
 * one after another sort together. A table's primary key and the indexes on its parent's id then
 * grow at their right end, as with a sequence: with random (version 4) ids every insert landed on
 * a random page of every such index, and once the indexes outgrew the server's buffers each
 * account cost more than the last (the million-account bench fell to half its first rate).
 * The counter is the one `uuid`'s own `v7()` keeps (RFC 9562, method 1).
 */
export function newId(): string {
  if (taken === pool.length) {
    randomFillSync(pool)
    taken = 0
  }
  const random = pool.subarray(taken, (taken += 16))
  const now = Date.now()
  if (now > lastMs) {
    seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!
    lastMs = now
  } else {
    seq = (seq + 1) | 0
    if (seq === 0) lastMs++
  }
  return v7({ random, msecs: lastMs, seq })
}

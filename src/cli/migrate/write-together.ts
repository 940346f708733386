import { once } from 'node:events'
import type { Writable } from 'node:stream'

/**
 * Writes each text to its stream and waits until every stream that asked for a pause has
 * drained. The waits start together: a stream that drains while another is awaited would
 * otherwise be waited for forever.
 */
export async function writeTogether(writes: Array<[Writable, string]>): Promise<void> {
  const waits = writes.map(([stream, text]) => (stream.write(text) ? null : once(stream, 'drain')))
  await Promise.all(waits)
}

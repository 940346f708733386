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

/**
 * Stops writing a file that is being thrown away. A write still in flight then fails with
 * ERR_STREAM_DESTROYED, and the stream reports it as an 'error' once it closes: with nothing
 * listening, that would end the process after the real error was reported.
 */
export function discard(stream: Writable): void {
  stream.on('error', () => {})
  stream.destroy()
}

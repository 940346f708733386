import { Readable } from 'node:stream'

/**
 * Text written from chunks of items pulled one at a time: the next chunk is read only when the
 * stream wants more (the socket drained), so memory does not grow with the list. Destroying the
 * stream (client gone) ends the generator, so nothing more is read. A failure after the status
 * was sent can only cut the body short: `onError` is told and the stream is destroyed, which
 * closes the connection without the end. `write` renders a chunk (told whether it is the first),
 * `end` what follows the last (told whether any item was written).
 */
function pulledStream<T>(
  chunks: AsyncGenerator<T[], void, undefined>,
  write: (items: T[], first: boolean) => string,
  end: (wrote: boolean) => string,
  onError: (err: unknown) => void
): Readable {
  let wrote = false
  const stream: Readable = new Readable({
    read() {
      // One turn of the event loop per chunk: other requests (and this socket) should not wait for
      // a whole list's writing.
      setImmediate(pull)
    },
    destroy(err, callback) {
      chunks.return(undefined).then(
        () => callback(err),
        () => callback(err)
      )
    }
  })

  function pull(): void {
    if (stream.destroyed) return
    chunks.next().then(
      ({ done, value }) => {
        if (stream.destroyed) return
        if (done) {
          const last = end(wrote)
          if (last !== '') stream.push(last)
          stream.push(null)
          return
        }
        const text = value.length > 0 ? write(value, !wrote) : ''
        wrote ||= value.length > 0
        // An empty chunk still has to be followed by a read.
        if (text === '') setImmediate(pull)
        else stream.push(text)
      },
      (err: unknown) => {
        onError(err)
        stream.destroy(err as Error)
      }
    )
  }

  return stream
}

/** A JSON array as a stream (see `pulledStream`). */
export function jsonArrayStream(
  chunks: AsyncGenerator<object[], void, undefined>,
  onError: (err: unknown) => void
): Readable {
  return pulledStream(
    chunks,
    (items, first) => (first ? '[' : ',') + items.map((item) => JSON.stringify(item)).join(','),
    (wrote) => (wrote ? ']' : '[]'),
    onError
  )
}

/** NDJSON as a stream: each item one line, already JSON text or an object to write as JSON (see `pulledStream`). */
export function ndjsonStream(
  chunks: AsyncGenerator<Array<string | object>, void, undefined>,
  onError: (err: unknown) => void
): Readable {
  return pulledStream(
    chunks,
    (items) => items.map((item) => (typeof item === 'string' ? item : JSON.stringify(item)) + '\n').join(''),
    () => '',
    onError
  )
}

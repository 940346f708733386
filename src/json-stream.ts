import { Readable } from 'node:stream'

/**
 * A JSON array as a stream, written from chunks of items pulled one at a time: the next chunk is
 * read only when the stream wants more (the socket drained), so memory does not grow with the
 * list. Destroying the stream (client gone) ends the generator, so nothing more is read. A
 * failure after the status was sent can only cut the body short: `onError` is told and the
 * stream is destroyed, which closes the connection without the final chunk.
 */
export function jsonArrayStream(
  chunks: AsyncGenerator<object[], void, undefined>,
  onError: (err: unknown) => void
): Readable {
  let opened = false
  const stream: Readable = new Readable({
    read() {
      // One turn of the event loop per chunk: PGlite answers without yielding, and other requests
      // (and this socket) should not wait for a whole list.
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
          stream.push(opened ? ']' : '[]')
          stream.push(null)
          return
        }
        let text = ''
        for (const item of value) {
          text += (opened ? ',' : '[') + JSON.stringify(item)
          opened = true
        }
        stream.push(text)
      },
      (err: unknown) => {
        onError(err)
        stream.destroy(err as Error)
      }
    )
  }

  return stream
}

/** NDJSON as a stream: each chunk's lines (already JSON text, or objects to write as JSON), one per line, pulled as above. */
export function ndjsonStream(
  chunks: AsyncGenerator<Array<string | object>, void, undefined>,
  onError: (err: unknown) => void
): Readable {
  const stream: Readable = new Readable({
    read() {
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
          stream.push(null)
          return
        }
        let text = ''
        for (const item of value) text += (typeof item === 'string' ? item : JSON.stringify(item)) + '\n'
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

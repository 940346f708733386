import t from 'tap'
import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { discard, writeTogether } from '../../src/cli/migrate/write-together.js'
import { tempDir } from '../helpers/temp-dir.js'

/** A stream that takes `ms` to write each chunk, asking for a pause after every one. */
function slowStream(ms: number): { stream: Writable; written: string[] } {
  const written: string[] = []
  const stream = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, done) {
      written.push(chunk.toString())
      setTimeout(done, ms)
    }
  })
  return { stream, written }
}

t.test('two streams that both ask for a pause: the one draining first is not waited for forever', async (t) => {
  const slow = slowStream(30)
  const fast = slowStream(0)
  for (let i = 0; i < 5; i++) {
    const wrote = writeTogether([
      [slow.stream, `a${i}`],
      [fast.stream, `b${i}`]
    ])
    const settled = await Promise.race([
      wrote.then(() => true),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), 2_000))
    ])
    t.equal(settled, true, `write ${i} settles`)
    if (!settled) return
  }
  t.same(slow.written, ['a0', 'a1', 'a2', 'a3', 'a4'])
  t.same(fast.written, ['b0', 'b1', 'b2', 'b3', 'b4'])
})

t.test('a file thrown away with a write in flight: no error outlives it', async (t) => {
  // The write reaches the file system, then the stream is destroyed: the write fails with
  // ERR_STREAM_DESTROYED, which the stream emits as 'error' when it closes. Unheard, that error
  // ended the process (tap reports it as an uncaught exception, failing this test).
  for (let i = 0; i < 5; i++) {
    const stream = createWriteStream(join(tempDir(t), 'thrown-away.ndjson'))
    await once(stream, 'ready')
    stream.write(Buffer.alloc(1 << 20))
    discard(stream)
    await new Promise<void>((resolve) => stream.once('close', () => resolve()))
  }
  t.pass('closed without an uncaught error')
})

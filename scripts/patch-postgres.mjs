// Run by `postinstall`: fixes a crash of the `postgres` driver (3.4.x, not fixed upstream yet:
// porsager/postgres#1154, #1208). When a connection dies inside a transaction (the backend is
// terminated, the server restarts, a network cut), the driver's own ROLLBACK is written after the
// socket was dropped: `nextWrite` throws from a setImmediate callback, an uncaught TypeError that
// ends the whole process; and a write still pending at the close leaves the connection unable to
// send anything again (every later use of it ends in CONNECT_TIMEOUT).
// And the server's last error (`terminating connection due to administrator command`) stays
// attached to the connection: after it reconnects, its next query, an unrelated one, fails with it.
// The patch settles such a write with CONNECTION_CLOSED instead, and at the close settles the
// query in flight with the server's error and forgets it, its error and any pending write. It is applied to both builds (ESM and CommonJS), is idempotent, and fails loudly when the
// driver's code is not what it expects (a new version: check whether it is still needed).
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const MARK = '/* amis: guarded */'
const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'postgres')

const edits = [
  [
    '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)',
    `  function nextWrite(fn) {\n    if (!socket) { ${MARK}\n      chunk = nextWriteTimer = null\n      const err = Errors.connection('CONNECTION_CLOSED', options)\n      errored(err)\n      while (sent.length)\n        queryError(sent.shift(), err)\n      return false\n    }\n    const x = socket.write(chunk, fn)`
  ],
  [
    '    incomings = null\n    clearImmediate(nextWriteTimer)\n',
    '    incomings = null\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n'
  ],
  [
    "    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n",
    "    ;(query || sent.length) && error(errorResponse || Errors.connection('CONNECTION_CLOSED', options, socket))\n" +
    '    query = results = errorResponse = null\n    result = new Result()\n'
  ]
]

for (const file of ['src/connection.js', 'cjs/src/connection.js']) {
  const path = join(root, file)
  let text = readFileSync(path, 'utf8')
  if (text.includes(MARK)) continue
  for (const [from, to] of edits) {
    if (text.split(from).length !== 2) throw new Error(`scripts/patch-postgres.mjs: unexpected code in postgres/${file}; is the patch still needed?`)
    text = text.replace(from, to)
  }
  writeFileSync(path, text)
}

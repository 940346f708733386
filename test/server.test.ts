import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { freshDatabase, testDatabaseUrl } from './helpers/database.js'
import { refusedStart, startServer } from './helpers/server.js'
import { tempDir } from './helpers/temp-dir.js'
import { waitFor } from './helpers/wait.js'

const oneLine = (t: Test, output: string, pattern: RegExp) => {
  t.equal(output.split('\n').length, 1, 'one line: ' + output)
  t.match(output, pattern)
}

t.test('the server refuses to start with a one-line reason', async (t) => {
  t.test('invalid configuration', async (t) => {
    const r = await refusedStart({ PORT: 'abc', DATA_DIR: tempDir(t) })
    t.equal(r.code, 1)
    oneLine(t, r.output, /^cannot start: invalid configuration: PORT/)
  })

  t.test('production without TOKEN_SECRET or OPERATOR_API_KEY', async (t) => {
    const noSecret = await refusedStart({
      NODE_ENV: 'production',
      OPERATOR_API_KEY: 'k'.repeat(40),
      DATA_DIR: tempDir(t)
    })
    t.equal(noSecret.code, 1)
    oneLine(t, noSecret.output, /TOKEN_SECRET is required/)
    const noKey = await refusedStart({ NODE_ENV: 'production', TOKEN_SECRET: 's'.repeat(40), DATA_DIR: tempDir(t) })
    t.equal(noKey.code, 1)
    oneLine(t, noKey.output, /OPERATOR_API_KEY is required/)
  })

  t.test('an unreachable DATABASE_URL', async (t) => {
    const r = await refusedStart({
      DATABASE_URL: 'postgres://someone:secret@127.0.0.1:1/nowhere',
      DATA_DIR: tempDir(t)
    })
    t.equal(r.code, 1)
    oneLine(t, r.output, /^cannot start: cannot use the PostgreSQL server at 127\.0\.0\.1:1\/nowhere: /)
    t.notMatch(r.output, /secret/, 'the password is not printed')
  })
})

t.test('development mode on the embedded database', async (t) => {
  const dataDir = tempDir(t)
  const first = await startServer({ DATA_DIR: dataDir })
  t.teardown(() => {
    first.child.kill('SIGKILL')
  })
  t.match(first.output(), /database: embedded PGlite in /, 'logs which database it is on')
  const key = /Operator API key \(shown once[^:]*\): (amo_[\w-]+)/.exec(first.output())?.[1]
  t.ok(key, 'prints a generated operator key')
  t.equal(statSync(join(dataDir, 'token-secret')).mode & 0o777, 0o600, 'the generated token secret is private')

  const ready = await fetch(`${first.url}/readyz`)
  t.same(await ready.json(), { status: 'ok', database: 'pglite' })
  const token = await fetch(`${first.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: 'mutation($k: String) { obtainToken(input: {APIKey: $k}) { token } }',
      variables: { k: key }
    })
  })
  t.type(((await token.json()) as any).data.obtainToken.token, 'string', 'the printed key works')

  const second = await refusedStart({ DATA_DIR: dataDir })
  t.equal(second.code, 1, 'a second server on the same DATA_DIR refuses')
  oneLine(t, second.output, /in use by process \d+/)

  first.child.kill('SIGTERM')
  t.equal(await first.exit, 0, 'SIGTERM: clean exit 0')

  const again = await startServer({ DATA_DIR: dataDir })
  t.teardown(() => {
    again.child.kill('SIGKILL')
  })
  t.notMatch(again.output(), /Operator API key/, 'the key is shown only once')
  const retry = await fetch(`${again.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: 'mutation($k: String) { obtainToken(input: {APIKey: $k}) { token } }',
      variables: { k: key }
    })
  })
  t.type(((await retry.json()) as any).data.obtainToken.token, 'string', 'the key survives a restart')
  again.child.kill('SIGINT')
  t.equal(await again.exit, 0, 'SIGINT: clean exit 0')
})

if (testDatabaseUrl) {
  t.test('with DATABASE_URL it runs on the PostgreSQL server', async (t) => {
    const { database, url, drop } = await freshDatabase()
    await database.close()
    t.teardown(drop)
    const server = await startServer({
      DATABASE_URL: url!,
      DATA_DIR: tempDir(t),
      OPERATOR_API_KEY: 'amo_' + 'x'.repeat(40)
    })
    t.teardown(() => {
      server.child.kill('SIGKILL')
    })
    t.match(server.output(), /database: PostgreSQL server at 127\.0\.0\.1:\d+\//)
    const ready = await fetch(`${server.url}/readyz`)
    t.same(await ready.json(), { status: 'ok', database: 'postgres' })
    t.notMatch(server.output(), /Operator API key/, 'a configured operator key is not printed')
    server.child.kill('SIGTERM')
    t.equal(await server.exit, 0)
  })
}

/** Waits up to 5 s for the server's output to show `pattern` (log lines are written after the answer). */
const outputShows = (server: { output: () => string }, pattern: RegExp) =>
  waitFor(`the output shows ${pattern}`, () => pattern.test(server.output()), {
    timeoutMs: 5000,
    seen: () => server.output()
  })

// util-linux `script` runs the server on a pseudo-terminal, as a person's shell would.
const scriptMissing = spawnSync('script', ['--version'], { encoding: 'utf8' }).error
if (scriptMissing) {
  t.skip(
    `logs at a terminal were not tried: util-linux script is not installed here (${scriptMissing.message})`,
    () => {}
  )
} else {
  t.test('started at a terminal without LOG_FORMAT, it logs for a person; elsewhere in JSON', async (t) => {
    const server = await startServer({ DATA_DIR: tempDir(t) }, { terminal: true })
    t.teardown(() => {
      server.child.kill('SIGKILL')
    })
    await fetch(`${server.url}/v1/data-import/all-account-import-processes/ACME/`)
    await outputShows(server, /→ 401/)
    // eslint-disable-next-line no-control-regex
    const plain = server.output().replace(/\u001b\[[0-9;]*m/g, '')
    t.match(
      plain,
      /GET \/v1\/data-import\/all-account-import-processes\/ACME\/ → 401 \(\d+ ms\)/,
      'an access line a person can read'
    )
    t.notMatch(plain, /^\{"level"/m, 'no JSON lines')
    server.child.kill('SIGTERM')
    await server.exit

    const piped = await startServer({ DATA_DIR: tempDir(t) })
    t.teardown(() => {
      piped.child.kill('SIGKILL')
    })
    t.match(piped.output(), /^\{"level":30,.*"msg":"Server listening at/m, 'JSON lines when standard output is a pipe')
  })
}

t.test('a readable start: the URLs once ready, pretty logs on demand, a busy port in one line', async (t) => {
  const dataDir = tempDir(t)
  const server = await startServer({ DATA_DIR: dataDir, LOG_FORMAT: 'pretty' })
  t.teardown(() => {
    server.child.kill('SIGKILL')
  })
  t.match(
    server.output(),
    /ready: API documentation http:\/\/127\.0\.0\.1:\d+\/docs · dashboard http:\/\/127\.0\.0\.1:\d+\/dashboard · health .*npm run admin -- help/
  )
  await fetch(`${server.url}/v1/data-import/all-account-import-processes/ACME/`)
  await outputShows(server, /→ 401/)
  t.match(
    server.output(),
    /GET \/v1\/data-import\/all-account-import-processes\/ACME\/ → 401 \(\d+ ms\) not_authenticated/,
    'an access line a person can read, with the code of the refusal'
  )
  t.notMatch(server.output(), /^\{"level"/m, 'no JSON lines')

  const port = new URL(server.url).port
  const busy = await refusedStart({ DATA_DIR: tempDir(t), PORT: port })
  t.equal(busy.code, 1)
  oneLine(t, busy.output, new RegExp(`^cannot start: 127\\.0\\.0\\.1:${port} is in use`))
  t.notMatch(busy.output, /Operator API key/, 'no one-time key was spent')
})

import t from 'tap'
import { createServer } from 'node:net'
import { TEST_OPERATOR_KEY } from './helpers/app.js'
import { freshDatabase, testDatabaseUrl } from './helpers/database.js'
import { testServer } from './helpers/server.js'

/** A loopback port nothing listens on: connections to it are refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

if (!testDatabaseUrl) {
  t.skip(
    'a DATABASE_URL naming several hosts is tested against the PostgreSQL server (set TEST_DATABASE_URL)',
    () => {}
  )
} else {
  t.test('DATABASE_URL with several hosts: the server reaches the one that answers as primary', async (t) => {
    const fresh = await freshDatabase()
    await fresh.database.close()
    t.teardown(fresh.drop)
    const real = new URL(fresh.url!)
    const down = await closedPort()
    // libpq's multi-host form: a host that is down first, then the primary (read-write).
    const url = `postgres://${real.username}@127.0.0.1:${down},${real.host}${real.pathname}?target_session_attrs=read-write`
    const server = await testServer(t, { DATABASE_URL: url })
    t.match(
      server.output(),
      `PostgreSQL server at 127.0.0.1:${down},${real.host}${real.pathname}`,
      'the start-up line names both hosts'
    )
    t.equal((await fetch(`${server.url}/readyz`)).status, 200, 'ready on the host that answers')
    const res = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: `mutation { obtainToken(input: {APIKey: "${TEST_OPERATOR_KEY}"}) { token } }` })
    })
    const body = (await res.json()) as { data?: { obtainToken?: { token?: string } } }
    t.type(body.data?.obtainToken?.token, 'string', 'a write and a read through it')
  })
}

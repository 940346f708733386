import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { projectRoot } from '../src/paths.js'
import { freshDatabase, testDatabaseUrl } from './helpers/database.js'
import { startServer } from './helpers/server.js'

/**
 * The README's walk-through (`scripts/walkthrough.sh`) run as a newcomer runs it: against a
 * server process started in development mode, with the operator key that server printed.
 */

const script = join(projectRoot, 'scripts', 'walkthrough.sh')

/** Every call the script makes, with the status it must print, in order. */
const STEPS: Array<[string, number]> = [
  ['operator token', 200],
  ['create organisation', 200],
  ['create API key', 200],
  ['create import supplier', 200],
  ['create operations team', 200],
  ['client token', 200],
  ['list import processes', 200],
  ['validate', 200],
  ['stage', 201],
  ['stage again (an update)', 200],
  ['dry run', 400],
  ['create', 201],
  ['status', 200],
  ['account summary', 200],
  ['add a note', 201],
  ['create again', 400]
]

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs the script with exactly this environment (plus PATH), from a folder that is not the project's. */
function walkthrough(env: Record<string, string>): Promise<Run> {
  const cwd = mkdtempSync(join(tmpdir(), 'amis-walkthrough-'))
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script], {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString()
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      rmSync(cwd, { recursive: true, force: true })
      resolve({ code, stdout, stderr })
    })
  })
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** bash and curl, or why the walk-through cannot run here. */
function missingTool(): string | undefined {
  const found = spawnSync('bash', ['-c', 'command -v curl'], { encoding: 'utf8' })
  if (found.error) return `bash is not installed here (${found.error.message})`
  if (found.status !== 0) return 'curl is not installed here'
  return undefined
}

const missing = missingTool()
if (missing) {
  t.skip(`the walk-through script was not run: ${missing}`, () => {})
} else {
  t.test('the README walk-through runs as written, twice, against one server', async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'amis-walkthrough-data-'))
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
    const env: Record<string, string> = { DATA_DIR: dataDir }
    if (testDatabaseUrl) {
      const { database, url, drop } = await freshDatabase()
      await database.close()
      t.teardown(drop)
      env.DATABASE_URL = url!
    }
    // As a newcomer starts it: development mode, no operator key configured.
    const server = await startServer(env)
    t.teardown(async () => {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM')
      await server.exit
    })
    const operatorKey = /Operator API key \(shown once[^:]*\): (amo_[\w-]+)/.exec(server.output())?.[1]
    if (!operatorKey) throw new Error('the server printed no operator key: ' + server.output())

    const operatorToken = async () => {
      const answer = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          query: 'mutation($k: String) { obtainToken(input: {APIKey: $k}) { token } }',
          variables: { k: operatorKey }
        })
      })
      return ((await answer.json()) as { data: { obtainToken: { token: string } } }).data.obtainToken.token
    }

    const seen: string[] = []
    for (const round of ['first run', 'second run (new names, same server)']) {
      const run = await walkthrough({ BASE_URL: server.url, OPERATOR_API_KEY: operatorKey })
      const output = run.stdout + run.stderr
      t.equal(run.code, 0, `${round}: exit 0\n${output}`)
      t.equal(run.stderr, '', `${round}: nothing on standard error`)

      // Each step printed once, in order, with its expected status.
      let at = -1
      for (const [step, status] of STEPS) {
        const line = new RegExp(`^${escape(step)} +(GET|POST) +\\S+ → ${status}$`, 'm').exec(run.stdout)
        t.ok(line, `${round}: "${step}" → ${status}`)
        if (line) {
          t.ok(line.index > at, `${round}: "${step}" comes after the step before it`)
          at = line.index
        }
      }

      const done = /^Done: (\S+) of (\S+) is service account (A-[0-9A-F]{8})\.$/m.exec(run.stdout)
      t.ok(done, `${round}: ends with the created account`)
      if (!done) continue
      const [, external, supplier, account] = done as unknown as [string, string, string, string]
      t.match(
        run.stdout,
        new RegExp(`service account number ${account}, ENERGY ledger L-[0-9A-F]{8}`),
        `${round}: the create's answer`
      )
      t.match(run.stdout, new RegExp(`→ COMPLETED ${account}$`, 'm'), `${round}: the status`)
      t.match(
        run.stdout,
        new RegExp(`→ account_already_imported: ${escape(external)} is ${account}$`, 'm'),
        `${round}: the refusal names both numbers`
      )
      t.match(run.stdout, `${server.url}/dashboard`, `${round}: the dashboard's address`)
      t.match(run.stdout, `${server.url}/docs`, `${round}: the documentation's address`)
      t.notOk(seen.includes(supplier), `${round}: a supplier of its own`)
      seen.push(supplier)

      // The service agrees: the account was created under that number.
      const answer = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${await operatorToken()}` },
        body: JSON.stringify({
          query:
            'query($s: String!, $e: String!) { importProcessEvents(importSupplierCode: $s, externalAccountNumber: $e) { type detail } }',
          variables: { s: supplier, e: external }
        })
      })
      const events = (
        (await answer.json()) as {
          data: { importProcessEvents: Array<{ type: string; detail: { service_account_number?: string } }> }
        }
      ).data.importProcessEvents
      t.same(
        events.map((e) => e.type),
        ['STAGED', 'RESTAGED', 'DRY_RUN', 'CREATE_ATTEMPTED', 'CREATED', 'POST_IMPORT_WRITE'],
        `${round}: the events`
      )
      t.equal(
        events.find((e) => e.type === 'CREATED')?.detail.service_account_number,
        account,
        `${round}: the number the service gave`
      )
    }

    t.test('it stops, naming the step, when a status is not the expected one', async (t) => {
      const run = await walkthrough({ BASE_URL: `${server.url}/nowhere`, OPERATOR_API_KEY: operatorKey })
      t.equal(run.code, 1)
      t.match(run.stdout, /^operator token +POST +\/graphql → 404$/m)
      t.match(run.stderr, /^step "operator token" failed: expected 200, got 404/m)
    })

    t.test('it stops when GraphQL refuses (a wrong operator key)', async (t) => {
      const run = await walkthrough({ BASE_URL: server.url, OPERATOR_API_KEY: 'amo_' + 'x'.repeat(40) })
      t.equal(run.code, 1)
      t.match(run.stderr, /^step "operator token" failed: authentication_failed: /m)
    })
  })
}

t.test('without OPERATOR_API_KEY it prints a one-line usage and exits 2', { skip: missing }, async (t) => {
  const run = await walkthrough({})
  t.equal(run.code, 2)
  t.equal(run.stdout, '')
  t.equal(run.stderr.trim().split('\n').length, 1, 'one line')
  t.match(run.stderr, /^usage: OPERATOR_API_KEY=.*printed on its first start/)
})

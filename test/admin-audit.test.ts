import { spawn } from 'node:child_process'
import t from 'tap'
import { runAdmin } from '../src/cli/admin.js'
import { projectRoot } from '../src/paths.js'
import { TEAM, importSetup } from './helpers/accounts.js'
import { TEST_OPERATOR_KEY } from './helpers/app.js'
import { nodeArgs } from './helpers/entry.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { createEndpoint } from './helpers/webhooks.js'

/**
 * `npm run admin -- audit`: the audit trail as a table (newest first) or one JSON object per
 * line, filtered by organisation, action and time; bad options are refused before anything is
 * sent (exit 2).
 */

/** Runs the admin command line (`src/cli/admin.ts ...`) as a child process. */
function spawnAdmin(
  argv: string[],
  env: Record<string, string>
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs('src/cli/admin.ts'), ...argv], {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8')
    })
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8')
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** Runs the command line in-process; counts the requests it makes. */
async function admin(argv: string[], env: Record<string, string> = {}) {
  const run = { code: -1, stdout: '', stderr: '', requests: 0 }
  run.code = await runAdmin(argv, {
    env,
    stdout: (s) => {
      run.stdout += s
    },
    stderr: (s) => {
      run.stderr += s
    },
    fetch: async (input, init) => {
      run.requests++
      return fetch(input, init)
    }
  })
  return run
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'

t.test('audit against the real service, run as the program', async (t) => {
  const { app, tenant: acme } = await importSetup(t, {
    env: { IMPORT_JOB_WORKERS: '0', WEBHOOK_CONCURRENCY: '0', WEBHOOK_ALLOW_PRIVATE: '1' }
  })
  const other = await createTenant(app, 'Other', 'OTHER_ENERGY')
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const env = { ADMIN_URL: url, OPERATOR_API_KEY: TEST_OPERATOR_KEY }
  const endpoint = await createEndpoint(
    app,
    { organisation: 'Acme', url: 'http://127.0.0.1:9/hooks', events: ['import_process.created'] },
    acme.token
  )
  const job = async (tenant: typeof acme) => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/data-import/import-jobs/',
      headers: { authorization: `Bearer ${tenant.token}` },
      payload: { import_supplier: tenant.supplier, operations_team_name: TEAM }
    })
    return res.json().id as string
  }
  const acmeJob = await job(acme)
  const otherJob = await job(other)
  const cancel = await app.inject({
    method: 'POST',
    url: `/v1/data-import/import-jobs/${otherJob}/cancel/`,
    headers: { authorization: `Bearer ${acme.token}` }
  })
  t.equal(cancel.statusCode, 404, "Acme may not cancel Other's job: a refusal on record")
  await asOperator(app, 'mutation($id: ID!) { revokeApiKey(input: {id: $id}) { id } }', { id: other.apiKeyId })

  const all = await spawnAdmin(['audit'], env)
  t.equal(all.code, 0, all.stderr)
  const lines = all.stdout.split('\n')
  t.equal(lines[0], 'Audit records, newest first:')
  t.match(lines[2], /^AT +ACTION +OUTCOME +ACTOR +TARGET +IP$/, 'the header')
  t.match(
    lines[3],
    /^\S+ +obtainToken +succeeded +operator +- +127\.0\.0\.1$/,
    "the newest first: the command's own login"
  )
  t.match(
    lines[4],
    new RegExp(`^\\S+ +revokeApiKey +succeeded +operator +api_key ${other.apiKeyId} +127\\.0\\.0\\.1$`),
    'the revocation: by the operator, what, from where'
  )
  t.match(
    all.stdout,
    new RegExp(
      `\\n\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ +cancelImportJob +refused: import_job_does_not_exist +Acme \\(key ${acme.apiKeyId.slice(0, 8)}\\) +- +127\\.0\\.0\\.1\\n`
    ),
    "the refusal, with its code and no target (another organisation's job)"
  )
  t.match(all.stdout, new RegExp(`createImportJob +succeeded +Acme \\(key [0-9a-f]{8}\\) +import_job ${acmeJob}`))
  t.match(all.stdout, new RegExp(`createWebhookEndpoint +succeeded +Acme .* +webhook_endpoint ${endpoint.id}`))
  t.match(all.stdout, /\n\d+ records; every field \(changes, request ids, key ids\) with --json\n$/)
  t.notOk(all.stdout.includes(endpoint.secret) || all.stdout.includes(acme.apiKey), 'no secret printed')

  // --json: one object per line, every field; --organisation keeps what concerns Acme.
  const json = await spawnAdmin(['audit', '--organisation', 'Acme', '--json'], env)
  t.equal(json.code, 0, json.stderr)
  const records = json.stdout
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, any>)
  t.ok(records.length >= 5, 'records concerning Acme')
  t.ok(
    records.every((r, i) => i === 0 || Number(r.id) < Number(records[i - 1]!.id)),
    'newest first'
  )
  t.ok(
    records.every((r) => r.actor.organisation === 'Acme' || r.target?.id === 'Acme' || r.actor.kind === 'operator'),
    "Acme's actions, or the operator's on Acme's things"
  )
  const ids = records.map((r) => r.target?.id)
  t.ok(ids.includes(acmeJob) && ids.includes(endpoint.id), 'its job and its endpoint')
  t.notOk(ids.includes(otherJob) || ids.includes(other.apiKeyId), "nothing of Other's")
  t.match(
    records.find((r) => r.target?.id === acmeJob),
    {
      action: 'createImportJob',
      outcome: 'succeeded',
      code: null,
      actor: { kind: 'organisation', organisation: 'Acme', apiKeyId: acme.apiKeyId },
      target: { type: 'import_job', id: acmeJob },
      changes: null,
      ip: '127.0.0.1',
      requestId: new RegExp(`^${UUID}$`)
    }
  )
  t.notOk(json.stdout.includes(endpoint.secret) || json.stdout.includes(acme.apiKey), 'no secret in the records')

  // --action, --since/--until, --limit.
  const cancels = await admin(['audit', '--action', 'cancelImportJob', '--json'], env)
  t.same(
    cancels.stdout
      .trimEnd()
      .split('\n')
      .map((line) => [JSON.parse(line).action, JSON.parse(line).code]),
    [['cancelImportJob', 'import_job_does_not_exist']]
  )
  const today = new Date().toISOString().slice(0, 10)
  const sameDay = await admin(['audit', '--since', today, '--until', today, '--limit', '2'], env)
  t.equal(sameDay.code, 0)
  t.match(
    sameDay.stdout,
    new RegExp(
      `^Audit records since ${today}T00:00:00Z, until ${today}T23:59:59Z, newest first \\(the newest 2; --limit for more\\):\n`
    )
  )
  t.match(sameDay.stdout, /\n2 records; /)
  const past = await spawnAdmin(['audit', '--until', '2000-01-01T00:00:00Z', '--action', 'revokeApiKey'], env)
  t.same([past.code, past.stdout], [0, 'No audit records action revokeApiKey, until 2000-01-01T00:00:00Z.\n'])
  const unknown = await admin(['audit', '--organisation', 'Nobody'], env)
  t.equal(unknown.code, 1, 'an unknown organisation: refused by the service')
  t.match(unknown.stderr, /^error: not_found: Organisation Nobody does not exist\./)
})

t.test('audit reads page after page up to --limit', async (t) => {
  const { app } = await importSetup(t)
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const env = { ADMIN_URL: url, OPERATOR_API_KEY: TEST_OPERATOR_KEY }
  // Over a thousand records: a page of the service and more.
  for (let i = 0; i < 1010; i++) {
    await app.audit.refused({ principal: undefined, ip: '192.0.2.1', requestId: `r-${i}` }, 'createApiKey', 'x', null)
  }
  const run = await admin(['audit', '--action', 'createApiKey', '--limit', '1005', '--json'], env)
  t.equal(run.code, 0, run.stderr)
  const records = run.stdout.trimEnd().split('\n')
  t.equal(records.length, 1005, '--limit records')
  t.equal(JSON.parse(records.at(-1)!).requestId, 'r-5', 'newest first, across pages')
  t.equal(run.requests, 1 + 2, 'the login, then two pages')
  const every = await admin(['audit', '--action', 'createApiKey', '--limit', '10000', '--json'], env)
  t.equal(
    every.stdout.trimEnd().split('\n').length,
    1010 + 1,
    'every record (and the tenant key) when fewer than --limit'
  )
})

t.test('bad options are refused before anything is sent (exit 2)', async (t) => {
  const env = { ADMIN_URL: 'http://127.0.0.1:9', OPERATOR_API_KEY: TEST_OPERATOR_KEY }
  const cases: Array<[string[], RegExp]> = [
    [['--since', 'yesterday'], /--since must be a date-time with an offset or Z .* not "yesterday"/],
    [['--until', '2026-02-30'], /--until must be a date-time/],
    [['--since', '2026-11-28T09:00:00'], /--since must be a date-time with an offset or Z/],
    [['--since', '2026-11-29', '--until', '2026-11-28'], /--since \(2026-11-29\) is after --until \(2026-11-28\)/],
    [['--action', 'dropTables'], /--action must be one of obtainToken, .*cancelImportJob, not "dropTables"/],
    [['--limit', '0'], /--limit must be a whole number from 1 to 10000/],
    [['--step', 'create'], /audit does not take --step/],
    [['--since'], /--since needs a value/],
    [['extra'], /audit takes 0 arguments but was given 1/]
  ]
  for (const [argv, message] of cases) {
    const run = await admin(['audit', ...argv], env)
    t.equal(run.code, 2, argv.join(' '))
    t.match(run.stderr, message)
    t.match(run.stderr, /^error: [^\n]+\n$/, 'one line')
    t.same([run.stdout, run.requests], ['', 0], 'nothing sent, nothing printed')
  }
  const help = await admin(['help'])
  t.match(help.stdout, /\n {2}audit \[options\]\n {6}The audit trail, newest first/)
  t.match(help.stdout, /Audit options \(audit; --organisation and --limit too\):\n {2}--action <action>/)
})

import { spawn } from 'node:child_process'
import t from 'tap'
import { webhookEvents } from '../drizzle/schema/index.js'
import { runAdmin } from '../src/cli/admin.js'
import { projectRoot } from '../src/paths.js'
import { buildTestApp, TEST_OPERATOR_KEY } from './helpers/app.js'
import { nodeArgs } from './helpers/entry.js'
import { asOperator } from './helpers/graphql.js'
import { webhookReceiver } from './helpers/webhook-receiver.js'
import { waitFor } from './helpers/wait.js'

interface Run {
  code: number
  stdout: string
  stderr: string
  /** How many HTTP requests the command line made. */
  requests: number
}

/** Runs the admin command line in-process against `env`'s service, over real HTTP. */
async function admin(env: Record<string, string>, argv: string[]): Promise<Run> {
  const run: Run = { code: -1, stdout: '', stderr: '', requests: 0 }
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

/** Runs the admin command line as a child process, as an operator does. */
function spawnAdmin(argv: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs('src/cli/admin.ts'), ...argv], {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'inherit']
    })
    let stdout = ''
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8')
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout }))
  })
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'

t.test('webhooks commands against the real service (private addresses allowed)', async (t) => {
  // One retry 50 ms after the first attempt, then FAILED: a failing receiver gives a FAILED delivery at once.
  const { app, database } = await buildTestApp(t, {
    env: { WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_RETRY_DELAYS: '0.05' }
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const env = { ADMIN_URL: url, OPERATOR_API_KEY: TEST_OPERATOR_KEY }
  const run = (...argv: string[]) => admin(env, argv)
  await asOperator(app, 'mutation { createOrganisation(input: {name: "Acme Energy"}) { id } }')
  await asOperator(app, 'mutation { createOrganisation(input: {name: "Other"}) { id } }')
  await run('create-supplier', 'ACME_ENERGY', '--organisation', 'Acme Energy')
  // The first two requests fail (the first delivery's two attempts), then every one succeeds.
  const receiver = await webhookReceiver(t, (n) => (n <= 2 ? 500 : 200))

  let endpointId = ''
  let secret = ''

  t.test('help lists the subcommands', async (t) => {
    const general = await run('help')
    for (const line of [
      'webhooks add <organisation> <url> [options]',
      'webhooks list [options]',
      'webhooks remove <endpoint-id>',
      'webhooks deliveries <endpoint-id> [options]',
      'webhooks redeliver <delivery-id>'
    ]) {
      t.ok(general.stdout.includes(`\n  ${line}\n`), `general help lists ${line}`)
    }
    const group = await run('help', 'webhooks')
    t.equal(group.code, 0)
    t.match(group.stdout, /^Usage: npm run admin -- webhooks <add\|list\|remove\|deliveries\|redeliver>/)
    const one = await run('webhooks', 'add', '--help')
    t.equal(one.code, 0)
    t.match(one.stdout, /^Usage: npm run admin -- webhooks add <organisation> <url> \[options\]/)
    t.match(one.stdout, /--events <a,b,…>/)
    t.equal(general.requests + group.requests + one.requests, 0, 'help sends nothing')
  })

  t.test('webhooks add: the id and the secret, shown once', async (t) => {
    const added = await run('webhooks', 'add', 'Acme Energy', receiver.url)
    t.equal(added.code, 0, added.stderr)
    const lines = added.stdout.split('\n')
    t.equal(lines[0], 'Webhook endpoint created for organisation Acme Energy')
    t.match(lines[1], new RegExp(`^  id: +${UUID}$`))
    t.equal(lines[3], `  url:           ${receiver.url}`)
    t.equal(lines[4], '  events:        all', 'every event type by default')
    t.equal(lines[7], '  Signing secret (shown only now — store it securely, it cannot be shown again):')
    t.match(lines[9], /^ {4}whsec_[A-Za-z0-9+/=]+$/)
    endpointId = lines[1]!.split(/ +/)[2]!
    secret = lines[9]!.trim()

    const some = await run(
      'webhooks',
      'add',
      'Other',
      receiver.url,
      '--events',
      'import_job.completed, import_job.cancelled',
      '--json'
    )
    t.equal(some.code, 0, some.stderr)
    const created = JSON.parse(some.stdout).createWebhookEndpoint
    t.same(created.events, ['import_job.completed', 'import_job.cancelled'])
    t.match(created.secret, /^whsec_/)
  })

  t.test('webhooks list: every endpoint, or one organisation', async (t) => {
    const all = await run('webhooks', 'list')
    t.equal(all.code, 0, all.stderr)
    const lines = all.stdout.split('\n')
    t.match(lines[0], /^ID +ORGANISATION +URL +EVENTS +CREATED$/)
    t.match(lines[1], new RegExp(`^${endpointId} +Acme Energy +${receiver.url} +all +\\d{4}-\\d\\d-\\d\\dT`))
    t.match(lines[2], /Other .* import_job\.completed, import_job\.cancelled /)
    t.equal(lines[4], '2 webhook endpoints')
    t.notMatch(all.stdout, /whsec_/, 'never a secret')

    const acme = await run('webhooks', 'list', '--organisation', 'Acme Energy')
    t.equal(acme.stdout.split('\n').at(-2), '1 webhook endpoint')
    const none = await run('webhooks', 'list', '--organisation', 'Nobody')
    t.equal(none.code, 1)
    t.equal(none.stderr, 'error: not_found: Organisation Nobody does not exist.\n')

    // The real program, in its own process.
    const spawned = await spawnAdmin(['webhooks', 'list', '--organisation', 'Acme Energy'], env)
    t.equal(spawned.code, 0)
    t.equal(spawned.stdout, acme.stdout, 'the program prints what runAdmin prints')
  })

  t.test('webhooks deliveries: a table of the endpoint deliveries, filtered by state', async (t) => {
    // Two events: the first delivery fails twice (FAILED), the second is delivered.
    t.equal((await run('skip', 'ACME_ENERGY', 'EXT-1')).code, 0)
    await receiver.waitFor(2)
    t.equal((await run('skip', 'ACME_ENERGY', 'EXT-2')).code, 0)
    await receiver.waitFor(3)
    await waitFor(
      'one delivery FAILED and one DELIVERED',
      async () => {
        const res = await run('webhooks', 'deliveries', endpointId, '--json')
        const states = (JSON.parse(res.stdout).webhookDeliveries as Array<{ state: string }>).map((d) => d.state)
        return states.join() === 'DELIVERED,FAILED'
      },
      { timeoutMs: 15_000 }
    )
    const bodies = receiver.verified(secret)
    t.same(
      bodies.map((b) => [b.type, b.data.external_account_number]),
      [
        ['import_process.skipped', 'EXT-1'],
        ['import_process.skipped', 'EXT-1'],
        ['import_process.skipped', 'EXT-2']
      ],
      'the printed secret verifies every request'
    )

    const list = await run('webhooks', 'deliveries', endpointId)
    t.equal(list.code, 0, list.stderr)
    const lines = list.stdout.split('\n')
    t.equal(lines[0], `Deliveries to webhook endpoint ${endpointId}, newest first:`)
    t.match(lines[2], /^ID +EVENT +STATE +ATTEMPTS +LAST STATUS\/ERROR +NEXT ATTEMPT +CREATED$/)
    t.match(lines[3], /^2 +import_process\.skipped +DELIVERED +1 +HTTP 200 +- +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    t.match(lines[4], /^1 +import_process\.skipped +FAILED +2 +HTTP 500 +- +\d{4}-/)
    t.equal(lines[6], 'Try a FAILED one again with: npm run admin -- webhooks redeliver 1')

    const failed = await run('webhooks', 'deliveries', endpointId, '--state', 'failed')
    t.equal(failed.stdout.split('\n')[0], `Deliveries in state FAILED to webhook endpoint ${endpointId}, newest first:`)
    t.equal(failed.stdout.split('\n').filter((l) => /^\d+ /.test(l)).length, 1, 'only the FAILED one')
    const one = await run('webhooks', 'deliveries', endpointId, '--limit', '1')
    t.match(one.stdout, /newest first \(the newest 1; --limit for more\):/)
    t.equal(one.stdout.split('\n').filter((l) => /^\d+ /.test(l)).length, 1)
    const pending = await run('webhooks', 'deliveries', endpointId, '--state', 'PENDING')
    t.equal(pending.stdout, `No deliveries in state PENDING to webhook endpoint ${endpointId}.\n`)
  })

  t.test('webhooks redeliver: one more attempt with the same webhook-id', async (t) => {
    // An event older than receivers accept a signature's time to be (Standard Webhooks: 5 minutes).
    await database.db.update(webhookEvents).set({ occurredAt: new Date(Date.now() - 3600_000) })
    const before = receiver.received.length
    const firstId = receiver.received[0]!.headers['webhook-id']
    const again = await run('webhooks', 'redeliver', '1')
    t.equal(again.code, 0, again.stderr)
    const lines = again.stdout.split('\n')
    t.equal(lines[0], 'Webhook delivery 1 is due again')
    t.equal(lines[2], `  webhook-id:         ${firstId}`)
    t.equal(lines[4], '  state:              PENDING')
    t.equal(lines[5], '  attempts so far:    2')
    t.equal(lines.at(-2), `One more attempt is made at once, with the same webhook-id (${firstId}).`)
    await receiver.waitFor(before + 1)
    t.equal(receiver.received[before]!.headers['webhook-id'], firstId, 'the same webhook-id')
    const signedAt = Number(receiver.received[before]!.headers['webhook-timestamp'])
    t.ok(Math.abs(signedAt - Date.now() / 1000) < 60, 'signed at the time of the attempt, not of the event')
    t.equal(receiver.verified(secret)[before]!.type, 'import_process.skipped', 'a standard receiver accepts it')
    await waitFor(
      'the redelivered one DELIVERED',
      async () => {
        const res = await run('webhooks', 'deliveries', endpointId, '--state', 'DELIVERED', '--json')
        return JSON.parse(res.stdout).webhookDeliveries.length === 2
      },
      { timeoutMs: 15_000 }
    )

    const none = await run('webhooks', 'redeliver', '999')
    t.equal(none.code, 1)
    t.equal(none.stderr, 'error: not_found: Webhook delivery 999 does not exist.\n')
  })

  t.test('webhooks remove', async (t) => {
    const removed = await run('webhooks', 'remove', endpointId)
    t.equal(removed.code, 0, removed.stderr)
    t.equal(
      removed.stdout,
      [
        'Webhook endpoint removed, with its delivery records',
        `  id:            ${endpointId}`,
        '  organisation:  Acme Energy',
        `  url:           ${receiver.url}`,
        ''
      ].join('\n')
    )
    t.equal(
      (await run('webhooks', 'list', '--organisation', 'Acme Energy')).stdout,
      'No webhook endpoints for Acme Energy.\n'
    )
    const again = await run('webhooks', 'remove', endpointId)
    t.equal(again.code, 1)
    t.equal(again.stderr, `error: not_found: Webhook endpoint ${endpointId} does not exist.\n`)
    const deliveries = await run('webhooks', 'deliveries', endpointId)
    t.equal(deliveries.code, 1, 'its deliveries are gone with it')
  })

  t.test('usage mistakes are refused before anything is sent', async (t) => {
    for (const [argv, message] of [
      [['webhooks'], /^error: webhooks needs one of add, list, remove, deliveries, redeliver /],
      [['webhooks', 'send'], /^error: unknown webhooks command "send": one of add, list/],
      [['webhooks', 'add', 'Acme Energy'], /^error: webhooks add needs <url> /],
      [
        ['webhooks', 'add', 'Acme Energy', receiver.url, '--events', 'import_process.created,account.deleted'],
        /^error: --events: unknown event type "account.deleted"; event types are import_process.created, /
      ],
      [
        ['webhooks', 'deliveries', endpointId, '--state', 'LOST'],
        /^error: --state must be one of PENDING, DELIVERED, FAILED, not "LOST"/
      ],
      [
        ['webhooks', 'deliveries', endpointId, '--limit', '1001'],
        /^error: --limit must be a whole number from 1 to 1000/
      ],
      [['webhooks', 'list', '--events', 'x'], /^error: webhooks list does not take --events/]
    ] as Array<[string[], RegExp]>) {
      const res = await run(...argv)
      t.equal(res.code, 2, argv.join(' '))
      t.match(res.stderr, message)
      t.equal(res.requests, 0, 'no request')
    }
  })
})

t.test('webhooks add is refused plainly by a service that allows https and public addresses only', async (t) => {
  const { app } = await buildTestApp(t)
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const env = { ADMIN_URL: url, OPERATOR_API_KEY: TEST_OPERATOR_KEY }
  await asOperator(app, 'mutation { createOrganisation(input: {name: "Acme Energy"}) { id } }')

  const http = await admin(env, ['webhooks', 'add', 'Acme Energy', 'http://hooks.example.com/in'])
  t.equal(http.code, 1)
  t.equal(
    http.stderr,
    'error: invalid: The URL must start with https://; the operator may allow http:// and private addresses ' +
      'with WEBHOOK_ALLOW_PRIVATE=1 (for tests and private networks).\n'
  )
  t.equal(http.stdout, '')
  const loopback = await admin(env, ['webhooks', 'add', 'Acme Energy', 'https://127.0.0.1/in'])
  t.equal(loopback.code, 1)
  t.equal(
    loopback.stderr,
    'error: invalid: 127.0.0.1 is not a public address (loopback); the operator may allow http:// and private ' +
      'addresses with WEBHOOK_ALLOW_PRIVATE=1 (for tests and private networks).\n'
  )
  const nobody = await admin(env, ['webhooks', 'add', 'Nobody', 'https://hooks.example.com/in'])
  t.equal(nobody.stderr, 'error: not_found: Organisation Nobody does not exist.\n')
  t.same((await asOperator(app, '{ webhookEndpoints { id } }')).webhookEndpoints, [], 'nothing registered')
})

import { spawn } from 'node:child_process'
import { createServer, type AddressInfo } from 'node:net'
import t from 'tap'
import { eq } from 'drizzle-orm'
import { importProcesses, importSuppliers, operationsTeams, organisations } from '../drizzle/schema/index.js'
import { ERROR_CODES } from '../schemas/error-codes.js'
import { runAdmin } from '../src/cli/admin.js'
import { projectRoot } from '../src/paths.js'
import { buildTestApp, TEST_OPERATOR_KEY } from './helpers/app.js'
import { importClient } from './helpers/accounts.js'
import { asOperator, createTenant, gql, OBTAIN_TOKEN } from './helpers/graphql.js'
import { exampleAccount } from './helpers/account-data.js'
import { nodeArgs } from './helpers/entry.js'

interface Run {
  code: number
  stdout: string
  stderr: string
  /** The HTTP requests the command line made: URL, headers and parsed JSON body. */
  requests: Array<{ url: string; headers: Headers; body: any }>
}

interface RunOptions {
  env?: Record<string, string | undefined>
  /** Stands in for the network (after the request is recorded); the real fetch by default. */
  fetch?: typeof fetch
}

/** Runs the command line in-process and records what it printed and sent. */
async function admin(argv: string[], options: RunOptions = {}): Promise<Run> {
  const run: Run = { code: -1, stdout: '', stderr: '', requests: [] }
  const network = options.fetch ?? fetch
  const recording: typeof fetch = async (input, init) => {
    run.requests.push({ url: String(input), headers: new Headers(init?.headers), body: JSON.parse(String(init?.body)) })
    return network(input, init)
  }
  run.code = await runAdmin(argv, {
    env: options.env ?? {},
    stdout: (s) => {
      run.stdout += s
    },
    stderr: (s) => {
      run.stderr += s
    },
    fetch: recording
  })
  return run
}

/** A loopback port with nothing listening on it (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

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

const SUPPLIERS_QUERY =
  '{ importSuppliers { code organisation status documentRoot sendMigrationEmails maxConcurrentProcessing supplyPointChecks } }'

/** A fake fetch answering every request with one fixed response. */
const answering =
  (body: string, init: ResponseInit): typeof fetch =>
  async () =>
    new Response(body, init)

/** The assertions `refusedBeforeAnyRequest` uses, on any test object. */
type Asserts = Pick<typeof t, 'equal' | 'match'>

/** A usage error: exit 2, one line on stderr, and nothing sent. */
const refusedBeforeAnyRequest = (t: Asserts, run: Run, message: RegExp) => {
  t.equal(run.code, 2, 'exit code 2')
  t.match(run.stderr, message)
  t.match(run.stderr, /^error: [^\n]+\n$/, 'one error line')
  t.equal(run.stdout, '', 'nothing on stdout')
  t.equal(run.requests.length, 0, 'no request was made')
}

t.test('the admin command line against the real service', async (t) => {
  const { app, database } = await buildTestApp(t)
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const env = { ADMIN_URL: url, OPERATOR_API_KEY: TEST_OPERATOR_KEY }
  const run = (...argv: string[]) => admin(argv, { env })
  const suppliers = async () => (await asOperator(app, SUPPLIERS_QUERY)).importSuppliers as any[]
  const supplier = async (code: string) => (await suppliers()).find((s) => s.code === code)

  await asOperator(app, 'mutation { createOrganisation(input: {name: "Base"}) { id } }')

  t.test('help', async (t) => {
    for (const argv of [['help'], ['--help'], ['-h']]) {
      const res = await admin(argv)
      t.equal(res.code, 0, argv.join(' '))
      t.match(
        res.stdout,
        /^Account Migration Import Service — operator admin command line\n\nUsage: npm run admin -- <command>/
      )
      for (const command of [
        'create-organisation <name>',
        'create-api-key <organisation>',
        'revoke-api-key <id>',
        'create-supplier <code> --organisation <name>',
        'update-supplier <code>',
        'list-suppliers',
        'create-team <name>',
        'skip <supplier-code> <external-account-number>',
        'events <supplier-code> <external-account-number>',
        'progress <supplier-code>',
        'reconcile <supplier-code>'
      ]) {
        t.ok(res.stdout.includes(`\n  ${command}`), `lists ${command}`)
      }
      t.equal(res.stderr, '')
      t.equal(res.requests.length, 0)
    }
    const one = await admin(['update-supplier', '--help'])
    t.equal(one.code, 0)
    t.match(one.stdout, /^Usage: npm run admin -- update-supplier <code> \[options\]\n/)
    t.match(one.stdout, /--max-concurrent-processing <n\|none>/)
    t.notMatch(one.stdout, /--organisation/, 'only the options update-supplier takes')
    t.same(await admin(['help', 'progress']).then((r) => [r.code, r.stdout.split('\n')[0]]), [
      0,
      'Usage: npm run admin -- progress <supplier-code> [options]'
    ])

    const bare = await admin([])
    t.equal(bare.code, 2, 'no command is a usage error')
    t.match(bare.stderr, /Usage: npm run admin -- <command>/, 'usage goes to stderr')
    t.equal(bare.stdout, '')
  })

  t.test('create-organisation', async (t) => {
    const res = await run('create-organisation', 'Acme Energy')
    t.equal(res.code, 0)
    t.equal(res.stderr, '')
    t.match(res.stdout, /^Organisation created\n {2}id: {4}[0-9a-f-]{36}\n {2}name: {2}Acme Energy\n$/)
    const rows = await database.db.select().from(organisations).where(eq(organisations.name, 'Acme Energy'))
    t.equal(rows.length, 1, 'the organisation exists')
    t.ok(res.stdout.includes(rows[0]!.id), 'the printed id is the stored one')

    t.equal(res.requests.length, 2, 'one token request, one operator call')
    t.equal(res.requests[0]!.body.operationName, 'ObtainToken', 'sent with operation name ObtainToken')
    t.equal(res.requests[1]!.body.operationName, 'CreateOrganisation')
    t.match(res.requests[0]!.body.query, /^mutation ObtainToken\(\$input: ObtainTokenInput!\)/)
    t.same(res.requests[0]!.body.variables, { input: { APIKey: TEST_OPERATOR_KEY } }, 'the key travels as a variable')
    t.notOk(res.requests[0]!.body.query.includes(TEST_OPERATOR_KEY), 'never interpolated into the document')
    t.equal(res.requests[0]!.headers.get('authorization'), null, 'obtainToken needs no token')
    t.match(
      res.requests[1]!.headers.get('authorization'),
      /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/,
      'operator call carries the token'
    )
    t.equal(res.requests[1]!.url, `${url}/graphql`)
    t.same(res.requests[1]!.body.variables, { input: { name: 'Acme Energy' } })

    const again = await run('create-organisation', 'Acme Energy')
    t.equal(again.code, 1)
    t.equal(again.stderr, 'error: already_exists: Organisation Acme Energy already exists.\n')
    t.equal(again.stdout, '')

    const blank = await run('create-organisation', '  ')
    t.equal(blank.code, 1, 'a server-side refusal')
    t.equal(blank.stderr, 'error: invalid: name must be 1–255 characters without control characters.\n')

    const json = await run('create-organisation', 'Json Org', '--json')
    t.equal(json.code, 0)
    const parsed = JSON.parse(json.stdout)
    t.match(parsed, { createOrganisation: { id: /^[0-9a-f-]{36}$/, name: 'Json Org' } })
    t.same(Object.keys(parsed), ['createOrganisation'], 'the raw data object')
  })

  t.test('create-api-key and revoke-api-key', async (t) => {
    await run('create-organisation', 'Keyholder')
    const res = await run('create-api-key', 'Keyholder')
    t.equal(res.code, 0)
    t.match(
      res.stdout,
      /^API key created for organisation Keyholder\n {2}id: {12}[0-9a-f-]{36}\n {2}organisation: {2}Keyholder\n/
    )
    t.match(res.stdout, /shown only once/)
    const key = /^ {4}(amk_[A-Za-z0-9_-]{43})$/m.exec(res.stdout)?.[1]
    const id = /^ {2}id: +(\S+)$/m.exec(res.stdout)?.[1]
    t.ok(key, 'the key stands on a line of its own')
    t.ok(id)
    t.match(res.stdout, new RegExp(`Revoke it with: npm run admin -- revoke-api-key ${id}`))

    const login = await gql(app, OBTAIN_TOKEN, { input: { APIKey: key } })
    t.type(login.data?.obtainToken?.token, 'string', 'the printed key works')

    const json = await run('create-api-key', 'Keyholder', '--json')
    t.match(JSON.parse(json.stdout), { createApiKey: { id: String, key: /^amk_/, organisation: 'Keyholder' } })

    const revoked = await run('revoke-api-key', id!)
    t.equal(revoked.code, 0)
    t.match(
      revoked.stdout,
      new RegExp(
        `^API key revoked\\n  id:            ${id}\\n  organisation:  Keyholder\\n  revoked at:    \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\n$`
      )
    )
    const refused = await gql(app, OBTAIN_TOKEN, { input: { APIKey: key } })
    t.equal(refused.errors?.[0]?.extensions?.code, 'authentication_failed', 'the revoked key no longer works')

    const unknownOrg = await run('create-api-key', 'Nobody')
    t.equal(unknownOrg.code, 1)
    t.equal(unknownOrg.stderr, 'error: not_found: Organisation Nobody does not exist.\n')
    t.equal(unknownOrg.stdout, '')

    const unknownKey = await run('revoke-api-key', '00000000-0000-4000-8000-000000000000')
    t.equal(unknownKey.code, 1)
    t.equal(unknownKey.stderr, 'error: not_found: API key 00000000-0000-4000-8000-000000000000 does not exist.\n')
  })

  t.test('create-supplier', async (t) => {
    const full = await run(
      'create-supplier',
      'FULL_SUPPLIER',
      '--organisation',
      'Base',
      '--document-root',
      'imports/full/',
      '--status',
      'Paused',
      '--send-migration-emails',
      'true',
      '--max-concurrent-processing',
      '25',
      '--supply-point-checks',
      'gb'
    )
    t.equal(full.code, 0, full.stderr)
    t.equal(full.requests[1]!.body.variables.input.supplyPointChecks, 'GB', 'matched case-insensitively')
    t.equal(
      full.stdout,
      [
        'Import supplier created',
        '  code:                       FULL_SUPPLIER',
        '  organisation:               Base',
        '  status:                     Paused',
        '  document root:              imports/full',
        '  send migration emails:      true',
        '  max concurrent processing:  25',
        '  supply point checks:        GB',
        ''
      ].join('\n')
    )
    t.same(await supplier('FULL_SUPPLIER'), {
      code: 'FULL_SUPPLIER',
      organisation: 'Base',
      status: 'Paused',
      documentRoot: 'imports/full',
      sendMigrationEmails: true,
      maxConcurrentProcessing: 25,
      supplyPointChecks: 'GB'
    })

    const plain = await run('create-supplier', 'PLAIN_SUPPLIER', '--organisation=Base')
    t.equal(plain.code, 0)
    t.same(
      plain.requests[1]!.body.variables,
      { input: { code: 'PLAIN_SUPPLIER', organisation: 'Base' } },
      'omitted flags are not sent'
    )
    t.match(plain.stdout, / {2}document root: +\(bucket root\)\n/)
    t.match(plain.stdout, / {2}max concurrent processing: +no limit\n/)
    t.match(plain.stdout, / {2}supply point checks: +NONE\n/, 'the default')
    t.same(await supplier('PLAIN_SUPPLIER'), {
      code: 'PLAIN_SUPPLIER',
      organisation: 'Base',
      status: 'Ongoing',
      documentRoot: '',
      sendMigrationEmails: false,
      maxConcurrentProcessing: null,
      supplyPointChecks: 'NONE'
    })

    const lower = await run('create-supplier', 'LOWER_CASE', '--organisation', 'Base', '--status', 'complete')
    t.equal(lower.code, 0, 'status is matched case-insensitively')
    t.equal((await supplier('LOWER_CASE')).status, 'Complete')

    const duplicate = await run('create-supplier', 'PLAIN_SUPPLIER', '--organisation', 'Base')
    t.equal(duplicate.code, 1)
    t.equal(duplicate.stderr, 'error: already_exists: Import supplier PLAIN_SUPPLIER already exists.\n')

    const orphan = await run('create-supplier', 'ORPHAN', '--organisation', 'Nobody')
    t.equal(orphan.code, 1)
    t.equal(orphan.stderr, 'error: not_found: Organisation Nobody does not exist.\n')
    t.equal(await supplier('ORPHAN'), undefined)

    const badCode = await run('create-supplier', 'bad-code', '--organisation', 'Base')
    t.equal(badCode.code, 1)
    t.equal(badCode.stderr, 'error: invalid: code must match ^[A-Z0-9_]{1,32}$.\n')

    refusedBeforeAnyRequest(
      t,
      await run('create-supplier', 'NO_ORG'),
      /^error: create-supplier needs --organisation <name>\n$/
    )
    refusedBeforeAnyRequest(
      t,
      await run('create-supplier', 'X', '--organisation', 'Base', '--status', 'Running'),
      /^error: --status must be one of Ongoing, Paused, Complete, not "Running"\n$/
    )
    t.equal(await supplier('X'), undefined, 'nothing was created')
  })

  t.test('update-supplier', async (t) => {
    await run(
      'create-supplier',
      'UPD',
      '--organisation',
      'Base',
      '--document-root',
      'upd',
      '--send-migration-emails',
      'true',
      '--max-concurrent-processing',
      '7'
    )

    const status = await run('update-supplier', 'UPD', '--status', 'Paused')
    t.equal(status.code, 0, status.stderr)
    t.same(
      status.requests[1]!.body.variables,
      { input: { code: 'UPD', status: 'Paused' } },
      'only the given flag is sent'
    )
    t.match(status.stdout, /^Import supplier updated\n {2}code: +UPD\n/)
    t.same(
      await supplier('UPD'),
      {
        code: 'UPD',
        organisation: 'Base',
        status: 'Paused',
        documentRoot: 'upd',
        sendMigrationEmails: true,
        maxConcurrentProcessing: 7,
        supplyPointChecks: 'NONE'
      },
      'the omitted fields are unchanged'
    )

    const limit = await run(
      'update-supplier',
      'UPD',
      '--max-concurrent-processing',
      '12',
      '--send-migration-emails',
      'FALSE'
    )
    t.equal(limit.code, 0)
    t.same(await supplier('UPD'), {
      code: 'UPD',
      organisation: 'Base',
      status: 'Paused',
      documentRoot: 'upd',
      sendMigrationEmails: false,
      maxConcurrentProcessing: 12,
      supplyPointChecks: 'NONE'
    })

    const none = await run('update-supplier', 'UPD', '--max-concurrent-processing', 'none')
    t.equal(none.code, 0)
    t.ok('maxConcurrentProcessing' in none.requests[1]!.body.variables.input, 'the field is sent')
    t.equal(none.requests[1]!.body.variables.input.maxConcurrentProcessing, null, 'as an explicit null')
    t.match(none.stdout, / {2}max concurrent processing: {2}no limit\n/)
    t.same(
      await supplier('UPD'),
      {
        code: 'UPD',
        organisation: 'Base',
        status: 'Paused',
        documentRoot: 'upd',
        sendMigrationEmails: false,
        maxConcurrentProcessing: null,
        supplyPointChecks: 'NONE'
      },
      'the limit is cleared, nothing else changed'
    )

    const root = await run('update-supplier', 'UPD', '--document-root', '', '--json')
    t.equal(root.code, 0)
    t.same(JSON.parse(root.stdout), {
      updateImportSupplier: {
        code: 'UPD',
        organisation: 'Base',
        status: 'Paused',
        documentRoot: '',
        sendMigrationEmails: false,
        maxConcurrentProcessing: null,
        supplyPointChecks: 'NONE'
      }
    })

    const gb = await run('update-supplier', 'UPD', '--supply-point-checks', 'GB')
    t.equal(gb.code, 0, gb.stderr)
    t.same(gb.requests[1]!.body.variables, { input: { code: 'UPD', supplyPointChecks: 'GB' } })
    t.match(gb.stdout, / {2}supply point checks: +GB\n/)
    t.equal((await supplier('UPD')).supplyPointChecks, 'GB', 'stored')
    const back = await run('update-supplier', 'UPD', '--supply-point-checks', 'none')
    t.equal(back.code, 0, back.stderr)
    t.match(back.stdout, / {2}supply point checks: +NONE\n/)
    t.equal((await supplier('UPD')).supplyPointChecks, 'NONE')
    refusedBeforeAnyRequest(
      t,
      await run('update-supplier', 'UPD', '--supply-point-checks', 'IE'),
      /^error: --supply-point-checks must be one of NONE, GB, not "IE"\n$/
    )

    const missing = await run('update-supplier', 'NO_SUCH', '--status', 'Ongoing')
    t.equal(missing.code, 1)
    t.equal(missing.stderr, 'error: not_found: Import supplier NO_SUCH does not exist.\n')

    const tooMany = await run('update-supplier', 'UPD', '--max-concurrent-processing', '100001')
    t.equal(tooMany.code, 1, "the upper bound is the service's rule")
    t.equal(tooMany.stderr, 'error: invalid: maxConcurrentProcessing must be null or 1–100000.\n')
    t.equal((await supplier('UPD')).maxConcurrentProcessing, null)

    refusedBeforeAnyRequest(
      t,
      await run('update-supplier', 'UPD'),
      /^error: update-supplier needs at least one of --document-root, --status/
    )
    for (const bad of ['0', '-3', '1.5', 'abc', '', '99999999999']) {
      refusedBeforeAnyRequest(
        t,
        await run('update-supplier', 'UPD', `--max-concurrent-processing=${bad}`),
        /^error: --max-concurrent-processing must be a whole number of at least 1, or none/
      )
    }
    refusedBeforeAnyRequest(
      t,
      await run('update-supplier', 'UPD', '--send-migration-emails', 'yes'),
      /^error: --send-migration-emails must be true or false, not "yes"\n$/
    )
    refusedBeforeAnyRequest(
      t,
      await run('update-supplier', 'UPD', '--status', 'Done'),
      /^error: --status must be one of/
    )
    refusedBeforeAnyRequest(
      t,
      await run('update-supplier', 'UPD', '--organisation', 'Base'),
      /^error: update-supplier does not take --organisation/
    )
    t.equal((await supplier('UPD')).status, 'Paused', 'no refused command changed anything')
  })

  t.test('list-suppliers', async (t) => {
    await run(
      'create-supplier',
      'LIST_A',
      '--organisation',
      'Base',
      '--max-concurrent-processing',
      '3',
      '--document-root',
      'a/b'
    )
    const res = await run('list-suppliers')
    t.equal(res.code, 0)
    const lines = res.stdout.split('\n')
    t.match(lines[0], /^CODE +ORGANISATION +STATUS +EMAILS +MAX CONCURRENT +CHECKS +DOCUMENT ROOT$/)
    const all = await suppliers()
    t.ok(all.length >= 2)
    t.equal(
      lines.length,
      all.length + 4,
      'a header, one line per supplier, a blank line, a count and the final newline'
    )
    t.equal(lines[all.length + 2], `${all.length} import suppliers`)
    const row = lines.find((l) => l.startsWith('LIST_A '))
    t.match(row, /^LIST_A +Base +Ongoing +false +3 +NONE +a\/b$/)
    const headerAt = (name: string) => lines[0]!.indexOf(name)
    t.equal(row!.indexOf('Ongoing'), headerAt('STATUS'), 'columns are aligned')
    t.equal(row!.indexOf('a/b'), headerAt('DOCUMENT ROOT'))
    t.same(
      all.map((s) => s.code),
      lines.slice(1, all.length + 1).map((l) => l.split(' ')[0]),
      'every supplier, in order'
    )

    const json = await run('list-suppliers', '--json')
    t.equal(json.code, 0)
    t.same(JSON.parse(json.stdout), { importSuppliers: all }, 'the raw data object')

    refusedBeforeAnyRequest(
      t,
      await run('list-suppliers', 'extra'),
      /^error: list-suppliers takes 0 arguments but was given 1/
    )
    refusedBeforeAnyRequest(
      t,
      await run('list-suppliers', '--status', 'Paused'),
      /^error: list-suppliers does not take --status/
    )
  })

  t.test('create-team', async (t) => {
    const res = await run('create-team', 'Team Blue')
    t.equal(res.code, 0)
    t.match(res.stdout, /^Operations team created\n {2}id: {4}\S+\n {2}name: {2}Team Blue\n$/)
    const rows = await database.db.select().from(operationsTeams).where(eq(operationsTeams.name, 'Team Blue'))
    t.equal(rows.length, 1, 'the team exists')
    t.ok(res.stdout.includes(`id:    ${rows[0]!.id}\n`))

    const again = await run('create-team', 'Team Blue')
    t.equal(again.code, 1)
    t.equal(again.stderr, 'error: already_exists: Operations team Team Blue already exists.\n')

    refusedBeforeAnyRequest(
      t,
      await run('create-team'),
      /^error: create-team needs <name> \(usage: npm run admin -- create-team <name>\)\n$/
    )
    refusedBeforeAnyRequest(t, await run('create-team', 'Team', 'Red'), /quote values that contain spaces/)
  })

  t.test('skip, events and progress', async (t) => {
    await run('create-supplier', 'TRACK', '--organisation', 'Base')
    const [track] = await database.db
      .select({ id: importSuppliers.id })
      .from(importSuppliers)
      .where(eq(importSuppliers.code, 'TRACK'))
    const at = new Date('2026-03-04T05:06:07Z')
    await database.db.insert(importProcesses).values([
      { supplierId: track!.id, externalAccountNumber: 'P-1', state: 'STAGED', firstStagedAt: at },
      {
        supplierId: track!.id,
        externalAccountNumber: 'P-2',
        state: 'STAGED',
        firstStagedAt: at,
        latestError: { at, errors: [] }
      },
      {
        supplierId: track!.id,
        externalAccountNumber: 'DONE',
        state: 'IMPORTED',
        firstStagedAt: at,
        serviceAccountNumber: 'A-00C11AAA',
        accountCreatedAt: at
      }
    ])

    const skip = await run('skip', 'TRACK', 'NEVER-STAGED')
    t.equal(skip.code, 0, skip.stderr)
    t.equal(
      skip.stdout,
      [
        'Import process skipped',
        '  supplier:                 TRACK',
        '  external account number:  NEVER-STAGED',
        '  state:                    SKIPPED',
        ''
      ].join('\n')
    )
    const [row] = await database.db
      .select({ state: importProcesses.state })
      .from(importProcesses)
      .where(eq(importProcesses.externalAccountNumber, 'NEVER-STAGED'))
    t.equal(row?.state, 'SKIPPED', 'the process exists and is skipped')

    const imported = await run('skip', 'TRACK', 'DONE')
    t.equal(imported.code, 1)
    t.equal(imported.stderr, 'error: invalid: Account DONE is already imported and cannot be skipped.\n')

    const unknown = await run('skip', 'NO_SUCH', 'X')
    t.equal(unknown.code, 1)
    t.equal(unknown.stderr, 'error: not_found: Import supplier NO_SUCH does not exist.\n')

    const events = await run('events', 'TRACK', 'NEVER-STAGED')
    t.equal(events.code, 0, events.stderr)
    const lines = events.stdout.split('\n')
    t.equal(lines[0], 'Events of TRACK / NEVER-STAGED')
    t.match(lines[2], /^AT +TYPE +ACTOR +DETAIL$/)
    t.match(lines[3], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ +SKIPPED +operator +\{"previousState":null\}$/)
    t.equal(lines.length, 5, 'one event')

    const eventsJson = await run('events', 'TRACK', 'NEVER-STAGED', '--json')
    t.match(JSON.parse(eventsJson.stdout), {
      importProcessEvents: [{ type: 'SKIPPED', actor: 'operator', at: /Z$/, detail: Object }]
    })
    t.equal(JSON.parse(eventsJson.stdout).importProcessEvents.length, 1)

    const none = await run('events', 'TRACK', 'P-1')
    t.equal(none.code, 0)
    t.equal(none.stdout, 'Events of TRACK / P-1: none\n')

    const noProcess = await run('events', 'TRACK', 'NOPE')
    t.equal(noProcess.code, 1)
    t.equal(noProcess.stderr, 'error: not_found: Import process TRACK / NOPE does not exist.\n')

    const progress = await run('progress', 'TRACK')
    t.equal(progress.code, 0)
    t.equal(
      progress.stdout,
      [
        'Migration progress of TRACK',
        '  staged:    3  (accounts staged so far)',
        '  pending:   2  (staged, not yet created)',
        '  imported:  1  (created on the platform)',
        '  skipped:   1  (set aside by the operator)',
        '  failed:    1  (pending accounts with a failed create: their latest create attempt failed)',
        '  failing:   0  (accounts with an open failure, at any step)',
        '',
        'failed counts only creates: pending accounts whose latest create attempt failed.',
        'failing counts every account with an open failure record, at any step (validate, stage, create or',
        'post-import data), staged or not: an account refused at validate is failing but not failed. A record',
        'closes when the step next succeeds. The failing accounts and why: npm run admin -- failures TRACK',
        ''
      ].join('\n'),
      'each count says what it counts, and failed is told from failing'
    )
    const progressJson = await run('progress', 'TRACK', '--json')
    t.same(JSON.parse(progressJson.stdout), {
      migrationProgress: { staged: 3, pending: 2, imported: 1, skipped: 1, failed: 1, failing: 0 }
    })

    const noSupplier = await run('progress', 'NO_SUCH')
    t.equal(noSupplier.code, 1)
    t.equal(noSupplier.stderr, 'error: not_found: Import supplier NO_SUCH does not exist.\n')

    refusedBeforeAnyRequest(t, await run('events', 'TRACK'), /^error: events needs <external-account-number>/)
  })

  t.test('reconcile: the supplier totals, through the GraphQL query', async (t) => {
    const tenant = await createTenant(app, 'Recon', 'RECON')
    const client = importClient(app, tenant)
    await asOperator(app, 'mutation { createOperationsTeam(input: {name: "Migrations"}) { id } }')
    for (const external of ['R-1', 'R-2', 'R-P1', 'R-P2', 'R-P3']) {
      t.equal(
        (await client.stage(exampleAccount({ import_supplier: 'RECON', external_account_number: external })))
          .statusCode,
        201
      )
    }
    for (const external of ['R-1', 'R-2']) t.equal((await client.create(external)).statusCode, 201)
    t.equal((await run('skip', 'RECON', 'R-SKIPPED')).code, 0)
    const http = (
      await app.inject({
        url: '/v1/data-import/reconciliation/RECON/',
        headers: { authorization: `Token ${tenant.token}` }
      })
    ).json()
    const [ledger] = http.ledgers
    t.equal(ledger.accounts, 2)

    const res = await run('reconcile', 'RECON')
    t.equal(res.code, 0, res.stderr)
    t.equal(
      res.stdout,
      [
        'Reconciliation totals of RECON',
        '  accounts created:       2',
        '  accounts skipped:       1',
        '  accounts pending:       3 (staged, not created, not skipped)',
        `  transactions:           ${http.transactions.count}`,
        `  transaction sum:        ${http.transactions.amount_sum} (what the transactions add to the balances)`,
        `  notes:                  ${http.notes}`,
        `  historical agreements:  ${http.historical_agreements}`,
        `  billing documents:      ${http.billing_documents}`,
        `  historical statements:  ${http.historical_statements}`,
        `  payment instructions:   ${http.payment_instructions}`,
        '',
        'LEDGER  ACCOUNTS  BALANCE SUM',
        `${ledger.ledger_code.padEnd(6)}  2         ${ledger.balance_sum}`,
        ''
      ].join('\n')
    )
    t.match(
      res.requests[1]?.body.query ?? res.requests[0]?.body.query,
      /reconciliation\(importSupplierCode: \$importSupplierCode\)/
    )
    const json = await run('reconcile', 'RECON', '--json')
    t.same(JSON.parse(json.stdout), {
      reconciliation: {
        accountsCreated: 2,
        accountsSkipped: 1,
        accountsPending: 3,
        ledgers: [{ ledgerCode: ledger.ledger_code, accounts: 2, balanceSum: ledger.balance_sum }],
        transactions: { count: http.transactions.count, amountSum: http.transactions.amount_sum },
        notes: http.notes,
        historicalAgreements: http.historical_agreements,
        historicalStatements: http.historical_statements,
        billingDocuments: http.billing_documents,
        paymentInstructions: http.payment_instructions
      }
    })
    t.equal(
      (await run('reconcile', 'TRACK')).stdout.split('\n').slice(-2).join('\n'),
      'No ledgers: no account is created yet.\n',
      'a supplier without created accounts'
    )
    const noSupplier = await run('reconcile', 'NO_SUCH')
    t.equal(noSupplier.code, 1)
    t.equal(noSupplier.stderr, 'error: not_found: Import supplier NO_SUCH does not exist.\n')
    refusedBeforeAnyRequest(t, await run('reconcile'), /^error: reconcile needs <supplier-code>/)
  })

  t.test('erase', async (t) => {
    await run('create-supplier', 'ERASING', '--organisation', 'Base')
    const [erasing] = await database.db
      .select({ id: importSuppliers.id })
      .from(importSuppliers)
      .where(eq(importSuppliers.code, 'ERASING'))
    const at = new Date('2026-03-04T05:06:07Z')
    const latestError = {
      at: '2026-03-04T05:06:07Z',
      errors: [{ detail: 'Ann Example <ann@example.test> is not valid.', code: 'invalid', attr: 'customers.0.email' }]
    }
    await database.db.insert(importProcesses).values([
      {
        supplierId: erasing!.id,
        externalAccountNumber: 'E-1',
        state: 'STAGED',
        firstStagedAt: at,
        stagedData: { given_name: 'Ann' },
        latestError
      },
      {
        supplierId: erasing!.id,
        externalAccountNumber: 'E-2',
        state: 'IMPORTED',
        firstStagedAt: at,
        stagedData: { given_name: 'Bob' },
        serviceAccountNumber: 'A-00E2E2E2',
        accountCreatedAt: at
      }
    ])

    const pending = await run('erase', 'ERASING', 'E-1')
    t.equal(pending.code, 0, pending.stderr)
    t.equal(pending.stderr, '')
    t.equal(
      pending.stdout,
      [
        'Staged data erased',
        '  supplier:                 ERASING',
        '  external account number:  E-1',
        '  state:                    STAGED',
        ''
      ].join('\n')
    )
    const [row] = await database.db
      .select({ stagedData: importProcesses.stagedData, latestError: importProcesses.latestError })
      .from(importProcesses)
      .where(eq(importProcesses.externalAccountNumber, 'E-1'))
    t.same(
      row,
      {
        stagedData: null,
        latestError: { at: '2026-03-04T05:06:07Z', errors: [{ code: 'invalid', attr: 'customers.0.email' }] }
      },
      'the payload is gone and the error keeps its code and attr'
    )

    const imported = await run('erase', 'ERASING', 'E-2')
    t.equal(imported.code, 0, imported.stderr)
    t.match(imported.stdout, /\n {2}state: {20}IMPORTED\n {2}service account number: {3}A-00E2E2E2\n$/)
    t.same(
      JSON.parse((await run('erase', 'ERASING', 'E-2', '--json')).stdout),
      {
        eraseStagedData: {
          importSupplierCode: 'ERASING',
          externalAccountNumber: 'E-2',
          state: 'IMPORTED',
          serviceAccountNumber: 'A-00E2E2E2'
        }
      },
      'erasing again is fine'
    )

    const noProcess = await run('erase', 'ERASING', 'NOPE')
    t.equal(noProcess.code, 1)
    t.equal(noProcess.stdout, '')
    t.equal(noProcess.stderr, 'error: not_found: Import process ERASING / NOPE does not exist.\n')
    const noSupplier = await run('erase', 'NO_SUCH', 'E-1')
    t.equal(noSupplier.code, 1)
    t.equal(noSupplier.stderr, 'error: not_found: Import supplier NO_SUCH does not exist.\n')

    refusedBeforeAnyRequest(t, await run('erase', 'ERASING'), /^error: erase needs <external-account-number>/)
    refusedBeforeAnyRequest(
      t,
      await run('erase', 'ERASING', 'E-1', 'E-2'),
      /^error: erase takes 2 arguments but was given 3/
    )
    refusedBeforeAnyRequest(
      t,
      await run('erase', 'ERASING', 'E-1', '--step', 'create'),
      /^error: erase does not take --step/
    )
    const help = await admin(['help'])
    t.ok(help.stdout.includes('\n  erase <supplier-code> <external-account-number>\n'), 'listed in the help')
  })

  t.test('lists of organisations, API keys and teams; failures by code; progress --watch', async (t) => {
    await asOperator(app, 'mutation { createOrganisation(input: {name: "Lister"}) { id } }')
    const key = (await asOperator(app, 'mutation { createApiKey(input: {organisation: "Lister"}) { id key } }'))
      .createApiKey
    await asOperator(app, 'mutation { createImportSupplier(input: {code: "LISTED", organisation: "Lister"}) { code } }')
    await asOperator(app, 'mutation { createOperationsTeam(input: {name: "Zeta Team"}) { id } }')

    const organisations = await run('list-organisations')
    t.equal(organisations.code, 0)
    t.match(organisations.stdout, /^NAME {2,}ID\n/)
    t.match(organisations.stdout, /\nLister {2,}[0-9a-f-]{36}\n/)
    const keys = await run('list-api-keys', '--organisation', 'Lister')
    t.equal(keys.code, 0)
    t.match(keys.stdout, /^ID {2,}ORGANISATION {2,}CREATED {2,}REVOKED\n/)
    t.ok(keys.stdout.includes(`\n${key.id}  Lister`), "the key's id, to revoke it by")
    t.match(keys.stdout, /\d{4}-\d\d-\d\dT[\d:]+Z {2}-\n\n1 API key, 1 active\n$/)
    t.notOk(keys.stdout.includes(key.key), 'never the key')
    t.equal(
      (await run('list-api-keys', '--organisation', 'Nobody')).stderr,
      'error: not_found: Organisation Nobody does not exist.\n'
    )
    const teams = await run('list-teams')
    t.match(teams.stdout, /\nZeta Team {2,}[0-9a-f-]{36}\n/)

    const org = await gql(app, OBTAIN_TOKEN, { input: { APIKey: key.key } })
    const token = org.data!.obtainToken.token as string
    const bad = { external_account_number: 'L-<1>', import_supplier: 'LISTED', account_type: 'DOMESTIC' }
    for (const external of ['L-<1>', 'L-2']) {
      await app.inject({
        method: 'POST',
        url: '/v1/data-import/validate-account/',
        headers: { authorization: `Bearer ${token}` },
        payload: { ...bad, external_account_number: external }
      })
    }
    const failures = await run('failures', 'LISTED')
    t.equal(failures.code, 0, failures.stderr)
    const meaning = (code: 'min_items' | 'required') => ERROR_CODES[code].meaning.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    t.match(
      failures.stdout,
      new RegExp(
        '^Failures of LISTED: 2 accounts failing\n\nSTEP {2,}CODE {2,}ACCOUNTS {2}MEANING\n' +
          `validate {2}min_items {2}2 {9}${meaning('min_items')}\nvalidate {2}required {3}2 {9}${meaning('required')}\n`
      ),
      'each code with what it means'
    )
    t.match(
      failures.stdout,
      /\nEXTERNAL ACCOUNT NUMBER {2}STEP {2,}ATTEMPTS {2}FAILED AT {2,}HTTP {2}PROBLEMS\nL-2 {2,}validate {2}1 {2,}\S+ {2}400 {3}required at billing_address; min_items at customers; /
    )
    t.match(failures.stdout, /\nL-<1> {2,}validate/, 'the account number as it is')
    const narrowed = await run('failures', 'LISTED', '--code', 'nope', '--step', 'create')
    t.match(
      narrowed.stdout,
      /^Failures of LISTED with step create, code nope: 0 accounts failing \(of 2 accounts failing in all\)\n\nNo failures match\./
    )
    const limited = await run('failures', 'LISTED', '--limit', '1')
    t.match(limited.stdout, /Accounts \(the first 1; --limit for more/)
    t.equal((await run('failures', 'NO_SUCH')).stderr, 'error: not_found: Import supplier NO_SUCH does not exist.\n')
    refusedBeforeAnyRequest(
      t,
      await run('failures', 'LISTED', '--step', 'nope'),
      /--step must be one of validate, stage/
    )
    refusedBeforeAnyRequest(
      t,
      await run('failures', 'LISTED', '--limit', '0'),
      /--limit must be a whole number from 1 to 10000/
    )
    refusedBeforeAnyRequest(t, await run('list-teams', '--step', 'validate'), /list-teams does not take --step/)

    const stop = new AbortController()
    let out = ''
    let readings = 0
    const watching = runAdmin(['progress', 'LISTED', '--watch'], {
      env,
      stderr: () => {},
      watchIntervalSeconds: 0.05,
      signal: stop.signal,
      stdout: (s) => {
        out += s
        if (++readings === 3) stop.abort()
      }
    })
    t.equal(await watching, 0, 'Ctrl-C ends the watch with exit code 0')
    t.equal(readings, 3, 'redrawn until stopped')
    t.match(out, /Migration progress of LISTED at \d\d:\d\d:\d\d UTC\n[\s\S]*failing: {3}2 /)
  })

  t.test('failures: --limit bounds the records, and a filtered summary counts what matches', async (t) => {
    await asOperator(app, 'mutation { createOrganisation(input: {name: "Filterer"}) { id } }')
    const key = (await asOperator(app, 'mutation { createApiKey(input: {organisation: "Filterer"}) { key } }'))
      .createApiKey.key as string
    await asOperator(
      app,
      'mutation { createImportSupplier(input: {code: "FILTERED", organisation: "Filterer"}) { code } }'
    )
    const token = (await gql(app, OBTAIN_TOKEN, { input: { APIKey: key } })).data!.obtainToken.token as string
    const validate = (payload: unknown) =>
      app.inject({
        method: 'POST',
        url: '/v1/data-import/validate-account/',
        headers: { authorization: `Bearer ${token}` },
        payload: payload as object
      })
    // Two accounts missing most fields (required, min_items), one only of another account type (invalid_choice).
    for (const external of ['F-1', 'F-2']) {
      await validate({ external_account_number: external, import_supplier: 'FILTERED', account_type: 'DOMESTIC' })
    }
    await validate(
      exampleAccount({ external_account_number: 'F-3', import_supplier: 'FILTERED', account_type: 'HOUSE' })
    )

    const limited = await run('failures', 'FILTERED', '--limit', '1', '--json')
    t.equal(limited.code, 0, limited.stderr)
    t.equal(JSON.parse(limited.stdout).migrationFailures.length, 1, '--limit 1 --json: one record, not two')
    t.equal(JSON.parse(limited.stdout).migrationFailureSummary.failingAccounts, 3, 'the summary of all, as named')
    t.notOk('matchingFailureSummary' in JSON.parse(limited.stdout), 'no filter, no matching summary')

    const byCode = await run('failures', 'FILTERED', '--code', 'invalid_choice')
    t.equal(byCode.code, 0, byCode.stderr)
    t.match(
      byCode.stdout,
      /^Failures of FILTERED with code invalid_choice: 1 account failing \(of 3 accounts failing in all\)\n\nSTEP {2,}CODE {2,}ACCOUNTS {2}MEANING\nvalidate {2}invalid_choice {2}1 {9}\S/,
      'the headline and the table count the records that match'
    )
    t.notOk(/\b(required|min_items)\b/.test(byCode.stdout), 'no code of the records left out')
    t.match(byCode.stdout, /\nF-3 {2,}validate/)
    t.notOk(/\nF-[12] /.test(byCode.stdout), 'only the matching accounts are listed')

    const byCodeJson = JSON.parse((await run('failures', 'FILTERED', '--code', 'required', '--json')).stdout)
    t.same(byCodeJson.matchingFailureSummary, {
      filter: 'code required',
      failingAccounts: 2,
      byCode: [{ step: 'validate', code: 'required', accounts: 2 }]
    })
    t.equal(byCodeJson.migrationFailures.length, 2)

    const byStep = await run('failures', 'FILTERED', '--step', 'validate', '--limit', '1')
    t.match(
      byStep.stdout,
      /^Failures of FILTERED with step validate: 3 accounts failing \(of 3 accounts failing in all\)\n/
    )
    t.match(
      byStep.stdout,
      /\nvalidate {2}invalid_choice {2}1 /,
      'every code of the step, counted as the service counts'
    )
    t.match(byStep.stdout, /Accounts \(the first 1; --limit for more/)
  })

  t.test('authentication', async (t) => {
    const wrong = await admin(['list-suppliers'], { env: { ADMIN_URL: url, OPERATOR_API_KEY: 'amo_wrong' } })
    t.equal(wrong.code, 1)
    t.equal(
      wrong.stderr,
      'error: authentication_failed: Incorrect authentication credentials. ' +
        'The operator key was refused: check --operator-key or OPERATOR_API_KEY.\n'
    )
    t.equal(wrong.stdout, '')
    t.equal(wrong.requests.length, 1, 'stops after the refused token request')

    const flag = await admin(['list-suppliers', '--url', url, '--operator-key', TEST_OPERATOR_KEY])
    t.equal(flag.code, 0, 'URL and key as options')
    const overrides = await admin(['list-suppliers', '--operator-key', 'amo_wrong'], { env })
    t.equal(overrides.code, 1, '--operator-key wins over the environment')
    t.same(overrides.requests[0]!.body.variables, { input: { APIKey: 'amo_wrong' } })

    // An organisation's key gets a token, but not the operator's fields (it may list its own suppliers).
    await run('create-organisation', 'Tenant')
    const key = /^ {4}(amk_\S+)$/m.exec((await run('create-api-key', 'Tenant')).stdout)![1]!
    const tenant = await admin(['list-organisations'], { env: { ADMIN_URL: url, OPERATOR_API_KEY: key } })
    t.equal(tenant.code, 1)
    t.equal(tenant.stderr, 'error: permission_denied: Only the service operator may use this field.\n')
    t.equal(tenant.requests.length, 2)

    refusedBeforeAnyRequest(
      t,
      await admin(['list-suppliers'], { env: { ADMIN_URL: url } }),
      /^error: no operator key: pass --operator-key <key> or set OPERATOR_API_KEY\n$/
    )
    refusedBeforeAnyRequest(
      t,
      await admin(['list-suppliers'], { env: { ADMIN_URL: url, OPERATOR_API_KEY: '' } }),
      /no operator key/
    )
  })

  t.test('connection settings', async (t) => {
    const trailing = await admin(['list-suppliers', '--url', `${url}/`], { env })
    t.equal(trailing.code, 0)
    t.equal(trailing.requests[0]!.url, `${url}/graphql`, 'a trailing slash is ignored')

    const wins = await admin(['list-suppliers', '--url', url], { env: { ...env, ADMIN_URL: 'http://127.0.0.1:9' } })
    t.equal(wins.code, 0, '--url wins over ADMIN_URL')

    const defaulted = await admin(['list-suppliers'], {
      env: { OPERATOR_API_KEY: 'k' },
      fetch: answering('{}', { status: 503 })
    })
    t.equal(defaulted.requests[0]!.url, 'http://127.0.0.1:3000/graphql', 'the default URL')

    refusedBeforeAnyRequest(
      t,
      await run('list-suppliers', '--url', 'not a url'),
      /^error: --url must be an http\(s\) URL/
    )
    refusedBeforeAnyRequest(
      t,
      await run('list-suppliers', '--url', 'ftp://127.0.0.1/'),
      /^error: --url must be an http\(s\) URL/
    )
  })

  t.test('usage errors make no request', async (t) => {
    refusedBeforeAnyRequest(
      t,
      await run('frobnicate'),
      /^error: unknown command "frobnicate" \(run "npm run admin -- help"/
    )
    refusedBeforeAnyRequest(t, await run('help', 'frobnicate'), /^error: unknown command "frobnicate"/)
    refusedBeforeAnyRequest(t, await run('list-suppliers', '--verbose'), /^error: unknown option --verbose\n/)
    refusedBeforeAnyRequest(
      t,
      await run('create-supplier', 'X', '--organisation'),
      /^error: --organisation needs a value\n/
    )
  })
})

t.test('the service cannot be reached', async (t) => {
  const port = await closedPort()
  const refused = await admin(['list-suppliers'], {
    env: { ADMIN_URL: `http://127.0.0.1:${port}`, OPERATOR_API_KEY: 'k' }
  })
  t.equal(refused.code, 1)
  t.equal(
    refused.stderr,
    `error: cannot reach the service at http://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n` +
      '  Is the service running there? Set --url or ADMIN_URL to its address.\n'
  )
  t.equal(refused.stdout, '')
  // The migration client's AMIS_URL is read too, so one setting serves both command lines.
  const viaAmisUrl = await admin(['list-suppliers'], {
    env: { AMIS_URL: `http://127.0.0.1:${port}`, OPERATOR_API_KEY: 'k' }
  })
  t.match(viaAmisUrl.stderr, `cannot reach the service at http://127.0.0.1:${port}:`)

  const blocked = await admin(['create-organisation', 'X', '--url', 'http://127.0.0.1:1'], {
    env: { OPERATOR_API_KEY: 'k' }
  })
  t.equal(blocked.code, 1)
  t.match(
    blocked.stderr,
    /^error: cannot reach the service at http:\/\/127\.0\.0\.1:1: [^\n]+\n {2}Is the service running there\?/
  )

  const notGraphql = await admin(['list-suppliers'], {
    env: { OPERATOR_API_KEY: 'k' },
    fetch: answering('<html>hello</html>', { status: 200, headers: { 'content-type': 'text/html' } })
  })
  t.equal(notGraphql.code, 1)
  t.equal(
    notGraphql.stderr,
    'error: cannot reach the service at http://127.0.0.1:3000: the answer is not a GraphQL response ' +
      '(HTTP 200, text/html); is this the import service?\n' +
      "  Set --url or ADMIN_URL to the import service's address.\n"
  )
})

t.test('HTTP error responses', async (t) => {
  t.test('429 from the token rate limit', async (t) => {
    const { app } = await buildTestApp(t, { env: { TOKEN_RATE_LIMIT_PER_MINUTE: '1' } })
    const url = await app.listen({ port: 0, host: '127.0.0.1' })
    const env = { ADMIN_URL: url, OPERATOR_API_KEY: TEST_OPERATOR_KEY }
    const first = await admin(['list-suppliers'], { env })
    t.equal(first.code, 0)
    t.equal(first.stdout, 'No import suppliers.\n')
    const second = await admin(['list-suppliers'], { env })
    t.equal(second.code, 1)
    t.match(
      second.stderr,
      /^error: throttled: Request was throttled\. Expected available in \d+ seconds\. \(HTTP 429, retry after \d+ s\)\n$/
    )
    t.equal(second.stdout, '')
  })

  t.test('5xx with the contract body', async (t) => {
    const body = JSON.stringify({
      detail: 'A server error occurred.',
      code: 'server_error',
      errors: [],
      request_id: 'req-42'
    })
    const res = await admin(['list-suppliers'], {
      env: { OPERATOR_API_KEY: 'k' },
      fetch: answering(body, { status: 500, headers: { 'content-type': 'application/json' } })
    })
    t.equal(res.code, 1)
    t.equal(res.stderr, 'error: server_error: A server error occurred. (HTTP 500, request id req-42)\n')
  })

  t.test('a 4xx/5xx that is not JSON', async (t) => {
    const res = await admin(['list-suppliers'], {
      env: { OPERATOR_API_KEY: 'k' },
      fetch: answering('<h1>Bad gateway</h1>\n', { status: 502, statusText: 'Bad Gateway' })
    })
    t.equal(res.code, 1)
    t.equal(res.stderr, 'error: http_502: Bad Gateway — <h1>Bad gateway</h1> (HTTP 502)\n')
  })

  t.test('400 with GraphQL errors', async (t) => {
    const body = JSON.stringify({ data: null, errors: [{ message: 'Syntax Error: Unexpected Name "x".' }] })
    const res = await admin(['list-suppliers'], {
      env: { OPERATOR_API_KEY: 'k' },
      fetch: answering(body, { status: 400 })
    })
    t.equal(res.code, 1)
    t.equal(res.stderr, 'error: graphql_error: Syntax Error: Unexpected Name "x". (HTTP 400)\n')
  })
})

t.test('the real command line', async (t) => {
  const help = await spawnAdmin(['--help'], {})
  t.equal(help.code, 0, help.stderr)
  t.match(
    help.stdout,
    /^Account Migration Import Service — operator admin command line\n\nUsage: npm run admin -- <command>/
  )

  const { app } = await buildTestApp(t)
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const created = await spawnAdmin(['create-team', 'Spawned Team', '--json'], {
    ADMIN_URL: url,
    OPERATOR_API_KEY: TEST_OPERATOR_KEY
  })
  t.equal(created.code, 0, created.stderr)
  t.match(JSON.parse(created.stdout), { createOperationsTeam: { name: 'Spawned Team' } })

  const duplicate = await spawnAdmin(['create-team', 'Spawned Team'], {
    ADMIN_URL: url,
    OPERATOR_API_KEY: TEST_OPERATOR_KEY
  })
  t.equal(duplicate.code, 1)
  t.equal(duplicate.stderr, 'error: already_exists: Operations team Spawned Team already exists.\n')

  const unknown = await spawnAdmin(['frobnicate'], {})
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /^error: unknown command "frobnicate"/)
})

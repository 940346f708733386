import t from 'tap'
import { eq, sql } from 'drizzle-orm'
import { SMTPServer } from 'smtp-server'
import { emailOutbox } from '../drizzle/schema/index.js'
import { createEmailWorker } from '../src/modules/emails/worker.js'
import { exampleAccount, importSetup } from './helpers/accounts.js'
import { asOperator } from './helpers/graphql.js'
import { waitFor } from './helpers/wait.js'

interface Received {
  to: string[]
  data: string
}

/** A real SMTP server on loopback; `reject(n)` refuses the next n recipients. */
async function smtpServer(t: Parameters<typeof importSetup>[0]) {
  const received: Received[] = []
  let rejections = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(_address, _session, callback) {
      if (rejections > 0) {
        rejections--
        const err = Object.assign(new Error('mailbox unavailable, try later'), { responseCode: 451 })
        return callback(err)
      }
      callback()
    },
    onData(stream, session, callback) {
      let data = ''
      stream.on('data', (chunk: Buffer) => {
        data += chunk.toString('utf8')
      })
      stream.on('end', () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), data })
        callback()
      })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const port = (server.server.address() as { port: number }).port
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    reject: (n: number) => {
      rejections = n
    }
  }
}

const withTwoCustomers = (external: string) =>
  exampleAccount({
    external_account_number: external,
    customers: [
      ...exampleAccount().customers,
      { given_name: 'Charles', family_name: 'Babbage', portfolio_roles: ['READ_ONLY'] }
    ]
  })

t.test('a created account queues one e-mail per customer address; the worker delivers it over SMTP', async (t) => {
  const smtp = await smtpServer(t)
  const { app, database, client } = await importSetup(t, {
    env: { SMTP_URL: smtp.url, EMAIL_FROM: 'Migrations <migrations@energy.invalid>' },
    captureLogs: true
  })
  await asOperator(
    app,
    'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", sendMigrationEmails: true}) { code } }'
  )
  t.equal((await client.stage(withTwoCustomers('MAIL-1'))).statusCode, 201)
  const created = await client.create('MAIL-1')
  t.equal(created.statusCode, 201)
  await waitFor('an e-mail arrives', () => smtp.received.length > 0, { timeoutMs: 15_000, intervalMs: 100 })
  t.equal(smtp.received.length, 1, 'one e-mail: the second customer has no address')
  const mail = smtp.received[0]!
  t.same(mail.to, ['ada.lovelace@mailbox.org'])
  t.match(mail.data, /Hello Ada,/)
  t.match(mail.data, new RegExp(created.json().service_account_number))
  t.match(mail.data, /From: Migrations <migrations@energy\.invalid>/)
  const row = await waitFor(
    'the e-mail is marked SENT',
    async () => {
      const [row] = await database.db.select().from(emailOutbox)
      return row?.status === 'SENT' && row
    },
    { timeoutMs: 15_000 }
  )
  t.same([row.status, row.attempts], ['SENT', 1])
})

t.test('the worker retries with backoff, gives up after its attempts, and never logs the address', async (t) => {
  const smtp = await smtpServer(t)
  const { app, database, client, logs } = await importSetup(t, { captureLogs: true })
  await asOperator(
    app,
    'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", sendMigrationEmails: true}) { code } }'
  )
  for (const external of ['RETRY-1', 'GIVEUP-1']) {
    t.equal((await client.stage(exampleAccount({ external_account_number: external }))).statusCode, 201)
    t.equal((await client.create(external)).statusCode, 201)
  }
  const rows = await database.db.select().from(emailOutbox).orderBy(emailOutbox.id)
  t.equal(rows.length, 2, 'queued, not sent: no SMTP_URL in this app')
  const [retry, giveUp] = rows as [(typeof rows)[0], (typeof rows)[0]]
  const worker = createEmailWorker(database.db, app.log, {
    smtpUrl: smtp.url,
    from: 'm@energy.invalid',
    batchSize: 1,
    retryBaseSeconds: 60,
    maxAttempts: 2
  })
  t.teardown(() => worker.stop())
  const due = (id: number) =>
    database.db
      .update(emailOutbox)
      .set({ nextAttemptAt: sql`now()` })
      .where(eq(emailOutbox.id, id))
  const rowOf = async (id: number) => (await database.db.select().from(emailOutbox).where(eq(emailOutbox.id, id)))[0]!

  smtp.reject(1)
  t.equal(await worker.runOnce(), 0, 'the SMTP server refused')
  let r = await rowOf(retry.id)
  t.same([r.status, r.attempts], ['PENDING', 1])
  t.match(r.lastError, /451/)
  t.ok(r.nextAttemptAt.getTime() > Date.now() + 50_000, 'retried after the backoff, not at once')

  // The second row is now the only due one: it fails twice and is given up.
  smtp.reject(2)
  t.equal(await worker.runOnce(), 0)
  await due(giveUp.id)
  t.equal(await worker.runOnce(), 0)
  r = await rowOf(giveUp.id)
  t.same([r.status, r.attempts], ['FAILED', 2])
  t.equal(smtp.received.length, 0)

  await due(retry.id)
  t.equal(await worker.runOnce(), 1, 'the retry is delivered')
  r = await rowOf(retry.id)
  t.same([r.status, r.attempts], ['SENT', 2])
  t.equal(smtp.received.length, 1)
  t.equal(await worker.runOnce(), 0, 'nothing is sent twice')
  t.notMatch(logs(), /ada\.lovelace/, 'no e-mail address in the logs')
  t.match(logs(), /migration e-mail sent/)
})

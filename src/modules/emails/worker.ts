import nodemailer from 'nodemailer'
import type { FastifyBaseLogger } from 'fastify'
import type { Db } from '../../db/index.js'
import { createEmailsRepository, type ClaimedEmail } from './repository.js'

export interface EmailWorkerOptions {
  smtpUrl: string
  from: string
  /** How often the outbox is polled. */
  pollMs?: number
  /** E-mails claimed per poll. */
  batchSize?: number
  /** How long a claimed e-mail is reserved for this worker. */
  leaseSeconds?: number
  /** First retry delay; each further attempt doubles it, up to an hour. */
  retryBaseSeconds?: number
  /** Attempts before an e-mail is marked FAILED. */
  maxAttempts?: number
}

/** The migration e-mail (only the customer's given name and the account numbers). */
export function migrationEmail(email: ClaimedEmail): { subject: string; text: string } {
  return {
    subject: 'Your energy account has moved to us',
    text: [
      `Hello ${email.givenName},`,
      '',
      `Your energy account ${email.externalAccountNumber} has moved to us. Your new account number is ${email.serviceAccountNumber}.`,
      'You do not need to do anything: your balance and history came with it.',
      ''
    ].join('\n')
  }
}

/**
 * Delivers queued migration e-mails over SMTP, at least once, with retries and backoff. Safe to run
 * in every server process: e-mails are claimed with `FOR UPDATE SKIP LOCKED` and a lease. No
 * database transaction is held while talking to the SMTP server. Logs never name the recipient.
 */
export function createEmailWorker(db: Db, log: FastifyBaseLogger, options: EmailWorkerOptions) {
  const repo = createEmailsRepository(db)
  const transport = nodemailer.createTransport(options.smtpUrl)
  const pollMs = options.pollMs ?? 1000
  const batchSize = options.batchSize ?? 20
  const leaseSeconds = options.leaseSeconds ?? 120
  const retryBase = options.retryBaseSeconds ?? 30
  const maxAttempts = options.maxAttempts ?? 10
  let timer: NodeJS.Timeout | undefined
  let running: Promise<number> | undefined
  let stopped = false

  async function deliver(email: ClaimedEmail): Promise<boolean> {
    const { subject, text } = migrationEmail(email)
    try {
      await transport.sendMail({ from: options.from, to: email.recipient, subject, text })
      await repo.markSent(email.id)
      log.info({ outboxId: email.id, attempt: email.attempts }, 'migration e-mail sent')
      return true
    } catch (err) {
      const reason = String(
        (err as { response?: string; message?: string }).response ?? (err as Error).message ?? err
      ).slice(0, 500)
      const giveUp = email.attempts >= maxAttempts
      await repo.markFailed(
        email.id,
        reason,
        giveUp ? undefined : Math.min(retryBase * 2 ** (email.attempts - 1), 3600)
      )
      log.warn({ outboxId: email.id, attempt: email.attempts, giveUp }, 'migration e-mail not delivered')
      return false
    }
  }

  /** One poll: claims due e-mails and sends them; returns how many were sent. */
  async function runOnce(): Promise<number> {
    const claimed = await repo.claimDue(batchSize, leaseSeconds)
    let sent = 0
    for (const email of claimed) if (await deliver(email)) sent++
    return sent
  }

  function schedule(): void {
    if (stopped) return
    timer = setTimeout(() => {
      running = runOnce()
        .catch((err) => {
          log.error({ err }, 'e-mail outbox poll failed')
          return 0
        })
        .finally(() => {
          running = undefined
          schedule()
        })
    }, pollMs)
    timer.unref()
  }

  return {
    runOnce,
    start(): void {
      stopped = false
      schedule()
    },
    /** Stops polling and waits for the poll in flight. */
    async stop(): Promise<void> {
      stopped = true
      if (timer) clearTimeout(timer)
      await running
      transport.close()
    }
  }
}

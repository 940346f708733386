import { and, asc, eq, inArray, lte, sql } from 'drizzle-orm'
import { accounts, customers, emailOutbox } from '../../../drizzle/schema/index.js'
import type { Db } from '../../db/index.js'

export interface ClaimedEmail {
  id: number
  recipient: string
  template: string
  attempts: number
  givenName: string
  serviceAccountNumber: string
  externalAccountNumber: string
}

/** SQL of the migration e-mail outbox. */
export function createEmailsRepository(db: Db) {
  return {
    /**
     * Claims up to `limit` due e-mails for `leaseSeconds`: their next attempt moves past the lease
     * and their attempt count goes up, so no other server sends them meanwhile, and a server that
     * dies while sending leaves them to be sent again when the lease ends (at least once).
     */
    async claimDue(limit: number, leaseSeconds: number): Promise<ClaimedEmail[]> {
      const due = db
        .select({ id: emailOutbox.id })
        .from(emailOutbox)
        .where(and(eq(emailOutbox.status, 'PENDING'), lte(emailOutbox.nextAttemptAt, sql`now()`)))
        .orderBy(asc(emailOutbox.nextAttemptAt))
        .limit(limit)
        .for('update', { skipLocked: true })
      const claimed = await db
        .update(emailOutbox)
        .set({
          attempts: sql`${emailOutbox.attempts} + 1`,
          nextAttemptAt: sql`now() + make_interval(secs => ${leaseSeconds})`
        })
        .where(inArray(emailOutbox.id, due))
        .returning({ id: emailOutbox.id })
      if (claimed.length === 0) return []
      return db
        .select({
          id: emailOutbox.id,
          recipient: emailOutbox.recipient,
          template: emailOutbox.template,
          attempts: emailOutbox.attempts,
          givenName: customers.givenName,
          serviceAccountNumber: accounts.serviceAccountNumber,
          externalAccountNumber: accounts.externalAccountNumber
        })
        .from(emailOutbox)
        .innerJoin(customers, eq(customers.id, emailOutbox.customerId))
        .innerJoin(accounts, eq(accounts.id, emailOutbox.accountId))
        .where(
          inArray(
            emailOutbox.id,
            claimed.map((c) => c.id)
          )
        )
        .orderBy(asc(emailOutbox.id))
    },

    async markSent(id: number): Promise<void> {
      await db
        .update(emailOutbox)
        .set({ status: 'SENT', sentAt: sql`now()`, lastError: null })
        .where(eq(emailOutbox.id, id))
    },

    /** Schedules another attempt after `retryInSeconds`, or gives up (`FAILED`). */
    async markFailed(id: number, error: string, retryInSeconds: number | undefined): Promise<void> {
      await db
        .update(emailOutbox)
        .set(
          retryInSeconds === undefined
            ? { status: 'FAILED', lastError: error }
            : { lastError: error, nextAttemptAt: sql`now() + make_interval(secs => ${retryInSeconds})` }
        )
        .where(eq(emailOutbox.id, id))
    }
  }
}

export type EmailsRepository = ReturnType<typeof createEmailsRepository>

import { CODE } from '../../schemas/error-codes.js'
import { MAX_WINDOW_LEAD_DAYS } from '../../schemas/import-jobs.js'
import { formatDateTime } from '../format.js'
import { problem, type ErrorEntry } from '../errors.js'

/** An import job's start window as stored: null where not set. */
export interface JobWindow {
  notBefore: Date | null
  notAfter: Date | null
}

/**
 * The start window of a job asked for at `now` (date-times that passed their schema checks), or
 * its problems: `not_before` more than 7 days ahead is `invalid`; `not_after` not after
 * `not_before`, or not after now, is `start_date_later_than_end_date`. A `not_before` in the past
 * means now. Whole seconds, as the job answers them.
 */
export function jobWindow(
  asked: { not_before?: string | null; not_after?: string | null },
  now: Date
): { window: JobWindow } | { problems: ErrorEntry[] } {
  const second = (text: string) => new Date(Math.floor(Date.parse(text) / 1000) * 1000)
  const wholeNow = new Date(Math.floor(now.getTime() / 1000) * 1000)
  const askedBefore = asked.not_before ? second(asked.not_before) : null
  const notBefore = askedBefore === null ? null : askedBefore < wholeNow ? wholeNow : askedBefore
  const notAfter = asked.not_after ? second(asked.not_after) : null
  const problems: ErrorEntry[] = []
  const latest = new Date(now.getTime() + MAX_WINDOW_LEAD_DAYS * 86_400_000)
  if (notBefore !== null && notBefore > latest) {
    problems.push(
      problem(CODE.invalid, 'not_before', {
        detail: `not_before may be at most ${MAX_WINDOW_LEAD_DAYS} days ahead (until ${formatDateTime(latest)}).`
      })
    )
  }
  const start = notBefore ?? wholeNow
  if (notAfter !== null && notAfter <= start) {
    problems.push(
      problem(CODE.start_date_later_than_end_date, 'not_after', {
        end: `not_after (${formatDateTime(notAfter)})`,
        start: notBefore === null ? `now (${formatDateTime(start)})` : `not_before (${formatDateTime(start)})`
      })
    )
  }
  return problems.length > 0 ? { problems } : { window: { notBefore, notAfter } }
}

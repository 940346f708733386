// What an import job's row says: its state, figures, pace, window and why lines failed.

import { dateTimeFormat, formatNumber, h, plural, timeElement } from './dom.js'
import { meanings } from './meanings.js'

export const JOB_STATE_NAMES = {
  OPEN: 'Open',
  QUEUED: 'Queued',
  RUNNING: 'Running',
  PAUSED: 'Paused',
  COMPLETED: 'Completed',
  CANCELLED: 'Cancelled'
}
/** The lines of a job by what became of them, in the bar's order: [figure, label, bar segment]. */
export const JOB_FIGURES = [
  ['created', 'created', 'ok'],
  ['alreadyImported', 'already imported', 'ok'],
  ['wouldCreate', 'would create', 'ok'],
  ['failed', 'failed', 'bad'],
  ['skippedBlank', 'blank', 'other'],
  ['notProcessed', 'not processed', 'other']
]

export const shortId = (id) => id.slice(0, 8)

/** "45 s", "12 min", "2 h 5 min". */
function formatDuration(seconds) {
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} s`
  const minutes = Math.round(seconds / 60)
  if (minutes < 60) return `${minutes} min`
  return `${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`
}

const formatRate = (rate) => (rate >= 100 ? formatNumber(Math.round(rate)) : rate.toFixed(1))

/** Why a job was cancelled, in words. */
const CANCELLED_REASONS = {
  cancelled: 'a person cancelled it',
  window_ended: 'its window ended before every line had begun',
  supplier_complete: 'its supplier was set Complete',
  never_started: 'it was never started (an open job is cancelled after a day)',
  paused_too_long: 'it was paused for 30 days'
}

/** A job that waits for its window: queued with its start ahead. */
const waitsForWindow = (job) => job.state === 'QUEUED' && job.notBefore && Date.parse(job.notBefore) > Date.now()

/** Its window, why it was cancelled, and the codes of its failed lines (each with its meaning on hover). */
export function jobWhy(job) {
  const rows = []
  if (job.notBefore || job.notAfter) {
    const window = h(
      'div',
      'job-window muted',
      'Window: ',
      job.notBefore ? h('span', null, 'from ', timeElement(null, job.notBefore)) : 'from its start',
      job.notAfter ? h('span', null, ', no line begun from ', timeElement(null, job.notAfter)) : ', without end'
    )
    window.dataset.notBefore = job.notBefore ?? ''
    window.dataset.notAfter = job.notAfter ?? ''
    rows.push(window)
  }
  if (job.state === 'CANCELLED' && job.cancelledReason) {
    const reason = h(
      'div',
      'job-reason',
      `Cancelled: ${CANCELLED_REASONS[job.cancelledReason] ?? job.cancelledReason}.`
    )
    reason.dataset.reason = job.cancelledReason
    rows.push(reason)
  }
  if (job.failureCodes?.length) {
    const codes = h(
      'div',
      'job-codes',
      'Why lines failed: ',
      ...job.failureCodes.slice(0, 5).map((f, i) => {
        const code = h(
          'span',
          'job-code',
          i > 0 ? ', ' : '',
          h('span', 'mono', f.code),
          ` ${plural(f.lines, 'line', 'lines')}`
        )
        code.dataset.code = f.code
        code.dataset.lines = String(f.lines)
        code.title = meanings.get(f.code) ?? ''
        return code
      }),
      job.failureCodes.length > 5 ? ` and ${plural(job.failureCodes.length - 5, 'other code', 'other codes')}` : ''
    )
    rows.push(codes)
  }
  // Lines that are not JSON name no account: they are listed here, as nowhere else on the page.
  const notJson = job.notJsonLines ?? []
  if (notJson.length) {
    const shown = notJson.slice(0, NOT_JSON_SHOWN)
    const list = h(
      'ul',
      'job-not-json',
      ...shown.map((l) => {
        const item = h(
          'li',
          null,
          `Line ${formatNumber(l.line)} is not JSON`,
          l.reason ? `: ${l.reason}.` : ' (its text was erased).'
        )
        item.dataset.line = String(l.line)
        return item
      })
    )
    if (notJson.length > shown.length) {
      list.append(
        h('li', 'muted', 'and more (among the failed results: invalid_request with one entry invalid at null).')
      )
    }
    rows.push(list)
  }
  return rows.length ? [h('div', 'job-why', ...rows)] : []
}

/** Lines that are not JSON listed under a job (one more is asked for, to tell that there are more). */
const NOT_JSON_SHOWN = 5

/**
 * How long a finished job ran, and its rate over that time: from its start, or from its window's
 * opening when it waited for it; a job that ran no line says so.
 */
function jobTook(job) {
  if (!job.startedAt || !job.finishedAt) return null
  const ran = h('span', 'job-took muted')
  const run = job.lines.done - job.lines.notProcessed
  if (run === 0) {
    ran.append(' · no line ran')
    return ran
  }
  const began = Math.max(Date.parse(job.startedAt), job.notBefore ? Date.parse(job.notBefore) : 0)
  const seconds = Math.max((Date.parse(job.finishedAt) - began) / 1000, 0)
  ran.append(` · took ${formatDuration(seconds)}`, seconds > 0 ? `, ${formatRate(run / seconds)} lines/s` : '')
  ran.dataset.seconds = String(seconds)
  return ran
}

/** Rate and ETA while it runs; otherwise what it waits for or when it ended. */
export function jobPace(job) {
  switch (job.state) {
    case 'RUNNING': {
      if (!job.ratePerSecond) return [h('span', 'job-rate', 'starting: no rate yet')]
      const rate = h('span', 'job-rate', h('strong', null, formatRate(job.ratePerSecond)), ' lines/s')
      rate.dataset.rate = String(job.ratePerSecond)
      const eta = h(
        'span',
        'job-eta',
        'ETA ',
        h('strong', null, job.etaSeconds == null ? '–' : formatDuration(job.etaSeconds))
      )
      if (job.etaSeconds != null) {
        eta.dataset.eta = String(job.etaSeconds)
        eta.title = `About ${dateTimeFormat.format(new Date(Date.now() + job.etaSeconds * 1000))} at the rate of the last minute`
      }
      // At this rate its window ends before every line has begun: say so beside the ETA.
      if (job.notAfter && job.etaSeconds != null && Date.now() + job.etaSeconds * 1000 > Date.parse(job.notAfter)) {
        return [rate, eta, h('span', 'job-window-ends', 'its window ends first, at ', timeElement(null, job.notAfter))]
      }
      return [rate, eta]
    }
    case 'QUEUED':
      return waitsForWindow(job)
        ? [h('span', 'muted job-waits', 'scheduled: starts ', timeElement(null, job.notBefore))]
        : [h('span', 'muted', 'waiting for a runner')]
    case 'PAUSED':
      return [h('span', 'muted', 'paused while the supplier is Paused')]
    case 'OPEN':
      return [h('span', 'muted', 'open: its parts are being uploaded')]
    case 'COMPLETED':
      return job.finishedAt ? [h('span', 'muted', 'finished ', timeElement(null, job.finishedAt)), jobTook(job)] : []
    case 'CANCELLED':
      return job.finishedAt ? [h('span', 'muted', 'cancelled ', timeElement(null, job.finishedAt)), jobTook(job)] : []
    default:
      return []
  }
}

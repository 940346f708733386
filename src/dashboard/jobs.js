// Import jobs: a whole file each, run by the service. Progress against the job's total, rate and
// ETA; cancel (after a confirm); with the organisation's token, its failed results and failed
// lines as files (the REST streams, which are the organisation's: the operator's token may not).

import { $, formatNumber, h, plural, renderIfChanged, show, timeElement } from './dom.js'
import { Q_CANCEL_JOB } from './queries.js'
import { exclusive, generation, JOBS_SHOWN, requestRefresh, signOut, state, UNDER_WAY } from './state.js'
import { call, errorOf, errorText, restText, SessionEnded } from './api.js'
import { renderProgressNote } from './overview.js'
import { JOB_FIGURES, JOB_STATE_NAMES, jobPace, jobWhy, shortId } from './job-details.js'

const JOB_DOWNLOADS = {
  results: {
    label: 'Failed results',
    path: 'results/?outcome=failed',
    file: 'failed-results',
    what: ['failed result', 'failed results']
  },
  lines: { label: 'Failed lines', path: 'failed-lines/', file: 'failed-lines', what: ['failed line', 'failed lines'] }
}
/** Jobs whose cancel or download is on its way (the button is disabled meanwhile). */
const jobsBusy = new Set()

export function renderJobs() {
  const { items, loaded, error } = state.jobs
  let message = ''
  if (!state.supplier) message = ''
  else if (!loaded) message = 'Loading import jobs…'
  else if (error) message = `The import jobs could not be read: ${errorText(error)}`
  else if (items.length === 0) {
    message = `No import job for ${state.supplier} yet. A job takes a whole file (npm run migrate -- submit <file>); batches sent by the client show in the figures above, not here.`
  }
  $('jobs-message').textContent = message
  show($('jobs-message'), Boolean(message))
  show($('jobs-note'), state.role === 'operator' && items.some((job) => job.lines.failed > 0))
  const underWay = items.filter((job) => UNDER_WAY.includes(job.state)).length
  renderIfChanged($('jobs-totals'), JSON.stringify([items.length, underWay]), () =>
    items.length === 0
      ? []
      : [
          h('span', null, h('strong', null, formatNumber(underWay)), ' under way'),
          h(
            'span',
            null,
            h('strong', null, formatNumber(items.length)),
            items.length >= JOBS_SHOWN ? ' latest shown' : items.length === 1 ? ' job' : ' jobs'
          )
        ]
  )
  renderIfChanged($('jobs'), JSON.stringify([state.role, items, [...jobsBusy]]), () => items.map(jobItem))
}

function jobItem(job) {
  const { lines } = job
  const badge = h('span', 'job-state', JOB_STATE_NAMES[job.state] ?? job.state)
  badge.dataset.state = job.state
  const id = h('span', 'job-id mono', shortId(job.id))
  id.title = job.id
  const head = h(
    'div',
    'job-head',
    badge,
    h('span', 'job-name', 'Job ', id),
    job.dryRun ? h('span', 'chip', 'dry run') : null,
    h('span', 'job-created muted', 'created ', timeElement(null, job.createdAt))
  )

  // The bar: every line of the job, filled by what became of those with a result.
  const track = h('span', 'job-track')
  for (const [key, label, kind] of JOB_FIGURES) {
    if (!lines[key] || !lines.total) continue
    const segment = h('span', `job-segment ${kind}`)
    segment.style.width = `${(lines[key] / lines.total) * 100}%`
    segment.dataset.figure = key
    segment.title = `${formatNumber(lines[key])} ${label}`
    track.append(segment)
  }
  track.setAttribute('role', 'progressbar')
  track.setAttribute('aria-valuemin', '0')
  track.setAttribute('aria-valuemax', String(lines.total))
  track.setAttribute('aria-valuenow', String(lines.done))
  track.setAttribute('aria-label', `Lines with a result, of ${formatNumber(lines.total)}`)
  // A cancelled job's lines never run count as done: say how many ran.
  const done =
    lines.notProcessed > 0
      ? h(
          'span',
          'job-done',
          h('strong', null, formatNumber(lines.done - lines.notProcessed)),
          ` of ${plural(lines.total, 'line', 'lines')} run`
        )
      : h(
          'span',
          'job-done',
          h('strong', null, formatNumber(lines.done)),
          ` of ${plural(lines.total, 'line', 'lines')} done`
        )
  done.dataset.done = String(lines.done)
  done.dataset.total = String(lines.total)

  const figures = h(
    'span',
    'job-figures',
    ...JOB_FIGURES.filter(([key]) => key === 'created' || key === 'failed' || lines[key] > 0).map(
      ([key, label, kind]) => {
        const figure = h('span', `job-figure ${kind}`, h('strong', null, formatNumber(lines[key])), ` ${label}`)
        figure.dataset.figure = key
        return figure
      }
    )
  )

  const pace = h('span', 'job-pace', ...jobPace(job))
  const actions = h('span', 'job-actions')
  if (UNDER_WAY.includes(job.state) || job.state === 'OPEN') {
    const cancel = h('button', 'quiet job-cancel', 'Cancel')
    cancel.type = 'button'
    cancel.dataset.role = 'cancel'
    cancel.disabled = jobsBusy.has(job.id)
    cancel.title = 'Stop this job: lines without a result are not processed; what it wrote stays'
    cancel.addEventListener('click', () => cancelJob(job))
    actions.append(cancel)
  }
  if (state.role === 'organisation' && lines.failed > 0) {
    for (const [kind, download] of Object.entries(JOB_DOWNLOADS)) {
      const button = h('button', 'quiet job-download', download.label)
      button.type = 'button'
      button.dataset.role = `download-${kind}`
      button.disabled = jobsBusy.has(job.id)
      button.title =
        kind === 'results'
          ? "Each failed line's result (NDJSON): line number, account, step, code and attrs"
          : 'The input lines that failed, unchanged (NDJSON): fix them and submit them as a new job'
      button.addEventListener('click', () => downloadJob(job, kind))
      actions.append(button)
    }
  }

  const item = h(
    'li',
    'job',
    head,
    h('div', 'job-progress', track, done),
    h('div', 'job-foot', figures, pace),
    ...jobWhy(job),
    actions.childElementCount ? actions : null
  )
  item.dataset.key = job.id
  item.dataset.state = job.state
  return item
}

function setJobMessage(text, result) {
  $('job-message').textContent = text
  $('job-message').dataset.result = result ?? ''
  show($('job-message'), Boolean(text))
}

function cancelJob(job) {
  const left = job.lines.total - job.lines.done
  const question =
    `Cancel import job ${shortId(job.id)} of ${state.supplier}?\n\n` +
    `${plural(left, 'line', 'lines')} without a result will not be processed; what the job has written stays. This cannot be undone.`
  if (!window.confirm(question)) return
  const gen = generation
  jobsBusy.add(job.id)
  renderJobs()
  void exclusive(async () => {
    try {
      const [result] = await call([{ query: Q_CANCEL_JOB, variables: { id: job.id } }])
      if (gen !== generation) return
      const error = errorOf(result)
      if (error) throw error
      const cancelled = result.data.cancelImportJob
      state.jobs = { ...state.jobs, items: state.jobs.items.map((j) => (j.id === cancelled.id ? cancelled : j)) }
      setJobMessage(
        `Import job ${shortId(job.id)} cancelled: ${plural(cancelled.lines.notProcessed, 'line', 'lines')} not processed.`,
        'cancelled'
      )
      requestRefresh()
    } catch (err) {
      if (gen !== generation) return
      if (err instanceof SessionEnded) signOut(err.message)
      else {
        setJobMessage(
          `Import job ${shortId(job.id)} could not be cancelled (${err.code ?? 'error'}): ${err.message}`,
          'error'
        )
      }
    } finally {
      jobsBusy.delete(job.id)
      if (gen === generation) {
        renderJobs()
        renderProgressNote()
      }
    }
  })
}

function downloadJob(job, kind) {
  const download = JOB_DOWNLOADS[kind]
  const supplier = state.supplier
  const gen = generation
  jobsBusy.add(job.id)
  renderJobs()
  setJobMessage(`Reading the ${download.what[1]} of job ${shortId(job.id)}…`, 'busy')
  void (async () => {
    try {
      const text = await restText(`/v1/data-import/import-jobs/${encodeURIComponent(job.id)}/${download.path}`)
      if (gen !== generation) return
      const count = text.split('\n').filter((line) => line !== '').length
      const url = URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson;charset=utf-8' }))
      const link = h('a')
      link.href = url
      link.download = `${supplier}-job-${shortId(job.id)}-${download.file}.ndjson`
      document.body.append(link)
      link.click()
      link.remove()
      setTimeout(() => URL.revokeObjectURL(url), 60_000)
      setJobMessage(
        `Downloaded ${plural(count, ...download.what)} of job ${shortId(job.id)}` +
          (kind === 'lines' ? ': fix them and submit them as a new job.' : '.'),
        'downloaded'
      )
    } catch (err) {
      if (gen !== generation) return
      if (err instanceof SessionEnded) signOut(err.message)
      else if (err.code === 'input_erased') {
        setJobMessage(
          `The input of job ${shortId(job.id)} has been erased under the personal data retention rules: its failed lines are gone (its failed results remain).`,
          'error'
        )
      } else setJobMessage(`The download failed (${err.code ?? 'error'}): ${err.message}`, 'error')
    } finally {
      jobsBusy.delete(job.id)
      if (gen === generation) renderJobs()
    }
  })()
}

// The header and the supplier's figures: live status, banner, who is signed in, the supplier
// picker, the cards, the Reconciliation card, the progress note and the rate.

import { $, formatNumber, h, plural, renderIfChanged, setName, show, timeFormat } from './dom.js'
import { state, UNDER_WAY } from './state.js'
import { otherCounts } from './sections.js'

/** The rate is of the accounts created in the current minute and this many before it. */
const RATE_MINUTES = 5

export function setLive(status) {
  $('live').dataset.state = status
}

export function setBanner(text) {
  $('banner').textContent = text ?? ''
  show($('banner'), Boolean(text))
}

export function renderLastRefresh() {
  const at = state.lastRefresh
  const live = $('live').dataset.state
  $('last-refresh').textContent = !at
    ? live === 'error'
      ? 'Not refreshed yet'
      : 'Loading…'
    : `${live === 'error' ? 'Not refreshed since' : 'Refreshed'} ${timeFormat.format(at)}`
}

export function renderWho() {
  let who = ''
  if (state.role === 'operator') who = 'the operator'
  else if (state.role === 'organisation') who = state.suppliers[0]?.organisation ?? 'an organisation'
  setName($('who'), who || '…')
}

export function renderSuppliers() {
  const picker = $('supplier-picker')
  const many = state.suppliers.length > 1
  renderIfChanged(picker, JSON.stringify([state.role, state.suppliers.map((s) => [s.code, s.organisation])]), () =>
    state.suppliers.map((s) => {
      const option = h('option', null, state.role === 'operator' ? `${s.code} — ${s.organisation}` : s.code)
      option.value = s.code
      return option
    })
  )
  picker.value = state.supplier ?? ''
  show(picker, many)
  const chosen = state.suppliers.find((s) => s.code === state.supplier)
  setName($('supplier-code'), many ? '' : (chosen?.code ?? ''))
  show($('supplier-code'), !many)
  const organisation = chosen && state.role === 'operator' && !many ? chosen.organisation : ''
  setName($('supplier-org'), organisation)
  show($('supplier-org'), Boolean(organisation))
  markPicker()
  setMetric('status', chosen?.status ?? '–')
  $('supplier-status').dataset.status = chosen?.status ?? ''
  show($('no-suppliers'), state.suppliersLoaded && state.suppliers.length === 0)
  show($('supplier-view'), Boolean(chosen))
  show(document.querySelector('.supplier-bar'), state.suppliers.length > 0)
}

/** Room the picker's arrow takes beside its text (20 px in Chromium). */
const PICKER_ARROW = 20
const measureText = document.createElement('canvas').getContext('2d')

/**
 * The picker's title is the chosen supplier's whole name, and `data-cut` says its box cuts it
 * short: while focused it then shows the whole name under it (#supplier-full). A select cannot
 * wrap its text, so the name is measured.
 */
export function markPicker() {
  const picker = $('supplier-picker')
  const text = picker.selectedOptions[0]?.textContent ?? ''
  picker.title = text
  $('supplier-full').textContent = text
  if (picker.hidden || !text) {
    picker.removeAttribute('data-cut')
    return
  }
  const style = window.getComputedStyle(picker)
  measureText.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`
  const room = picker.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - PICKER_ARROW
  picker.toggleAttribute('data-cut', measureText.measureText(text).width > room + 1)
}

export function setMetric(name, value) {
  const element = document.querySelector(`[data-metric="${name}"]`)
  element.textContent = typeof value === 'number' ? formatNumber(value) : value
}

export function renderProgress(progress) {
  for (const name of ['staged', 'pending', 'imported', 'skipped', 'failing']) setMetric(name, progress[name])
  document.querySelector('[data-card="failing"]').classList.toggle('alert', progress.failing > 0)
  document.querySelector('[data-hint="pending"]').textContent =
    progress.failed > 0 ? `${formatNumber(progress.failed)} with a failed create` : 'staged, not yet created'
  state.progress = progress
  renderProgressNote()
}

/**
 * The Reconciliation card: the supplier's totals. Decimals are shown as the service sends them
 * (exact strings, never turned into numbers).
 */
export function renderReconciliation(totals) {
  if (!totals) return
  const items = [
    ['created', 'Accounts created', formatNumber(totals.accountsCreated)],
    ['skipped', 'Accounts skipped', formatNumber(totals.accountsSkipped)],
    ['pending', 'Accounts pending', formatNumber(totals.accountsPending)],
    ['transactions', 'Transactions', formatNumber(totals.transactions.count)],
    ['amount-sum', 'Transaction sum', totals.transactions.amountSum],
    ...otherCounts().map((s) => [
      s.count.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()),
      s.countLabel,
      formatNumber(totals[s.count])
    ])
  ]
  renderIfChanged($('recon-totals'), JSON.stringify(items), () =>
    items.map(([key, label, value]) => {
      const item = h('div', null, h('dt', null, label), h('dd', null, value))
      item.dataset.recon = key
      return item
    })
  )
  const body = $('recon-ledgers').querySelector('tbody')
  renderIfChanged(body, JSON.stringify(totals.ledgers), () =>
    totals.ledgers.length === 0
      ? [h('tr', null, h('td', 'empty', 'No account is created yet.'), h('td', null), h('td', null))]
      : totals.ledgers.map((l) => {
          const row = h(
            'tr',
            null,
            h('td', null, l.ledgerCode),
            h('td', null, formatNumber(l.accounts)),
            h('td', null, l.balanceSum)
          )
          row.dataset.ledger = l.ledgerCode
          return row
        })
  )
}

/**
 * Stated against what the service knows: the accounts staged so far, and the lines of the import
 * jobs under way when there are any (a job's file is the service's to know). Otherwise it never
 * sees the client's file, so a share of "staged" would read as the file's progress (100% while a
 * third was sent).
 */
export function renderProgressNote() {
  const progress = state.progress
  if (!progress) {
    $('progress-note').textContent = ''
    return
  }
  const underWay = state.jobs.items.filter((job) => UNDER_WAY.includes(job.state))
  const total = underWay.reduce((n, job) => n + job.lines.total, 0)
  const done = underWay.reduce((n, job) => n + job.lines.done, 0)
  const jobs =
    underWay.length === 1
      ? `The ${underWay[0].state.toLowerCase()} import job holds ${plural(total, 'line', 'lines')}: ${formatNumber(done)} ${done === 1 ? 'has its' : 'have their'} result (see Import jobs below).`
      : `${formatNumber(underWay.length)} import jobs under way hold ${plural(total, 'line', 'lines')}: ${formatNumber(done)} ${done === 1 ? 'has its' : 'have their'} result (see Import jobs below).`
  const note = $('progress-note')
  note.dataset.jobs = String(underWay.length)
  note.textContent =
    progress.staged === 0
      ? underWay.length > 0
        ? `Nothing staged yet. ${jobs}`
        : 'Nothing staged yet. The service learns of an account when it is staged; it does not know how many accounts the whole migration holds.'
      : `${formatNumber(progress.imported)} created of ${formatNumber(progress.staged)} staged so far` +
        `${progress.skipped > 0 ? ` (${formatNumber(progress.skipped)} skipped)` : ''}. ` +
        (underWay.length > 0
          ? jobs
          : 'How many accounts the whole file holds is not known to the service: it learns of each account when it is staged.')
}

/**
 * Accounts created per minute: those of the current minute and the RATE_MINUTES before it, over
 * the time they span (the current minute only as far as it has gone).
 */
export function renderRate(rows) {
  const recent = rows.slice(-(RATE_MINUTES + 1))
  const current = recent.at(-1)
  if (!current) return
  const elapsed = Math.min(1, Math.max(0, (Date.now() - Date.parse(current.minute)) / 60_000))
  const span = recent.length - 1 + elapsed
  const created = recent.reduce((n, m) => n + m.created, 0)
  const rate = span > 0 ? created / span : 0
  setMetric('rate', rate === 0 ? '0' : rate < 10 ? `${rate.toFixed(1)}` : formatNumber(Math.round(rate)))
  $('board').querySelector('[data-metric="rate"]').dataset.rate = String(rate)
  document.querySelector('[data-hint="rate"]').textContent =
    created === 0
      ? `none created in the last ${RATE_MINUTES} minutes`
      : `accounts created per minute, last ${RATE_MINUTES} minutes`
}

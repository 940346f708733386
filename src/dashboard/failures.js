// The failure summary's bars, the accounts failing with the chosen bar's code, and the chosen
// (or searched) account's timeline.

import { $, breakAfterUnderscores, formatNumber, h, renderIfChanged, setName, show, timeElement } from './dom.js'
import { Q_FAILURES } from './queries.js'
import {
  accountKey,
  barKey,
  exclusive,
  generation,
  MAX_PAGE,
  noEvents,
  PAGE_SIZE,
  requestRefresh,
  signOut,
  state
} from './state.js'
import { call, errorOf, errorText, SessionEnded } from './api.js'
import { meaningElement, meaningsState, setMeaning, titled } from './meanings.js'
import { setBanner } from './overview.js'
import { eventItem, failureItem, mergedTimeline } from './timeline.js'

export function renderSummary(summary) {
  const steps = Object.entries(summary.byStep).filter(([, n]) => n > 0)
  renderIfChanged($('failing-steps'), JSON.stringify([summary.failingAccounts, steps]), () =>
    summary.failingAccounts === 0
      ? []
      : [
          h(
            'span',
            null,
            h('strong', null, formatNumber(summary.failingAccounts)),
            summary.failingAccounts === 1 ? ' failing account' : ' failing accounts'
          ),
          ...steps.map(([step, n]) =>
            h('span', 'chip', `${step.replace(/[A-Z]/g, (c) => ' ' + c.toLowerCase())} ${formatNumber(n)}`)
          )
        ]
  )
  const max = Math.max(1, ...summary.byCode.map((row) => row.accounts))
  renderIfChanged($('bars'), JSON.stringify(summary.byCode), () =>
    summary.byCode.map((row) => {
      const fill = h('span', 'bar-fill')
      fill.style.width = `${Math.max(2, (row.accounts / max) * 100)}%`
      const button = h(
        'button',
        'bar',
        h(
          'span',
          'bar-label',
          h('span', 'bar-step', row.step),
          h('span', 'bar-sep', ' · '),
          h('span', 'bar-code', ...breakAfterUnderscores(row.code))
        ),
        meaningElement('span', 'bar-meaning', row.code),
        h('span', 'bar-track', fill),
        h('span', 'bar-count', formatNumber(row.accounts))
      )
      button.type = 'button'
      button.dataset.key = `${row.step}\u0000${row.code}`
      button.dataset.step = row.step
      button.dataset.code = row.code
      button.dataset.accounts = String(row.accounts)
      button.title = `${formatNumber(row.accounts)} ${row.accounts === 1 ? 'account fails' : 'accounts fail'} at ${row.step} with ${row.code}`
      button.addEventListener('click', () => selectBar({ step: row.step, code: row.code }))
      return button
    })
  )
  show($('no-failures'), summary.byCode.length === 0)
  markBars()
}

function markBars() {
  const key = barKey(state.bar)
  for (const button of $('bars').querySelectorAll('.bar')) {
    button.setAttribute('aria-pressed', String(button.dataset.key === key))
  }
}

export function renderFailures() {
  const bar = state.bar
  const { items, more, loaded, error } = state.failures
  $('accounts-title').replaceChildren(
    ...(bar
      ? ['Failing at ', h('span', 'mono', bar.step), ' with ', h('span', 'mono', bar.code)]
      : ['Failing accounts'])
  )
  show($('clear-bar'), Boolean(bar))
  $('bar-meaning').dataset.meaningOf = bar?.code ?? ''
  setMeaning($('bar-meaning'))
  let message = ''
  if (!bar) message = 'Choose a bar to list the accounts failing with that code.'
  else if (!loaded) message = 'Loading accounts…'
  else if (error) message = errorText(error)
  else if (items.length === 0) message = `No account fails at ${bar.step} with ${bar.code} any more.`
  $('accounts-message').textContent = message
  show($('accounts-message'), Boolean(message))
  show($('accounts-wrap'), Boolean(bar) && items.length > 0)
  show($('load-more'), Boolean(bar) && loaded && more)
  renderIfChanged($('accounts-body'), JSON.stringify([barKey(bar), items]), () => items.map((f) => accountRow(f, bar)))
  markAccounts()
}

function accountRow(failure, bar) {
  const open = h('button', 'link mono clip', failure.externalAccountNumber)
  open.type = 'button'
  open.dataset.role = 'open'
  open.title = failure.externalAccountNumber
  open.addEventListener('click', () => selectAccount({ external: failure.externalAccountNumber, step: failure.step }))
  const attrs = h(
    'ul',
    'attrs',
    ...failure.errors.map((e) =>
      h(
        'li',
        e.code === bar.code ? null : 'other',
        h('code', null, e.attr ?? '(whole request)'),
        e.code === bar.code ? null : titled(h('span', 'muted', ` ${e.code}`), e.code),
        e.code === bar.code ? null : meaningElement('span', 'row-meaning', e.code)
      )
    )
  )
  if (failure.errors.length === 0) {
    attrs.append(
      h('li', 'other', h('span', 'muted', failure.code), meaningElement('span', 'row-meaning', failure.code))
    )
  }
  const failedAt = timeElement(null, failure.failedAt)
  const row = h(
    'tr',
    null,
    h('td', null, open),
    h('td', null, failure.step),
    h('td', 'num', formatNumber(failure.attempts)),
    h('td', 'when', failedAt),
    h('td', 'num', String(failure.httpStatus)),
    h('td', null, attrs)
  )
  row.dataset.key = `${failure.externalAccountNumber}\u0000${failure.step}`
  row.dataset.external = failure.externalAccountNumber
  return row
}

function markAccounts() {
  const key = accountKey(state.account)
  for (const row of $('accounts-body').querySelectorAll('tr')) {
    const chosen = row.dataset.key === key
    row.classList.toggle('chosen', chosen)
    row.querySelector('button').setAttribute('aria-pressed', String(chosen))
  }
}

export function selectBar(bar) {
  if (barKey(bar) === barKey(state.bar)) return
  state.bar = bar
  state.account = null
  state.failures = { items: [], more: false, loaded: false, error: null }
  state.events = noEvents()
  markBars()
  renderFailures()
  renderEvents()
  requestRefresh()
}

export function selectAccount(account) {
  if (accountKey(account) === accountKey(state.account)) return
  state.account = account
  state.events = noEvents()
  markAccounts()
  renderEvents()
  if (account) requestRefresh()
}

export function renderEvents() {
  const account = state.account
  show($('events-panel'), Boolean(account))
  setName($('events-account'), account?.external ?? '')
  const { items, failures, loaded, error, failuresError } = state.events
  const neverStaged = error?.code === 'not_found'
  let message = ''
  if (account && !loaded) message = 'Loading…'
  else if (account && neverStaged && failures.length === 0 && !failuresError) message = notFoundText(account.external)
  else if (account && neverStaged) {
    message = 'Never staged: this account has no import process yet, only the failures below.'
  } else if (account && error) message = errorText(error)
  else if (account && failuresError) message = `Its failures could not be read: ${errorText(failuresError)}`
  else if (account && items.length === 0 && failures.length === 0) message = 'No events recorded for this account.'
  $('events-message').textContent = message
  show($('events-message'), Boolean(message))
  show($('events-note'), Boolean(account) && loaded && failures.length > 0)
  renderSearchResult()
  const timeline = loaded ? mergedTimeline(items, failures) : []
  renderIfChanged($('events'), JSON.stringify([accountKey(account), timeline, meaningsState]), () =>
    timeline.map((entry) => (entry.failure ? failureItem(entry.failure) : eventItem(entry.event)))
  )
}

function notFoundText(external) {
  return (
    `No account “${external}” in ${state.supplier}: it has never been staged and no failure is recorded for it. ` +
    'External account numbers are matched exactly.'
  )
}

function renderSearchResult() {
  const account = state.account
  let text = ''
  let result = ''
  if (account?.searched) {
    const { loaded, error, failures, failuresError } = state.events
    if (!loaded) text = `Looking for ${account.external}…`
    else if (error?.code === 'not_found' && failures.length === 0 && !failuresError) {
      text = notFoundText(account.external)
      result = 'none'
    } else {
      text = `Found ${account.external}: its timeline is below.`
      result = 'found'
    }
  }
  $('search-message').textContent = text
  $('search-message').dataset.result = result
  show($('search-message'), Boolean(text))
}

export function searchAccount(event) {
  event.preventDefault()
  const external = $('search-input').value.trim()
  if (!external || !state.supplier) return
  if (state.account?.searched && state.account.external === external) {
    $('events-panel').scrollIntoView({ block: 'nearest' })
    return
  }
  selectAccount({ external, step: null, searched: true })
}

/** The next page of the bar's accounts, after the last one listed. */
export function loadMore() {
  const supplier = state.supplier
  const bar = state.bar
  const gen = generation
  const last = state.failures.items.at(-1)
  if (!supplier || !bar || !last) return
  $('load-more').disabled = true
  void exclusive(async () => {
    try {
      const after = `${last.externalAccountNumber}:${last.step}`
      const [result] = await call([
        { query: Q_FAILURES, variables: { supplier, step: bar.step, code: bar.code, first: PAGE_SIZE, after } }
      ])
      if (gen !== generation || supplier !== state.supplier || barKey(bar) !== barKey(state.bar)) return
      const error = errorOf(result)
      if (error) throw error
      const page = result.data.migrationFailures
      const seen = new Set(state.failures.items.map((f) => `${f.externalAccountNumber}\u0000${f.step}`))
      const items = [
        ...state.failures.items,
        ...page.filter((f) => !seen.has(`${f.externalAccountNumber}\u0000${f.step}`))
      ]
      state.failures = { items, more: page.length === PAGE_SIZE && items.length < MAX_PAGE, loaded: true, error: null }
      renderFailures()
    } catch (err) {
      if (gen !== generation) return
      if (err instanceof SessionEnded) signOut(err.message)
      else setBanner(`Could not load more accounts (${err.code}): ${err.message}`)
    } finally {
      $('load-more').disabled = false
    }
  })
}

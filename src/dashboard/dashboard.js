// The migration dashboard: a plain browser module, no build step and no framework. Everything it
// shows comes from the public GraphQL API (POST /graphql) with the token that obtainToken gave for
// the API key typed in, the error codes' meanings included (errorCodes: the catalogue's fixed
// texts, for the operator's token too); the key itself is never stored. The DOM is built with createElement and
// textContent only: data from the service is never parsed as HTML.

const STORAGE_KEY = 'amis.dashboard.session'
const REFRESH_MS = 5000
/** A token is renewed this long before it expires. */
const RENEW_MARGIN_MS = 60_000
const PAGE_SIZE = 100
const MAX_PAGE = 10_000
const RANGE_LABELS = { 60: 'Last hour', 360: 'Last 6 hours', 1440: 'Last 24 hours', 10080: 'Last 7 days' }
/**
 * The chart's lines. Staged is a shaded area with a dashed edge and Created a solid line over it:
 * in a run that stages and creates each account in the same minute the two are equal, and a line
 * drawn exactly over another would hide it. `total`: what the chart's totals call each count.
 */
const SERIES = [
  { key: 'staged', label: 'Staged (area)', total: 'staged', color: '#2563eb', fill: 'rgba(37, 99, 235, 0.16)', dash: [6, 4], width: 2 },
  { key: 'created', label: 'Created', total: 'created', color: '#15803d', width: 2 },
  { key: 'failed', label: 'Failed requests', total: 'failed requests', color: '#dc2626', width: 1.5 }
]
/** The rate is of the accounts created in the current minute and this many before it. */
const RATE_MINUTES = 5
/** Failure records read per request by the CSV download. */
const DOWNLOAD_PAGE = 10_000

const Q_OBTAIN_TOKEN = `mutation ObtainToken($input: ObtainTokenInput!) {
  obtainToken(input: $input) { token expiresIn refreshToken refreshExpiresIn }
}`
const Q_SUPPLIERS = 'query Suppliers { importSuppliers { code organisation status } }'
/** Operator-only: answers the operator, and permission_denied to an organisation's token. */
const Q_ROLE = 'query Role { operationsTeams { id } }'
const Q_OVERVIEW = `query Overview($supplier: String!, $minutes: Int!) {
  migrationProgress(importSupplierCode: $supplier) { staged pending imported skipped failed failing }
  migrationTimeline(importSupplierCode: $supplier, minutes: $minutes) { minute staged created failed }
  reconciliation(importSupplierCode: $supplier) {
    accountsCreated accountsSkipped accountsPending
    ledgers { ledgerCode accounts balanceSum }
    transactions { count amountSum }
    notes historicalAgreements historicalStatements billingDocuments paymentInstructions
  }
  migrationFailureSummary(importSupplierCode: $supplier) {
    failingAccounts
    byStep { validate stage create notes transactions historicalAgreements historicalBillingDocuments historicalStatements paymentInstruction }
    byCode { step code accounts }
  }
}`
const Q_FAILURES = `query Failures($supplier: String!, $step: String, $code: String, $first: Int, $after: String) {
  migrationFailures(importSupplierCode: $supplier, step: $step, code: $code, first: $first, after: $after) {
    externalAccountNumber step failedAt attempts httpStatus code errors { code attr }
  }
}`
const Q_EVENTS = `query Events($supplier: String!, $account: String!) {
  importProcessEvents(importSupplierCode: $supplier, externalAccountNumber: $account) { type at actor detail }
}`
/** Apart from the events: an account never staged has failures but no events (importProcessEvents: not_found). */
const Q_ACCOUNT_FAILURES = `query AccountFailures($supplier: String!, $account: String!) {
  migrationFailures(importSupplierCode: $supplier, externalAccountNumber: $account, first: 100) {
    step failedAt attempts httpStatus code errors { code attr }
  }
}`
const Q_CODES = 'query Codes { errorCodes { code meaning } }'
/** The supplier's import jobs, newest first (the operator's token: every organisation's). */
const Q_JOBS = `query Jobs($supplier: String!, $first: Int!) {
  importJobs(importSupplierCode: $supplier, first: $first) {
    id state dryRun createdAt startedAt finishedAt notBefore notAfter cancelledReason ratePerSecond etaSeconds
    lines { total done created alreadyImported wouldCreate failed notProcessed skippedBlank }
    failureCodes { code lines }
    notJsonLines(first: 6) { line reason }
  }
}`
const Q_CANCEL_JOB = `mutation CancelJob($id: ID!) {
  cancelImportJob(input: {id: $id}) {
    id state dryRun createdAt startedAt finishedAt notBefore notAfter cancelledReason ratePerSecond etaSeconds
    lines { total done created alreadyImported wouldCreate failed notProcessed skippedBlank }
    failureCodes { code lines }
    notJsonLines(first: 6) { line reason }
  }
}`
/** Import jobs listed, newest first. */
const JOBS_SHOWN = 20
/** States of a job that is not over: it can be cancelled, and its lines count towards the progress note. */
const UNDER_WAY = ['QUEUED', 'RUNNING', 'PAUSED']

// ---------------------------------------------------------------------------------------------
// DOM helpers

const $ = (id) => document.getElementById(id)

/** An element with a class and children (strings become text nodes). */
function h(tag, className, ...children) {
  const element = document.createElement(tag)
  if (className) element.className = className
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    element.append(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child)
  }
  return element
}

// A long code wraps after an underscore rather than mid-word.
function breakAfterUnderscores(text) {
  return text.split(/(?<=_)/).flatMap((part, i) => (i === 0 ? [part] : [h('wbr'), part]))
}

function show(element, visible) {
  element.hidden = !visible
}

/** A name the page may cut short (class `clip`): its text, and the whole of it as its title. */
function setName(element, text) {
  element.textContent = text
  element.title = text
}

const numberFormat = new Intl.NumberFormat()
const formatNumber = (n) => numberFormat.format(n)
const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })

const dayTimeFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })

/** A time of today as its time of day; an earlier one with its date. */
function formatWhen(iso) {
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) return iso
  return date.toDateString() === new Date().toDateString() ? timeFormat.format(date) : dayTimeFormat.format(date)
}

/** A timestamp's element: short text, the full time as its tooltip. */
function timeElement(className, iso) {
  const element = h('time', className, formatWhen(iso))
  element.dateTime = iso
  const date = new Date(iso)
  if (!Number.isNaN(date.getTime())) element.title = dateTimeFormat.format(date)
  return element
}

/**
 * Rebuilds `container`'s children only when `signature` changed since the last time, keeping the
 * scroll position and the keyboard focus (by `data-key`): an unchanged refresh touches nothing.
 */
const signatures = new WeakMap()
function renderIfChanged(container, signature, build) {
  if (signatures.get(container) === signature) return
  signatures.set(container, signature)
  const focused = container.contains(document.activeElement) ? document.activeElement : null
  const focusKey = focused?.closest('[data-key]')?.dataset.key
  const focusRole = focused?.dataset.role
  const scrollers = [container.closest('.table-wrap'), document.scrollingElement].filter(Boolean)
  const scroll = scrollers.map((s) => s.scrollTop)
  container.replaceChildren(...build())
  scrollers.forEach((s, i) => { s.scrollTop = scroll[i] })
  if (focusKey !== undefined) {
    for (const candidate of container.querySelectorAll('[data-key]')) {
      if (candidate.dataset.key !== focusKey) continue
      const target = focusRole ? candidate.querySelector(`[data-role="${focusRole}"]`) ?? candidate : candidate
      target.focus({ preventScroll: true })
      break
    }
  }
}

function forget(container) {
  signatures.delete(container)
  container.replaceChildren()
}

// ---------------------------------------------------------------------------------------------
// Talking to the service

class ServiceError extends Error {
  /** `code`: the service's code (`not_found`, `throttled`, …), or `unreachable` / `bad_response`. */
  constructor(code, message) {
    super(message)
    this.code = code
  }
}

/** The session has ended (renewal refused, key revoked): the sign-in form is shown again. */
class SessionEnded extends Error {}

/**
 * Posts a batch of GraphQL operations; returns one `{data, errors}` per operation. A body that is
 * not GraphQL's (a 415, a 429 on obtainToken, a proxy's error page) is thrown as a ServiceError.
 */
async function post(operations, token) {
  let response
  try {
    response = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(operations),
      cache: 'no-store',
      credentials: 'omit'
    })
  } catch {
    throw new ServiceError('unreachable', 'The service cannot be reached.')
  }
  let body
  try {
    body = await response.json()
  } catch {
    throw new ServiceError('bad_response', `The service answered HTTP ${response.status} without JSON.`)
  }
  if (Array.isArray(body) && body.length === operations.length) return body
  if (body && typeof body.code === 'string') throw new ServiceError(body.code, body.detail || `HTTP ${response.status}`)
  if (body && Array.isArray(body.errors)) {
    const first = body.errors[0] ?? {}
    throw new ServiceError(first.extensions?.code ?? 'error', first.message ?? `HTTP ${response.status}`)
  }
  throw new ServiceError('bad_response', `The service answered HTTP ${response.status} unexpectedly.`)
}

/** The first error of one operation's result, or undefined. */
function errorOf(result) {
  const first = result?.errors?.[0]
  return first ? new ServiceError(first.extensions?.code ?? 'error', first.message ?? 'The service reported an error.') : undefined
}

const hasCode = (results, codes) => results.some((r) => (r.errors ?? []).some((e) => codes.includes(e.extensions?.code)))

/** What each error code means (code → one sentence), read once per sign-in; empty until then. */
const meanings = new Map()
/** 'none' (to read) or 'loaded'. */
let meaningsState = 'none'

/**
 * Reads the error codes' meanings (errorCodes: fixed texts, the same for every token, the
 * operator's included). A failure leaves them unread (tried again at the next refresh); the codes
 * are shown without their meanings meanwhile.
 */
async function loadMeanings(gen) {
  if (meaningsState !== 'none') return
  let result
  try {
    [result] = await call([{ query: Q_CODES }])
  } catch (err) {
    if (err instanceof SessionEnded) throw err
    return
  }
  const codes = result?.data?.errorCodes
  if (gen !== generation || !Array.isArray(codes)) return
  for (const { code, meaning } of codes) if (typeof code === 'string' && typeof meaning === 'string') meanings.set(code, meaning)
  meaningsState = 'loaded'
  fillMeanings()
}

/** A code's meaning, small text that fills itself in once the meanings are read. */
function meaningElement(tag, className, code) {
  const element = h(tag, className)
  element.dataset.meaningOf = code
  setMeaning(element)
  return element
}

function setMeaning(element) {
  const meaning = meanings.get(element.dataset.meaningOf)
  element.textContent = meaning ?? ''
  show(element, Boolean(meaning))
}

function fillMeanings() {
  for (const element of document.querySelectorAll('[data-meaning-of]')) setMeaning(element)
  for (const element of document.querySelectorAll('[data-title-code]')) element.title = meanings.get(element.dataset.titleCode) ?? ''
}

// ---------------------------------------------------------------------------------------------
// The session: the token, its refresh token and its expiry, in sessionStorage (never the key)

function readSession() {
  try {
    const session = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? 'null')
    if (session && typeof session.token === 'string' && typeof session.refreshToken === 'string' && typeof session.expiresAt === 'number') return session
  } catch {
    // unreadable: treated as signed out
  }
  return null
}

function storeSession(payload) {
  const session = { token: payload.token, refreshToken: payload.refreshToken, expiresAt: Date.now() + payload.expiresIn * 1000 }
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session))
  state.session = session
}

let renewing = null

/** Trades the refresh token (single use) for a new pair; one renewal at a time. */
function renew() {
  renewing ??= (async () => {
    const session = state.session
    if (!session) throw new SessionEnded('You are signed out.')
    const [result] = await post([{ query: Q_OBTAIN_TOKEN, variables: { input: { refreshToken: session.refreshToken } } }])
    const error = errorOf(result)
    if (error || !result.data?.obtainToken) {
      if (error?.code === 'throttled') throw error
      throw new SessionEnded('Your session has ended and could not be renewed. Sign in again with your API key.')
    }
    if (state.session === session) storeSession(result.data.obtainToken)
  })().finally(() => { renewing = null })
  return renewing
}

/** Runs operations with the token: renewed shortly before it expires, or once on token_expired. */
async function call(operations) {
  if (!state.session) throw new SessionEnded('You are signed out.')
  if (Date.now() >= state.session.expiresAt - RENEW_MARGIN_MS) await renew()
  let results = await post(operations, state.session.token)
  if (hasCode(results, ['token_expired'])) {
    await renew()
    results = await post(operations, state.session.token)
  }
  if (hasCode(results, ['token_expired', 'authentication_failed', 'not_authenticated'])) {
    throw new SessionEnded('The service no longer accepts this session (the key may have been revoked). Sign in again.')
  }
  return results
}

// ---------------------------------------------------------------------------------------------
// State

const state = {
  session: null,
  /** 'operator' or 'organisation', once known. */
  role: null,
  suppliers: [],
  suppliersLoaded: false,
  supplier: null,
  minutes: 60,
  /** The timeline shown: {supplier, range, rows, sentAt}. */
  timeline: null,
  /** The chosen bar: {step, code}. */
  bar: null,
  /** The failing accounts listed for the bar. */
  failures: { items: [], more: false, loaded: false, error: null },
  /** The chosen account: {external, step} (step null when it was searched for). */
  account: null,
  /** Its events and its open failure records, merged into one timeline when both are read. */
  events: noEvents(),
  /** The supplier's import jobs, newest first. */
  jobs: noJobs(),
  /** The supplier's migrationProgress, as last read. */
  progress: null,
  lastRefresh: null,
  refreshes: 0
}

function noJobs() {
  return { items: [], loaded: false, error: null }
}

function noEvents() {
  return { items: [], failures: [], loaded: false, error: null, failuresError: null }
}

/** Bumped on sign-in and sign-out: answers to an earlier session are dropped. */
let generation = 0

/** Requests run one at a time, in order: a slow answer delays the next refresh, never stacks it. */
let queue = Promise.resolve()
function exclusive(task) {
  const run = queue.then(task)
  queue = run.catch(() => {})
  return run
}

let timer = null
let refreshQueued = false

/** A refresh as soon as the one in flight (if any) is done; at most one waits. */
function requestRefresh() {
  if (refreshQueued || !state.session) return
  refreshQueued = true
  clearTimeout(timer)
  void exclusive(async () => {
    refreshQueued = false
    await refresh()
  })
}

function scheduleRefresh() {
  clearTimeout(timer)
  if (state.session) timer = setTimeout(requestRefresh, REFRESH_MS)
}

const barKey = (bar) => (bar ? `${bar.step}\u0000${bar.code}` : '')
const accountKey = (account) => (account ? `${account.external}\u0000${account.step}` : '')

// ---------------------------------------------------------------------------------------------
// Refreshing: one batch of operations for everything on screen

async function refresh() {
  if (!state.session) return
  const gen = generation
  try {
    for (let round = 0; round < 2; round++) {
      const supplier = state.supplier
      const bar = state.bar
      const account = state.account
      const minutes = state.minutes
      const sentAt = Date.now()
      const fetchMinutes = timelineMinutes(supplier, minutes)
      const operations = [{ query: Q_SUPPLIERS }]
      const handlers = [applySuppliers]
      if (!state.role) {
        operations.push({ query: Q_ROLE })
        handlers.push(applyRole)
      }
      if (supplier) {
        operations.push({ query: Q_OVERVIEW, variables: { supplier, minutes: fetchMinutes } })
        handlers.push((result) => applyOverview(result, supplier, minutes, fetchMinutes, sentAt))
        operations.push({ query: Q_JOBS, variables: { supplier, first: JOBS_SHOWN } })
        handlers.push((result) => applyJobs(result, supplier))
        if (bar) {
          const first = Math.min(MAX_PAGE, Math.max(PAGE_SIZE, state.failures.items.length))
          operations.push({ query: Q_FAILURES, variables: { supplier, step: bar.step, code: bar.code, first } })
          handlers.push((result) => applyFailures(result, supplier, bar, first))
        }
        if (account) {
          operations.push({ query: Q_EVENTS, variables: { supplier, account: account.external } })
          handlers.push((result) => applyEvents(result, supplier, account))
          operations.push({ query: Q_ACCOUNT_FAILURES, variables: { supplier, account: account.external } })
          handlers.push((result) => applyAccountFailures(result, supplier, account))
        }
      }
      const results = await call(operations)
      if (gen !== generation) return
      results.forEach((result, i) => handlers[i](result))
      await loadMeanings(gen)
      if (gen !== generation) return
      // The answer named another supplier to show (the first, or the chosen one went): its figures at once.
      if (state.supplier === supplier || !state.supplier) break
    }
    state.lastRefresh = new Date()
    state.refreshes++
    document.body.dataset.refreshes = String(state.refreshes)
    setBanner(null)
    setLive('ok')
  } catch (err) {
    if (gen !== generation) return
    if (err instanceof SessionEnded) {
      signOut(err.message)
      return
    }
    setLive('error')
    setBanner(err.code === 'unreachable'
      ? 'Cannot reach the service. Retrying every 5 seconds; the figures shown are from the last successful refresh.'
      : `The service answered with an error (${err.code}): ${err.message} Retrying every 5 seconds.`)
  } finally {
    if (gen === generation) scheduleRefresh()
    renderLastRefresh()
  }
}

function applyRole(result) {
  if (result.data?.operationsTeams) state.role = 'operator'
  else if (errorOf(result)?.code === 'permission_denied') state.role = 'organisation'
  renderWho()
  renderJobs()
}

/** The jobs are read apart from the overview: an error here leaves the figures above standing. */
function applyJobs(result, supplier) {
  if (supplier !== state.supplier) return
  const error = errorOf(result)
  state.jobs = error ? { ...state.jobs, loaded: true, error } : { items: result.data.importJobs, loaded: true, error: null }
  renderJobs()
  renderProgressNote()
}

function applySuppliers(result) {
  const error = errorOf(result)
  if (error) throw error
  state.suppliers = result.data.importSuppliers
  state.suppliersLoaded = true
  if (!state.suppliers.some((s) => s.code === state.supplier)) selectSupplier(state.suppliers[0]?.code ?? null)
  renderSuppliers()
  renderWho()
}

/**
 * How many minutes of timeline to ask for: the whole range the first time, then only the minutes
 * since the last answer and two before (the latest minutes still change). A week is 10,080 rows.
 */
function timelineMinutes(supplier, range) {
  const cache = state.timeline
  if (!cache || cache.supplier !== supplier || cache.range !== range || cache.rows.length !== range) return range
  return Math.min(range, Math.ceil((Date.now() - cache.sentAt) / 60_000) + 2)
}

/** The range's rows: the answer, after the rows kept from before it. */
function mergeTimeline(supplier, range, fetched, rows, sentAt) {
  const cache = state.timeline
  let merged = rows
  if (fetched < range && rows.length > 0 && cache && cache.supplier === supplier && cache.range === range) {
    const older = cache.rows.filter((r) => r.minute < rows[0].minute)
    merged = [...older, ...rows].slice(-range)
    // A gap (the clock jumped) would show as a wrong line: ask for the whole range next time.
    const contiguous = older.length === 0 || Date.parse(rows[0].minute) - Date.parse(older.at(-1).minute) === 60_000
    if (!contiguous) {
      state.timeline = null
      return merged
    }
  }
  state.timeline = { supplier, range, rows: merged, sentAt }
  return merged
}

function applyOverview(result, supplier, minutes, fetched, sentAt) {
  if (supplier !== state.supplier) return
  const error = errorOf(result)
  if (error) {
    if (error.code === 'not_found') throw new ServiceError('not_found', `Supplier ${supplier} is not visible with this key (it may have been removed).`)
    throw error
  }
  renderProgress(result.data.migrationProgress)
  if (minutes === state.minutes) {
    const rows = mergeTimeline(supplier, minutes, fetched, result.data.migrationTimeline, sentAt)
    renderChart(rows, minutes)
    renderRate(rows)
  }
  renderSummary(result.data.migrationFailureSummary)
  renderReconciliation(result.data.reconciliation)
}

function applyFailures(result, supplier, bar, first) {
  if (supplier !== state.supplier || barKey(bar) !== barKey(state.bar)) return
  const error = errorOf(result)
  state.failures = error
    ? { ...state.failures, loaded: true, error }
    : { items: result.data.migrationFailures, more: result.data.migrationFailures.length === first, loaded: true, error: null }
  renderFailures()
}

function applyEvents(result, supplier, account) {
  if (supplier !== state.supplier || accountKey(account) !== accountKey(state.account)) return
  const error = errorOf(result)
  state.events = { ...state.events, items: error ? [] : result.data.importProcessEvents, error: error ?? null }
}

/** Comes right after applyEvents in the same answer: the account's timeline is then complete. */
function applyAccountFailures(result, supplier, account) {
  if (supplier !== state.supplier || accountKey(account) !== accountKey(state.account)) return
  const error = errorOf(result)
  state.events = { ...state.events, failures: error ? [] : result.data.migrationFailures, failuresError: error ?? null, loaded: true }
  renderEvents()
  if (state.account.searched && !state.account.revealed) {
    state.account.revealed = true
    $('events-panel').scrollIntoView({ block: 'nearest' })
  }
}

/** The next page of the bar's accounts, after the last one listed. */
function loadMore() {
  const supplier = state.supplier
  const bar = state.bar
  const gen = generation
  const last = state.failures.items.at(-1)
  if (!supplier || !bar || !last) return
  $('load-more').disabled = true
  void exclusive(async () => {
    try {
      const after = `${last.externalAccountNumber}:${last.step}`
      const [result] = await call([{ query: Q_FAILURES, variables: { supplier, step: bar.step, code: bar.code, first: PAGE_SIZE, after } }])
      if (gen !== generation || supplier !== state.supplier || barKey(bar) !== barKey(state.bar)) return
      const error = errorOf(result)
      if (error) throw error
      const page = result.data.migrationFailures
      const seen = new Set(state.failures.items.map((f) => `${f.externalAccountNumber}\u0000${f.step}`))
      const items = [...state.failures.items, ...page.filter((f) => !seen.has(`${f.externalAccountNumber}\u0000${f.step}`))]
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

// ---------------------------------------------------------------------------------------------
// Selection

function selectSupplier(code) {
  if (code === state.supplier) return
  state.supplier = code
  state.timeline = null
  state.bar = null
  state.account = null
  state.failures = { items: [], more: false, loaded: false, error: null }
  state.events = noEvents()
  state.jobs = noJobs()
  state.progress = null
  resetSupplierView()
}

function selectBar(bar) {
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

function selectAccount(account) {
  if (accountKey(account) === accountKey(state.account)) return
  state.account = account
  state.events = noEvents()
  markAccounts()
  renderEvents()
  if (account) requestRefresh()
}

function selectRange(minutes) {
  if (minutes === state.minutes) return
  state.minutes = minutes
  for (const button of document.querySelectorAll('.range button')) {
    button.setAttribute('aria-pressed', String(Number(button.dataset.minutes) === minutes))
  }
  chartZoomed = false
  $('chart').setAttribute('aria-busy', 'true')
  requestRefresh()
}

// ---------------------------------------------------------------------------------------------
// Rendering

function setLive(status) {
  $('live').dataset.state = status
}

function setBanner(text) {
  $('banner').textContent = text ?? ''
  show($('banner'), Boolean(text))
}

function renderLastRefresh() {
  const at = state.lastRefresh
  const live = $('live').dataset.state
  $('last-refresh').textContent = !at
    ? (live === 'error' ? 'Not refreshed yet' : 'Loading…')
    : `${live === 'error' ? 'Not refreshed since' : 'Refreshed'} ${timeFormat.format(at)}`
}

function renderWho() {
  let who = ''
  if (state.role === 'operator') who = 'the operator'
  else if (state.role === 'organisation') who = state.suppliers[0]?.organisation ?? 'an organisation'
  setName($('who'), who || '…')
}

function renderSuppliers() {
  const picker = $('supplier-picker')
  const many = state.suppliers.length > 1
  renderIfChanged(picker, JSON.stringify([state.role, state.suppliers.map((s) => [s.code, s.organisation])]), () =>
    state.suppliers.map((s) => {
      const option = h('option', null, state.role === 'operator' ? `${s.code} — ${s.organisation}` : s.code)
      option.value = s.code
      return option
    }))
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
function markPicker() {
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

function setMetric(name, value) {
  const element = document.querySelector(`[data-metric="${name}"]`)
  element.textContent = typeof value === 'number' ? formatNumber(value) : value
}

function renderProgress(progress) {
  for (const name of ['staged', 'pending', 'imported', 'skipped', 'failing']) setMetric(name, progress[name])
  document.querySelector('[data-card="failing"]').classList.toggle('alert', progress.failing > 0)
  document.querySelector('[data-hint="pending"]').textContent = progress.failed > 0
    ? `${formatNumber(progress.failed)} with a failed create`
    : 'staged, not yet created'
  state.progress = progress
  renderProgressNote()
}

/**
 * The Reconciliation card: the supplier's totals. Decimals are shown as the service sends them
 * (exact strings, never turned into numbers).
 */
function renderReconciliation(totals) {
  if (!totals) return
  const items = [
    ['created', 'Accounts created', formatNumber(totals.accountsCreated)],
    ['skipped', 'Accounts skipped', formatNumber(totals.accountsSkipped)],
    ['pending', 'Accounts pending', formatNumber(totals.accountsPending)],
    ['transactions', 'Transactions', formatNumber(totals.transactions.count)],
    ['amount-sum', 'Transaction sum', totals.transactions.amountSum],
    ['notes', 'Notes', formatNumber(totals.notes)],
    ['historical-agreements', 'Historical agreements', formatNumber(totals.historicalAgreements)],
    ['historical-statements', 'Historical statements', formatNumber(totals.historicalStatements)],
    ['billing-documents', 'Billing documents', formatNumber(totals.billingDocuments)],
    ['payment-instructions', 'Payment instructions', formatNumber(totals.paymentInstructions)]
  ]
  renderIfChanged($('recon-totals'), JSON.stringify(items), () =>
    items.map(([key, label, value]) => {
      const item = h('div', null, h('dt', null, label), h('dd', null, value))
      item.dataset.recon = key
      return item
    }))
  const body = $('recon-ledgers').querySelector('tbody')
  renderIfChanged(body, JSON.stringify(totals.ledgers), () =>
    totals.ledgers.length === 0
      ? [h('tr', null, h('td', 'empty', 'No account is created yet.'), h('td', null), h('td', null))]
      : totals.ledgers.map((l) => {
        const row = h('tr', null, h('td', null, l.ledgerCode), h('td', null, formatNumber(l.accounts)), h('td', null, l.balanceSum))
        row.dataset.ledger = l.ledgerCode
        return row
      }))
}

/**
 * Stated against what the service knows: the accounts staged so far, and the lines of the import
 * jobs under way when there are any (a job's file is the service's to know). Otherwise it never
 * sees the client's file, so a share of "staged" would read as the file's progress (100% while a
 * third was sent).
 */
function renderProgressNote() {
  const progress = state.progress
  if (!progress) {
    $('progress-note').textContent = ''
    return
  }
  const underWay = state.jobs.items.filter((job) => UNDER_WAY.includes(job.state))
  const total = underWay.reduce((n, job) => n + job.lines.total, 0)
  const done = underWay.reduce((n, job) => n + job.lines.done, 0)
  const jobs = underWay.length === 1
    ? `The ${underWay[0].state.toLowerCase()} import job holds ${plural(total, 'line', 'lines')}: ${formatNumber(done)} ${done === 1 ? 'has its' : 'have their'} result (see Import jobs below).`
    : `${formatNumber(underWay.length)} import jobs under way hold ${plural(total, 'line', 'lines')}: ${formatNumber(done)} ${done === 1 ? 'has its' : 'have their'} result (see Import jobs below).`
  const note = $('progress-note')
  note.dataset.jobs = String(underWay.length)
  note.textContent = progress.staged === 0
    ? (underWay.length > 0
        ? `Nothing staged yet. ${jobs}`
        : 'Nothing staged yet. The service learns of an account when it is staged; it does not know how many accounts the whole migration holds.')
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
function renderRate(rows) {
  const recent = rows.slice(-(RATE_MINUTES + 1))
  const current = recent.at(-1)
  if (!current) return
  const elapsed = Math.min(1, Math.max(0, (Date.now() - Date.parse(current.minute)) / 60_000))
  const span = recent.length - 1 + elapsed
  const created = recent.reduce((n, m) => n + m.created, 0)
  const rate = span > 0 ? created / span : 0
  setMetric('rate', rate === 0 ? '0' : rate < 10 ? `${rate.toFixed(1)}` : formatNumber(Math.round(rate)))
  $('board').querySelector('[data-metric="rate"]').dataset.rate = String(rate)
  document.querySelector('[data-hint="rate"]').textContent = created === 0
    ? `none created in the last ${RATE_MINUTES} minutes`
    : `accounts created per minute, last ${RATE_MINUTES} minutes`
}

// The chart (uPlot). Dragging across it zooms in; a double click zooms out. A refresh keeps a zoom.
let chart = null
let chartZoomed = false
let chartObserver = null

function chartSize() {
  const width = Math.max(280, Math.floor($('chart').clientWidth))
  return { width, height: 180 }
}

function createChart(data) {
  const axis = { stroke: '#5b6878', grid: { stroke: '#e7ecf2', width: 1 }, ticks: { stroke: '#d5dde6', width: 1 }, font: '11px system-ui, sans-serif' }
  const UPlot = window.uPlot
  chart = new UPlot({
    ...chartSize(),
    cursor: { drag: { x: true, y: false }, points: { size: 6 } },
    legend: { live: true },
    scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.15))] } },
    axes: [
      axis,
      {
        ...axis,
        size: yAxisWidth,
        incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000],
        values: (_u, ticks) => ticks.map(formatNumber)
      }
    ],
    series: [
      { label: 'Minute', value: (_u, v) => (v == null ? '–' : dateTimeFormat.format(new Date(v * 1000))) },
      ...SERIES.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: s.width,
        ...(s.fill ? { fill: s.fill } : {}),
        ...(s.dash ? { dash: s.dash } : {}),
        paths: UPlot.paths.stepped({ align: 1 }),
        // Minutes with activity get a dot, so a single busy minute shows (unless there are many).
        points: { show: false, size: 5, width: 1, fill: s.color, filter: activeMinutes },
        value: (_u, v) => (v == null ? '–' : formatNumber(v))
      }))
    ],
    hooks: {
      setSelect: [(u) => { if (u.select.width > 0) chartZoomed = true }]
    }
  }, data, $('chart'))
  chart.over.addEventListener('dblclick', () => { chartZoomed = false })
  chartObserver = new ResizeObserver(() => { if (chart) chart.setSize(chartSize()) })
  chartObserver.observe($('chart'))
}

// As wide as the longest count on the axis ("20,000" needs more room than "40").
function yAxisWidth(u, values, axisIdx, cycleNum) {
  const axis = u.axes[axisIdx]
  if (cycleNum > 1) return axis._size
  const longest = (values ?? []).reduce((a, v) => (v.length > a.length ? v : a), '')
  u.ctx.font = axis.font[0]
  return Math.ceil(axis.ticks.size + axis.gap + u.ctx.measureText(longest).width / window.devicePixelRatio) + 4
}

function activeMinutes(u, seriesIdx) {
  const values = u.data[seriesIdx]
  const active = []
  for (let i = 0; i < values.length; i++) {
    if (values[i] > 0) active.push(i)
    if (active.length > 300) return null
  }
  return active
}

function destroyChart() {
  chartObserver?.disconnect()
  chartObserver = null
  chart?.destroy()
  chart = null
  chartZoomed = false
  $('chart').replaceChildren()
  forget($('chart-totals'))
}

function renderChart(timeline, minutes) {
  const data = [timeline.map((m) => Date.parse(m.minute) / 1000), ...SERIES.map((s) => timeline.map((m) => m[s.key]))]
  if (!chart) createChart(data)
  else chart.setData(data, !chartZoomed)
  $('chart').removeAttribute('aria-busy')
  const totals = SERIES.map((s) => [s, timeline.reduce((n, m) => n + m[s.key], 0)])
  renderIfChanged($('chart-totals'), JSON.stringify([minutes, totals.map(([, n]) => n)]), () => [
    h('span', 'range-label', `${RANGE_LABELS[minutes] ?? `Last ${minutes} minutes`}:`),
    ...totals.map(([s, n]) => {
      const total = h('span', 'total', h('span', 'swatch'), h('strong', null, formatNumber(n)), ` ${s.total}`)
      total.dataset.total = s.key
      total.firstChild.dataset.series = s.key
      return total
    })
  ])
}

function renderSummary(summary) {
  const steps = Object.entries(summary.byStep).filter(([, n]) => n > 0)
  renderIfChanged($('failing-steps'), JSON.stringify([summary.failingAccounts, steps]), () => summary.failingAccounts === 0
    ? []
    : [
        h('span', null, h('strong', null, formatNumber(summary.failingAccounts)), summary.failingAccounts === 1 ? ' failing account' : ' failing accounts'),
        ...steps.map(([step, n]) => h('span', 'chip', `${step.replace(/[A-Z]/g, (c) => ' ' + c.toLowerCase())} ${formatNumber(n)}`))
      ])
  const max = Math.max(1, ...summary.byCode.map((row) => row.accounts))
  renderIfChanged($('bars'), JSON.stringify(summary.byCode), () => summary.byCode.map((row) => {
    const fill = h('span', 'bar-fill')
    fill.style.width = `${Math.max(2, (row.accounts / max) * 100)}%`
    const button = h('button', 'bar',
      h('span', 'bar-label', h('span', 'bar-step', row.step), h('span', 'bar-sep', ' · '), h('span', 'bar-code', ...breakAfterUnderscores(row.code))),
      meaningElement('span', 'bar-meaning', row.code),
      h('span', 'bar-track', fill),
      h('span', 'bar-count', formatNumber(row.accounts)))
    button.type = 'button'
    button.dataset.key = `${row.step}\u0000${row.code}`
    button.dataset.step = row.step
    button.dataset.code = row.code
    button.dataset.accounts = String(row.accounts)
    button.title = `${formatNumber(row.accounts)} ${row.accounts === 1 ? 'account fails' : 'accounts fail'} at ${row.step} with ${row.code}`
    button.addEventListener('click', () => selectBar({ step: row.step, code: row.code }))
    return button
  }))
  show($('no-failures'), summary.byCode.length === 0)
  markBars()
}

function markBars() {
  const key = barKey(state.bar)
  for (const button of $('bars').querySelectorAll('.bar')) button.setAttribute('aria-pressed', String(button.dataset.key === key))
}

function errorText(error) {
  if (error.code === 'not_found') return 'Not found: this key may not see it.'
  if (error.code === 'unreachable') return 'Cannot reach the service.'
  return `The service answered with an error (${error.code}): ${error.message}`
}

function renderFailures() {
  const bar = state.bar
  const { items, more, loaded, error } = state.failures
  $('accounts-title').replaceChildren(...(bar
    ? ['Failing at ', h('span', 'mono', bar.step), ' with ', h('span', 'mono', bar.code)]
    : ['Failing accounts']))
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
  const attrs = h('ul', 'attrs', ...failure.errors.map((e) => h('li', e.code === bar.code ? null : 'other',
    h('code', null, e.attr ?? '(whole request)'), e.code === bar.code ? null : titled(h('span', 'muted', ` ${e.code}`), e.code),
    e.code === bar.code ? null : meaningElement('span', 'row-meaning', e.code))))
  if (failure.errors.length === 0) attrs.append(h('li', 'other', h('span', 'muted', failure.code), meaningElement('span', 'row-meaning', failure.code)))
  const failedAt = timeElement(null, failure.failedAt)
  const row = h('tr', null,
    h('td', null, open),
    h('td', null, failure.step),
    h('td', 'num', formatNumber(failure.attempts)),
    h('td', 'when', failedAt),
    h('td', 'num', String(failure.httpStatus)),
    h('td', null, attrs))
  row.dataset.key = `${failure.externalAccountNumber}\u0000${failure.step}`
  row.dataset.external = failure.externalAccountNumber
  return row
}

/** An element whose tooltip is `code`'s meaning (once read). */
function titled(element, code) {
  element.dataset.titleCode = code
  element.title = meanings.get(code) ?? ''
  return element
}

function markAccounts() {
  const key = accountKey(state.account)
  for (const row of $('accounts-body').querySelectorAll('tr')) {
    const chosen = row.dataset.key === key
    row.classList.toggle('chosen', chosen)
    row.querySelector('button').setAttribute('aria-pressed', String(chosen))
  }
}

function renderEvents() {
  const account = state.account
  show($('events-panel'), Boolean(account))
  setName($('events-account'), account?.external ?? '')
  const { items, failures, loaded, error, failuresError } = state.events
  const neverStaged = error?.code === 'not_found'
  let message = ''
  if (account && !loaded) message = 'Loading…'
  else if (account && neverStaged && failures.length === 0 && !failuresError) message = notFoundText(account.external)
  else if (account && neverStaged) message = 'Never staged: this account has no import process yet, only the failures below.'
  else if (account && error) message = errorText(error)
  else if (account && failuresError) message = `Its failures could not be read: ${errorText(failuresError)}`
  else if (account && items.length === 0 && failures.length === 0) message = 'No events recorded for this account.'
  $('events-message').textContent = message
  show($('events-message'), Boolean(message))
  show($('events-note'), Boolean(account) && loaded && failures.length > 0)
  renderSearchResult()
  const timeline = loaded ? mergedTimeline(items, failures) : []
  renderIfChanged($('events'), JSON.stringify([accountKey(account), timeline, meaningsState]), () => timeline.map((entry) =>
    entry.failure ? failureItem(entry.failure) : eventItem(entry.event)))
}

function notFoundText(external) {
  return `No account “${external}” in ${state.supplier}: it has never been staged and no failure is recorded for it. ` +
    'External account numbers are matched exactly.'
}

/** Events and failure records in time order (a failure after an event of the same second). */
function mergedTimeline(events, failures) {
  const entries = [
    ...events.map((event, i) => ({ at: Date.parse(event.at), order: i, event })),
    ...failures.map((failure, i) => ({ at: Date.parse(failure.failedAt), order: events.length + i, failure }))
  ]
  return entries.sort((a, b) => (a.at - b.at) || (a.order - b.order))
}

function eventItem(event) {
  const { what, entries } = describeEvent(event)
  const item = h('li', 'event', timeElement('event-at', event.at),
    h('div', 'event-body', h('span', 'event-what', what), entries.length ? entryList(entries) : null),
    h('span', 'event-actor', actorText(event.actor)))
  item.dataset.type = event.type
  item.title = event.type
  return item
}

function failureItem(failure) {
  const attempts = failure.attempts > 1 ? `, ${formatNumber(failure.attempts)} times in a row` : ''
  const what = `${stepName(failure.step)} failed (HTTP ${failure.httpStatus}${attempts})`
  const entries = failure.errors.length > 0 ? failure.errors : [{ code: failure.code, attr: null }]
  const item = h('li', 'event failure', timeElement('event-at', failure.failedAt),
    h('div', 'event-body', h('span', 'event-what', what), entryList(entries)),
    h('span', 'event-actor', 'failure record'))
  item.dataset.type = 'FAILURE'
  item.dataset.step = failure.step
  return item
}

/** Codes with their attrs and what each code means: the "why" of a failure. */
function entryList(entries) {
  return h('ul', 'entries', ...entries.map((e) => {
    const item = h('li', 'entry', h('code', 'entry-code', e.code),
      e.attr ? h('span', 'entry-attr', ' at ', h('code', null, e.attr)) : null,
      meaningElement('span', 'entry-meaning', e.code))
    item.dataset.code = e.code
    return item
  }))
}

const STEP_NAMES = {
  validate: 'Validate', stage: 'Stage', create: 'Create', notes: 'Notes', transactions: 'Transactions',
  historical_agreements: 'Historical agreements', historical_billing_documents: 'Historical billing documents',
  historical_statements: 'Historical statements', payment_instruction: 'Payment instruction'
}
const stepName = (step) => STEP_NAMES[step] ?? step

function actorText(actor) {
  if (typeof actor !== 'string') return ''
  if (actor.startsWith('organisation:')) return `by ${actor.slice('organisation:'.length)}`
  return actor === 'operator' ? 'by the operator' : `by ${actor}`
}

const plural = (n, one, many) => `${formatNumber(n)} ${n === 1 ? one : many}`

/** An event in words ("Created A-1234 with ledgers ENERGY L-…"), with the codes it holds. */
function describeEvent(event) {
  const d = event.detail && typeof event.detail === 'object' ? event.detail : {}
  const codes = (list) => (Array.isArray(list) ? list.filter((e) => e && typeof e.code === 'string').map((e) => ({ code: e.code, attr: e.attr ?? null })) : [])
  switch (event.type) {
    case 'STAGED': return { what: 'Staged', entries: [] }
    case 'RESTAGED': return { what: 'Staged again: its staged data replaced', entries: [] }
    case 'CREATE_ATTEMPTED': return { what: 'Create started', entries: [] }
    case 'CREATED': {
      const ledgers = Array.isArray(d.ledgers) ? d.ledgers.map((l) => `${l.ledger_code} ${l.ledger_number}`) : []
      const account = d.service_account_number ?? 'the account'
      return { what: `Created ${account}${ledgers.length ? ` with ${ledgers.length === 1 ? 'ledger' : 'ledgers'} ${ledgers.join(', ')}` : ''}`, entries: [] }
    }
    case 'CREATE_FAILED': return { what: 'Create failed', entries: codes(d.errors) }
    case 'DRY_RUN': return d.would_succeed
      ? { what: 'Dry run: the create would succeed', entries: [] }
      : { what: 'Dry run: the create would fail', entries: codes(d.errors) }
    case 'SKIPPED': return { what: `Skipped by the operator${d.previousState ? ` (it was ${String(d.previousState).toLowerCase()})` : ''}`, entries: [] }
    case 'STAGED_DATA_ERASED': return { what: d.payloadErased === false ? 'Stored error details erased' : 'Staged data erased (personal data retention)', entries: [] }
    case 'POST_IMPORT_WRITE': return { what: describeWrite(d), entries: [] }
    default: return { what: event.type, entries: [] }
  }
}

function describeWrite(d) {
  switch (d.endpoint) {
    case 'notes': return `Added ${plural(d.created ?? 0, 'note', 'notes')}`
    case 'transactions': {
      const extra = [d.already_existing ? `${formatNumber(d.already_existing)} already there` : '',
        d.moved ? `${formatNumber(d.moved)} moved into the open statement` : ''].filter(Boolean)
      return `Added ${plural(d.added ?? 0, 'transaction', 'transactions')}${extra.length ? ` (${extra.join(', ')})` : ''}`
    }
    case 'historical_agreements': return `Added ${plural(d.created ?? 0, 'historical agreement', 'historical agreements')}`
    case 'historical_statements': return `Added ${plural(d.created ?? 0, 'historical statement', 'historical statements')}`
    case 'historical_billing_documents':
      return `Added ${plural(d.billing_documents ?? 0, 'billing document', 'billing documents')}${d.billing_document_type ? ` (${d.billing_document_type})` : ''}` +
        ` with ${plural(d.transactions ?? 0, 'transaction', 'transactions')}${d.ledger_number ? ` on ledger ${d.ledger_number}` : ''}`
    case 'payment_instruction':
      return `Added a payment instruction${d.type ? ` (${d.type})` : ''}${d.vendor ? ` with ${d.vendor}` : ''}${d.reference ? `, reference ${d.reference}` : ''}`
    default: return `Wrote ${d.endpoint ?? 'post-import data'}`
  }
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

function searchAccount(event) {
  event.preventDefault()
  const external = $('search-input').value.trim()
  if (!external || !state.supplier) return
  if (state.account?.searched && state.account.external === external) {
    $('events-panel').scrollIntoView({ block: 'nearest' })
    return
  }
  selectAccount({ external, step: null, searched: true })
}

// ---------------------------------------------------------------------------------------------
// Import jobs: a whole file each, run by the service. Progress against the job's total, rate and
// ETA; cancel (after a confirm); with the organisation's token, its failed results and failed
// lines as files (the REST streams, which are the organisation's: the operator's token may not).

const JOB_STATE_NAMES = { OPEN: 'Open', QUEUED: 'Queued', RUNNING: 'Running', PAUSED: 'Paused', COMPLETED: 'Completed', CANCELLED: 'Cancelled' }
/** The lines of a job by what became of them, in the bar's order: [figure, label, bar segment]. */
const JOB_FIGURES = [
  ['created', 'created', 'ok'],
  ['alreadyImported', 'already imported', 'ok'],
  ['wouldCreate', 'would create', 'ok'],
  ['failed', 'failed', 'bad'],
  ['skippedBlank', 'blank', 'other'],
  ['notProcessed', 'not processed', 'other']
]
const JOB_DOWNLOADS = {
  results: { label: 'Failed results', path: 'results/?outcome=failed', file: 'failed-results', what: ['failed result', 'failed results'] },
  lines: { label: 'Failed lines', path: 'failed-lines/', file: 'failed-lines', what: ['failed line', 'failed lines'] }
}
/** Jobs whose cancel or download is on its way (the button is disabled meanwhile). */
const jobsBusy = new Set()

const shortId = (id) => id.slice(0, 8)

/** "45 s", "12 min", "2 h 5 min". */
function formatDuration(seconds) {
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} s`
  const minutes = Math.round(seconds / 60)
  if (minutes < 60) return `${minutes} min`
  return `${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`
}

const formatRate = (rate) => (rate >= 100 ? formatNumber(Math.round(rate)) : rate.toFixed(1))

function renderJobs() {
  const { items, loaded, error } = state.jobs
  let message = ''
  if (!state.supplier) message = ''
  else if (!loaded) message = 'Loading import jobs…'
  else if (error) message = `The import jobs could not be read: ${errorText(error)}`
  else if (items.length === 0) message = `No import job for ${state.supplier} yet. A job takes a whole file (npm run migrate -- submit <file>); batches sent by the client show in the figures above, not here.`
  $('jobs-message').textContent = message
  show($('jobs-message'), Boolean(message))
  show($('jobs-note'), state.role === 'operator' && items.some((job) => job.lines.failed > 0))
  const underWay = items.filter((job) => UNDER_WAY.includes(job.state)).length
  renderIfChanged($('jobs-totals'), JSON.stringify([items.length, underWay]), () => items.length === 0
    ? []
    : [h('span', null, h('strong', null, formatNumber(underWay)), ' under way'),
        h('span', null, h('strong', null, formatNumber(items.length)), items.length >= JOBS_SHOWN ? ' latest shown' : items.length === 1 ? ' job' : ' jobs')])
  renderIfChanged($('jobs'), JSON.stringify([state.role, items, [...jobsBusy]]), () => items.map(jobItem))
}

function jobItem(job) {
  const { lines } = job
  const badge = h('span', 'job-state', JOB_STATE_NAMES[job.state] ?? job.state)
  badge.dataset.state = job.state
  const id = h('span', 'job-id mono', shortId(job.id))
  id.title = job.id
  const head = h('div', 'job-head', badge, h('span', 'job-name', 'Job ', id), job.dryRun ? h('span', 'chip', 'dry run') : null,
    h('span', 'job-created muted', 'created ', timeElement(null, job.createdAt)))

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
  const done = lines.notProcessed > 0
    ? h('span', 'job-done', h('strong', null, formatNumber(lines.done - lines.notProcessed)), ` of ${plural(lines.total, 'line', 'lines')} run`)
    : h('span', 'job-done', h('strong', null, formatNumber(lines.done)), ` of ${plural(lines.total, 'line', 'lines')} done`)
  done.dataset.done = String(lines.done)
  done.dataset.total = String(lines.total)

  const figures = h('span', 'job-figures', ...JOB_FIGURES
    .filter(([key]) => key === 'created' || key === 'failed' || lines[key] > 0)
    .map(([key, label, kind]) => {
      const figure = h('span', `job-figure ${kind}`, h('strong', null, formatNumber(lines[key])), ` ${label}`)
      figure.dataset.figure = key
      return figure
    }))

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
      button.title = kind === 'results'
        ? 'Each failed line\'s result (NDJSON): line number, account, step, code and attrs'
        : 'The input lines that failed, unchanged (NDJSON): fix them and submit them as a new job'
      button.addEventListener('click', () => downloadJob(job, kind))
      actions.append(button)
    }
  }

  const item = h('li', 'job', head, h('div', 'job-progress', track, done), h('div', 'job-foot', figures, pace),
    ...jobWhy(job), actions.childElementCount ? actions : null)
  item.dataset.key = job.id
  item.dataset.state = job.state
  return item
}

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
function jobWhy(job) {
  const rows = []
  if (job.notBefore || job.notAfter) {
    const window = h('div', 'job-window muted', 'Window: ',
      job.notBefore ? h('span', null, 'from ', timeElement(null, job.notBefore)) : 'from its start',
      job.notAfter ? h('span', null, ', no line begun from ', timeElement(null, job.notAfter)) : ', without end')
    window.dataset.notBefore = job.notBefore ?? ''
    window.dataset.notAfter = job.notAfter ?? ''
    rows.push(window)
  }
  if (job.state === 'CANCELLED' && job.cancelledReason) {
    const reason = h('div', 'job-reason', `Cancelled: ${CANCELLED_REASONS[job.cancelledReason] ?? job.cancelledReason}.`)
    reason.dataset.reason = job.cancelledReason
    rows.push(reason)
  }
  if (job.failureCodes?.length) {
    const codes = h('div', 'job-codes', 'Why lines failed: ', ...job.failureCodes.slice(0, 5).map((f, i) => {
      const code = h('span', 'job-code', i > 0 ? ', ' : '', h('span', 'mono', f.code), ` ${plural(f.lines, 'line', 'lines')}`)
      code.dataset.code = f.code
      code.dataset.lines = String(f.lines)
      code.title = meanings.get(f.code) ?? ''
      return code
    }), job.failureCodes.length > 5 ? ` and ${plural(job.failureCodes.length - 5, 'other code', 'other codes')}` : '')
    rows.push(codes)
  }
  // Lines that are not JSON name no account: they are listed here, as nowhere else on the page.
  const notJson = job.notJsonLines ?? []
  if (notJson.length) {
    const shown = notJson.slice(0, NOT_JSON_SHOWN)
    const list = h('ul', 'job-not-json', ...shown.map((l) => {
      const item = h('li', null, `Line ${formatNumber(l.line)} is not JSON`, l.reason ? `: ${l.reason}.` : ' (its text was erased).')
      item.dataset.line = String(l.line)
      return item
    }))
    if (notJson.length > shown.length) {
      list.append(h('li', 'muted', 'and more (among the failed results: invalid_request with one entry invalid at null).'))
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
function jobPace(job) {
  switch (job.state) {
    case 'RUNNING': {
      if (!job.ratePerSecond) return [h('span', 'job-rate', 'starting: no rate yet')]
      const rate = h('span', 'job-rate', h('strong', null, formatRate(job.ratePerSecond)), ' lines/s')
      rate.dataset.rate = String(job.ratePerSecond)
      const eta = h('span', 'job-eta', 'ETA ', h('strong', null, job.etaSeconds == null ? '–' : formatDuration(job.etaSeconds)))
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
    case 'QUEUED': return waitsForWindow(job)
      ? [h('span', 'muted job-waits', 'scheduled: starts ', timeElement(null, job.notBefore))]
      : [h('span', 'muted', 'waiting for a runner')]
    case 'PAUSED': return [h('span', 'muted', 'paused while the supplier is Paused')]
    case 'OPEN': return [h('span', 'muted', 'open: its parts are being uploaded')]
    case 'COMPLETED': return job.finishedAt ? [h('span', 'muted', 'finished ', timeElement(null, job.finishedAt)), jobTook(job)] : []
    case 'CANCELLED': return job.finishedAt ? [h('span', 'muted', 'cancelled ', timeElement(null, job.finishedAt)), jobTook(job)] : []
    default: return []
  }
}

function setJobMessage(text, result) {
  $('job-message').textContent = text
  $('job-message').dataset.result = result ?? ''
  show($('job-message'), Boolean(text))
}

function cancelJob(job) {
  const left = job.lines.total - job.lines.done
  const question = `Cancel import job ${shortId(job.id)} of ${state.supplier}?\n\n` +
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
      setJobMessage(`Import job ${shortId(job.id)} cancelled: ${plural(cancelled.lines.notProcessed, 'line', 'lines')} not processed.`, 'cancelled')
      requestRefresh()
    } catch (err) {
      if (gen !== generation) return
      if (err instanceof SessionEnded) signOut(err.message)
      else setJobMessage(`Import job ${shortId(job.id)} could not be cancelled (${err.code ?? 'error'}): ${err.message}`, 'error')
    } finally {
      jobsBusy.delete(job.id)
      if (gen === generation) {
        renderJobs()
        renderProgressNote()
      }
    }
  })
}

/** A GET of the REST API with the token (renewed as for GraphQL), answered as text. */
async function restText(path) {
  if (!state.session) throw new SessionEnded('You are signed out.')
  if (Date.now() >= state.session.expiresAt - RENEW_MARGIN_MS) await renew()
  const get = async () => {
    try {
      return await fetch(path, { headers: { authorization: `Bearer ${state.session.token}` }, cache: 'no-store', credentials: 'omit' })
    } catch {
      throw new ServiceError('unreachable', 'The service cannot be reached.')
    }
  }
  let response = await get()
  if (response.status === 401) {
    await renew()
    response = await get()
  }
  if (response.ok) return response.text()
  let body = null
  try {
    body = await response.json()
  } catch {
    // not the error body: said by its status below
  }
  if (response.status === 401) throw new SessionEnded('The service no longer accepts this session (the key may have been revoked). Sign in again.')
  throw new ServiceError(body?.code ?? 'bad_response', body?.detail ?? `HTTP ${response.status}`)
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
      setJobMessage(`Downloaded ${plural(count, ...download.what)} of job ${shortId(job.id)}` +
        (kind === 'lines' ? ': fix them and submit them as a new job.' : '.'), 'downloaded')
    } catch (err) {
      if (gen !== generation) return
      if (err instanceof SessionEnded) signOut(err.message)
      else if (err.code === 'input_erased') setJobMessage(`The input of job ${shortId(job.id)} has been erased under the personal data retention rules: its failed lines are gone (its failed results remain).`, 'error')
      else setJobMessage(`The download failed (${err.code ?? 'error'}): ${err.message}`, 'error')
    } finally {
      jobsBusy.delete(job.id)
      if (gen === generation) renderJobs()
    }
  })()
}

// ---------------------------------------------------------------------------------------------
// The failing list as CSV: every open failure record of the supplier (all pages), one row per
// code and attr, with the code's meaning.

const CSV_COLUMNS = ['external_account_number', 'step', 'code', 'attr', 'meaning', 'failed_at']

/** A CSV field: quoted, and a leading = + - @ made inert, so a spreadsheet never runs it as a formula. */
function csvField(value) {
  let text = value === null || value === undefined ? '' : String(value)
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`
  return `"${text.replaceAll('"', '""')}"`
}

function csvRows(records) {
  const rows = []
  for (const f of records) {
    const entries = f.errors.length > 0 ? f.errors : [{ code: f.code, attr: null }]
    for (const e of entries) rows.push([f.externalAccountNumber, f.step, e.code, e.attr, meanings.get(e.code) ?? '', f.failedAt])
  }
  return rows
}

function downloadCsv() {
  const supplier = state.supplier
  const gen = generation
  if (!supplier) return
  const button = $('download-csv')
  const message = $('download-message')
  button.disabled = true
  message.textContent = 'Reading every failure…'
  show(message, true)
  void exclusive(async () => {
    try {
      if (meaningsState !== 'loaded') await loadMeanings(gen)
      const records = []
      let after = null
      for (;;) {
        const [result] = await call([{ query: Q_FAILURES, variables: { supplier, first: DOWNLOAD_PAGE, ...(after ? { after } : {}) } }])
        if (gen !== generation || supplier !== state.supplier) return
        const error = errorOf(result)
        if (error) throw error
        const page = result.data.migrationFailures
        records.push(...page)
        message.textContent = `Reading every failure… ${formatNumber(records.length)} so far`
        if (page.length < DOWNLOAD_PAGE) break
        const last = page.at(-1)
        after = `${last.externalAccountNumber}:${last.step}`
      }
      const rows = csvRows(records)
      const text = [CSV_COLUMNS, ...rows].map((row) => row.map(csvField).join(',')).join('\r\n') + '\r\n'
      const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }))
      const link = h('a')
      link.href = url
      link.download = `failures-${supplier}-${new Date().toISOString().slice(0, 16).replace(':', '-')}.csv`
      document.body.append(link)
      link.click()
      link.remove()
      setTimeout(() => URL.revokeObjectURL(url), 60_000)
      const accounts = new Set(records.map((f) => f.externalAccountNumber)).size
      message.textContent = `Downloaded ${plural(rows.length, 'row', 'rows')}: ${plural(records.length, 'failure', 'failures')} of ${plural(accounts, 'account', 'accounts')}.`
    } catch (err) {
      if (gen !== generation) return
      if (err instanceof SessionEnded) signOut(err.message)
      else message.textContent = `The download failed (${err.code ?? 'error'}): ${err.message}`
    } finally {
      button.disabled = false
    }
  })
}

/** Clears every figure of the supplier shown (another supplier, or signing out). */
function resetSupplierView() {
  destroyChart()
  for (const name of ['staged', 'pending', 'imported', 'skipped', 'failing', 'rate']) setMetric(name, '–')
  $('progress-note').textContent = ''
  delete $('progress-note').dataset.jobs
  show($('download-message'), false)
  show($('job-message'), false)
  renderJobs()
  $('search-input').value = ''
  forget($('bars'))
  forget($('failing-steps'))
  show($('no-failures'), false)
  renderFailures()
  renderEvents()
}

// ---------------------------------------------------------------------------------------------
// Signing in and out

function showSignIn(message) {
  show($('board'), false)
  show($('session'), false)
  show($('sign-in'), true)
  $('sign-in-message').textContent = message ?? ''
  show($('sign-in-message'), Boolean(message))
  $('api-key').focus()
}

function startBoard() {
  generation++
  meanings.clear()
  meaningsState = 'none'
  state.role = null
  state.suppliers = []
  state.suppliersLoaded = false
  state.lastRefresh = null
  show($('sign-in'), false)
  show($('session'), true)
  show($('board'), true)
  setBanner(null)
  setLive('loading')
  renderWho()
  renderLastRefresh()
  renderSuppliers()
  requestRefresh()
}

function signOut(message) {
  generation++
  clearTimeout(timer)
  sessionStorage.clear()
  Object.assign(state, {
    session: null, role: null, suppliers: [], suppliersLoaded: false, supplier: null, minutes: state.minutes, timeline: null, bar: null, account: null,
    failures: { items: [], more: false, loaded: false, error: null }, events: noEvents(), jobs: noJobs(), progress: null, lastRefresh: null, refreshes: 0
  })
  resetSupplierView()
  forget($('supplier-picker'))
  setName($('supplier-code'), '')
  setName($('supplier-org'), '')
  setName($('who'), '')
  setMetric('status', '–')
  setBanner(null)
  delete document.body.dataset.refreshes
  showSignIn(message)
}

async function signIn(event) {
  event.preventDefault()
  const input = $('api-key')
  const key = input.value.trim()
  // The key is not kept anywhere: not in the field, not in storage.
  input.value = ''
  if (!key) {
    showSignIn('Enter an API key.')
    return
  }
  const button = $('sign-in-button')
  button.disabled = true
  button.textContent = 'Signing in…'
  show($('sign-in-message'), false)
  show($('sign-in-status'), true)
  try {
    const [result] = await post([{ query: Q_OBTAIN_TOKEN, variables: { input: { APIKey: key } } }])
    const error = errorOf(result)
    if (error) throw error
    storeSession(result.data.obtainToken)
    startBoard()
  } catch (err) {
    const code = err instanceof ServiceError ? err.code : 'error'
    showSignIn(code === 'authentication_failed'
      ? 'This API key was not accepted. Check it and try again.'
      : code === 'throttled'
        ? 'Too many sign-in attempts from here. Wait a minute and try again.'
        : code === 'unreachable'
          ? 'Cannot reach the service. Check your connection and try again.'
          : `Sign-in failed (${code}): ${err.message}`)
  } finally {
    button.disabled = false
    button.textContent = 'Sign in'
    show($('sign-in-status'), false)
  }
}

// ---------------------------------------------------------------------------------------------
// Start

$('sign-in-form').addEventListener('submit', (event) => { void signIn(event) })
$('sign-out').addEventListener('click', () => signOut())
new ResizeObserver(markPicker).observe($('supplier-picker'))
$('supplier-picker').addEventListener('change', (event) => {
  selectSupplier(event.target.value)
  renderSuppliers()
  requestRefresh()
})
for (const button of document.querySelectorAll('.range button')) {
  button.addEventListener('click', () => selectRange(Number(button.dataset.minutes)))
}
$('clear-bar').addEventListener('click', () => selectBar(null))
$('search-form').addEventListener('submit', searchAccount)
$('download-csv').addEventListener('click', downloadCsv)
$('load-more').addEventListener('click', loadMore)
$('close-events').addEventListener('click', () => {
  const key = accountKey(state.account)
  selectAccount(null)
  const row = [...$('accounts-body').querySelectorAll('tr')].find((r) => r.dataset.key === key)
  row?.querySelector('button')?.focus()
})
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && state.account) $('close-events').click()
})

state.session = readSession()
if (state.session) startBoard()
else showSignIn()

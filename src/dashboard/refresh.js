// Refreshing: one batch of operations for everything on screen

import { $, forget, show } from './dom.js'
import { overviewQuery, Q_ACCOUNT_FAILURES, Q_EVENTS, Q_FAILURES, Q_JOBS, Q_ROLE, Q_SUPPLIERS } from './queries.js'
import { loadSections, otherCounts, stepFields } from './sections.js'
import {
  accountKey,
  barKey,
  generation,
  JOBS_SHOWN,
  MAX_PAGE,
  noEvents,
  noJobs,
  PAGE_SIZE,
  scheduleRefresh,
  signOut,
  state
} from './state.js'
import { call, errorOf, ServiceError, SessionEnded } from './api.js'
import { loadMeanings } from './meanings.js'
import { destroyChart, renderChart } from './chart.js'
import {
  renderLastRefresh,
  renderProgress,
  renderProgressNote,
  renderRate,
  renderReconciliation,
  renderSuppliers,
  renderWho,
  setBanner,
  setLive,
  setMetric
} from './overview.js'
import { renderEvents, renderFailures, renderSummary } from './failures.js'
import { renderJobs } from './jobs.js'

export async function refresh() {
  if (!state.session) return
  const gen = generation
  try {
    await loadSections()
    if (gen !== generation) return
    const overview = overviewQuery(
      stepFields(),
      otherCounts().map((s) => s.count)
    )
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
        operations.push({ query: overview, variables: { supplier, minutes: fetchMinutes } })
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
    setBanner(
      err.code === 'unreachable'
        ? 'Cannot reach the service. Retrying every 5 seconds; the figures shown are from the last successful refresh.'
        : `The service answered with an error (${err.code}): ${err.message} Retrying every 5 seconds.`
    )
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
  state.jobs = error
    ? { ...state.jobs, loaded: true, error }
    : { items: result.data.importJobs, loaded: true, error: null }
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
    if (error.code === 'not_found') {
      throw new ServiceError(
        'not_found',
        `Supplier ${supplier} is not visible with this key (it may have been removed).`
      )
    }
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
    : {
        items: result.data.migrationFailures,
        more: result.data.migrationFailures.length === first,
        loaded: true,
        error: null
      }
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
  state.events = {
    ...state.events,
    failures: error ? [] : result.data.migrationFailures,
    failuresError: error ?? null,
    loaded: true
  }
  renderEvents()
  if (state.account.searched && !state.account.revealed) {
    state.account.revealed = true
    $('events-panel').scrollIntoView({ block: 'nearest' })
  }
}

export function selectSupplier(code) {
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

/** Clears every figure of the supplier shown (another supplier, or signing out). */
export function resetSupplierView() {
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

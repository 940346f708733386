// What the page shows and has chosen, and when it refreshes: requests run one at a time.

const REFRESH_MS = 5000
export const PAGE_SIZE = 100
export const MAX_PAGE = 10_000
/** Import jobs listed, newest first. */
export const JOBS_SHOWN = 20
/** States of a job that is not over: it can be cancelled, and its lines count towards the progress note. */
export const UNDER_WAY = ['QUEUED', 'RUNNING', 'PAUSED']

export const state = {
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

export function noJobs() {
  return { items: [], loaded: false, error: null }
}

export function noEvents() {
  return { items: [], failures: [], loaded: false, error: null, failuresError: null }
}

/** Bumped on sign-in and sign-out: answers to an earlier session are dropped. */
export let generation = 0
export function nextGeneration() {
  generation++
}

/** Requests run one at a time, in order: a slow answer delays the next refresh, never stacks it. */
let queue = Promise.resolve()
export function exclusive(task) {
  const run = queue.then(task)
  queue = run.catch(() => {})
  return run
}

/**
 * The page's refresh and sign-out, given by dashboard.js (connect): the views ask for them (a
 * click, an ended session), and importing them from there would make the modules a cycle.
 */
const actions = { refresh: async () => {}, signOut: () => {} }
export function connect(given) {
  Object.assign(actions, given)
}
const refresh = () => actions.refresh()
export const signOut = (message) => actions.signOut(message)

export let timer = null
let refreshQueued = false

/** A refresh as soon as the one in flight (if any) is done; at most one waits. */
export function requestRefresh() {
  if (refreshQueued || !state.session) return
  refreshQueued = true
  clearTimeout(timer)
  void exclusive(async () => {
    refreshQueued = false
    await refresh()
  })
}

export function scheduleRefresh() {
  clearTimeout(timer)
  if (state.session) timer = setTimeout(requestRefresh, REFRESH_MS)
}

export const barKey = (bar) => (bar ? `${bar.step}\u0000${bar.code}` : '')
export const accountKey = (account) => (account ? `${account.external}\u0000${account.step}` : '')

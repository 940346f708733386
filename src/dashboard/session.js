// Signing in and out.

import { $, forget, setName, show } from './dom.js'
import { Q_OBTAIN_TOKEN } from './queries.js'
import { nextGeneration, noEvents, noJobs, requestRefresh, state, timer } from './state.js'
import { errorOf, post, ServiceError, storeSession } from './api.js'
import { forgetMeanings } from './meanings.js'
import { renderLastRefresh, renderSuppliers, renderWho, setBanner, setLive, setMetric } from './overview.js'
import { resetSupplierView } from './refresh.js'

export function showSignIn(message) {
  show($('board'), false)
  show($('session'), false)
  show($('sign-in'), true)
  $('sign-in-message').textContent = message ?? ''
  show($('sign-in-message'), Boolean(message))
  $('api-key').focus()
}

export function startBoard() {
  nextGeneration()
  forgetMeanings()
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

export function signOut(message) {
  nextGeneration()
  clearTimeout(timer)
  sessionStorage.clear()
  Object.assign(state, {
    session: null,
    role: null,
    suppliers: [],
    suppliersLoaded: false,
    supplier: null,
    minutes: state.minutes,
    timeline: null,
    bar: null,
    account: null,
    failures: { items: [], more: false, loaded: false, error: null },
    events: noEvents(),
    jobs: noJobs(),
    progress: null,
    lastRefresh: null,
    refreshes: 0
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

export async function signIn(event) {
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
    showSignIn(
      code === 'authentication_failed'
        ? 'This API key was not accepted. Check it and try again.'
        : code === 'throttled'
          ? 'Too many sign-in attempts from here. Wait a minute and try again.'
          : code === 'unreachable'
            ? 'Cannot reach the service. Check your connection and try again.'
            : `Sign-in failed (${code}): ${err.message}`
    )
  } finally {
    button.disabled = false
    button.textContent = 'Sign in'
    show($('sign-in-status'), false)
  }
}

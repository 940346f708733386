// The migration dashboard: plain browser modules, no build step and no framework; this one starts
// it. Everything it shows comes from the public GraphQL API (POST /graphql) with the token that
// obtainToken gave for the API key typed in, the error codes' meanings included (errorCodes: the
// catalogue's fixed texts, for the operator's token too); the key itself is never stored. The DOM
// is built with createElement and textContent only: data from the service is never parsed as HTML.

import { $ } from './dom.js'
import { accountKey, connect, requestRefresh, state } from './state.js'
import { readSession } from './api.js'
import { selectRange } from './chart.js'
import { markPicker, renderSuppliers } from './overview.js'
import { loadMore, searchAccount, selectAccount, selectBar } from './failures.js'
import { downloadCsv } from './export.js'
import { refresh, selectSupplier } from './refresh.js'
import { showSignIn, signIn, signOut, startBoard } from './session.js'

connect({ refresh, signOut })

$('sign-in-form').addEventListener('submit', (event) => {
  void signIn(event)
})
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

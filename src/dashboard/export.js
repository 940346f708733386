// The failing list as CSV: every open failure record of the supplier (all pages), one row per
// code and attr, with the code's meaning.

import { $, formatNumber, h, plural, show } from './dom.js'
import { Q_FAILURES } from './queries.js'
import { exclusive, generation, signOut, state } from './state.js'
import { call, errorOf, SessionEnded } from './api.js'
import { loadMeanings, meanings, meaningsState } from './meanings.js'

/** Failure records read per request by the CSV download. */
const DOWNLOAD_PAGE = 10_000

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
    for (const e of entries) {
      rows.push([f.externalAccountNumber, f.step, e.code, e.attr, meanings.get(e.code) ?? '', f.failedAt])
    }
  }
  return rows
}

export function downloadCsv() {
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
        const [result] = await call([
          { query: Q_FAILURES, variables: { supplier, first: DOWNLOAD_PAGE, ...(after ? { after } : {}) } }
        ])
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

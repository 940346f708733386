// An account's timeline in words: its events and its failure records, with their codes.

import { formatNumber, h, plural, timeElement } from './dom.js'
import { meaningElement } from './meanings.js'
import { sections, stepLabel } from './sections.js'

/** Events and failure records in time order (a failure after an event of the same second). */
export function mergedTimeline(events, failures) {
  const entries = [
    ...events.map((event, i) => ({ at: Date.parse(event.at), order: i, event })),
    ...failures.map((failure, i) => ({ at: Date.parse(failure.failedAt), order: events.length + i, failure }))
  ]
  return entries.sort((a, b) => a.at - b.at || a.order - b.order)
}

export function eventItem(event) {
  const { what, entries } = describeEvent(event)
  const item = h(
    'li',
    'event',
    timeElement('event-at', event.at),
    h('div', 'event-body', h('span', 'event-what', what), entries.length ? entryList(entries) : null),
    h('span', 'event-actor', actorText(event.actor))
  )
  item.dataset.type = event.type
  item.title = event.type
  return item
}

export function failureItem(failure) {
  const attempts = failure.attempts > 1 ? `, ${formatNumber(failure.attempts)} times in a row` : ''
  const what = `${stepLabel(failure.step)} failed (HTTP ${failure.httpStatus}${attempts})`
  const entries = failure.errors.length > 0 ? failure.errors : [{ code: failure.code, attr: null }]
  const item = h(
    'li',
    'event failure',
    timeElement('event-at', failure.failedAt),
    h('div', 'event-body', h('span', 'event-what', what), entryList(entries)),
    h('span', 'event-actor', 'failure record')
  )
  item.dataset.type = 'FAILURE'
  item.dataset.step = failure.step
  return item
}

/** Codes with their attrs and what each code means: the "why" of a failure. */
function entryList(entries) {
  return h(
    'ul',
    'entries',
    ...entries.map((e) => {
      const item = h(
        'li',
        'entry',
        h('code', 'entry-code', e.code),
        e.attr ? h('span', 'entry-attr', ' at ', h('code', null, e.attr)) : null,
        meaningElement('span', 'entry-meaning', e.code)
      )
      item.dataset.code = e.code
      return item
    })
  )
}

function actorText(actor) {
  if (typeof actor !== 'string') return ''
  if (actor.startsWith('organisation:')) return `by ${actor.slice('organisation:'.length)}`
  return actor === 'operator' ? 'by the operator' : `by ${actor}`
}

/** An event in words ("Created A-1234 with ledgers ENERGY L-…"), with the codes it holds. */
function describeEvent(event) {
  const d = event.detail && typeof event.detail === 'object' ? event.detail : {}
  const codes = (list) =>
    Array.isArray(list)
      ? list.filter((e) => e && typeof e.code === 'string').map((e) => ({ code: e.code, attr: e.attr ?? null }))
      : []
  switch (event.type) {
    case 'STAGED':
      return { what: 'Staged', entries: [] }
    case 'RESTAGED':
      return { what: 'Staged again: its staged data replaced', entries: [] }
    case 'CREATE_ATTEMPTED':
      return { what: 'Create started', entries: [] }
    case 'CREATED': {
      const ledgers = Array.isArray(d.ledgers) ? d.ledgers.map((l) => `${l.ledger_code} ${l.ledger_number}`) : []
      const account = d.service_account_number ?? 'the account'
      return {
        what: `Created ${account}${ledgers.length ? ` with ${ledgers.length === 1 ? 'ledger' : 'ledgers'} ${ledgers.join(', ')}` : ''}`,
        entries: []
      }
    }
    case 'CREATE_FAILED':
      return { what: 'Create failed', entries: codes(d.errors) }
    case 'DRY_RUN':
      return d.would_succeed
        ? { what: 'Dry run: the create would succeed', entries: [] }
        : { what: 'Dry run: the create would fail', entries: codes(d.errors) }
    case 'SKIPPED':
      return {
        what: `Skipped by the operator${d.previousState ? ` (it was ${String(d.previousState).toLowerCase()})` : ''}`,
        entries: []
      }
    case 'STAGED_DATA_ERASED':
      return {
        what:
          d.payloadErased === false ? 'Stored error details erased' : 'Staged data erased (personal data retention)',
        entries: []
      }
    case 'POST_IMPORT_WRITE':
      return { what: describeWrite(d), entries: [] }
    default:
      return { what: event.type, entries: [] }
  }
}

function describeWrite(d) {
  switch (d.endpoint) {
    case 'notes':
      return `Added ${plural(d.created ?? 0, 'note', 'notes')}`
    case 'transactions': {
      const extra = [
        d.already_existing ? `${formatNumber(d.already_existing)} already there` : '',
        d.moved ? `${formatNumber(d.moved)} moved into the open statement` : ''
      ].filter(Boolean)
      return `Added ${plural(d.added ?? 0, 'transaction', 'transactions')}${extra.length ? ` (${extra.join(', ')})` : ''}`
    }
    case 'historical_agreements':
      return `Added ${plural(d.created ?? 0, 'historical agreement', 'historical agreements')}`
    case 'historical_statements':
      return `Added ${plural(d.created ?? 0, 'historical statement', 'historical statements')}`
    case 'historical_billing_documents':
      return (
        `Added ${plural(d.billing_documents ?? 0, 'billing document', 'billing documents')}${d.billing_document_type ? ` (${d.billing_document_type})` : ''}` +
        ` with ${plural(d.transactions ?? 0, 'transaction', 'transactions')}${d.ledger_number ? ` on ledger ${d.ledger_number}` : ''}`
      )
    case 'payment_instruction':
      return `Added a payment instruction${d.type ? ` (${d.type})` : ''}${d.vendor ? ` with ${d.vendor}` : ''}${d.reference ? `, reference ${d.reference}` : ''}`
    default: {
      // A section this page has no words of its own for: its count's label.
      const section = sections.find((s) => s.name === d.endpoint)
      if (section && typeof d.created === 'number') {
        return `Added ${formatNumber(d.created)} ${section.countLabel.toLowerCase()}`
      }
      return `Wrote ${section ? section.label.toLowerCase() : (d.endpoint ?? 'post-import data')}`
    }
  }
}

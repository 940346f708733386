// The error codes' meanings (errorCodes), shown beside the codes once read.

import { h, show } from './dom.js'
import { Q_CODES } from './queries.js'
import { generation } from './state.js'
import { call, SessionEnded } from './api.js'

/** What each error code means (code → one sentence), read once per sign-in; empty until then. */
export const meanings = new Map()
/** 'none' (to read) or 'loaded'. */
export let meaningsState = 'none'

/** Forgets the meanings read (at sign-in: they are read again with the new token). */
export function forgetMeanings() {
  meanings.clear()
  meaningsState = 'none'
}

/**
 * Reads the error codes' meanings (errorCodes: fixed texts, the same for every token, the
 * operator's included). A failure leaves them unread (tried again at the next refresh); the codes
 * are shown without their meanings meanwhile.
 */
export async function loadMeanings(gen) {
  if (meaningsState !== 'none') return
  let result
  try {
    ;[result] = await call([{ query: Q_CODES }])
  } catch (err) {
    if (err instanceof SessionEnded) throw err
    return
  }
  const codes = result?.data?.errorCodes
  if (gen !== generation || !Array.isArray(codes)) return
  for (const { code, meaning } of codes) {
    if (typeof code === 'string' && typeof meaning === 'string') meanings.set(code, meaning)
  }
  meaningsState = 'loaded'
  fillMeanings()
}

/** A code's meaning, small text that fills itself in once the meanings are read. */
export function meaningElement(tag, className, code) {
  const element = h(tag, className)
  element.dataset.meaningOf = code
  setMeaning(element)
  return element
}

export function setMeaning(element) {
  const meaning = meanings.get(element.dataset.meaningOf)
  element.textContent = meaning ?? ''
  show(element, Boolean(meaning))
}

function fillMeanings() {
  for (const element of document.querySelectorAll('[data-meaning-of]')) setMeaning(element)
  for (const element of document.querySelectorAll('[data-title-code]')) {
    element.title = meanings.get(element.dataset.titleCode) ?? ''
  }
}

/** An element whose tooltip is `code`'s meaning (once read). */
export function titled(element, code) {
  element.dataset.titleCode = code
  element.title = meanings.get(code) ?? ''
  return element
}

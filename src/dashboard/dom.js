// Rendering helpers: elements, names, numbers and times, and rebuilding a container only when
// what it shows changed.

export const $ = (id) => document.getElementById(id)

/** An element with a class and children (strings become text nodes). */
export function h(tag, className, ...children) {
  const element = document.createElement(tag)
  if (className) element.className = className
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    element.append(
      typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child
    )
  }
  return element
}

// A long code wraps after an underscore rather than mid-word.
export function breakAfterUnderscores(text) {
  return text.split(/(?<=_)/).flatMap((part, i) => (i === 0 ? [part] : [h('wbr'), part]))
}

export function show(element, visible) {
  element.hidden = !visible
}

/** A name the page may cut short (class `clip`): its text, and the whole of it as its title. */
export function setName(element, text) {
  element.textContent = text
  element.title = text
}

const numberFormat = new Intl.NumberFormat()
export const formatNumber = (n) => numberFormat.format(n)
export const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })
export const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })

const dayTimeFormat = new Intl.DateTimeFormat(undefined, {
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit'
})

/** A time of today as its time of day; an earlier one with its date. */
function formatWhen(iso) {
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) return iso
  return date.toDateString() === new Date().toDateString() ? timeFormat.format(date) : dayTimeFormat.format(date)
}

/** A timestamp's element: short text, the full time as its tooltip. */
export function timeElement(className, iso) {
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
export function renderIfChanged(container, signature, build) {
  if (signatures.get(container) === signature) return
  signatures.set(container, signature)
  const focused = container.contains(document.activeElement) ? document.activeElement : null
  const focusKey = focused?.closest('[data-key]')?.dataset.key
  const focusRole = focused?.dataset.role
  const scrollers = [container.closest('.table-wrap'), document.scrollingElement].filter(Boolean)
  const scroll = scrollers.map((s) => s.scrollTop)
  container.replaceChildren(...build())
  scrollers.forEach((s, i) => {
    s.scrollTop = scroll[i]
  })
  if (focusKey !== undefined) {
    for (const candidate of container.querySelectorAll('[data-key]')) {
      if (candidate.dataset.key !== focusKey) continue
      const target = focusRole ? (candidate.querySelector(`[data-role="${focusRole}"]`) ?? candidate) : candidate
      target.focus({ preventScroll: true })
      break
    }
  }
}

export function forget(container) {
  signatures.delete(container)
  container.replaceChildren()
}

export const plural = (n, one, many) => `${formatNumber(n)} ${n === 1 ? one : many}`

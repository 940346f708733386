// The post-import sections as the service describes them (the `sections` query): their labels,
// and the names of their counts and failure steps, which the overview's query asks for.

import { call, errorOf } from './api.js'
import { Q_SECTIONS } from './queries.js'

/** The account's own steps before its sections. */
const ACCOUNT_STEPS = [
  ['validate', 'Validate'],
  ['stage', 'Stage'],
  ['create', 'Create']
]

/** `{name, label, count, countLabel}` of each section, in the order they run; empty until read. */
export let sections = []

/** Reads the sections once per page (they are the same for every token); an error is thrown to the refresh. */
export async function loadSections() {
  if (sections.length > 0) return
  const [result] = await call([{ query: Q_SECTIONS }])
  const error = errorOf(result)
  if (error) throw error
  sections = result.data.sections
}

const camelCase = (name) => name.replace(/_([a-z])/g, (_m, c) => c.toUpperCase())

/** A step's name as people read it: `historical_statements` → `Historical statements`. */
export function stepLabel(step) {
  const own = ACCOUNT_STEPS.find(([name]) => name === step)
  return own ? own[1] : (sections.find((s) => s.name === step)?.label ?? step)
}

/** The failure summary's fields by step: the account's own steps, then each section's. */
export const stepFields = () => [...ACCOUNT_STEPS.map(([name]) => name), ...sections.map((s) => camelCase(s.name))]

/** The sections' counts besides the transactions' (which comes with its sum). */
export const otherCounts = () => sections.filter((s) => s.count !== 'transactions')

/** A JSON object: not null, not an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * `value[key]` when `value` is a JSON object, else undefined: for rules reading data that may
 * have failed its schema. An array where an object belongs has a schema error there, so no rule
 * would read its fields anyway.
 */
export function fieldOf(value: unknown, key: string): unknown {
  return isObject(value) ? value[key] : undefined
}

/** A datetime as the contract returns it: UTC, whole seconds, `YYYY-MM-DDTHH:MM:SSZ`. */
export function formatDateTime(value: Date): string {
  return value.toISOString().slice(0, 19) + 'Z'
}

export function formatNullableDateTime(value: Date | null): string | null {
  return value === null ? null : formatDateTime(value)
}

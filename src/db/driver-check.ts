import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The mark `patches/postgres+3.4.9.patch` leaves in the driver's connection code. */
export const DRIVER_PATCH_MARK = '/* amis: guarded */'

/** The driver's connection code, as Node resolves the `postgres` package from here. */
export function driverConnectionFile(): string {
  return fileURLToPath(new URL('./connection.js', import.meta.resolve('postgres')))
}

/**
 * Why the `postgres` driver cannot be used, or undefined when it carries our patch (see
 * `patches/README.md`): without it, a connection lost inside a transaction ends the process.
 */
export function driverPatchProblem(file = driverConnectionFile()): string | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return `the postgres driver's code (${file}) cannot be read`
  }
  if (text.includes(DRIVER_PATCH_MARK)) return undefined
  return 'the postgres driver is not patched (installed with --ignore-scripts?): run `npx patch-package`, see patches/README.md'
}

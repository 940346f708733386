import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The marks `patches/postgres+3.4.9.patch` leaves in the driver's connection code. */
export const DRIVER_PATCH_MARKS = ['/* amis: guarded */', '/* amis: pipelined only inside a transaction */']

/** The driver's connection code, as Node resolves the `postgres` package from here. */
export function driverConnectionFile(): string {
  return fileURLToPath(new URL('./connection.js', import.meta.resolve('postgres')))
}

/**
 * Why the `postgres` driver cannot be used, or undefined when it carries our patch (see
 * `patches/README.md`): without it, a connection lost inside a transaction ends the process, and
 * `DATABASE_PIPELINE=false` breaks every transaction.
 */
export function driverPatchProblem(file = driverConnectionFile()): string | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return `the postgres driver's code (${file}) cannot be read`
  }
  if (DRIVER_PATCH_MARKS.every((mark) => text.includes(mark))) return undefined
  return 'the postgres driver is not patched (installed with --ignore-scripts?): run `npx patch-package`, see patches/README.md'
}

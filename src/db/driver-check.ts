import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The marks `patches/postgres+3.4.9.patch` leaves in the driver, by file of its `src/` folder. */
export const DRIVER_PATCH_MARKS: Record<string, string[]> = {
  'connection.js': [
    '/* amis: guarded */',
    '/* amis: pipelined only inside a transaction */',
    '/* amis: types fetch lost */',
    '/* amis: read-write is not a standby */'
  ],
  'index.js': ['/* amis: a lost connection ends its transaction */']
}

/** A file of the driver's `src/` folder, as Node resolves the `postgres` package from here. */
export function driverFile(name: string): string {
  return fileURLToPath(new URL(`./${name}`, import.meta.resolve('postgres')))
}

/**
 * Why the `postgres` driver cannot be used, or undefined when it carries our patch (see
 * `patches/README.md`): without it, a connection lost inside a transaction ends the process or
 * lets the transaction's callback write outside it, and `DATABASE_PIPELINE=false` breaks every
 * transaction. `folder` is the driver's `src/` folder (a copy, in tests).
 */
export function driverPatchProblem(folder?: string): string | undefined {
  for (const [name, marks] of Object.entries(DRIVER_PATCH_MARKS)) {
    const file = folder ? `${folder}/${name}` : driverFile(name)
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      return `the postgres driver's code (${file}) cannot be read`
    }
    if (!marks.every((mark) => text.includes(mark))) {
      return 'the postgres driver is not patched (installed with --ignore-scripts?): run `npx patch-package`, see patches/README.md'
    }
  }
  return undefined
}

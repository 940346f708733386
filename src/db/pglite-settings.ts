import { setFlagsFromString } from 'node:v8'
import { PGlite } from '@electric-sql/pglite'

/**
 * PostgreSQL's settings for the embedded database, beside PGlite's own: shared buffers of 16 MB
 * (initdb's default is 128 MB, which PGlite's WebAssembly memory holds from the start). Its data
 * files are read through the operating system's page cache, so a small pool costs little; see
 * docs/scaling.md for the figures.
 */
const SETTINGS = ['shared_buffers=16MB']

/** PGlite's start parameters with ours. */
export const pgliteStartParams = (): string[] => [
  ...PGlite.defaultStartParams,
  ...SETTINGS.flatMap((setting) => ['-c', setting])
]

/**
 * PGlite's WebAssembly (PostgreSQL, 9 MB) compiled by V8's baseline compiler alone, never again by
 * its optimising one: a server at rest holds about 50 MB less (230 MB against 280), and a
 * migration's peak about 50 MB less, for a CPU cost per account within the machine's noise in
 * five paired runs (PostgreSQL's own work is a small part of an account's). Set before PGlite's
 * module is compiled. V8's flags are the whole process's: it concerns WebAssembly only, and the
 * server's code is JavaScript. Figures: docs/scaling.md.
 */
export function baselineCompilerOnly(): void {
  setFlagsFromString('--liftoff-only')
}

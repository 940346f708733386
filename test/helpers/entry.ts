import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

/** The project's compiled copy this file runs from under `npm test`; undefined when run from TypeScript. */
const compiledRoot = import.meta.url.endsWith('.js')
  ? dirname(dirname(dirname(fileURLToPath(import.meta.url))))
  : undefined

/**
 * Node's arguments that run the program `entry` (a TypeScript file, e.g. `src/server.ts`, relative
 * to the project root): its compiled copy when the tests run compiled, else through tsx.
 */
export function nodeArgs(entry: string): string[] {
  return compiledRoot
    ? ['--enable-source-maps', join(compiledRoot, entry.replace(/\.ts$/, '.js'))]
    : ['--import', 'tsx', entry]
}

import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { parseArgs, type ParseArgsConfig } from 'node:util'

/** True when the module at `moduleUrl` (its `import.meta.url`) was started as the program, not imported (e.g. by a test). */
export function isEntryPoint(moduleUrl: string): boolean {
  const script = process.argv[1]
  if (!script) return false
  try {
    return moduleUrl === pathToFileURL(realpathSync(script)).href
  } catch {
    return false
  }
}

/**
 * Splits a command line: every option must be known and take the right kind of value. A bad one
 * becomes `usage(message)`, the command's own usage error.
 */
export function parseCommandLine<F>(argv: string[], options: NonNullable<ParseArgsConfig['options']>, usage: (message: string) => Error): { positionals: string[]; flags: F } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true })
    return { positionals, flags: values as F }
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) throw usage((err as Error).message)
    throw err
  }
}

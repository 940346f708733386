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
export function parseCommandLine<F>(
  argv: string[],
  options: NonNullable<ParseArgsConfig['options']>,
  usage: (message: string) => Error
): { positionals: string[]; flags: F } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true })
    return { positionals, flags: values as F }
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) throw usage(plainMessage(err as Error))
    throw err
  }
}

/** node's parser messages, in a few plain words: `unknown option --x`, `--team needs a value`. */
function plainMessage(err: Error): string {
  const option = /'(-[^' ]*)/.exec(err.message)?.[1]
  if (!option) return err.message
  if (/^Unknown option/.test(err.message)) return `unknown option ${option}`
  if (/argument missing/.test(err.message)) return `${option} needs a value`
  if (/does not take an argument/.test(err.message)) return `${option} takes no value`
  return err.message
}

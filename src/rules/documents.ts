import { CODE } from '../../schemas/error-codes.js'
import type { RuleContext } from './context.js'

/**
 * Document paths: relative, no `..` segment, no backslash, no scheme, no empty segment, no
 * control characters, none of these percent-encoded either; one leading `/` is allowed and ignored.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
const SCHEME = /^[a-z][a-z0-9+.-]*:/i

/**
 * True when a path segment becomes `.`, `..`, or holds a slash, backslash or control character once
 * percent-decoded (up to three times, as a chain of consumers might): `%2e%2e`, `a%2fb`, `%252e%252e`.
 * A store or URL that decodes the location would otherwise see a traversal the rules refused.
 */
export function hidesTraversal(segment: string): boolean {
  let decoded = segment
  for (let i = 0; i < 3 && decoded.includes('%'); i++) {
    let next: string
    try {
      next = decodeURIComponent(decoded)
    } catch {
      break // not percent-encoding (e.g. `100%.pdf`): taken literally
    }
    if (next === decoded) break
    decoded = next
    if (decoded === '.' || decoded === '..' || /[/\\]/.test(decoded) || CONTROL.test(decoded)) return true
  }
  return false
}

/** More than 1024 code points (counts code points, not UTF-16 units). */
function tooLong(path: string): boolean {
  return path.length > 1024 && Array.from(path).length > 1024
}

/** The path without its one optional leading slash, or undefined when it breaks a rule. */
export function relativeDocumentPath(path: string): string | undefined {
  const relative = path.startsWith('/') ? path.slice(1) : path
  if (
    relative === '' ||
    tooLong(relative) ||
    CONTROL.test(relative) ||
    relative.includes('\\') ||
    SCHEME.test(relative)
  ) {
    return undefined
  }
  const segments = relative.split('/')
  if (segments.some((s) => s === '' || s === '..' || s === '.' || s.trim() === '' || hidesTraversal(s))) {
    return undefined
  }
  return relative
}

/** Checks the path at `attr` and returns its relative form when valid. */
export function checkDocumentPath(ctx: RuleContext, path: unknown, attr: string): string | undefined {
  if (typeof path !== 'string' || !ctx.clean(attr)) return undefined
  const relative = relativeDocumentPath(path)
  if (relative === undefined) {
    ctx.report(CODE.invalid_document_path, attr)
  }
  return relative
}

/** `<bucket>/<supplier document root>/<path>` with single slashes. */
export function documentLocation(bucket: string, root: string, relative: string): string {
  return [bucket, root, relative].filter((part) => part !== '').join('/')
}

import type { RuleContext } from './context.js'

/**
 * Document paths (§9): relative, no `..` segment, no backslash, no scheme, no empty segment, no
 * control characters; one leading `/` is allowed and ignored.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
const SCHEME = /^[a-z][a-z0-9+.-]*:/i

/** The path without its one optional leading slash, or undefined when it breaks a rule. */
export function relativeDocumentPath(path: string): string | undefined {
  const relative = path.startsWith('/') ? path.slice(1) : path
  if (relative === '' || relative.length > 1024 || CONTROL.test(relative) || relative.includes('\\') || SCHEME.test(relative)) return undefined
  const segments = relative.split('/')
  if (segments.some((s) => s === '' || s === '..' || s === '.' || s.trim() === '')) return undefined
  return relative
}

/** Checks the path at `attr` and returns its relative form when valid. */
export function checkDocumentPath(ctx: RuleContext, path: unknown, attr: string): string | undefined {
  if (typeof path !== 'string' || !ctx.clean(attr)) return undefined
  const relative = relativeDocumentPath(path)
  if (relative === undefined) {
    ctx.report('invalid_document_path', attr, 'A document path is relative, without "..", backslashes, schemes, empty segments or control characters.')
  }
  return relative
}

/** `<bucket>/<supplier document root>/<path>` with single slashes. */
export function documentLocation(bucket: string, root: string, relative: string): string {
  return [bucket, root, relative].filter((part) => part !== '').join('/')
}

import {
  context,
  createContextKey,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type Tracer
} from '@opentelemetry/api'

/**
 * Spans, as the service's code makes them: `span(name, attributes, fn)` records `fn` as a child of
 * the span running now, and is a plain call of `fn` when there is none to record it under (traces
 * off: OTEL_EXPORTER_OTLP_ENDPOINT unset). Only `@opentelemetry/api` is loaded here; the SDK, the
 * exporter and the Fastify instrumentation are loaded by src/plugins/tracing.ts, and only when
 * traces are on.
 *
 * What a span may carry: names, ids, counts, route patterns, statement shapes (parameters as
 * placeholders), status codes and error codes; never a request's or an answer's body, GraphQL
 * variables or documents, headers, query strings, SQL parameters or an error's message.
 */

/** The app's tracer travels in the context: a request's, or a background task's started from `TraceRoot`. */
const TRACER = createContextKey('account-migration-import-service tracer')

/** A context holding the app's tracer, under which background work (job chunks, webhook deliveries) starts its spans. */
export type TraceRoot = Context

/** What the code in a span may add to it once it knows (a status code, a count). */
export interface SpanNote {
  set(attributes: Attributes): void
}

const NOT_RECORDING: SpanNote = { set() {} }

/** `base` with the app's tracer in it. */
export function withTracer(tracer: Tracer, base: Context): TraceRoot {
  return base.setValue(TRACER, tracer)
}

/** The tracer of the active context: undefined when nothing is being traced. */
export function activeTracer(): Tracer | undefined {
  return context.active().getValue(TRACER) as Tracer | undefined
}

/**
 * Runs `fn` in a span named `name`, a child of the active span (its context is `fn`'s, so spans
 * made inside are its children). Not traced: `fn` is called as it is.
 */
export function span<T>(name: string, attributes: Attributes, fn: (note: SpanNote) => T): T {
  const active = context.active()
  const tracer = active.getValue(TRACER) as Tracer | undefined
  if (tracer === undefined) return fn(NOT_RECORDING)
  return recorded(tracer, active, name, attributes, fn)
}

/**
 * A span begun in background work, under `root` (undefined: traces off, `fn` is called as it is).
 * `traceId` (32 hex digits) puts it in that trace, under a parent that is never exported: every
 * chunk of an import job goes in the trace whose id is the job's.
 */
export function rootSpan<T>(
  root: TraceRoot | undefined,
  name: string,
  attributes: Attributes,
  fn: (note: SpanNote) => T,
  options: { traceId?: string | undefined } = {}
): T {
  if (root === undefined) return fn(NOT_RECORDING)
  const tracer = root.getValue(TRACER) as Tracer
  const parent =
    options.traceId === undefined
      ? root
      : trace.setSpanContext(root, {
          traceId: options.traceId,
          spanId: options.traceId.slice(16),
          traceFlags: TraceFlags.SAMPLED,
          isRemote: true
        })
  return recorded(tracer, parent, name, attributes, fn)
}

/** A span ended by its caller (where no function wraps the work, as in mercurius' hooks), or undefined when not traced. */
export function openSpan(name: string, attributes: Attributes): OpenSpan | undefined {
  const active = context.active()
  const tracer = active.getValue(TRACER) as Tracer | undefined
  if (tracer === undefined) return undefined
  const opened = tracer.startSpan(name, { attributes }, active)
  return {
    end(more: Attributes = {}, error?: unknown) {
      opened.setAttributes(more)
      if (error !== undefined) failed(opened, error)
      opened.end()
    }
  }
}

export interface OpenSpan {
  end(attributes?: Attributes, error?: unknown): void
}

/** A trace id made of a UUID's hex digits (an import job's); undefined for anything else. */
export function traceIdOf(uuid: string): string | undefined {
  const hex = uuid.replace(/-/g, '').toLowerCase()
  return /^[0-9a-f]{32}$/.test(hex) && !/^0+$/.test(hex) && !/^0+$/.test(hex.slice(16)) ? hex : undefined
}

function recorded<T>(
  tracer: Tracer,
  parent: Context,
  name: string,
  attributes: Attributes,
  fn: (note: SpanNote) => T
): T {
  const started = tracer.startSpan(name, { attributes }, parent)
  const note: SpanNote = { set: (more) => started.setAttributes(more) }
  let result: T
  try {
    result = context.with(trace.setSpan(parent, started), fn, undefined, note)
  } catch (err) {
    failed(started, err)
    started.end()
    throw err
  }
  if (isPromise(result)) {
    return result.then(
      (value) => {
        started.end()
        return value
      },
      (err: unknown) => {
        failed(started, err)
        started.end()
        throw err
      }
    ) as T
  }
  started.end()
  return result
}

/** An error's kind only (its code, or its class): its message may quote data. */
export function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) return code
  return (err as object | null)?.constructor?.name ?? typeof err
}

function failed(s: Span, err: unknown): void {
  s.setStatus({ code: SpanStatusCode.ERROR })
  s.setAttribute('error.type', errorType(err))
}

function isPromise(value: unknown): value is Promise<unknown> {
  return value instanceof Promise
}

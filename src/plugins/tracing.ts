import { context, propagation, TraceFlags, type Context } from '@opentelemetry/api'
import type { ExportResult } from '@opentelemetry/core'
import type { ReadableSpan, SpanExporter, SpanProcessor, Span, Sampler } from '@opentelemetry/sdk-trace-base'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config, TracingConfig } from '../config.js'
import { withTracer, type TraceRoot } from '../tracing.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Background work's spans start under it (src/tracing.ts `rootSpan`); undefined: traces are off. */
    traceRoot: TraceRoot | undefined
    /** Spans exported, and dropped (the queue full, an export failed): /metrics counts them. Undefined: traces are off. */
    traceExports: TraceExportCounts | undefined
  }
}

export interface TraceExportCounts {
  exported: number
  /** Ended while the queue held OTEL_BSP_MAX_QUEUE_SIZE spans (the collector slow or down): never exported. */
  droppedQueueFull: number
  /** Handed to an export that failed (refused, timed out, the collector unreachable). */
  droppedExportFailed: number
}

/** Probes answered every few seconds: no spans. */
const UNTRACED = new Set(['/healthz', '/readyz'])

/** How long closing waits for the last spans to be exported (a collector that hangs must not hold a shutdown). */
const SHUTDOWN_MS = 2000

const INSTRUMENTATION = 'account-migration-import-service'

/**
 * OpenTelemetry traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set (otherwise this plugin only says
 * they are off, and nothing of the SDK is loaded). Requests get their spans from `@fastify/otel`,
 * the Fastify team's instrumentation (a span per request named by its route, and one per hook and
 * handler); the database layer, GraphQL, import jobs, webhooks and payment vendors add theirs
 * through src/tracing.ts. Spans are exported in the background by a batch span processor with a
 * bounded queue: a collector that is slow or down never holds a request; what cannot be queued or
 * exported is dropped and counted (`/metrics`). Registered first, so every route and hook after it
 * is instrumented.
 */
export default fp(
  async function tracingPlugin(app: FastifyInstance, opts: { config: Config }) {
    const settings = opts.config.tracing
    if (settings === undefined) {
      app.decorate('traceRoot', undefined)
      app.decorate('traceExports', undefined)
      return
    }
    const [sdk, { resourceFromAttributes }, core, { AsyncLocalStorageContextManager }, otel, exporter] =
      await Promise.all([
        import('@opentelemetry/sdk-trace-base'),
        import('@opentelemetry/resources'),
        import('@opentelemetry/core'),
        import('@opentelemetry/context-async-hooks'),
        import('@fastify/otel'),
        exporterOf(settings)
      ])
    // Once per process (the API keeps the first): the active span follows async work, and a
    // caller's W3C `traceparent` makes a request's span a child of the caller's.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
    propagation.setGlobalPropagator(new core.W3CTraceContextPropagator())

    const counts: TraceExportCounts = { exported: 0, droppedQueueFull: 0, droppedExportFailed: 0 }
    const queue = { held: 0 }
    const batch = new sdk.BatchSpanProcessor(scrubbing(exporter, counts, queue, core.ExportResultCode.SUCCESS), {
      maxQueueSize: settings.batch.maxQueueSize,
      maxExportBatchSize: settings.batch.maxExportBatchSize,
      scheduledDelayMillis: settings.batch.scheduleDelayMs,
      exportTimeoutMillis: settings.batch.exportTimeoutMs
    })
    const provider = new sdk.BasicTracerProvider({
      resource: resourceFromAttributes(settings.resource),
      sampler: samplerOf(sdk, settings.sampler),
      spanProcessors: [bounded(batch, settings.batch.maxQueueSize, counts, queue)]
    })
    const tracer = provider.getTracer(INSTRUMENTATION)
    const root = withTracer(tracer, context.active())
    app.decorate('traceRoot', root)
    app.decorate('traceExports', counts)

    // Before @fastify/otel's own hook: the request's context holds the app's tracer, which
    // src/tracing.ts's spans are made with.
    // The reply logs what its request does (the access line): the request's logger, with the trace id once it has one.
    app.addHook('onRequest', function tracerInContext(request, reply, done) {
      Object.defineProperty(reply, 'log', {
        configurable: true,
        get: () => request.log,
        set: (log: FastifyRequest['log']) => {
          request.log = log
        }
      })
      context.with(root, done)
    })
    const instrumentation = new otel.FastifyOtelInstrumentation({
      // An exception's message may quote data (a statement's parameters): spans carry its kind only.
      recordExceptions: false,
      ignorePaths: (route: { url: string }) => UNTRACED.has(pathOf(route.url)),
      requestHook: (span, request) => requestSpan(span, request),
      // An anonymous hook or handler is named by its plugin, which may be a file's path: not a span's business.
      lifecycleHook: (span, info) => {
        if (info.handler !== undefined && /[\\/]/.test(info.handler)) {
          span.updateName(`${info.hookName} - anonymous`)
          span.setAttribute('hook.name', info.hookName)
        }
      }
    })
    instrumentation.setTracerProvider(provider)
    await app.register(instrumentation.plugin())

    app.addHook('onClose', async function exportLastSpans() {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        provider.shutdown().catch((err: unknown) => app.log.warn({ err }, 'traces: the last spans were not exported')),
        new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            app.log.warn('traces: the collector did not take the last spans in time; they are dropped')
            resolve()
          }, SHUTDOWN_MS)
          timer.unref()
        })
      ])
      clearTimeout(timer)
      instrumentation.disable()
    })
    app.log.info({ traces: settings.url.replace(/\/\/[^/@]*@/, '//') }, 'traces are exported over OTLP')
  },
  { name: 'tracing' }
)

/**
 * The request's span: named `METHOD /route/:pattern`, its path without the query string, and the
 * request's log lines (the access line too) carrying its trace id.
 */
function requestSpan(
  span: {
    updateName(name: string): unknown
    setAttribute(key: string, value: string): unknown
    spanContext(): { traceId: string }
  },
  request: FastifyRequest
): void {
  const route = request.routeOptions.url
  span.updateName(route === undefined ? request.method : `${request.method} ${route}`)
  span.setAttribute('url.path', pathOf(request.url))
  request.log = request.log.child({ trace_id: span.spanContext().traceId })
}

function pathOf(url: string): string {
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}

async function exporterOf(settings: TracingConfig): Promise<SpanExporter> {
  const options = { url: settings.url, headers: settings.headers, timeoutMillis: settings.timeoutMs }
  if (settings.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http')
    return new OTLPTraceExporter(options)
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto')
  return new OTLPTraceExporter(options)
}

function samplerOf(sdk: typeof import('@opentelemetry/sdk-trace-base'), chosen: TracingConfig['sampler']): Sampler {
  const ratio = () => new sdk.TraceIdRatioBasedSampler(chosen.ratio)
  switch (chosen.name) {
    case 'always_on':
      return new sdk.AlwaysOnSampler()
    case 'always_off':
      return new sdk.AlwaysOffSampler()
    case 'traceidratio':
      return ratio()
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() })
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: ratio() })
    default:
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() })
  }
}

/**
 * The batch processor behind a count of the spans it holds: a span ended while it holds
 * `maxQueueSize` is dropped here, and counted (the batch processor would drop it without saying).
 */
function bounded(
  inner: SpanProcessor,
  maxQueueSize: number,
  counts: TraceExportCounts,
  queue: { held: number }
): SpanProcessor {
  return {
    onStart: (span: Span, parent: Context) => inner.onStart(span, parent),
    onEnd(span: ReadableSpan) {
      if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return
      if (queue.held >= maxQueueSize) {
        counts.droppedQueueFull++
        return
      }
      queue.held++
      inner.onEnd(span)
    },
    forceFlush: () => inner.forceFlush(),
    shutdown: () => inner.shutdown()
  }
}

/**
 * The exporter as the batch processor sees it: spans it takes leave the queue; a failed export's
 * spans are counted; and no span leaves with an error's message (Fastify's instrumentation puts a
 * thrown error's message in the span's status, and a database error's message quotes parameters).
 */
function scrubbing(
  inner: SpanExporter,
  counts: TraceExportCounts,
  queue: { held: number },
  success: number
): SpanExporter {
  return {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
      queue.held = Math.max(0, queue.held - spans.length)
      inner.export(spans.map(withoutMessages), (result) => {
        if (result.code === success) counts.exported += spans.length
        else counts.droppedExportFailed += spans.length
        done(result)
      })
    },
    shutdown: () => inner.shutdown(),
    ...(inner.forceFlush ? { forceFlush: () => inner.forceFlush!() } : {})
  }
}

function withoutMessages(span: ReadableSpan): ReadableSpan {
  const events = span.events.filter((event) => event.name !== 'exception')
  if (span.status.message === undefined && events.length === span.events.length) return span
  return Object.create(span, {
    status: { value: { code: span.status.code } },
    events: { value: events }
  }) as ReadableSpan
}

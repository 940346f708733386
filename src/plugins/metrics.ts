import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { Config } from '../config.js'
import { notAuthenticated, permissionDenied } from '../errors.js'
import { tokenFromHeader } from '../modules/auth/service.js'
import { hashSecret, sameHash } from '../modules/auth/secrets.js'
import { createMetricsRepository, type SupplierCounts, type SupplierJobCounts } from '../modules/metrics/repository.js'

/**
 * Process metrics (CPU, memory, event loop, GC) describe the process, not an app, and
 * `collectDefaultMetrics` starts observers that are never stopped: collected once per process and
 * shared by every app's registry (tests build many apps in one process).
 */
let processMetrics: Registry | undefined

function processRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry()
    collectDefaultMetrics({ register: processMetrics })
  }
  return processMetrics
}

/** Label of requests that matched no route, so unknown URLs never become labels. */
const UNMATCHED = 'unmatched'

/**
 * `GET /metrics` (Prometheus text, operator token only: its labels name suppliers). Request
 * metrics are counted in memory per server process; import counts are read from the database at
 * scrape time, so every server reports the same totals.
 */
export default fp(
  async function metricsPlugin(app: FastifyInstance, opts: { config: Config }) {
    const register = new Registry()
    const repo = createMetricsRepository(app.db)
    // The aggregates may lag by a moment: on the read replica when there is one (creates in flight
    // are the primary's locks, so they stay on it).
    const aggregates = app.reads.repository((db) => createMetricsRepository(db, app.db))

    const labelNames = ['method', 'route', 'status'] as const
    const requests = new Counter({
      name: 'amis_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status.',
      labelNames,
      registers: [register]
    })
    const duration = new Histogram({
      name: 'amis_http_request_duration_seconds',
      help: 'Time to answer HTTP requests, by method, route pattern and status.',
      labelNames,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [register]
    })
    app.addHook('onResponse', async function countRequest(request, reply) {
      const route = request.is404 ? UNMATCHED : (request.routeOptions.url ?? UNMATCHED)
      const labels = { method: request.method, route, status: String(reply.statusCode) }
      requests.inc(labels)
      duration.observe(labels, reply.elapsedTime / 1000)
    })

    // One query per scrape, shared by the gauges below (a scrape collects them all at once).
    let counting: Promise<SupplierCounts[]> | undefined
    function supplierCounts(): Promise<SupplierCounts[]> {
      counting ??= aggregates
        .read((r) => r.supplierCounts())
        .finally(() => {
          counting = undefined
        })
      return counting
    }

    function supplierGauge(name: string, help: string, value: (row: SupplierCounts) => number): void {
      const gauge: Gauge<'supplier'> = new Gauge({
        name,
        help,
        labelNames: ['supplier'],
        registers: [register],
        async collect() {
          const rows = await supplierCounts()
          gauge.reset()
          for (const row of rows) gauge.set({ supplier: row.supplier }, value(row))
        }
      })
    }
    supplierGauge(
      'amis_accounts_staged',
      'Accounts ever staged (created and skipped ones included), by supplier.',
      (r) => r.staged
    )
    supplierGauge(
      'amis_accounts_pending',
      'Accounts staged and not yet created or skipped (failed ones included), by supplier.',
      (r) => r.pending
    )
    supplierGauge('amis_accounts_created', 'Accounts created, by supplier.', (r) => r.created)
    supplierGauge(
      'amis_accounts_failed',
      'Accounts staged, not created, whose latest create failed, by supplier.',
      (r) => r.failed
    )
    supplierGauge('amis_accounts_skipped', 'Accounts skipped, by supplier.', (r) => r.skipped)

    const inFlight: Gauge<'supplier'> = new Gauge({
      name: 'amis_creates_in_flight',
      help: 'Creates and dry runs running now on any server, by supplier.',
      labelNames: ['supplier'],
      registers: [register],
      async collect() {
        const [suppliers, running] = await Promise.all([supplierCounts(), repo.createsInFlight()])
        inFlight.reset()
        for (const row of suppliers) inFlight.set({ supplier: row.supplier }, 0)
        for (const row of running) inFlight.set({ supplier: row.supplier }, row.creates)
      }
    })

    // Import jobs: one grouped statement over the jobs per scrape, shared by the three gauges.
    let countingJobs: Promise<SupplierJobCounts[]> | undefined
    function jobCounts(): Promise<SupplierJobCounts[]> {
      countingJobs ??= aggregates
        .read((r) => r.jobCounts())
        .finally(() => {
          countingJobs = undefined
        })
      return countingJobs
    }
    const jobLines: Gauge<'supplier' | 'outcome'> = new Gauge({
      name: 'amis_import_job_lines',
      help: "Lines of import jobs by outcome, by supplier (a cancelled job's lines that never began: not_processed).",
      labelNames: ['supplier', 'outcome'],
      registers: [register],
      async collect() {
        const rows = await jobCounts()
        jobLines.reset()
        for (const row of rows) {
          for (const [outcome, n] of Object.entries(row.lines)) jobLines.set({ supplier: row.supplier, outcome }, n)
        }
      }
    })
    const jobLinesWaiting: Gauge<'supplier'> = new Gauge({
      name: 'amis_import_job_lines_waiting',
      help: 'Lines of started import jobs (queued, running or paused) without a result yet, by supplier.',
      labelNames: ['supplier'],
      registers: [register],
      async collect() {
        const rows = await jobCounts()
        jobLinesWaiting.reset()
        for (const row of rows) jobLinesWaiting.set({ supplier: row.supplier }, row.waiting)
      }
    })
    const jobsByState: Gauge<'supplier' | 'state'> = new Gauge({
      name: 'amis_import_jobs',
      help: 'Import jobs by state, by supplier.',
      labelNames: ['supplier', 'state'],
      registers: [register],
      async collect() {
        const rows = await jobCounts()
        jobsByState.reset()
        for (const row of rows) {
          for (const [state, n] of Object.entries(row.jobs)) jobsByState.set({ supplier: row.supplier, state }, n)
        }
      }
    })

    const active = new Gauge({
      name: 'amis_write_requests_active',
      help: 'Requests of the write endpoints this process is working on (at most DATABASE_POOL_SIZE).',
      registers: [register],
      collect() {
        active.set(app.turns.active)
      }
    })
    const waiting = new Gauge({
      name: 'amis_write_requests_waiting',
      help: 'Requests of the write endpoints waiting for their turn in this process (body read).',
      registers: [register],
      collect() {
        waiting.set(app.turns.waiting)
      }
    })
    const bodyBytes = new Gauge({
      name: 'amis_request_body_bytes_held',
      help: 'Bytes of authenticated request bodies this process holds (at most BODY_MEMORY_BYTES, one organisation at most half).',
      registers: [register],
      collect() {
        bodyBytes.set(app.bodyBudget.held)
      }
    })
    const bodyWaiting = new Gauge({
      name: 'amis_request_bodies_waiting',
      help: "Authenticated requests waiting, body not read yet, for their organisation's share of BODY_MEMORY_BYTES.",
      registers: [register],
      collect() {
        bodyWaiting.set(app.bodyBudget.waiting)
      }
    })

    const limitsShared = new Gauge({
      name: 'amis_rate_limits_shared',
      help: '1 when this process counts the rate limits in the database every process shares; 0 while it cannot reach that count and counts alone (the embedded database: always 0, one process).',
      registers: [register],
      collect() {
        limitsShared.set(app.limits.shared ? 1 : 0)
      }
    })
    const countedAlone = new Counter({
      name: 'amis_rate_limits_counted_alone_total',
      help: 'Times this process began counting the rate limits alone because the shared count could not be reached.',
      registers: [register],
      collect() {
        countedAlone.reset()
        countedAlone.inc(app.limits.countedAlone)
      }
    })

    // postgres.js does not expose how many of its connections are busy: the configured size is.
    if (app.database.kind === 'postgres') {
      new Gauge({
        name: 'amis_database_pool_size',
        help: 'Connections this server process may open to the PostgreSQL server (DATABASE_POOL_SIZE).',
        registers: [register]
      }).set(opts.config.databasePoolSize)
    }

    const auditRecords = new Counter({
      name: 'amis_audit_events_total',
      help: 'Audit records written by this server process, by action and outcome (succeeded, refused).',
      labelNames: ['action', 'outcome'],
      registers: [register]
    })
    app.audit.onWritten((action, outcome) => auditRecords.inc({ action, outcome }))

    const failuresRecorded = new Counter({
      name: 'amis_failures_recorded_total',
      help: 'Failures recorded (failure records written), by supplier, step and error code; a failure holding several codes counts once for each.',
      labelNames: ['supplier', 'step', 'code'],
      registers: [register]
    })
    app.failures.onFailure(({ supplierCode, step, codes }) => {
      for (const code of codes) failuresRecorded.inc({ supplier: supplierCode, step, code })
    })

    const stagedDataErased = new Counter({
      name: 'amis_staged_data_erased_total',
      help: 'Staged payloads erased by this server process: by the retention job after the period (reason "retention"), or by the operator\'s eraseStagedData (reason "request").',
      labelNames: ['reason'],
      registers: [register]
    })
    for (const reason of ['retention', 'request']) stagedDataErased.inc({ reason }, 0)
    app.retention.onErased(({ reason, payloads }) => stagedDataErased.inc({ reason }, payloads))

    const webhookAttempts = new Counter({
      name: 'amis_webhook_attempts_total',
      help: 'Webhook delivery attempts made by this server process, by endpoint id and outcome (delivered; retrying: not delivered, tried again later; failed: not delivered, no attempt left).',
      labelNames: ['endpoint', 'outcome'],
      registers: [register]
    })
    app.webhookWorker.onAttempt((endpoint, outcome) => webhookAttempts.inc({ endpoint, outcome }))
    // One query per scrape for both gauges.
    let queueRead: Promise<{ pending: number; oldestSeconds: number }> | undefined
    const webhookQueue = () =>
      (queueRead ??= app.webhooks.queue().finally(() => {
        queueRead = undefined
      }))
    const webhookPending = new Gauge({
      name: 'amis_webhook_deliveries_pending',
      help: 'Webhook deliveries not yet delivered and not given up (PENDING), every endpoint.',
      registers: [register],
      async collect() {
        webhookPending.set((await webhookQueue()).pending)
      }
    })
    const webhookOldest = new Gauge({
      name: 'amis_webhook_oldest_pending_seconds',
      help: 'Age of the oldest PENDING webhook delivery (0 when none).',
      registers: [register],
      async collect() {
        webhookOldest.set((await webhookQueue()).oldestSeconds)
      }
    })

    const traceExports = app.traceExports
    if (traceExports) {
      const exported = new Counter({
        name: 'amis_trace_spans_exported_total',
        help: 'Trace spans this server process exported to the OTLP collector.',
        registers: [register],
        collect() {
          exported.reset()
          exported.inc(traceExports.exported)
        }
      })
      const dropped = new Counter({
        name: 'amis_trace_spans_dropped_total',
        help: 'Trace spans this server process did not export: queue_full (ended while OTEL_BSP_MAX_QUEUE_SIZE spans waited, the collector slow or down), export_failed (the collector refused them, did not answer in time or could not be reached).',
        labelNames: ['reason'],
        registers: [register],
        collect() {
          dropped.reset()
          dropped.inc({ reason: 'queue_full' }, traceExports.droppedQueueFull)
          dropped.inc({ reason: 'export_failed' }, traceExports.droppedExportFailed)
        }
      })
    }

    // What a scrape reads: this app's metrics and the process's.
    const scraped = Registry.merge([register, processRegistry()])

    const metricsToken = opts.config.metricsToken === undefined ? undefined : hashSecret(opts.config.metricsToken)

    /** An operator token, or the configured METRICS_TOKEN (a scrape job needs no token renewal). */
    async function requireOperator(request: FastifyRequest): Promise<void> {
      const token = tokenFromHeader(request.headers.authorization)
      if (token === undefined) throw notAuthenticated()
      if (metricsToken !== undefined && sameHash(hashSecret(token), metricsToken)) return
      const principal = await app.auth.authenticate(token)
      if (principal.kind !== 'operator') throw permissionDenied('the service operator', 'read metrics')
      request.principal = principal
    }

    // Scrapes come every few seconds: logged only when something is wrong, like the health probes.
    app.get('/metrics', { onRequest: requireOperator, logLevel: 'warn' }, async function metrics(_request, reply) {
      const text = await scraped.metrics()
      return reply.type(scraped.contentType).send(text)
    })
  },
  {
    name: 'metrics',
    dependencies: [
      'tracing',
      'db',
      'auth',
      'audit',
      'bodies',
      'turns',
      'rate-limits',
      'failures',
      'retention',
      'webhooks'
    ]
  }
)

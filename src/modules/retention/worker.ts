import type { FastifyBaseLogger } from 'fastify'
import type { AuditLog } from '../audit/service.js'
import type { RetentionService } from './service.js'

/** Runs between two erasure runs: "at least hourly", and soon enough for `0` days. */
export const RETENTION_INTERVAL_MS = 15 * 60_000

/**
 * Runs the retention erasure in the background: at start, then every `intervalMs` after the
 * previous run ended. Every server process runs it; runs on several servers share the work.
 */
export function createRetentionWorker(
  service: RetentionService,
  log: FastifyBaseLogger,
  options: { intervalMs?: number; audit?: { log: AuditLog; days: number } } = {}
) {
  const intervalMs = options.intervalMs ?? RETENTION_INTERVAL_MS
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | undefined
  let stopped = false

  function run(): void {
    const started = Date.now()
    const control = { shouldStop: () => stopped }
    running = service
      .runOnce(control)
      .then(async (totals) => {
        const jobs = await service.eraseJobInputs(control)
        if (totals.processes > 0 || jobs.jobs > 0 || jobs.lines > 0) {
          log.info(
            { ...totals, jobInputs: jobs.jobs, jobLines: jobs.lines, ms: Date.now() - started },
            'staged data erased after the retention period'
          )
        }
        if (options.audit) {
          const removed = await options.audit.log.removeOlderThan(options.audit.days)
          if (removed > 0) log.info({ auditEvents: removed }, 'audit records removed after the retention period')
        }
      })
      .catch((err) => {
        log.error({ err }, 'staged data erasure failed; the next run goes on from where it stopped')
      })
      .finally(() => {
        running = undefined
        schedule()
      })
  }

  function schedule(): void {
    if (stopped) return
    timer = setTimeout(run, intervalMs)
    timer.unref()
  }

  return {
    start(): void {
      stopped = false
      run()
    },
    /** Stops scheduling; a run in flight ends after its current batch. */
    async stop(): Promise<void> {
      stopped = true
      if (timer) clearTimeout(timer)
      await running
    }
  }
}

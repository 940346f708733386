import cluster, { type Worker } from 'node:cluster'
import { pino } from 'pino'
import { prettyLog } from './logging.js'

/** A replacement for a dead worker starts after this pause (a worker that keeps dying cannot spin). */
const RESTART_DELAY_MS = 1000

/**
 * The primary process of `WORKERS=n` (scale-out): it serves nothing itself. It forks n
 * workers, each running the normal start-up of `server.ts` on the shared port (node:cluster
 * hands out connections round robin). A worker that dies after it was listening is replaced; one
 * that cannot start stops the cluster (the worker's own line says why). SIGTERM and SIGINT are
 * passed on to every worker; the primary exits when all have, 0 when all stopped cleanly.
 */
export function runPrimary(workers: number, logLevel: string, logFormat: 'json' | 'pretty'): void {
  // The same logger as the workers', so the primary's lines read like theirs.
  const logger = logFormat === 'pretty' ? pino({ level: logLevel }, prettyLog()) : pino({ level: logLevel })
  function log(level: 'info' | 'warn' | 'error', msg: string, extra: Record<string, unknown> = {}): void {
    logger[level](extra, msg)
  }

  const listening = new WeakSet<Worker>()
  // A worker that has exited can still be listed until its IPC channel closes: not counted.
  const liveWorkers = () =>
    Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead())
  let stopping: NodeJS.Signals | undefined
  let failed = false

  cluster.on('listening', function workerListening(worker) {
    listening.add(worker)
  })

  cluster.on('exit', function workerExited(worker, code, signal) {
    const pid = worker.process.pid
    if (stopping) {
      // Stopped by the signal we passed on, or exited 0 after closing: both are clean.
      if (code !== 0 && signal !== stopping) failed = true
      if (liveWorkers().length === 0) {
        log(failed ? 'error' : 'info', 'all workers stopped: exiting')
        process.exit(failed ? 1 : 0)
      }
      return
    }
    if (!listening.has(worker)) {
      log('error', `worker ${pid} exited (${signal ?? `code ${code}`}) before it was listening: stopping the cluster`, {
        worker: pid
      })
      failed = true
      stop('SIGTERM', 'a worker could not start')
      return
    }
    log('warn', `worker ${pid} died (${signal ?? `code ${code}`}): starting a new one`, { worker: pid })
    setTimeout(() => {
      if (!stopping) cluster.fork()
    }, RESTART_DELAY_MS)
  })

  function stop(signal: NodeJS.Signals, reason = `${signal} received`): void {
    if (stopping) return
    stopping = signal
    const running = liveWorkers()
    log('info', `${reason}: passing ${signal} to ${running.length} worker(s)`)
    if (running.length === 0) process.exit(failed ? 1 : 0)
    for (const worker of running) worker.process.kill(signal)
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))

  log('info', `starting ${workers} workers`)
  // The first worker starts alone: it migrates and, in development, writes the token secret and
  // the operator key; the others start once it listens, and find them.
  cluster.fork()
  cluster.once('listening', function startOthers() {
    if (stopping) return
    for (let i = 1; i < workers; i++) cluster.fork()
  })
}

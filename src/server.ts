import cluster from 'node:cluster'
import { createServer } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { buildApp } from './app.js'
import { runPrimary } from './cluster.js'
import { ConfigError, loadConfig } from './config.js'
import { DatabaseStartupError } from './db/index.js'

/** Starts the service: config, app, listen; closes cleanly on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig(process.env, { terminal: process.stdout.isTTY === true })
  // V8 lets a busy heap grow to several times its live data between full collections (a 1,000,000
  // account migration: 60-100 MB live, 480 MB resident); twice it costs no measurable CPU there.
  if (config.heapGrowthPercent > 0) setFlagsFromString(`--heap-growing-percent=${config.heapGrowthPercent}`)
  // WORKERS > 1: this process only supervises; each worker it forks runs the start-up below.
  if (config.workers > 1 && cluster.isPrimary) return runPrimary(config.workers, config.logLevel, config.logFormat)
  // Before anything is set up (a first start prints a one-time operator key): the port must be free.
  if (cluster.isPrimary && config.port !== 0) await portFree(config.host, config.port)
  const app = await buildApp(config)
  const address = await app.listen({ host: config.host, port: config.port })
  app.log.info(
    `ready: API documentation ${address}/docs · dashboard ${address}/dashboard · health ${address}/healthz · ` +
      'operator command line: npm run admin -- help'
  )

  let closing = false
  const close = async (signal: string) => {
    if (closing) return
    closing = true
    app.log.info(`${signal} received: finishing requests in flight, then closing`)
    const force = setTimeout(() => {
      app.log.error('requests still running after 30 s: exiting anyway')
      process.exit(1)
    }, 30_000)
    force.unref()
    await app.close()
    process.exit(0)
  }
  process.on('SIGTERM', () => {
    void close('SIGTERM')
  })
  process.on('SIGINT', () => {
    void close('SIGINT')
  })
}

/** Resolves when HOST:PORT can be listened on; else a one-line reason (another server has it). */
function portFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        new ConfigError(
          err.code === 'EADDRINUSE'
            ? `${host}:${port} is in use (another server is running there? set PORT to another port)`
            : `cannot listen on ${host}:${port}: ${err.code ?? err.message}`
        )
      )
    })
    probe.listen(port, host, () => probe.close(() => resolve()))
  })
}

main().catch((err: unknown) => {
  // Start-up failures get one line saying why, no stack.
  const known = err instanceof ConfigError || err instanceof DatabaseStartupError
  process.stderr.write(`cannot start: ${known ? (err as Error).message : String((err as Error)?.stack ?? err)}\n`)
  process.exit(1)
})

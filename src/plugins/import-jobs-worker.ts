import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * The import-job worker, which every server process runs (IMPORT_JOB_WORKERS loops; 0: none):
 * started once the app is ready, stopped before it closes. The runner and the worker are built
 * with the other services (src/plugins/services.ts), as the import-jobs service wakes the worker
 * when a job starts here.
 */
export default fp(
  async function importJobsWorkerPlugin(app: FastifyInstance) {
    const { importJobsRunner: runner, importJobsWorker: worker } = app.services
    app.addHook('onReady', async function startImportJobs() {
      // The embedded database has one process: a claim left from before is a dead one's, not to be waited out.
      if (app.database.kind === 'pglite') await runner.releaseAllClaims()
      worker.start()
    })
    app.addHook('preClose', async function stopImportJobs() {
      await worker.stop()
    })
  },
  { name: 'import-jobs-worker', dependencies: ['db', 'services'] }
)

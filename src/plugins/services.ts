import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { onPrimary } from '../db/replica.js'
import { createBatchesService, type BatchesService } from '../modules/batches/service.js'
import { createImportJobsRunner, createImportJobsWorker, type ImportJobsRunner } from '../modules/import-jobs/runner.js'
import {
  createImportJobsReader,
  createImportJobsService,
  type ImportJobsReader,
  type ImportJobsService
} from '../modules/import-jobs/service.js'
import { createImportsService, type ImportsService } from '../modules/imports/service.js'
import { createOperatorRepository } from '../modules/operator/repository.js'
import { createOperatorService, type OperatorService } from '../modules/operator/service.js'
import type { Section } from '../modules/post-import/section.js'
import { createReconciliationService, type ReconciliationService } from '../modules/reconciliation/service.js'

/** The import-job worker: the runner's loops in this process (started and stopped by src/plugins/import-jobs-worker.ts). */
export type ImportJobsWorker = ReturnType<typeof createImportJobsWorker>

/** The services of the data import API and of GraphQL, each built once, for the app. */
export interface Services {
  /** Account import and import state (REST): its lists on `app.reads`, everything else on the primary. */
  imports: ImportsService
  /** `POST batches/`: its own instance, with its own chunk sizing (see `jobBatches`). */
  batches: BatchesService
  /** The batch engine of the import-job runner: an instance of its own, as `batches`. */
  jobBatches: BatchesService
  /** Import jobs (REST): on the primary; a job started here wakes this process's worker. */
  importJobs: ImportJobsService
  /** The GraphQL fields' jobs: on the primary. */
  importJobsReader: ImportJobsReader
  /** Runs import jobs a chunk at a time through `jobBatches`. */
  importJobsRunner: ImportJobsRunner
  /** The runner's loops (IMPORT_JOB_WORKERS): built here, started and stopped by the import-jobs-worker plugin. */
  importJobsWorker: ImportJobsWorker
  /** Reconciliation for the REST endpoints: every read on the primary. */
  reconciliation: ReconciliationService
  /** Reconciliation for GraphQL's `reconciliation` field (the dashboard): a supplier's totals on `app.reads`. */
  dashboardReconciliation: ReconciliationService
  /** The operator's configuration and the dashboard's reads: `migrationProgress` on `app.reads`, the rest on the primary. */
  operator: OperatorService
}

declare module 'fastify' {
  interface FastifyInstance {
    services: Services
  }
}

/**
 * The composition root: builds the services of the routes (src/modules/<m>/routes.ts) and of
 * GraphQL once, and says here which of their reads may go to the read replica (`app.reads`) and
 * which stay on the primary (`app.db`, or `onPrimary(app.db)` where a service takes reads).
 * Routes and resolvers take their services from `app.services`; they build none.
 */
export default fp(
  async function servicesPlugin(app: FastifyInstance, opts: { config: Config; sections: Section[] }) {
    const { config, sections } = opts

    // The REST lists may lag by a moment (app.reads); status and the summary read the primary.
    const imports = createImportsService(app.db, app.failures, app.reads)
    // The batch engine's: every read on the primary, as every write's (docs/scaling.md, read replicas).
    const importsOnPrimary = createImportsService(app.db, app.failures, onPrimary(app.db))

    // A batches service holds state: on PGlite its chunk sizer learns the cost per account of its
    // own transactions (src/modules/batches/chunks.ts). The REST batches and the import-job runner
    // have always had one each, so they keep one each. The imports service holds none: they share it.
    const batchesOf = () =>
      createBatchesService({
        db: app.db,
        databaseKind: app.database.kind,
        othersActive: app.othersActivity.recent,
        imports: importsOnPrimary,
        sections,
        failures: app.failures
      })
    const batches = batchesOf()
    const jobBatches = batchesOf()

    const jobsLog = app.log.child({ component: 'import-jobs' })
    const importJobsRunner = createImportJobsRunner({
      db: app.db,
      batches: jobBatches,
      log: jobsLog,
      perOrganisation: config.importJobsPerOrganisation,
      traceRoot: app.traceRoot
    })
    // Built here, not in its plugin, as the import-jobs service below wakes it when a job starts.
    const importJobsWorker = createImportJobsWorker(importJobsRunner, config.importJobWorkers, jobsLog)
    const importJobs = createImportJobsService(
      app.db,
      {
        partBytes: config.bodyLimitBytes,
        maxLines: config.importJobMaxLines,
        maxBytes: config.importJobMaxBytes,
        perOrganisation: config.importJobsPerOrganisation
      },
      importJobsWorker.wake
    )

    // Two reconciliations on purpose, as before: the REST endpoints are the migration client's
    // check of what it has just written, so they read the primary (a lagging replica would report
    // differences that are not there); the dashboard's totals may lag by a moment, so GraphQL's
    // read the replica when there is one (docs/scaling.md, read replicas).
    const reconciliation = createReconciliationService(app.db, onPrimary(app.db))
    const dashboardReconciliation = createReconciliationService(app.db, app.reads)

    // The dashboard's progress may lag by a moment (app.reads); the operator's changes and other reads use the primary.
    const operator = createOperatorService(
      createOperatorRepository(app.db),
      app.auth,
      app.reads.repository((db) => createOperatorRepository(db, app.db))
    )

    app.decorate('services', {
      imports,
      batches,
      jobBatches,
      importJobs,
      importJobsReader: createImportJobsReader(app.db),
      importJobsRunner,
      importJobsWorker,
      reconciliation,
      dashboardReconciliation,
      operator
    } satisfies Services)
  },
  { name: 'services', dependencies: ['db', 'tracing', 'failures', 'auth'] }
)

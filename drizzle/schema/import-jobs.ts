import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uuid
} from 'drizzle-orm/pg-core'
import { apiKeys, importSuppliers, operationsTeams, organisations } from './tenancy.js'
import { textC } from './types.js'
import { CANCELLED_REASONS, JOB_STATES, LINE_OUTCOMES } from '../../schemas/import-jobs.js'

export const importJobState = pgEnum('import_job_state', JOB_STATES)

export const importJobOutcome = pgEnum('import_job_outcome', LINE_OUTCOMES)

export const importJobCancelledReason = pgEnum('import_job_cancelled_reason', CANCELLED_REASONS)

/** A whole file migrated by the service: its settings, state, counts and the runner's claim. */
export const importJobs = pgTable(
  'import_jobs',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organisationId: uuid('organisation_id')
      .notNull()
      .references(() => organisations.id),
    apiKeyId: uuid('api_key_id').references(() => apiKeys.id),
    supplierId: uuid('supplier_id')
      .notNull()
      .references(() => importSuppliers.id),
    teamId: uuid('team_id')
      .notNull()
      .references(() => operationsTeams.id),
    dryRun: boolean('dry_run').notNull().default(false),
    state: importJobState('state').notNull().default('OPEN'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp('started_at', { withTimezone: true }),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    /** The start window: no line begins before `not_before` nor at or after `not_after` (null: not set). */
    notBefore: timestamp('not_before', { withTimezone: true }),
    notAfter: timestamp('not_after', { withTimezone: true }),
    /** Why a CANCELLED job was cancelled (null otherwise). */
    cancelledReason: importJobCancelledReason('cancelled_reason'),
    /** `{code: lines}`: failed lines by each distinct code they hold, kept with the counts. */
    failureCodes: jsonb('failure_codes')
      .notNull()
      .default(sql`'{}'::jsonb`),
    /** When the state last changed (an OPEN job is cancelled after a day, a PAUSED one after 30). */
    stateChangedAt: timestamp('state_changed_at', { withTimezone: true }).notNull().defaultNow(),
    /** Lines and bytes of every part uploaded. */
    totalLines: integer('total_lines').notNull().default(0),
    totalBytes: bigint('total_bytes', { mode: 'number' }).notNull().default(0),
    /** Lines with a stored result, by outcome (kept in the transaction that stores the results); lines
     *  of a cancelled job without one are `not_processed`. */
    done: integer('done').notNull().default(0),
    created: integer('created').notNull().default(0),
    alreadyImported: integer('already_imported').notNull().default(0),
    wouldCreate: integer('would_create').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    skippedBlank: integer('skipped_blank').notNull().default(0),
    /** `[[epoch ms, done], …]` after each chunk of about the last minute: the rate and the ETA. */
    progress: jsonb('progress')
      .notNull()
      .default(sql`'[]'::jsonb`),
    /** The runner's place: every line before it has its result. */
    nextLine: integer('next_line').notNull().default(1),
    /** The server process running it and until when its claim holds (a dead process's claim runs out). */
    claimedBy: text('claimed_by'),
    claimedUntil: timestamp('claimed_until', { withTimezone: true }),
    /**
     * When the chunk being run began (null between chunks): an account this organisation created
     * since then, which a rerun after a crash finds already imported, was created by this job.
     */
    chunkStartedAt: timestamp('chunk_started_at', { withTimezone: true }),
    /** Runs of the current chunk that failed on an error of the service's own (its lines fail after a few). */
    chunkFailures: smallint('chunk_failures').notNull().default(0),
    /** When the runner last finished a chunk of it: jobs are taken least recently served first. */
    servedAt: timestamp('served_at', { withTimezone: true }),
    /** When its input lines were erased (retention or an erasure request): failed lines answer 410. */
    inputErasedAt: timestamp('input_erased_at', { withTimezone: true })
  },
  (t) => [
    index('import_jobs_organisation_idx').on(t.organisationId, t.createdAt, t.id),
    index('import_jobs_supplier_idx').on(t.supplierId, t.createdAt, t.id),
    index('import_jobs_queue_idx')
      .on(t.servedAt)
      .where(sql`${t.state} in ('QUEUED', 'RUNNING', 'PAUSED')`)
  ]
)

/** A job's uploaded parts: each points at the upload whose lines it holds (a part sent again gets a new upload). */
export const importJobParts = pgTable(
  'import_job_parts',
  {
    jobId: uuid('job_id')
      .notNull()
      .references(() => importJobs.id),
    part: integer('part').notNull(),
    uploadId: uuid('upload_id').notNull(),
    lines: integer('lines').notNull(),
    bytes: bigint('bytes', { mode: 'number' }).notNull(),
    /** Line number of its first line minus one, fixed when the job starts. */
    lineOffset: integer('line_offset'),
    uploadedAt: timestamp('uploaded_at', { withTimezone: true }).notNull().defaultNow()
  },
  (t) => [primaryKey({ columns: [t.jobId, t.part] })]
)

/** The input: each line of an upload as it was sent (personal data; erased with the staged payloads). */
export const importJobLines = pgTable(
  'import_job_lines',
  {
    uploadId: uuid('upload_id').notNull(),
    /** Its place in the upload, from 1. */
    idx: integer('idx').notNull(),
    jobId: uuid('job_id')
      .notNull()
      .references(() => importJobs.id),
    text: text('text').notNull(),
    /** The external account number the line names, when it is JSON naming one (for erasure requests). */
    externalAccountNumber: textC('external_account_number')
  },
  (t) => [
    primaryKey({ columns: [t.uploadId, t.idx] }),
    index('import_job_lines_job_idx').on(t.jobId, t.externalAccountNumber)
  ]
)

/** One result per line of a started job, stored in the transaction that does the line's writes. */
export const importJobResults = pgTable(
  'import_job_results',
  {
    jobId: uuid('job_id')
      .notNull()
      .references(() => importJobs.id),
    line: integer('line').notNull(),
    outcome: importJobOutcome('outcome').notNull(),
    externalAccountNumber: textC('external_account_number'),
    serviceAccountNumber: text('service_account_number'),
    step: text('step'),
    status: smallint('status'),
    code: text('code'),
    errors: jsonb('errors')
  },
  (t) => [primaryKey({ columns: [t.jobId, t.line] })]
)

import { sql } from 'drizzle-orm'
import { importJobLines } from '../../../drizzle/schema/index.js'
import { rowsOf, textList, type Db, type Tx } from '../../db/index.js'
import { supplierAndTeam } from '../../accounts/repository.js'
import type { CancelledReason, JobState, LineOutcome } from '../../../schemas/import-jobs.js'
import type { JobWindow } from '../../rules/job-window.js'
import { formatDateTime } from '../../format.js'

/** A job as stored, with its supplier's code and status. */
export interface JobRow {
  id: string
  organisation_id: string
  supplier_code: string
  supplier_status: string
  dry_run: boolean
  state: JobState
  created_at: string
  started_at: string | null
  finished_at: string | null
  not_before: string | null
  not_after: string | null
  cancelled_reason: CancelledReason | null
  /** Failed lines by each distinct code they hold. */
  failure_codes: Record<string, number>
  total_lines: number
  total_bytes: number
  done: number
  created: number
  already_imported: number
  would_create: number
  failed: number
  skipped_blank: number
  /** `[[epoch ms, done], …]` at the end of the chunks of the last minute or so. */
  progress: Array<[number, number]>
}

/** A job claimed by a runner, with what running its next chunk needs. */
export interface ClaimedJob {
  id: string
  organisation_id: string
  organisation_name: string
  api_key_id: string | null
  supplier_code: string
  team_name: string
  dry_run: boolean
  next_line: number
  chunk_started_at: string
  /** Earlier runs of this chunk that failed on the service's own error. */
  chunk_failures: number
}

/** A line of an upload, as stored. */
export interface LineRow {
  idx: number
  text: string
  external: string | null
}

/** A line's stored result. */
export interface ResultRow {
  line: number
  outcome: LineOutcome
  external_account_number: string | null
  service_account_number: string | null
  step: string | null
  status: number | null
  code: string | null
  errors: Array<{ code: string; attr: string | null }> | null
}

/** Why a part or a start was refused, decided under the job's lock. */
/** `closed`: the job is no longer OPEN; `lines`, `bytes`: the job would pass its limit; `busy`: the organisation has its most jobs going. */
export type PartRefusal = 'closed' | 'lines' | 'bytes'
export type StartRefusal = 'closed' | 'busy'

/** Writes an action's audit record in the transaction of its change. */
export type InTransaction = (tx: Tx) => Promise<void>

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const JOB_COLUMNS = sql`j.id, j.organisation_id, s.code as supplier_code, s.status as supplier_status, j.dry_run, j.state,
  j.created_at, j.started_at, j.finished_at, j.total_lines, j.total_bytes, j.done, j.created, j.already_imported,
  j.would_create, j.failed, j.skipped_blank, j.progress, j.not_before, j.not_after, j.cancelled_reason, j.failure_codes`

function jobOfRow(row: Record<string, unknown>): JobRow {
  // UTC, whole seconds, as every date-time the service answers.
  const time = (value: unknown) => (value === null ? null : formatDateTime(new Date(value as string)))
  return {
    ...(row as unknown as JobRow),
    created_at: time(row.created_at)!,
    started_at: time(row.started_at),
    finished_at: time(row.finished_at),
    not_before: time(row.not_before ?? null),
    not_after: time(row.not_after ?? null),
    failure_codes:
      typeof row.failure_codes === 'string'
        ? JSON.parse(row.failure_codes)
        : ((row.failure_codes as JobRow['failure_codes']) ?? {}),
    total_bytes: Number(row.total_bytes),
    progress: typeof row.progress === 'string' ? JSON.parse(row.progress) : ((row.progress as JobRow['progress']) ?? [])
  }
}

export function createImportJobsRepository(db: Db) {
  return {
    /** The supplier of this code if it is the organisation's, and the team of this name, in one round trip. */
    supplierAndTeam: (code: string, organisationId: string, teamName: string) =>
      supplierAndTeam(db, code, organisationId, teamName),

    /** The organisation's supplier of this code, if any. */
    async supplierId(code: string, organisationId: string): Promise<string | undefined> {
      const [row] = rowsOf<{ id: string }>(
        await db.execute(
          sql`select id from import_suppliers where code = ${code} and organisation_id = ${organisationId}::uuid`
        )
      )
      return row?.id
    },

    /** The supplier of this code: the organisation's, or any organisation's for `null` (the operator). */
    async supplierIdFor(code: string, organisationId: string | null): Promise<string | undefined> {
      const [row] = rowsOf<{ id: string }>(
        await db.execute(sql`select id from import_suppliers where code = ${code}
          ${organisationId === null ? sql`` : sql`and organisation_id = ${organisationId}::uuid`}`)
      )
      return row?.id
    },

    /** Adds an OPEN job; `record`, when given, writes its audit record in the same transaction. */
    async create(
      job: {
        organisationId: string
        apiKeyId: string | null
        supplierId: string
        teamId: string
        dryRun: boolean
      },
      record?: (tx: Tx, id: string) => Promise<void>
    ): Promise<string> {
      const insert = async (executor: Db | Tx) => {
        const [row] = rowsOf<{ id: string }>(
          await executor.execute(sql`insert into import_jobs (organisation_id, api_key_id, supplier_id, team_id, dry_run)
            values (${job.organisationId}::uuid, ${job.apiKeyId}::uuid, ${job.supplierId}::uuid, ${job.teamId}::uuid,
              ${job.dryRun}) returning id`)
        )
        return row!.id
      }
      if (record === undefined) return insert(db)
      return db.transaction(async (tx) => {
        const id = await insert(tx)
        await record(tx, id)
        return id
      })
    },

    /** The organisation's job of this id (undefined for another's, or an id that is not one). */
    async job(id: string, organisationId: string | null): Promise<JobRow | undefined> {
      if (!UUID.test(id)) return undefined
      const [row] = rowsOf(
        await db.execute(sql`select ${JOB_COLUMNS} from import_jobs j join import_suppliers s on s.id = j.supplier_id
          where j.id = ${id}::uuid ${organisationId === null ? sql`` : sql`and j.organisation_id = ${organisationId}::uuid`}`)
      )
      return row ? jobOfRow(row) : undefined
    },

    /** Jobs newest first, after the job `after` (exclusive; an unknown one: from the start). */
    async list(filter: {
      organisationId: string | null
      supplierId?: string
      state?: JobState
      limit?: number
      after?: string
    }): Promise<JobRow[]> {
      const conditions = [sql`true`]
      if (filter.organisationId !== null) conditions.push(sql`j.organisation_id = ${filter.organisationId}::uuid`)
      if (filter.supplierId !== undefined) conditions.push(sql`j.supplier_id = ${filter.supplierId}::uuid`)
      if (filter.state !== undefined) conditions.push(sql`j.state = ${filter.state}`)
      if (filter.after !== undefined) {
        if (!UUID.test(filter.after)) return []
        conditions.push(
          sql`(j.created_at, j.id) < (select created_at, id from import_jobs where id = ${filter.after}::uuid)`
        )
      }
      const rows = rowsOf(
        await db.execute(sql`select ${JOB_COLUMNS} from import_jobs j join import_suppliers s on s.id = j.supplier_id
          where ${sql.join(conditions, sql` and `)} order by j.created_at desc, j.id desc
          ${filter.limit === undefined ? sql`` : sql`limit ${filter.limit}`}`)
      )
      return rows.map(jobOfRow)
    },

    /** Stores lines of an upload not yet part of its job (many per statement). */
    async insertLines(jobId: string, uploadId: string, lines: LineRow[]): Promise<void> {
      if (lines.length === 0) return
      await db.insert(importJobLines).values(
        lines.map((line) => ({
          uploadId,
          idx: line.idx,
          jobId,
          text: line.text,
          externalAccountNumber: line.external
        }))
      )
    },

    /** Removes the lines of an upload that did not become a part. */
    async discardUpload(uploadId: string): Promise<void> {
      await db.execute(sql`delete from import_job_lines where upload_id = ${uploadId}::uuid`)
    },

    /**
     * Makes an upload part `part` of the job, replacing what that part held, if the job is still
     * OPEN and stays within its limits; otherwise the upload's lines are removed.
     */
    async finishUpload(
      jobId: string,
      part: number,
      upload: { id: string; lines: number; bytes: number },
      limits: { maxLines: number; maxBytes: number }
    ): Promise<PartRefusal | undefined> {
      const refusal = await db.transaction(async (tx) => {
        const [job] = rowsOf<{ state: JobState }>(
          await tx.execute(sql`select state from import_jobs where id = ${jobId}::uuid for update`)
        )
        if (job?.state !== 'OPEN') return 'closed' as const
        const [others] = rowsOf<{ lines: number | string; bytes: number | string }>(
          await tx.execute(sql`select coalesce(sum(lines), 0) as lines, coalesce(sum(bytes), 0) as bytes
            from import_job_parts where job_id = ${jobId}::uuid and part <> ${part}`)
        )
        const lines = Number(others!.lines) + upload.lines
        const bytes = Number(others!.bytes) + upload.bytes
        if (lines > limits.maxLines) return 'lines' as const
        if (bytes > limits.maxBytes) return 'bytes' as const
        const [previous] = rowsOf<{ upload_id: string }>(
          await tx.execute(sql`select upload_id from import_job_parts where job_id = ${jobId}::uuid and part = ${part}`)
        )
        await tx.execute(sql`insert into import_job_parts (job_id, part, upload_id, lines, bytes)
          values (${jobId}::uuid, ${part}, ${upload.id}::uuid, ${upload.lines}, ${upload.bytes})
          on conflict (job_id, part) do update set upload_id = excluded.upload_id, lines = excluded.lines,
            bytes = excluded.bytes, uploaded_at = now()`)
        if (previous) await tx.execute(sql`delete from import_job_lines where upload_id = ${previous.upload_id}::uuid`)
        await tx.execute(sql`update import_jobs set total_lines = ${lines}, total_bytes = ${bytes}
          where id = ${jobId}::uuid`)
        return undefined
      })
      if (refusal !== undefined) await this.discardUpload(upload.id)
      return refusal
    },

    /**
     * Starts an OPEN job: numbers its lines (each part's offset, in part-number order) and queues
     * it (PAUSED while its supplier is Paused), if the organisation has fewer than `maxActive`
     * jobs queued, running or paused. `record` writes the start's audit record in its transaction.
     */
    async start(
      jobId: string,
      organisationId: string,
      maxActive: number,
      window: JobWindow,
      record: InTransaction
    ): Promise<StartRefusal | undefined> {
      // A job waiting for its window does not count against the limit, nor is it refused by it.
      const waits = window.notBefore !== null && window.notBefore.getTime() > Date.now()
      return db.transaction(async (tx) => {
        // One start at a time per organisation, so that two cannot both pass the count.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${'import-jobs:' + organisationId}, 0))`)
        const [job] = rowsOf<{ state: JobState; supplier_status: string }>(
          await tx.execute(sql`select j.state, s.status as supplier_status from import_jobs j
            join import_suppliers s on s.id = j.supplier_id where j.id = ${jobId}::uuid for update of j`)
        )
        if (job?.state !== 'OPEN') return 'closed' as const
        if (!waits) {
          const [active] = rowsOf<{ n: number | string }>(
            await tx.execute(sql`select count(*) as n from import_jobs where organisation_id = ${organisationId}::uuid
              and state in ('QUEUED', 'RUNNING', 'PAUSED') and (not_before is null or not_before <= now())`)
          )
          if (Number(active!.n) >= maxActive) return 'busy' as const
        }
        await tx.execute(sql`update import_job_parts p set line_offset = o.line_offset
          from (select part, coalesce(sum(lines) over (order by part rows between unbounded preceding and 1 preceding), 0)
            as line_offset from import_job_parts where job_id = ${jobId}::uuid) o
          where p.job_id = ${jobId}::uuid and p.part = o.part`)
        const state: JobState = job.supplier_status === 'Paused' && !waits ? 'PAUSED' : 'QUEUED'
        const at = (date: Date | null) => (date === null ? null : date.toISOString())
        await tx.execute(sql`update import_jobs set state = ${state}, started_at = now(), state_changed_at = now(),
            not_before = ${at(window.notBefore)}::timestamptz, not_after = ${at(window.notAfter)}::timestamptz
          where id = ${jobId}::uuid`)
        await record(tx)
        return undefined
      })
    },

    /**
     * A person cancels a job not yet COMPLETED or CANCELLED; false when it was one of those.
     * `record` writes the cancel's audit record in its transaction (the service's own cancels,
     * `settleStates` and the runner's, are not actions and are not recorded).
     */
    async cancel(jobId: string, record: InTransaction): Promise<boolean> {
      return db.transaction(async (tx) => {
        const rows = rowsOf(
          await tx.execute(sql`update import_jobs set state = 'CANCELLED', finished_at = now(), state_changed_at = now(),
            cancelled_reason = 'cancelled', claimed_by = null, claimed_until = null
            where id = ${jobId}::uuid and state not in ('COMPLETED', 'CANCELLED') returning id`)
        )
        if (rows.length === 0) return false
        await record(tx)
        return true
      })
    },

    /** Removes a job and everything it holds (a one-call job whose part was refused). */
    async remove(jobId: string): Promise<void> {
      await db.transaction(async (tx) => {
        await tx.execute(sql`delete from import_job_results where job_id = ${jobId}::uuid`)
        await tx.execute(sql`delete from import_job_lines where job_id = ${jobId}::uuid`)
        await tx.execute(sql`delete from import_job_parts where job_id = ${jobId}::uuid`)
        await tx.execute(sql`delete from import_jobs where id = ${jobId}::uuid`)
      })
    },

    /** Whether the job's input lines are still held. */
    async inputHeld(jobId: string): Promise<boolean> {
      const [row] = rowsOf<{ erased: boolean }>(
        await db.execute(sql`select input_erased_at is not null as erased from import_jobs where id = ${jobId}::uuid`)
      )
      return row?.erased === false
    },

    /** The stored results of lines `from`…`to`, in line order (only the failed ones if asked). */
    async results(jobId: string, from: number, to: number, failedOnly: boolean): Promise<ResultRow[]> {
      const rows = rowsOf<ResultRow>(
        await db.execute(sql`select line, outcome, external_account_number, service_account_number, step, status, code,
            errors from import_job_results where job_id = ${jobId}::uuid and line between ${from} and ${to}
            ${failedOnly ? sql`and outcome = 'failed'` : sql``} order by line`)
      )
      for (const row of rows) if (typeof row.errors === 'string') row.errors = JSON.parse(row.errors)
      return rows
    },

    /**
     * Failed lines after line `after` whose result is that of a line that is not JSON (step stage,
     * `invalid_request` with the one entry `invalid` at `null`; an entry that is JSON but no
     * object has it too), the first `limit` in line order, with their text (null once erased).
     */
    async unreadableCandidates(jobId: string, after: number, limit: number) {
      return rowsOf<{ line: number; text: string | null }>(
        await db.execute(sql`select r.line, (select nullif(l.text, '') from import_job_parts p
              join import_job_lines l on l.upload_id = p.upload_id and l.idx = r.line - p.line_offset
              where p.job_id = r.job_id and r.line > p.line_offset and r.line <= p.line_offset + p.lines) as text
          from import_job_results r where r.job_id = ${jobId}::uuid and r.line > ${after}::int
            and r.outcome = 'failed' and r.step = 'stage' and r.code = 'invalid_request'
            and r.errors = '[{"code": "invalid", "attr": null}]'::jsonb
          order by r.line limit ${limit}::int`)
      )
    },

    /**
     * Lines `from`…`to` of a started job's input (with their text if asked), in line order. With
     * their text, lines an erasure request emptied are left out (a blank line never fails).
     */
    async linesIn(jobId: string, from: number, to: number, withText: boolean) {
      return rowsOf<{ line: number; external: string | null; text: string | null }>(
        await db.execute(sql`select p.line_offset + l.idx as line, l.external_account_number as external,
            ${withText ? sql`l.text` : sql`null::text`} as text
          from import_job_parts p join import_job_lines l on l.upload_id = p.upload_id
            and l.idx between ${from}::int - p.line_offset and ${to}::int - p.line_offset
          where p.job_id = ${jobId}::uuid and p.line_offset < ${to}::int and p.line_offset + p.lines >= ${from}::int
            ${withText ? sql`and l.text <> ''` : sql``}
          order by 1`)
      )
    },

    /** The text of lines `from`…`to` that have no result, in line order (blank ones included). */
    async unprocessedLines(jobId: string, from: number, to: number): Promise<string[]> {
      const rows = rowsOf<{ text: string }>(
        await db.execute(sql`select l.text from import_job_parts p join import_job_lines l on l.upload_id = p.upload_id
            and l.idx between ${from}::int - p.line_offset and ${to}::int - p.line_offset
          where p.job_id = ${jobId}::uuid and p.line_offset < ${to}::int and p.line_offset + p.lines >= ${from}::int
            and not exists (select 1 from import_job_results r where r.job_id = ${jobId}::uuid
              and r.line = p.line_offset + l.idx)
          order by p.line_offset + l.idx`)
      )
      return rows.map((row) => row.text)
    },

    /**
     * Claims the job to run a chunk of next, for `leaseSeconds`: a QUEUED or RUNNING job of an
     * Ongoing supplier that no live process holds, inside its window, of the organisation served
     * least recently (then its job served least recently), so that organisations share the
     * runners evenly. A QUEUED job whose window has opened runs only while its organisation has
     * fewer than `maxActive` jobs going counting it (jobs whose window opened earlier go first).
     */
    async claim(me: string, leaseSeconds: number, maxActive: number): Promise<ClaimedJob | undefined> {
      const [row] = rowsOf<ClaimedJob>(
        await db.execute(sql`with next as (
            select j.id from import_jobs j join import_suppliers s on s.id = j.supplier_id
            where j.state in ('QUEUED', 'RUNNING') and s.status = 'Ongoing'
              and (j.claimed_until is null or j.claimed_until < now())
              and (j.not_after is null or j.not_after > now())
              and (j.not_before is null or j.not_before <= now())
              and (j.state = 'RUNNING' or j.not_before is null or (select count(*) from import_jobs o
                where o.organisation_id = j.organisation_id and o.id <> j.id
                  and (o.state in ('RUNNING', 'PAUSED') or (o.state = 'QUEUED' and (o.not_before is null
                    or (o.not_before, o.id) < (j.not_before, j.id))))) < ${maxActive}::int)
            order by (select max(o.served_at) from import_jobs o where o.organisation_id = j.organisation_id)
              asc nulls first, j.served_at asc nulls first, j.created_at, j.id
            limit 1 for update of j skip locked)
          update import_jobs j set state = 'RUNNING', claimed_by = ${me},
            claimed_until = now() + make_interval(secs => ${leaseSeconds}),
            chunk_started_at = coalesce(j.chunk_started_at, now()),
            state_changed_at = case when j.state = 'RUNNING' then j.state_changed_at else now() end
          from next, import_suppliers s, organisations o, operations_teams t
          where j.id = next.id and s.id = j.supplier_id and o.id = j.organisation_id and t.id = j.team_id
          returning j.id, j.organisation_id, o.name as organisation_name, j.api_key_id, s.code as supplier_code,
            t.name as team_name, j.dry_run, j.next_line, j.chunk_started_at, j.chunk_failures`)
      )
      return row
    },

    /** Lines `from` to `from + limit - 1` that have no result yet, with their text, in line order. */
    async pendingLines(jobId: string, from: number, limit: number) {
      // Lines from..to by number (every line before `from` has its result): an index range per part
      // that holds some of them, never a scan of the job's later lines.
      const to = from + limit - 1
      return rowsOf<{ line: number; text: string | null; external: string | null }>(
        await db.execute(sql`select p.line_offset + l.idx as line, l.text, l.external_account_number as external
          from import_job_parts p join import_job_lines l on l.upload_id = p.upload_id
            and l.idx between ${from}::int - p.line_offset and ${to}::int - p.line_offset
          where p.job_id = ${jobId}::uuid and p.line_offset < ${to}::int and p.line_offset + p.lines >= ${from}::int
            and not exists (select 1 from import_job_results r where r.job_id = ${jobId}::uuid
              and r.line = p.line_offset + l.idx)
          order by p.part, l.idx`)
      )
    },

    /** The first line of the job naming each of these external account numbers. */
    async firstLines(jobId: string, externals: string[]): Promise<Map<string, number>> {
      if (externals.length === 0) return new Map()
      const rows = rowsOf<{ external: string; first: number }>(
        await db.execute(sql`select l.external_account_number as external, min(p.line_offset + l.idx) as first
          from import_job_lines l join import_job_parts p on p.upload_id = l.upload_id
          where l.job_id = ${jobId}::uuid and l.external_account_number in ${textList(externals)}
          group by 1`)
      )
      return new Map(rows.map((row) => [row.external, Number(row.first)]))
    },

    /**
     * Of these accounts of the supplier, those the organisation created since `since` (a rerun
     * of a chunk after a crash finds them already imported: the job created them).
     */
    async createdSince(supplierCode: string, organisationId: string, externals: string[], since: string) {
      if (externals.length === 0) return new Set<string>()
      const rows = rowsOf<{ external: string }>(
        await db.execute(sql`select p.external_account_number as external
          from import_processes p join import_suppliers s on s.id = p.supplier_id
          where s.code = ${supplierCode} and p.external_account_number in ${textList(externals)}
            and exists (select 1 from import_events e where e.import_process_id = p.id and e.type = 'CREATED'
              and e.at >= ${since}::timestamptz and e.organisation_id = ${organisationId}::uuid)`)
      )
      return new Set(rows.map((row) => row.external))
    },

    /**
     * Stores results of a chunk still running (a batch of it that finished), if this process
     * still holds the job: a line that has one keeps it; they count on the job at once.
     */
    async storeResults(jobId: string, me: string, results: ResultRow[]): Promise<void> {
      if (results.length === 0) return
      // One statement: the job's row is never held locked between round trips (a process stalled
      // between them would keep every other from claiming the job).
      await db.execute(sql`with held as (
          select id from import_jobs where id = ${jobId}::uuid and claimed_by = ${me} for update),
        inserted as (insert into import_job_results (job_id, line, outcome, external_account_number,
            service_account_number, step, status, code, errors)
          select ${jobId}::uuid, r.line, r.outcome::import_job_outcome, r.external_account_number,
            r.service_account_number, r.step, r.status, r.code, r.errors
          from jsonb_to_recordset(${JSON.stringify(results)}::jsonb) as r(line int, outcome text,
            external_account_number text, service_account_number text, step text, status smallint, code text,
            errors jsonb)
          where exists (select 1 from held)
          on conflict (job_id, line) do nothing returning outcome, code, errors),
        codes as (select c.code, count(*)::int as lines from inserted i cross join lateral (
            select e->>'code' as code from jsonb_array_elements(
              case when jsonb_typeof(i.errors) = 'array' then i.errors else '[]'::jsonb end) e
            union select i.code where i.errors is null or jsonb_typeof(i.errors) <> 'array'
              or jsonb_array_length(i.errors) = 0) c
          where i.outcome = 'failed' and c.code is not null group by 1)
        update import_jobs j set done = j.done + n.total, created = j.created + n.created,
            already_imported = j.already_imported + n.already_imported, would_create = j.would_create + n.would_create,
            failed = j.failed + n.failed, skipped_blank = j.skipped_blank + n.skipped_blank,
            failure_codes = (select coalesce(jsonb_object_agg(key, total), '{}'::jsonb) from (
                select key, sum(value::int) as total from (
                  select key, value from jsonb_each_text(j.failure_codes)
                  union all select code, lines::text from codes) c group by key) t),
            progress = (select coalesce(jsonb_agg(sample), '[]'::jsonb) from (
                select sample from jsonb_array_elements(j.progress) sample
                where (sample->>0)::bigint >= (extract(epoch from now()) * 1000)::bigint - 120000
                union all select jsonb_build_array((extract(epoch from now()) * 1000)::bigint, j.done + n.total)
              ) samples)
        from (select count(*)::int as total, count(*) filter (where outcome = 'created')::int as created,
            count(*) filter (where outcome = 'already_imported')::int as already_imported,
            count(*) filter (where outcome = 'would_create')::int as would_create,
            count(*) filter (where outcome = 'failed')::int as failed,
            count(*) filter (where outcome = 'skipped_blank')::int as skipped_blank from inserted) n
        where j.id in (select id from held) and n.total > 0`)
    },

    /**
     * Stores a chunk's last results, then moves the job's place on, completes a RUNNING job with
     * every line done or, past its `not_after`, cancels it (`window_ended`), and lets the claim go.
     * Each is one statement: the job's row is never held locked between round trips, and a crash
     * between them leaves the results stored and the chunk's other lines to be run again.
     */
    async finishChunk(jobId: string, me: string, results: ResultRow[], nextLine: number): Promise<void> {
      await this.storeResults(jobId, me, results)
      // A process that stalled past its claim changes nothing (the new holder runs the chunk).
      await db.execute(sql`update import_jobs set next_line = greatest(next_line, ${nextLine}::int), served_at = now(),
          chunk_started_at = null, chunk_failures = 0, claimed_by = null, claimed_until = null,
          state = case when state <> 'RUNNING' then state when done >= total_lines then 'COMPLETED'::import_job_state
            when not_after <= now() then 'CANCELLED'::import_job_state else state end,
          cancelled_reason = case when state = 'RUNNING' and done < total_lines and not_after <= now()
            then 'window_ended'::import_job_cancelled_reason else cancelled_reason end,
          finished_at = case when state = 'RUNNING' and (done >= total_lines or not_after <= now()) then now()
            else finished_at end,
          state_changed_at = case when state = 'RUNNING' and (done >= total_lines or not_after <= now()) then now()
            else state_changed_at end
        where id = ${jobId}::uuid and claimed_by = ${me}`)
    },

    /** A chunk's run failed on the service's own error: counted, and the claim let go. */
    async chunkFailed(jobId: string, me: string): Promise<void> {
      await db.execute(sql`update import_jobs set claimed_by = null, claimed_until = null, served_at = now(),
          chunk_failures = least(chunk_failures + 1, 100)
        where id = ${jobId}::uuid and claimed_by = ${me}`)
    },

    /** Lets every claim go: at the start of the one process an embedded database has, any claim is a dead one's. */
    async releaseAllClaims(): Promise<void> {
      await db.execute(sql`update import_jobs set claimed_by = null, claimed_until = null where claimed_by is not null`)
    },

    /** Extends a claim this process still holds. */
    async renew(jobId: string, me: string, leaseSeconds: number): Promise<void> {
      await db.execute(sql`update import_jobs set claimed_until = now() + make_interval(secs => ${leaseSeconds})
        where id = ${jobId}::uuid and claimed_by = ${me}`)
    },

    /** Lets a claim go without storing anything (the supplier stopped being Ongoing mid-chunk, or the run failed). */
    async release(jobId: string, me: string): Promise<void> {
      await db.execute(sql`update import_jobs set claimed_by = null, claimed_until = null, served_at = now()
        where id = ${jobId}::uuid and claimed_by = ${me}`)
    },

    /**
     * The states that follow from the suppliers and the clock: CANCELLED when the supplier is
     * Complete, an OPEN job never started after a day, a job PAUSED for 30 days, and a job not
     * running a chunk once its `not_after` has passed (each with its reason; a job past its window
     * with every line done is COMPLETED); PAUSED while the supplier is Paused (a job waiting for its
     * `not_before` stays QUEUED), back to QUEUED when it is Ongoing.
     */
    async settleStates(): Promise<void> {
      await db.execute(sql`update import_jobs j set state = 'CANCELLED', finished_at = now(), state_changed_at = now(),
          claimed_by = null, claimed_until = null,
          cancelled_reason = (case when s.status = 'Complete' then 'supplier_complete'
            when j.state = 'OPEN' then 'never_started'
            when j.state = 'PAUSED' and j.state_changed_at < now() - interval '30 days' then 'paused_too_long'
            else 'window_ended' end)::import_job_cancelled_reason
        from import_suppliers s where s.id = j.supplier_id and j.state not in ('COMPLETED', 'CANCELLED')
          and (s.status = 'Complete' or (j.state = 'OPEN' and j.state_changed_at < now() - interval '1 day')
            or (j.state = 'PAUSED' and j.state_changed_at < now() - interval '30 days')
            or (j.state <> 'OPEN' and j.not_after <= now() and j.done < j.total_lines
              and (j.claimed_until is null or j.claimed_until < now())))`)
      await db.execute(sql`update import_jobs set state = 'COMPLETED', finished_at = now(), state_changed_at = now()
        where state in ('QUEUED', 'RUNNING', 'PAUSED') and not_after <= now() and done >= total_lines
          and (claimed_until is null or claimed_until < now())`)
      await db.execute(sql`update import_jobs j set state = 'PAUSED', state_changed_at = now()
        from import_suppliers s where s.id = j.supplier_id and s.status = 'Paused'
          and j.state in ('QUEUED', 'RUNNING') and (j.claimed_until is null or j.claimed_until < now())
          and (j.not_before is null or j.not_before <= now())`)
      await db.execute(sql`update import_jobs j set state = 'QUEUED', state_changed_at = now()
        from import_suppliers s where s.id = j.supplier_id and s.status = 'Ongoing' and j.state = 'PAUSED'`)
    }
  }
}

export type ImportJobsRepository = ReturnType<typeof createImportJobsRepository>

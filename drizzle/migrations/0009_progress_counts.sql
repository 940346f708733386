CREATE TABLE "import_progress_counts" (
	"supplier_id" uuid NOT NULL,
	"staged" bigint DEFAULT 0 NOT NULL,
	"pending" bigint DEFAULT 0 NOT NULL,
	"imported" bigint DEFAULT 0 NOT NULL,
	"skipped" bigint DEFAULT 0 NOT NULL,
	"failed" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "import_progress_counts_supplier_idx" ON "import_progress_counts" USING btree ("supplier_id");--> statement-breakpoint
-- Kept counts of migrationProgress: every statement that inserts, updates or deletes import
-- processes appends, in its own transaction, one row per supplier with what it changed in each
-- count (nothing when no count changed). One row per statement, never one counter row per
-- supplier: concurrent batches would queue on it. The counts are the sums of a supplier's rows.
-- staged: first_staged_at set; pending: STAGED; failed: STAGED with a latest_error.
CREATE FUNCTION "import_progress_count"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO import_progress_counts (supplier_id, staged, pending, imported, skipped, failed)
    SELECT supplier_id,
      count(*) FILTER (WHERE first_staged_at IS NOT NULL),
      count(*) FILTER (WHERE state = 'STAGED'),
      count(*) FILTER (WHERE state = 'IMPORTED'),
      count(*) FILTER (WHERE state = 'SKIPPED'),
      count(*) FILTER (WHERE state = 'STAGED' AND latest_error IS NOT NULL)
    FROM new_rows GROUP BY supplier_id;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO import_progress_counts (supplier_id, staged, pending, imported, skipped, failed)
    SELECT supplier_id,
      -count(*) FILTER (WHERE first_staged_at IS NOT NULL),
      -count(*) FILTER (WHERE state = 'STAGED'),
      -count(*) FILTER (WHERE state = 'IMPORTED'),
      -count(*) FILTER (WHERE state = 'SKIPPED'),
      -count(*) FILTER (WHERE state = 'STAGED' AND latest_error IS NOT NULL)
    FROM old_rows GROUP BY supplier_id;
  ELSE
    INSERT INTO import_progress_counts (supplier_id, staged, pending, imported, skipped, failed)
    SELECT supplier_id, sum(staged), sum(pending), sum(imported), sum(skipped), sum(failed)
    FROM (
      SELECT supplier_id, sign * (first_staged_at IS NOT NULL)::int AS staged,
        sign * (state = 'STAGED')::int AS pending,
        sign * (state = 'IMPORTED')::int AS imported,
        sign * (state = 'SKIPPED')::int AS skipped,
        sign * (state = 'STAGED' AND latest_error IS NOT NULL)::int AS failed
      FROM (
        SELECT 1 AS sign, supplier_id, first_staged_at, state, latest_error FROM new_rows
        UNION ALL
        SELECT -1, supplier_id, first_staged_at, state, latest_error FROM old_rows
      ) changed
    ) delta
    GROUP BY supplier_id
    HAVING sum(staged) <> 0 OR sum(pending) <> 0 OR sum(imported) <> 0 OR sum(skipped) <> 0 OR sum(failed) <> 0;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "import_processes_inserted_progress" AFTER INSERT ON "import_processes"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "import_progress_count"();
--> statement-breakpoint
CREATE TRIGGER "import_processes_updated_progress" AFTER UPDATE ON "import_processes"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "import_progress_count"();
--> statement-breakpoint
CREATE TRIGGER "import_processes_deleted_progress" AFTER DELETE ON "import_processes"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "import_progress_count"();
--> statement-breakpoint
-- The processes already there, counted once (the triggers above already hold writers off until
-- the migration commits).
INSERT INTO import_progress_counts (supplier_id, staged, pending, imported, skipped, failed)
SELECT supplier_id,
  count(*) FILTER (WHERE first_staged_at IS NOT NULL),
  count(*) FILTER (WHERE state = 'STAGED'),
  count(*) FILTER (WHERE state = 'IMPORTED'),
  count(*) FILTER (WHERE state = 'SKIPPED'),
  count(*) FILTER (WHERE state = 'STAGED' AND latest_error IS NOT NULL)
FROM import_processes GROUP BY supplier_id;

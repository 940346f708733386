-- Import jobs, round two: the start window, why a job was cancelled and its failed lines by code.
-- Jobs cancelled before this have their reason told from what is known (never started; supplier
-- Complete; otherwise a person), and every job its failure codes from its stored results.
CREATE TYPE "public"."import_job_cancelled_reason" AS ENUM('cancelled', 'window_ended', 'supplier_complete', 'never_started', 'paused_too_long');--> statement-breakpoint
ALTER TABLE "import_jobs" ADD COLUMN "not_before" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "import_jobs" ADD COLUMN "not_after" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "import_jobs" ADD COLUMN "cancelled_reason" "import_job_cancelled_reason";--> statement-breakpoint
ALTER TABLE "import_jobs" ADD COLUMN "failure_codes" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "import_jobs" ADD COLUMN "chunk_failures" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE "import_jobs" j SET "cancelled_reason" = (CASE WHEN j."started_at" IS NULL THEN 'never_started'
  WHEN s."status" = 'Complete' THEN 'supplier_complete' ELSE 'cancelled' END)::"import_job_cancelled_reason"
FROM "import_suppliers" s WHERE s."id" = j."supplier_id" AND j."state" = 'CANCELLED';--> statement-breakpoint
UPDATE "import_jobs" j SET "failure_codes" = f."codes" FROM (
  SELECT "job_id", jsonb_object_agg("code", "lines") AS "codes" FROM (
    SELECT r."job_id", c."code", count(DISTINCT r."line") AS "lines" FROM "import_job_results" r
    CROSS JOIN LATERAL (
      SELECT e->>'code' AS "code" FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r."errors") = 'array' THEN r."errors" ELSE '[]'::jsonb END) e
      UNION SELECT r."code" WHERE r."errors" IS NULL OR jsonb_typeof(r."errors") <> 'array' OR jsonb_array_length(r."errors") = 0
    ) c
    WHERE r."outcome" = 'failed' AND c."code" IS NOT NULL GROUP BY 1, 2
  ) x GROUP BY 1
) f WHERE f."job_id" = j."id";

ALTER TYPE "public"."import_event_type" ADD VALUE 'STAGED_DATA_ERASED';--> statement-breakpoint
ALTER TABLE "import_processes" ADD COLUMN "skipped_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "import_processes" ADD COLUMN "staged_data_erased_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "import_processes_retention_idx" ON "import_processes" USING btree (coalesce("account_created_at", "skipped_at")) WHERE "import_processes"."staged_data_erased_at" is null;
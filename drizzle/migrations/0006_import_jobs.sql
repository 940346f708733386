CREATE TYPE "public"."import_job_outcome" AS ENUM('created', 'already_imported', 'would_create', 'failed', 'not_processed', 'skipped_blank');--> statement-breakpoint
CREATE TYPE "public"."import_job_state" AS ENUM('OPEN', 'QUEUED', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED');--> statement-breakpoint
CREATE TABLE "import_job_lines" (
	"upload_id" uuid NOT NULL,
	"idx" integer NOT NULL,
	"job_id" uuid NOT NULL,
	"text" text NOT NULL,
	"external_account_number" text COLLATE "C",
	CONSTRAINT "import_job_lines_upload_id_idx_pk" PRIMARY KEY("upload_id","idx")
);
--> statement-breakpoint
CREATE TABLE "import_job_parts" (
	"job_id" uuid NOT NULL,
	"part" integer NOT NULL,
	"upload_id" uuid NOT NULL,
	"lines" integer NOT NULL,
	"bytes" bigint NOT NULL,
	"line_offset" integer,
	"uploaded_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "import_job_parts_job_id_part_pk" PRIMARY KEY("job_id","part")
);
--> statement-breakpoint
CREATE TABLE "import_job_results" (
	"job_id" uuid NOT NULL,
	"line" integer NOT NULL,
	"outcome" "import_job_outcome" NOT NULL,
	"external_account_number" text COLLATE "C",
	"service_account_number" text,
	"step" text,
	"status" smallint,
	"code" text,
	"errors" jsonb,
	CONSTRAINT "import_job_results_job_id_line_pk" PRIMARY KEY("job_id","line")
);
--> statement-breakpoint
CREATE TABLE "import_jobs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organisation_id" uuid NOT NULL,
	"api_key_id" uuid,
	"supplier_id" uuid NOT NULL,
	"team_id" uuid NOT NULL,
	"dry_run" boolean DEFAULT false NOT NULL,
	"state" "import_job_state" DEFAULT 'OPEN' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"state_changed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"total_lines" integer DEFAULT 0 NOT NULL,
	"total_bytes" bigint DEFAULT 0 NOT NULL,
	"done" integer DEFAULT 0 NOT NULL,
	"created" integer DEFAULT 0 NOT NULL,
	"already_imported" integer DEFAULT 0 NOT NULL,
	"would_create" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"skipped_blank" integer DEFAULT 0 NOT NULL,
	"progress" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"next_line" integer DEFAULT 1 NOT NULL,
	"claimed_by" text,
	"claimed_until" timestamp with time zone,
	"chunk_started_at" timestamp with time zone,
	"served_at" timestamp with time zone,
	"input_erased_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "import_job_lines" ADD CONSTRAINT "import_job_lines_job_id_import_jobs_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."import_jobs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "import_job_parts" ADD CONSTRAINT "import_job_parts_job_id_import_jobs_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."import_jobs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "import_job_results" ADD CONSTRAINT "import_job_results_job_id_import_jobs_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."import_jobs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "import_jobs" ADD CONSTRAINT "import_jobs_organisation_id_organisations_id_fk" FOREIGN KEY ("organisation_id") REFERENCES "public"."organisations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "import_jobs" ADD CONSTRAINT "import_jobs_api_key_id_api_keys_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "import_jobs" ADD CONSTRAINT "import_jobs_supplier_id_import_suppliers_id_fk" FOREIGN KEY ("supplier_id") REFERENCES "public"."import_suppliers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "import_jobs" ADD CONSTRAINT "import_jobs_team_id_operations_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."operations_teams"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "import_job_lines_job_idx" ON "import_job_lines" USING btree ("job_id","external_account_number");--> statement-breakpoint
CREATE INDEX "import_jobs_organisation_idx" ON "import_jobs" USING btree ("organisation_id","created_at","id");--> statement-breakpoint
CREATE INDEX "import_jobs_supplier_idx" ON "import_jobs" USING btree ("supplier_id","created_at","id");--> statement-breakpoint
CREATE INDEX "import_jobs_queue_idx" ON "import_jobs" USING btree ("served_at") WHERE "import_jobs"."state" in ('QUEUED', 'RUNNING', 'PAUSED');
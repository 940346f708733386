CREATE TYPE "public"."webhook_delivery_state" AS ENUM('PENDING', 'DELIVERED', 'FAILED');--> statement-breakpoint
CREATE TYPE "public"."webhook_event_type" AS ENUM('import_process.created', 'import_process.create_failed', 'import_process.dry_run', 'import_process.skipped', 'post_import.written', 'post_import.failed', 'import_job.completed', 'import_job.cancelled');--> statement-breakpoint
CREATE TABLE "webhook_attempts" (
	"delivery_id" bigint NOT NULL,
	"attempt" integer NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"status" smallint,
	"error" text,
	"duration_ms" integer NOT NULL,
	CONSTRAINT "webhook_attempts_pkey" PRIMARY KEY("delivery_id","attempt")
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_deliveries_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"event_id" bigint NOT NULL,
	"endpoint_id" uuid NOT NULL,
	"state" "webhook_delivery_state" DEFAULT 'PENDING' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_status" smallint,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"delivered_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organisation_id" uuid NOT NULL,
	"url" text NOT NULL,
	"events" "webhook_event_type"[] NOT NULL,
	"secret" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"organisation_id" uuid NOT NULL,
	"type" "webhook_event_type" NOT NULL,
	"data" jsonb NOT NULL,
	"occurred_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery_id_webhook_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."webhook_deliveries"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_event_id_webhook_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."webhook_events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_organisation_id_organisations_id_fk" FOREIGN KEY ("organisation_id") REFERENCES "public"."organisations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_events" ADD CONSTRAINT "webhook_events_organisation_id_organisations_id_fk" FOREIGN KEY ("organisation_id") REFERENCES "public"."organisations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" USING btree ("endpoint_id","next_attempt_at") WHERE "webhook_deliveries"."state" = 'PENDING';--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_idx" ON "webhook_deliveries" USING btree ("endpoint_id","id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_event_idx" ON "webhook_deliveries" USING btree ("event_id");--> statement-breakpoint
CREATE INDEX "webhook_endpoints_organisation_idx" ON "webhook_endpoints" USING btree ("organisation_id");--> statement-breakpoint
CREATE INDEX "webhook_events_occurred_idx" ON "webhook_events" USING btree ("occurred_at");--> statement-breakpoint
-- The outbox is written by triggers, so every path that writes an import event, a failure record or
-- a job's end (single requests, batches, import jobs, the operator) queues its webhook event in the
-- same transaction. With no endpoint anywhere, each costs one probe of an empty table.
CREATE FUNCTION "webhook_queue_import_events"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook_endpoints) THEN RETURN NULL; END IF;
  WITH queued AS (
    INSERT INTO webhook_events (organisation_id, type, data, occurred_at)
    SELECT s.organisation_id, k.type,
      jsonb_build_object(
        'import_supplier', s.code,
        'external_account_number', p.external_account_number,
        'service_account_number', CASE WHEN e.type = 'CREATED'
          THEN coalesce(e.detail->>'service_account_number', p.service_account_number)
          WHEN e.type = 'DRY_RUN' THEN NULL ELSE p.service_account_number END
      ) || CASE WHEN e.type = 'POST_IMPORT_WRITE' THEN jsonb_build_object('step', e.detail->>'endpoint') ELSE '{}'::jsonb END,
      e.at
    FROM new_rows e
    CROSS JOIN LATERAL (SELECT (CASE e.type
      WHEN 'CREATED' THEN 'import_process.created'
      WHEN 'DRY_RUN' THEN 'import_process.dry_run'
      WHEN 'SKIPPED' THEN 'import_process.skipped'
      WHEN 'POST_IMPORT_WRITE' THEN 'post_import.written' END)::webhook_event_type AS type) k
    JOIN import_processes p ON p.id = e.import_process_id
    JOIN import_suppliers s ON s.id = p.supplier_id
    WHERE k.type IS NOT NULL
      AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.organisation_id = s.organisation_id AND k.type = ANY (w.events))
    RETURNING id, organisation_id, type
  )
  INSERT INTO webhook_deliveries (event_id, endpoint_id)
  SELECT q.id, w.id FROM queued q
  JOIN webhook_endpoints w ON w.organisation_id = q.organisation_id AND q.type = ANY (w.events);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "import_events_webhooks" AFTER INSERT ON "import_events"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "webhook_queue_import_events"();
--> statement-breakpoint
-- A failure record of create is import_process.create_failed; of a post-import step, post_import.failed.
CREATE FUNCTION "webhook_queue_import_failures"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook_endpoints) THEN RETURN NULL; END IF;
  WITH queued AS (
    INSERT INTO webhook_events (organisation_id, type, data, occurred_at)
    SELECT s.organisation_id, k.type,
      jsonb_build_object(
        'import_supplier', s.code,
        'external_account_number', f.external_account_number,
        'service_account_number', p.service_account_number,
        'step', f.step,
        'code', f.code,
        'errors', f.errors
      ),
      f.failed_at
    FROM new_rows f
    CROSS JOIN LATERAL (SELECT (CASE
      WHEN f.step = 'create' THEN 'import_process.create_failed'
      WHEN f.step IN ('validate', 'stage') THEN NULL
      ELSE 'post_import.failed' END)::webhook_event_type AS type) k
    JOIN import_suppliers s ON s.id = f.supplier_id
    LEFT JOIN import_processes p ON p.supplier_id = f.supplier_id AND p.external_account_number = f.external_account_number
    WHERE k.type IS NOT NULL
      AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.organisation_id = s.organisation_id AND k.type = ANY (w.events))
    RETURNING id, organisation_id, type
  )
  INSERT INTO webhook_deliveries (event_id, endpoint_id)
  SELECT q.id, w.id FROM queued q
  JOIN webhook_endpoints w ON w.organisation_id = q.organisation_id AND q.type = ANY (w.events);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "import_failures_inserted_webhooks" AFTER INSERT ON "import_failures"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "webhook_queue_import_failures"();
--> statement-breakpoint
CREATE TRIGGER "import_failures_updated_webhooks" AFTER UPDATE ON "import_failures"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "webhook_queue_import_failures"();
--> statement-breakpoint
-- A job's end. Its lines as the job's readers see them (jobObject in src/modules/import-jobs/service.ts):
-- a cancelled job's lines without a result are not_processed.
CREATE FUNCTION "webhook_queue_import_job"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  event_type webhook_event_type := (CASE NEW.state WHEN 'COMPLETED' THEN 'import_job.completed'
    WHEN 'CANCELLED' THEN 'import_job.cancelled' END)::webhook_event_type;
  not_processed integer := CASE WHEN NEW.state = 'CANCELLED' THEN greatest(NEW.total_lines - NEW.done, 0) ELSE 0 END;
  queued_id bigint;
BEGIN
  IF event_type IS NULL OR NOT EXISTS (SELECT 1 FROM webhook_endpoints w
      WHERE w.organisation_id = NEW.organisation_id AND event_type = ANY (w.events)) THEN
    RETURN NULL;
  END IF;
  INSERT INTO webhook_events (organisation_id, type, data, occurred_at)
  SELECT NEW.organisation_id, event_type, jsonb_build_object(
      'import_supplier', s.code,
      'job_id', NEW.id,
      'lines', jsonb_build_object(
        'total', NEW.total_lines, 'done', NEW.done + not_processed, 'created', NEW.created,
        'already_imported', NEW.already_imported, 'would_create', NEW.would_create, 'failed', NEW.failed,
        'not_processed', not_processed, 'skipped_blank', NEW.skipped_blank)),
    coalesce(NEW.finished_at, now())
  FROM import_suppliers s WHERE s.id = NEW.supplier_id
  RETURNING id INTO queued_id;
  INSERT INTO webhook_deliveries (event_id, endpoint_id)
  SELECT queued_id, w.id FROM webhook_endpoints w
  WHERE w.organisation_id = NEW.organisation_id AND event_type = ANY (w.events);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "import_jobs_webhooks" AFTER UPDATE OF "state" ON "import_jobs"
  FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state AND NEW.state IN ('COMPLETED', 'CANCELLED'))
  EXECUTE FUNCTION "webhook_queue_import_job"();

CREATE TABLE "audit_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "audit_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"at" timestamp (0) with time zone NOT NULL,
	"action" text NOT NULL,
	"outcome" text NOT NULL,
	"code" text,
	"actor_kind" text NOT NULL,
	"actor_organisation" text,
	"actor_api_key_id" uuid,
	"actor_organisation_id" uuid,
	"target_type" text,
	"target_id" text,
	"target_organisation_id" uuid,
	"changes" jsonb,
	"ip" text,
	"request_id" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX "audit_events_at" ON "audit_events" USING btree ("at");--> statement-breakpoint
CREATE INDEX "audit_events_actor_organisation" ON "audit_events" USING btree ("actor_organisation_id","id");--> statement-breakpoint
CREATE INDEX "audit_events_target_organisation" ON "audit_events" USING btree ("target_organisation_id","id");
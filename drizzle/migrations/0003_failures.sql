CREATE TYPE "public"."import_step" AS ENUM('validate', 'stage', 'create', 'notes', 'transactions', 'historical_agreements', 'historical_billing_documents', 'historical_statements', 'payment_instruction');--> statement-breakpoint
CREATE TABLE "import_failures" (
	"supplier_id" uuid NOT NULL,
	"external_account_number" text COLLATE "C" NOT NULL,
	"step" "import_step" NOT NULL,
	"failed_at" timestamp with time zone NOT NULL,
	"attempts" integer NOT NULL,
	"http_status" smallint NOT NULL,
	"code" text NOT NULL,
	"errors" jsonb NOT NULL,
	"codes" text[] NOT NULL,
	CONSTRAINT "import_failures_pkey" PRIMARY KEY("supplier_id","external_account_number","step")
);
--> statement-breakpoint
CREATE TABLE "migration_minutes" (
	"supplier_id" uuid NOT NULL,
	"minute" timestamp with time zone NOT NULL,
	"staged" integer DEFAULT 0 NOT NULL,
	"created" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "migration_minutes_pkey" PRIMARY KEY("supplier_id","minute")
);
--> statement-breakpoint
ALTER TABLE "import_failures" ADD CONSTRAINT "import_failures_supplier_id_import_suppliers_id_fk" FOREIGN KEY ("supplier_id") REFERENCES "public"."import_suppliers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "migration_minutes" ADD CONSTRAINT "migration_minutes_supplier_id_import_suppliers_id_fk" FOREIGN KEY ("supplier_id") REFERENCES "public"."import_suppliers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "import_failures_step_idx" ON "import_failures" USING btree ("supplier_id","step","external_account_number");
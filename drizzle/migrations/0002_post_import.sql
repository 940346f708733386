CREATE TABLE "billing_documents" (
	"id" uuid PRIMARY KEY NOT NULL,
	"ledger_id" uuid NOT NULL,
	"identifier" text NOT NULL,
	"type" text NOT NULL,
	"issued_date" date NOT NULL,
	"bill_period_from_date" date,
	"bill_period_to_date" date,
	"finalized" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "billing_documents_ledger_identifier_key" UNIQUE("ledger_id","identifier")
);
--> statement-breakpoint
CREATE TABLE "historical_statements" (
	"id" uuid PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"statement_id" text NOT NULL,
	"bill_period_from_date" date NOT NULL,
	"bill_period_to_date" date NOT NULL,
	"issued_date" date NOT NULL,
	"number" text,
	"gross_amount" numeric(20, 10) NOT NULL,
	"statement_path" text,
	"statement_location" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "historical_statements_account_statement_key" UNIQUE("account_id","statement_id")
);
--> statement-breakpoint
CREATE TABLE "notes" (
	"id" uuid PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"body" text,
	"document_locations" text[] NOT NULL,
	"note_created_at" timestamp with time zone NOT NULL,
	"is_pinned" boolean DEFAULT false NOT NULL,
	"unpin_at" timestamp with time zone,
	"by_system" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payment_instructions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"vendor" text NOT NULL,
	"reference" text NOT NULL,
	"type" text NOT NULL,
	"status" text NOT NULL,
	"details" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "payment_instructions_account_vendor_reference_key" UNIQUE("account_id","vendor","reference")
);
--> statement-breakpoint
ALTER TABLE "ledger_transactions" ADD COLUMN "billing_document_id" uuid;--> statement-breakpoint
ALTER TABLE "billing_documents" ADD CONSTRAINT "billing_documents_ledger_id_ledgers_id_fk" FOREIGN KEY ("ledger_id") REFERENCES "public"."ledgers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "historical_statements" ADD CONSTRAINT "historical_statements_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notes" ADD CONSTRAINT "notes_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_instructions" ADD CONSTRAINT "payment_instructions_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "notes_account_idx" ON "notes" USING btree ("account_id");--> statement-breakpoint
ALTER TABLE "ledger_transactions" ADD CONSTRAINT "ledger_transactions_billing_document_id_billing_documents_id_fk" FOREIGN KEY ("billing_document_id") REFERENCES "public"."billing_documents"("id") ON DELETE no action ON UPDATE no action;
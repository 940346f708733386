CREATE TYPE "public"."outbox_status" AS ENUM('PENDING', 'SENT', 'FAILED');--> statement-breakpoint
CREATE TYPE "public"."statement_status" AS ENUM('CLOSED', 'OPEN');--> statement-breakpoint
CREATE TYPE "public"."transaction_source" AS ENUM('ACCOUNT_IMPORT', 'POST_IMPORT', 'BILLING_DOCUMENT');--> statement-breakpoint
CREATE TABLE "account_metadata" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "account_metadata_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"account_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"key" text NOT NULL,
	"value" jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "accounts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"service_account_number" text NOT NULL,
	"import_process_id" bigint NOT NULL,
	"supplier_id" uuid NOT NULL,
	"external_account_number" text COLLATE "C" NOT NULL,
	"account_type" text NOT NULL,
	"use_industry_billing" boolean,
	"billing_period_length" text,
	"billing_period_start_day" integer,
	"billing_street_address" text NOT NULL,
	"billing_locality" text,
	"billing_administrative_area" text,
	"billing_postal_code" text,
	"billing_country" text NOT NULL,
	"communication_preference" text NOT NULL,
	"sales_channel" text NOT NULL,
	"sales_subchannel" text,
	"unknown_occupier" boolean NOT NULL,
	"transfer_balance" numeric(20, 10) NOT NULL,
	"operations_team_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "accounts_service_account_number_unique" UNIQUE("service_account_number"),
	CONSTRAINT "accounts_import_process_id_unique" UNIQUE("import_process_id")
);
--> statement-breakpoint
CREATE TABLE "agreements" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "agreements_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"supply_point_id" uuid NOT NULL,
	"tariff_code" text NOT NULL,
	"effective_from" date NOT NULL,
	"effective_to" date,
	"historical" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "customers" (
	"id" uuid PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"title" text,
	"given_name" text NOT NULL,
	"family_name" text,
	"email" text,
	"landline" text,
	"portfolio_roles" text[] NOT NULL,
	"unable_to_read_meters" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "email_outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "email_outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"account_id" uuid NOT NULL,
	"customer_id" uuid NOT NULL,
	"template" text NOT NULL,
	"recipient" text NOT NULL,
	"status" "outbox_status" DEFAULT 'PENDING' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"sent_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "ledger_transactions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"ledger_id" uuid NOT NULL,
	"statement_id" uuid,
	"source" "transaction_source" NOT NULL,
	"transaction_id" text NOT NULL,
	"type" text NOT NULL,
	"transaction_date" date NOT NULL,
	"amount" numeric(20, 10) NOT NULL,
	"reason" text,
	"display_note" text,
	"note" text,
	"reference" text,
	"payment_type" text,
	"product_code" text,
	"description" text,
	"original_transaction_date" date,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "ledger_transactions_ledger_transaction_key" UNIQUE("ledger_id","transaction_id")
);
--> statement-breakpoint
CREATE TABLE "ledgers" (
	"id" uuid PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"ledger_code" text NOT NULL,
	"ledger_number" text NOT NULL,
	"balance" numeric(20, 10) NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "ledgers_ledger_number_unique" UNIQUE("ledger_number"),
	CONSTRAINT "ledgers_account_code_key" UNIQUE("account_id","ledger_code")
);
--> statement-breakpoint
CREATE TABLE "statements" (
	"id" uuid PRIMARY KEY NOT NULL,
	"ledger_id" uuid NOT NULL,
	"status" "statement_status" NOT NULL,
	"imported" boolean DEFAULT false NOT NULL,
	"period_from" date NOT NULL,
	"period_to" date,
	"opening_balance" numeric(20, 10) NOT NULL,
	"closing_balance" numeric(20, 10),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "supply_addresses" (
	"id" uuid PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"customer_at_supply_address_from_date" date NOT NULL,
	"street_address" text NOT NULL,
	"locality" text,
	"administrative_area" text,
	"postal_code" text,
	"country" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "supply_points" (
	"id" uuid PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"supply_address_id" uuid NOT NULL,
	"identifier" text NOT NULL,
	"supply_type" text NOT NULL,
	"supply_start_date" date NOT NULL,
	"last_billed_to_date" date,
	"load_zone" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "supply_points_account_identifier_key" UNIQUE("account_id","identifier")
);
--> statement-breakpoint
CREATE TABLE "transaction_line_items" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "transaction_line_items_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"transaction_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"rate_band" text NOT NULL,
	"start_date" date NOT NULL,
	"end_date" date NOT NULL,
	"number_of_units" numeric(16, 4) NOT NULL,
	"net_amount" numeric(20, 10) NOT NULL,
	"price_per_unit" numeric(16, 8) NOT NULL,
	"units" numeric(16, 4)[]
);
--> statement-breakpoint
CREATE TABLE "transaction_tax_items" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "transaction_tax_items_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"transaction_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"amount" numeric(20, 10) NOT NULL,
	"tax_type" text NOT NULL,
	"value_taxed" numeric(20, 5) NOT NULL,
	"rate" numeric(20, 5) NOT NULL,
	"unit_type" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "account_metadata" ADD CONSTRAINT "account_metadata_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_import_process_id_import_processes_id_fk" FOREIGN KEY ("import_process_id") REFERENCES "public"."import_processes"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_supplier_id_import_suppliers_id_fk" FOREIGN KEY ("supplier_id") REFERENCES "public"."import_suppliers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_operations_team_id_operations_teams_id_fk" FOREIGN KEY ("operations_team_id") REFERENCES "public"."operations_teams"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agreements" ADD CONSTRAINT "agreements_supply_point_id_supply_points_id_fk" FOREIGN KEY ("supply_point_id") REFERENCES "public"."supply_points"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "customers" ADD CONSTRAINT "customers_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "email_outbox" ADD CONSTRAINT "email_outbox_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "email_outbox" ADD CONSTRAINT "email_outbox_customer_id_customers_id_fk" FOREIGN KEY ("customer_id") REFERENCES "public"."customers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledger_transactions" ADD CONSTRAINT "ledger_transactions_ledger_id_ledgers_id_fk" FOREIGN KEY ("ledger_id") REFERENCES "public"."ledgers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledger_transactions" ADD CONSTRAINT "ledger_transactions_statement_id_statements_id_fk" FOREIGN KEY ("statement_id") REFERENCES "public"."statements"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledgers" ADD CONSTRAINT "ledgers_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "statements" ADD CONSTRAINT "statements_ledger_id_ledgers_id_fk" FOREIGN KEY ("ledger_id") REFERENCES "public"."ledgers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "supply_addresses" ADD CONSTRAINT "supply_addresses_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "supply_points" ADD CONSTRAINT "supply_points_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "supply_points" ADD CONSTRAINT "supply_points_supply_address_id_supply_addresses_id_fk" FOREIGN KEY ("supply_address_id") REFERENCES "public"."supply_addresses"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "transaction_line_items" ADD CONSTRAINT "transaction_line_items_transaction_id_ledger_transactions_id_fk" FOREIGN KEY ("transaction_id") REFERENCES "public"."ledger_transactions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "transaction_tax_items" ADD CONSTRAINT "transaction_tax_items_transaction_id_ledger_transactions_id_fk" FOREIGN KEY ("transaction_id") REFERENCES "public"."ledger_transactions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "account_metadata_account_idx" ON "account_metadata" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "accounts_supplier_idx" ON "accounts" USING btree ("supplier_id","external_account_number");--> statement-breakpoint
CREATE INDEX "agreements_supply_point_idx" ON "agreements" USING btree ("supply_point_id","effective_from");--> statement-breakpoint
CREATE INDEX "customers_account_idx" ON "customers" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "email_outbox_pending_idx" ON "email_outbox" USING btree ("status","next_attempt_at");--> statement-breakpoint
CREATE INDEX "statements_ledger_idx" ON "statements" USING btree ("ledger_id","status");--> statement-breakpoint
CREATE INDEX "supply_addresses_account_idx" ON "supply_addresses" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "transaction_line_items_transaction_idx" ON "transaction_line_items" USING btree ("transaction_id");--> statement-breakpoint
CREATE INDEX "transaction_tax_items_transaction_idx" ON "transaction_tax_items" USING btree ("transaction_id");
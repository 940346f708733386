CREATE TYPE "public"."supply_point_checks" AS ENUM('NONE', 'GB');--> statement-breakpoint
ALTER TABLE "import_suppliers" ADD COLUMN "supply_point_checks" "supply_point_checks" DEFAULT 'NONE' NOT NULL;
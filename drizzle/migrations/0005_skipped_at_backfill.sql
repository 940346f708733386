-- Custom SQL migration file, put your code below! --
-- Processes skipped before skipped_at existed: the time of their latest SKIPPED event.
UPDATE "import_processes" p SET "skipped_at" = coalesce(
  (SELECT max(e."at") FROM "import_events" e WHERE e."import_process_id" = p."id" AND e."type" = 'SKIPPED'),
  p."updated_at")
WHERE p."state" = 'SKIPPED' AND p."skipped_at" IS NULL;

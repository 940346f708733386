-- An import process's service account number is a copy of its account's, which the accounts
-- table's unique index already keeps apart, and nothing looks a process up by it. Its own unique
-- index cost every creation a read and a write on a random page of an index as large as the
-- accounts' one (the numbers are random), and a full-page image in the write-ahead log for each
-- page first changed after a checkpoint: work that grows with the table.
ALTER TABLE "import_processes" DROP CONSTRAINT "import_processes_service_account_number_unique";

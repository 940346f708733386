-- JIT compilation off for this database's sessions. The service's statements are short look-ups
-- and small aggregates; on tables that were never analyzed (a large migration before autovacuum
-- or ANALYZE has run) PostgreSQL estimates them at millions of rows, and compiling them took
-- 150 ms on 200,000 accounts while running them took under 1 ms. Applies to sessions opened after
-- it; left as it is when the service's role may not alter the database (the operator guide says
-- how to set it by hand). Undo with ALTER DATABASE <name> RESET jit.
DO $$
BEGIN
  EXECUTE format('ALTER DATABASE %I SET jit = off', current_database());
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'jit left as it is: this role may not alter the database';
END $$;

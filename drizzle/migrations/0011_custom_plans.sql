-- A fresh plan for every execution of a prepared statement (plan_cache_mode = force_custom_plan).
-- After five executions PostgreSQL may keep one generic plan for the life of the connection, and
-- the service's connections live for the whole migration: a plan chosen while a table was empty (a
-- sequential scan is cheapest then) was still used when the table held hundreds of thousands of
-- rows, so a batch's delete of its accounts' failure records read every failure record of the
-- supplier. Planning each execution costs a fraction of a millisecond and follows the tables as
-- they grow. Applies to sessions opened after it; left as it is when the service's role may not
-- alter the database (the operator guide says how to set it by hand). Undo with
-- ALTER DATABASE <name> RESET plan_cache_mode.
DO $$
BEGIN
  EXECUTE format('ALTER DATABASE %I SET plan_cache_mode = force_custom_plan', current_database());
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'plan_cache_mode left as it is: this role may not alter the database';
END $$;

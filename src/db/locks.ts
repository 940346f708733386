/**
 * Locks that make creation safe across server processes, all released by PostgreSQL when the
 * transaction ends or its connection dies:
 * - the process lock (`pg_try_advisory_xact_lock(bigint)`), held exclusively by a create for its
 *   whole run and tried in shared mode by a restage: at most one create per account, staged data
 *   cannot change under it, and restages do not refuse each other;
 * - concurrency slots (`pg_try_advisory_xact_lock(int, int)`, keyed by the supplier and a slot
 *   number), one per create in flight, up to the supplier's `max_concurrent_processing`.
 * The status endpoint reads `pg_locks` for the exclusive process lock to report IN_PROGRESS.
 * A process's lock key is PROCESS_LOCK_BASE plus its id; single creates and batches take the same.
 */
export const PROCESS_LOCK_BASE = 1n << 40n

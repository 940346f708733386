-- The request-rate limits every server process counts against: one row per key (a client address's
-- token requests, an organisation's data-import calls) and its current window. Unlogged: a count
-- is worth no WAL, and after a crash or a failover the limits start again from zero.
CREATE UNLOGGED TABLE "rate_limit_counts" (
	"key" text PRIMARY KEY NOT NULL,
	"window_ends_at" timestamp (3) with time zone NOT NULL,
	"count" integer NOT NULL
);

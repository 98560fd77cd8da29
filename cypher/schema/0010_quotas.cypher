// Quotas (AGT-10): the per-Process hourly start counters, and runs by Process for
// the concurrency count.
CREATE CONSTRAINT quota_window_key IF NOT EXISTS FOR (n:QuotaWindow) REQUIRE n.key IS UNIQUE;
CREATE INDEX run_process IF NOT EXISTS FOR (n:Run) ON (n.processId)

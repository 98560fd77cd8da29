// Money budgets (AGT-14): per-day spend windows of Processes and users.
CREATE CONSTRAINT spend_window_key IF NOT EXISTS FOR (n:SpendWindow) REQUIRE n.key IS UNIQUE;
CREATE INDEX spend_window_day IF NOT EXISTS FOR (n:SpendWindow) ON (n.day)

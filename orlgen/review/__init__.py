"""Review: what generated files orlgen owns, writes and checks, and how snapshots differ."""

"""Paper D's tables and figures, built from the vision track's JSON outputs (without torch)."""

"""Paper B's tables and figures, built from the gender track's JSON outputs."""

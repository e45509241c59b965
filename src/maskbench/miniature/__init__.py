"""Miniature inputs in the real files' formats, for tests and trial runs of the workflow's user-supplied data."""

"""Miniature inputs in the layouts of the real, user-supplied sources, for tests and dry runs."""

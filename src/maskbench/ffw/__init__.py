"""Paper D's FFW shared by every track: gates, bias heads, the empirical MI, the schedule and the run loop
(``core``), with each track's model and batches behind an ``FFWAdapter``."""

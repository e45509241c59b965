"""The gender track (paper B): word lists, SEAT, and — as the track grows — its objective and evaluations."""

"""The cross-paper matrix: every pruning method on every benchmark it fits (``cells.py``: the record each track
writes per run; ``table.py``: the methods x benchmarks table and figure built from them)."""

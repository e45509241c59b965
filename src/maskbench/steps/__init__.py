"""The `python -m maskbench.steps.<step>` entry points: each parses its arguments, calls the library and writes
its outputs. None imports another."""

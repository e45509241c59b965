"""Entry points that no rule calls: checks, benchmarks and report helpers a person runs by hand
(`python -m maskbench.tools.<tool> --help`). What a rule runs is a step (maskbench/steps/); what a user runs on a
model or a mask is the `maskbench` command (maskbench/console.py)."""

"""Entry points that no rule calls: checks, benchmarks and report helpers a person runs by hand
(`python -m maskbench.tools.<tool> --help`)."""

"""maskbench: a Snakemake benchmark suite for debiasing by pruning masks."""

__version__ = "0.1.0"

"""The cost sheet of a planned run: the jobs snakemake would run (`plan`), each priced from a stated model
(`assumptions`: per-step seconds by model size, sequence length, batch and precision; evaluation pairs x seconds per
pair; checkpoint sizes), summed per rule family with the tables and figures each family serves (`sheet`).
`python -m maskbench.tools.cost` prints it."""

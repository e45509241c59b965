"""The workflow glue: what only the Snakefile and rules/ (and the steps' launcher, the tools and the tests) use.

Planning and config checks (`workflow_config`, `config_schema`), one results folder per config (`results_folder`),
the cluster's runtime requests (`cluster_requests`), the files a config reads from you (`user_data`), the warm
runner (`warm`), each step's timing line and a run's overhead (`step_timing`, `overhead`), a long job's finished
parts kept across a kill (`staging`; an NLU evaluation's sets, `staged_evaluation`), the jobs a miniature forces
(`forced_jobs`) and the cost sheet (`cost/`).

The library (the engine, data, objectives, training, masking and the tracks' science) never imports from here; this
package may import the library. It stays light: the steps' launcher imports `warm` before torch is imported."""

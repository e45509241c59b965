# maskbench: debiasing by pruning masks, rebuilt from one command.
# Includes and targets only: the config checked and the jobs' environment in rules/setup.smk, what a run does around
# its jobs in rules/lifecycle.smk, shared helpers in rules/common.smk, each track's rules and
# helpers in rules/<track>/ (rules/<track>/main.smk, included when the config's `track:` names it), configuration in config.yaml
# (schemas/ describes it).
import os

from snakemake.utils import min_version

min_version("9.0")


# config.yaml is the embedded default; a --configfile from the command line replaces it whole (each file in
# configs/ is complete), so a paper config never inherits the suite's datasets.
# (this file's folder, not workflow.basedir: in a host workflow that imports maskbench as a module, docs/module.md,
# workflow.basedir is the host's folder)
if not workflow.overwrite_configfiles:

    configfile: os.path.join(str(workflow.current_basedir), "config.yaml")


# `snakemake --report`: what the run is and what its rows mean (each table and figure has its own caption)
report: "rules/captions/workflow.rst"


include: "rules/setup.smk"
include: "rules/lifecycle.smk"
include: "rules/common.smk"
include: "rules/fetch.smk"


# each track's rules (rules/<track>/main.smk), when the config's `track:` names it
for _track in TRACKS:

    include: os.path.join("rules", _track, "main.smk")


# the cross-paper matrix, when the config has `matrix:` (after the tracks: they fill MATRIX_CELLS)
if "matrix" in config:

    include: "rules/matrix.smk"

    TARGETS["all"] += [*rules.matrix_report.output, *rules.verdict_table.output]
    PAPER_TARGETS["matrix"] = [*rules.matrix_report.output, *rules.verdict_table.output]
    PAPER_TARGETS["verdict"] = rules.verdict_table.output


rule all:
    default_target: True
    input:
        TARGETS["all"],


rule prepare_all:
    input:
        TARGETS["prepare"],


rule train_all:
    input:
        TARGETS["train"],


rule masks_all:
    input:
        TARGETS["masks"],


rule evaluate_all:
    input:
        TARGETS["evaluate"],


# one table, figure or paper at a time (docs/cluster.md, "One table at a time"): `snakemake paper_a_table1`, ...
for _target, _files in PAPER_TARGETS.items():

    rule:
        name:
            _target
        input:
            _files,

# maskbench: debiasing by pruning masks, rebuilt from one command.
# Targets only; helpers live in rules/common.smk, configuration in config.yaml (schemas/ describes it).
import os

from snakemake.utils import min_version

min_version("9.0")


# config.yaml is the embedded default; a --configfile from the command line replaces it whole (each file in
# configs/ is complete), so a paper config never inherits the synthetic datasets.
if not workflow.overwrite_configfiles:

    configfile: os.path.join(workflow.basedir, "config.yaml")


include: "rules/common.smk"


wildcard_constraints:
    dataset=alternation(DATASETS),
    subset=alternation(SUBSETS),
    task=alternation(TASKS),
    seed=r"\d+",
    source=alternation(list(SOURCES)),
    loss=r"[a-z_]+",


include: "rules/data.smk"
include: "rules/train.smk"
include: "rules/bias.smk"
include: "rules/masks.smk"
include: "rules/evaluate.smk"
include: "rules/report.smk"
include: "rules/srnets.smk"


rule all:
    default_target: True
    input:
        final_outputs(),
        srn_report_outputs() if SRN else [],


rule prepare_all:
    input:
        prepared_datasets(),


rule train_all:
    input:
        trained_models(),


rule masks_all:
    input:
        mask_files(),


rule evaluate_all:
    input:
        evaluation_jsons(),

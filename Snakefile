# maskbench: debiasing by pruning masks, rebuilt from one command.
# Includes and targets only: shared helpers and config validation in rules/common.smk, each track's rules and
# helpers in rules/<track>/ (included when the config's `track:` names it), configuration in config.yaml
# (schemas/ describes it).
import os

from snakemake.utils import min_version

min_version("9.0")


# config.yaml is the embedded default; a --configfile from the command line replaces it whole (each file in
# configs/ is complete), so a paper config never inherits the synthetic datasets.
if not workflow.overwrite_configfiles:

    configfile: os.path.join(workflow.basedir, "config.yaml")


include: "rules/common.smk"


# nlu: papers A (Table 1, masked debiasing) and C (sparse and robust subnetworks, with `srnets:`)
if "nlu" in TRACKS:

    include: "rules/nlu/common.smk"
    include: "rules/nlu/srnets_common.smk"
    include: "rules/nlu/tradeoff_common.smk"
    include: "rules/nlu/data.smk"
    include: "rules/nlu/train.smk"
    include: "rules/nlu/bias.smk"
    include: "rules/nlu/masks.smk"
    include: "rules/nlu/evaluate.smk"
    include: "rules/nlu/tradeoff.smk"
    include: "rules/nlu/report.smk"
    include: "rules/nlu/srnets.smk"


# vision: paper D (FFW gates on vision models, the real MNIST digits offline)
if "vision" in TRACKS:

    include: "rules/vision/common.smk"
    include: "rules/vision/data.smk"
    include: "rules/vision/train.smk"
    include: "rules/vision/ffw.smk"
    include: "rules/vision/evaluate.smk"
    include: "rules/vision/report.smk"


# gender: paper B (block and head movement pruning on a gender-debiasing objective, SEAT)
if "gender" in TRACKS:

    include: "rules/gender/common.smk"
    include: "rules/gender/data.smk"
    include: "rules/gender/debias.smk"
    include: "rules/gender/evaluate.smk"
    include: "rules/gender/report.smk"
    include: "rules/gender/shrink.smk"


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

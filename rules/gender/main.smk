# The gender track: paper B (block and head movement pruning on a gender-debiasing objective; SEAT, StereoSet,
# CrowS-Pairs, GLUE) and paper D's FFW on its encoder (ffw.smk). Included by the Snakefile when the config's `track:`
# names gender; helpers first, then the rules.

include: "common.smk"
include: "data.smk"
include: "debias.smk"
include: "evaluate.smk"
include: "ffw.smk"
include: "report.smk"
include: "shrink.smk"

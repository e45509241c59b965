# The gender track: paper B (block and head movement pruning on a gender-debiasing objective; SEAT, StereoSet,
# CrowS-Pairs, GLUE). Included by the Snakefile when the config's `track:` names gender; helpers first, then the rules.

include: "common.smk"
include: "data.smk"
include: "debias.smk"
include: "evaluate.smk"
include: "report.smk"
include: "shrink.smk"

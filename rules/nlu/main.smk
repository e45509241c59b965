# The nlu track: papers A (Table 1, masked debiasing, the trade-off curves) and C (sparse and robust subnetworks,
# with `srnets:`). Included by the Snakefile when the config's `track:` names nlu; helpers first, then the rules.

include: "common.smk"
include: "srnets_common.smk"
include: "tradeoff_common.smk"
include: "data.smk"
include: "train.smk"
include: "bias.smk"
include: "masks.smk"
include: "evaluate.smk"
include: "tradeoff.smk"
include: "report.smk"
include: "srnets.smk"
include: "ffw.smk"

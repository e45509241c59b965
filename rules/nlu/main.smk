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

if config.get("budget_study"):

    include: "study_common.smk"
    include: "study.smk"


# paper A's targets: Table 1's paper rows (rendered without the trade-off sweeps' "selected" rows, which need every
# sweep point), the trade-off curves, the pruning rates, and the whole paper; paper C's report
PAPER_TARGETS["paper_a_table1"] = rules.table1_paper_rows.output if SWEEPS else rules.table1.output
if SWEEPS:
    PAPER_TARGETS["paper_a_tradeoff"] = SW.outputs()
if P.mask_rows:
    PAPER_TARGETS["paper_a_pruning_rates"] = P.mask_report_outputs()
PAPER_TARGETS["paper_a"] = P.final_outputs() + (SW.outputs() if SWEEPS else [])
if SRN:
    PAPER_TARGETS["paper_c"] = srn_report_outputs()

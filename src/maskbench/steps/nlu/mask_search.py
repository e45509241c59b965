"""Entry point: search a pruning mask on a frozen fine-tuned model (paper A's masked debiasing).

    python -m maskbench.steps nlu.mask_search --model-dir results/.../method~finetune/loss~ce/seed~1 \
        --train T.parquet --dev D.parquet --spec JSON --hparams JSON --loss reweight --bias-probs B.parquet \
        --seed 1 --out results/.../masks/method~movement_sigmoid/loss~reweight/bias~undertrained/seed~1.mask

Only the pruning scores train; every weight of the model stays as it was (the mask file records the model's
fingerprint). Writes the mask file, then ``--summary`` (JSON: densities, training curve, file statistics) last.
"""

from __future__ import annotations

from maskbench.steps import run_step, step_main
from maskbench.tracks.nlu.mask_search_run import MaskSearchArgs, run_mask_search

PRICED_AS = "training"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)


@step_main(MaskSearchArgs)
def main(args: MaskSearchArgs) -> int:
    run_mask_search(args)
    return 0


if __name__ == "__main__":
    run_step(main)

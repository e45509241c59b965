"""The kill harness: real step processes on tiny data, killed at seeded random points and run again.

Each step kind is a command line of `python -m maskbench.steps.<track>.<step>` writing its outputs into one folder.
For every kill the harness starts the step in its own process (progress lines every step:
``MASKBENCH_PROGRESS_SECONDS=0``), reads its log until the K-th training progress line (K drawn from a seeded
generator among the first 70 % of the lines an uninterrupted run writes; an evaluation's: 60 %, before its last
set), pauses it (SIGSTOP) and reads what it wrote meanwhile, sends SIGTERM (a time limit, a pre-emption: the step
should save its state and exit 75) or SIGKILL (no warning: the last periodic state is all there is) if it is still
inside that window (a tiny step can outrun a reader on a loaded machine; past it, the try is made again from an
empty folder), and waits. Then it checks that nothing complete-looking is left (none of the kind's final files),
runs the step again to the end, reads from its log the step it resumed from (``resuming from ... at step N``), and
compares every output with an uninterrupted run's (``maskbench.tools.compare_results.compare_file``: tensors bit for
bit, masks mask for mask, JSON and curves without their timing fields), and that no resume state is left.

``run_harness`` returns the record that ``python -m maskbench.tools.kill_record`` renders into docs/cluster.md.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROGRESS = re.compile(r"progress train: step (\d+)/(\d+)")
EVALUATE_PROGRESS = re.compile(r"progress evaluate: batch (\d+)/(\d+)")
VISION_EVALUATE_PROGRESS = re.compile(r"progress (?:task accuracy|features): batch (\d+)/(\d+)")
LM_BIAS_PROGRESS = re.compile(r"progress (?:pseudo-log-likelihood|fill probabilities): batch (\d+)/(\d+)")
RESUMED = re.compile(r"resuming from (\S+) at (?:step|set|run|benchmark) (\d+)")

TINY_BERT = {"name": "t", "init": "scratch", "tokenizer": "data_vocab",
             "bert_config": {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
                             "intermediate_size": 32, "max_position_embeddings": 64}}
# 96 examples in batches of 8: 12 steps an epoch
FT_HP = {"epochs": 4, "batch_size": 8, "learning_rate": 1e-3, "warmup": 0.1, "max_length": 64, "log_every": 4}
SEARCH_HP = {"epochs": 3, "batch_size": 8, "learning_rate": 0.1, "lr_schedule": "constant", "weight_decay": 0.0,
             "max_grad_norm": 0, "max_length": 64, "log_every": 4}
IMP_HP = {"epochs": 3, "batch_size": 8, "learning_rate": 1e-3, "warmup": 0, "max_length": 64, "log_every": 4}
VISION_MLP = {"arch": "mlp", "kwargs": {"hidden": 8, "layers": 2}, "normalize": {"mean": 0.5, "std": 0.5}}
VISION_HP = {"optimizer": "sgd", "learning_rate": 0.1, "momentum": 0.9, "weight_decay": 0.0, "batch_size": 4,
             "epochs": 8, "log_every": 4}
CHECKPOINT_EVERY = "5"
RUN = "run"  # every run of a kind writes into the same folder (then moved aside): outputs name their own paths


@dataclass
class Kind:
    """One step kind: its module, its arguments given the folder it writes into, the files whose presence would
    make a cut-off run look finished, and whether it resumes mid-run (else a rerun starts afresh)."""

    name: str
    module: str
    args: Callable[[Path], list[str]]
    final: tuple[str, ...]
    resumes: bool = True
    state: str | None = None  # the output whose ``.<name>.resume.pt`` holds the state
    progress: re.Pattern = PROGRESS  # the lines counted to pick the kill point
    # where a rerun goes on from: a saved training state (after SIGKILL the last periodic one, every
    # CHECKPOINT_EVERY steps) or the evaluation sets finished before the kill
    resumes_at: str = "saved step"
    # the kill point is drawn among the first ``window`` of the progress lines an uninterrupted run writes (an
    # evaluation's: before its last set, as a SIGTERM during the last set lets the job end complete)
    window: float = 0.7

    def is_progress(self, line: bytes) -> bool:
        return self.progress.search(line.decode(errors="replace")) is not None


@dataclass
class Kill:
    kind: str
    signal: str
    at_line: int
    exit_code: int | None = None
    complete_looking: list[str] = field(default_factory=list)
    rerun_exit: int | None = None
    resumed_from: int | None = None
    bit_equal: bool = False
    differences: list[str] = field(default_factory=list)
    states_left: list[str] = field(default_factory=list)
    seconds: float = 0.0
    killed_log_tail: list[str] = field(default_factory=list)  # only when the killed run exited otherwise than asked
    late_reads: int = 0  # tries whose step had run past the kill window before its line was read (then run again)


def expected_exit(signame: str) -> int:
    """The exit status a step killed with ``signame`` should end with: SIGTERM's stop (``maskbench.stop.STOPPED_EXIT``)
    or the SIGKILL itself."""
    from maskbench.stop import STOPPED_EXIT

    return STOPPED_EXIT if signame == "SIGTERM" else -signal.SIGKILL


def step_env() -> dict:
    env = dict(os.environ, MASKBENCH_PROGRESS_SECONDS="0", MASKBENCH_WARM="0", PYTHONUNBUFFERED="1",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return env


def run_step(kind: Kind, out: Path, log: Path, kill_at: int | None = None, signum: int | None = None,
             kill_by: int | None = None, timeout: float = 300) -> tuple[int, int, int | None]:
    """Run the step writing into ``out`` (its log to ``log``); with ``kill_at``, send ``signum`` once the
    ``kill_at``-th progress line has been read. On a loaded machine the reader can lag behind a fast step, so the step
    is first paused (SIGSTOP), what it wrote meanwhile is read, and ``signum`` goes out only while it has not passed
    its ``kill_by``-th line (then SIGCONT). Returns the exit code, the progress lines seen and the line the signal
    went out at (None: the step had run past ``kill_by``)."""
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", kind.module, *kind.args(out)]
    seen, sent_at = 0, None
    with open(log, "wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.PIPE, env=step_env(), cwd=out)
        pipe = process.stderr.fileno()
        deadline = time.monotonic() + timeout
        lines: list[bytes] = []
        partial = b""
        while chunk := os.read(pipe, 65536):
            *lines, partial = (partial + chunk).split(b"\n")
            while lines:
                line = lines.pop(0)
                sink.write(line + b"\n")
                if kind.is_progress(line):
                    seen += 1
                    if kill_at is not None and seen == kill_at:
                        process.send_signal(signal.SIGSTOP)
                        partial = _read_what_is_there(pipe, partial)
                        *more, partial = partial.split(b"\n")
                        lines += more
                        ahead = sum(map(kind.is_progress, lines))
                        if kill_by is None or seen + ahead <= kill_by:
                            process.send_signal(signum)
                            sent_at = seen + ahead
                        process.send_signal(signal.SIGCONT)
            if time.monotonic() > deadline:
                process.kill()
        sink.write(partial)
        code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    return code, seen, sent_at


def _read_what_is_there(pipe: int, data: bytes) -> bytes:
    """Everything the (paused) step has written to the pipe so far, after ``data``, without waiting for more."""
    os.set_blocking(pipe, False)
    try:
        while chunk := os.read(pipe, 65536):
            data += chunk
    except BlockingIOError:
        pass
    finally:
        os.set_blocking(pipe, True)
    return data


def resumed_from(log: Path) -> int | None:
    found = RESUMED.findall(log.read_text(errors="replace"))
    return int(found[-1][1]) if found else None


def outputs_of(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def compare(straight: Path, resumed: Path) -> list[str]:
    """Every output of the two runs compared (``compare_file``); the differences found."""
    from maskbench.tools.compare_results import compare_file

    differences = []
    before = {p.relative_to(straight) for p in outputs_of(straight)}
    after = {p.relative_to(resumed) for p in outputs_of(resumed)}
    differences += [f"{rel}: only in the uninterrupted run" for rel in sorted(before - after)]
    differences += [f"{rel}: only in the resumed run" for rel in sorted(after - before)]
    for rel in sorted(before & after):
        _, difference = compare_file(straight / rel, resumed / rel)
        if difference is not None:
            differences.append(f"{rel}: {difference}")
    return differences


def kill_once(kind: Kind, straight: Path, lines: int, work: Path, name: str, signame: str,
              rng: random.Random, attempts: int = 3) -> Kill:
    window = max(1, int(kind.window * lines))
    at = rng.randint(1, window)
    kill = Kill(kind.name, signame, at)
    started = time.perf_counter()
    out = work / RUN  # the uninterrupted run's folder: outputs record their own paths
    for attempt in range(attempts):  # again from an empty folder when the step ran past the window unsignalled
        shutil.rmtree(out, ignore_errors=True)
        kill.exit_code, _, sent_at = run_step(kind, out, work / f"{name}.killed.log", at, getattr(signal, signame),
                                              kill_by=window)
        if sent_at is not None:
            kill.at_line, kill.late_reads = sent_at, attempt
            break
    else:
        kill.late_reads = attempts
    if kill.exit_code != expected_exit(signame):  # kept for the record: the folder is a temporary one
        kill.killed_log_tail = (work / f"{name}.killed.log").read_text(errors="replace").splitlines()[-25:]
    kill.complete_looking = [f for f in kind.final if (out / f).exists()]
    kill.rerun_exit, _, _ = run_step(kind, out, work / f"{name}.rerun.log")
    kill.resumed_from = resumed_from(work / f"{name}.rerun.log")
    kill.differences = compare(straight, out) if kill.rerun_exit == 0 else ["the rerun failed"]
    kill.states_left = sorted(str(p.relative_to(out)) for p in [*out.rglob(".*resume*"), *out.rglob(".*.staged-*")])
    kill.bit_equal = not kill.differences
    kill.seconds = round(time.perf_counter() - started, 1)
    out.rename(work / name)
    return kill


# ------------------------------------------------------------------------------------------------ tiny inputs
def nli_data(folder: Path) -> Path:
    from maskbench.data.schema import write_prepared
    from maskbench.data.synthetic import generate

    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 96), ("dev", 24)):
        frame, labels = generate("nli", split, n, seed=0, rho=0.9)
        write_prepared(frame, labels, folder / f"{split}.parquet", {"dataset": split, "task": "mnli"})
    return folder


def image_split(path: Path, n: int, seed: int, split: str) -> Path:
    import numpy as np

    from maskbench.tracks.vision.images import ImageSet, write_images

    rng = np.random.default_rng(seed)
    label = np.arange(n) % 2
    images = rng.integers(0, 256, (n, 1, 4, 4), dtype=np.uint8)
    images[:, 0, 0, 0] = np.where(label == 1, 250, 5)
    bias = (label[:, None] + np.arange(n)[:, None] % 3 > 1).astype(np.int64)
    write_images(path, ImageSet(images=images, label=label, bias=bias, ids=np.arange(n, dtype=np.int64),
                                label_names=["a", "b"], bias_names=["b"], bias_classes=[2], dataset="toy",
                                split=split, provenance={"seed": seed}))
    return path


def vision_inputs(folder: Path, epochs: int) -> Path:
    """Tiny image splits (train: 32, val: 16), an MLP trained on them for ``epochs`` and two magnitude masks of it
    (``sparsity~0.5.mask``, ``sparsity~0.9.mask``), all in ``folder``."""
    from maskbench.steps.vision import magnitude as vision_magnitude
    from maskbench.steps.vision import train as vision_train

    folder.mkdir(parents=True, exist_ok=True)
    image_split(folder / "train.safetensors", 32, 0, "train")
    image_split(folder / "val.safetensors", 16, 1, "unbiased_val")
    assert vision_train.main(["--train", str(folder / "train.safetensors"), "--val", str(folder / "val.safetensors"),
                              "--model-spec", json.dumps({**VISION_MLP, "train": VISION_HP}),
                              "--hparams", json.dumps({**VISION_HP, "epochs": epochs}), "--seed", "4",
                              "--threads", "1", "--out-dir", str(folder / "model")]) == 0
    assert vision_magnitude.main(["--model-dir", str(folder / "model"), "--sparsities", "0.5", "0.9",
                                  "--out-dir", str(folder)]) == 0
    return folder


def gender_inputs(folder: Path) -> tuple[Path, Path]:
    import pandas as pd
    import torch
    from transformers import BertConfig, BertModel

    from maskbench.steps.gender import corpus as gender_corpus
    from maskbench.steps.gender import mlm_head as gender_mlm_head
    from maskbench.text.models import data_vocab_tokenizer

    data = REPO / "data/gender"
    lists = ["--male", str(data / "male.txt"), "--female", str(data / "female.txt"), "--stereotype",
             str(data / "stereotype.txt")]
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.parquet"
    assert gender_corpus.main(["--source", "generate:80", *lists, "--heldout", "10", "--seed", "0", "--mixed", "5",
                               "--out", str(corpus)]) in (0, None)
    tokenizer = data_vocab_tokenizer(list(pd.read_parquet(corpus)["text"]), folder / "encoder")
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=32, max_position_embeddings=64))
    model.save_pretrained(folder / "encoder")
    tokenizer.save_pretrained(folder / "encoder")
    assert gender_mlm_head.main(["--model", str(folder / "encoder"), "--corpus", str(corpus), "--epochs", "1",
                                 "--max-length", "24", "--out", str(folder / "head.safetensors")]) in (0, None)
    # two gender items of StereoSet's intrasentence layout (the Hub's columns, one JSON object a line)
    items = [{"id": f"g{i}", "target": target, "bias_type": "gender", "context": f"The {target} is BLANK.",
              "sentences": {"sentence": [f"The {target} is {w}." for w in words], "id": ["a", "b", "c"],
                            "labels": [{"label": [g, g], "human_id": ["h1", "h2"]} for g in (0, 1, 2)],
                            "gold_label": [0, 1, 2]}}
             for i, (target, words) in enumerate((("mother", ("caring", "rude", "fish")),
                                                   ("father", ("strong", "gentle", "table"))))]
    (folder / "intrasentence.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items))
    return corpus, folder / "encoder"


def kinds(inputs: Path) -> dict[str, Kind]:
    """Every step kind of the harness, reading the tiny inputs under ``inputs`` (``prepare_inputs``)."""
    nli = inputs / "nli"
    data = ["--train", str(nli / "train.parquet"), "--dev", str(nli / "dev.parquet")]
    common = [*data, "--seed", "1", "--threads", "1"]
    every = ["--checkpoint-every", CHECKPOINT_EVERY]
    vision = ["--train", str(inputs / "vision" / "train.safetensors"),
              "--val", str(inputs / "vision" / "val.safetensors")]
    corpus, encoder = inputs / "gender" / "corpus.parquet", inputs / "gender" / "encoder"
    evaluated = ["--data", str(nli / "dev.parquet"), str(nli / "train.parquet"), "--eval-sets",
                 json.dumps([{"name": "dev"}, {"name": "train"}]), "--task", "mnli", "--seed", "1",
                 "--threads", "1", "--batch-size", "4"]
    return {k.name: k for k in [
        Kind("fine-tuning", "maskbench.steps.nlu.finetune",
             lambda out: [*common, "--model-spec", json.dumps(TINY_BERT), "--hparams", json.dumps(FT_HP),
                          "--out-dir", str(out / "model"), *every], ("model/train_summary.json",)),
        Kind("mask search", "maskbench.steps.nlu.mask_search",
             lambda out: [*common, "--model-dir", str(inputs / "ft"), "--hparams", json.dumps(SEARCH_HP),
                          "--out", str(out / "m.mask"), "--summary", str(out / "m.json"), *every],
             ("m.mask", "m.json")),
        Kind("paper C mask training", "maskbench.steps.nlu.srnet_mask_train",
             lambda out: [*common, "--start-dir", str(inputs / "ft"), "--hparams", json.dumps(SEARCH_HP),
                          "--spec", json.dumps({"sparsity": 0.5, "select_after": 0.3, "eval_every": 3,
                                                "reset_every": 4}),
                          "--out-mask", str(out / "m.mask"), "--summary", str(out / "m.json"), *every],
             ("m.mask", "m.json")),
        Kind("paper C retraining", "maskbench.steps.nlu.srnet_retrain",
             lambda out: [*common, "--start-dir", str(inputs / "init"), "--hparams", json.dumps(FT_HP),
                          "--mask", str(inputs / "m50.mask"), "--out-dir", str(out / "retrained"), *every],
             ("retrained/train_summary.json",)),
        Kind("paper C IMP", "maskbench.steps.nlu.srnet_imp",
             lambda out: [*common, "--start-dir", str(inputs / "ft"), "--hparams", json.dumps(IMP_HP),
                          "--sweep-dir", str(out / "imp")],
             # each level is written when it is done (a finished part, declared as an output: snakemake deletes
             # it when the job fails, so it is staged beside it too); a rerun puts the finished levels back and
             # goes on from the last one's round, not from a step inside it; the job is finished with its last
             # level and the sweep's summary
             ("imp/sparsity~0.9/train_summary.json", "imp/imp_summary.json"), resumes=False),
        Kind("paper D training", "maskbench.steps.vision.train",
             lambda out: [*vision, "--model-spec", json.dumps({**VISION_MLP, "train": VISION_HP}),
                          "--hparams", json.dumps(VISION_HP), "--seed", "4", "--threads", "1",
                          "--out-dir", str(out / "model"), *every], ("model/train_summary.json",)),
        Kind("paper D FFW", "maskbench.steps.vision.ffw",
             lambda out: [*vision, "--model-dir", str(inputs / "vision" / "model"), "--seed", "1", "--threads", "1",
                          "--settings", json.dumps({"max_gate_epochs": 6, "gate_patience": 0, "batch_size": 4,
                                                    "head": {"max_epochs": 2}}),
                          "--out", str(out / "ffw.mask"), *every], ("ffw.mask", "ffw.json")),
        # paper D's code's heads (the paper config's): persistent, each with its own SGD state, saved with the gates
        Kind("paper D FFW, online heads", "maskbench.steps.vision.ffw",
             lambda out: [*vision, "--model-dir", str(inputs / "vision" / "model"), "--seed", "1", "--threads", "1",
                          "--settings", json.dumps({"max_gate_epochs": 6, "gate_patience": 0, "batch_size": 4,
                                                    "head_update": "online", "validation_mi": "refined",
                                                    "head": {"max_epochs": 2}}),
                          "--out", str(out / "ffw.mask"), *every], ("ffw.mask", "ffw.json")),
        # the cross-paper matrix's FFW on the NLU baseline (gates on the fine-tuned classifier, the negation
        # attribute read from the hypotheses: no bias model needed)
        Kind("FFW on the NLU baseline", "maskbench.steps.nlu.ffw",
             lambda out: ["--model-dir", str(inputs / "ft"), "--train", str(nli / "train.parquet"),
                          "--attribute", "negation", "--seed", "1", "--threads", "1",
                          "--settings", json.dumps({"max_gate_epochs": 4, "gate_patience": 0, "batch_size": 8,
                                                    "gamma": 10, "head": {"max_epochs": 2}}),
                          "--examples", json.dumps({"gate_train": 48, "gate_val": 24, "readout": 24}),
                          "--max-length", "64", "--out", str(out / "n.mask"), *every], ("n.mask", "n.json")),
        # an evaluation job of two models on two sets (four parts, each staged when scored; 6 + 24 batches a model, so
        # the last set starts after 60 % of the lines), and one of two masks
        Kind("evaluation", "maskbench.steps.nlu.evaluate",
             lambda out: ["--model-dirs", str(inputs / "ft"), str(inputs / "init"), "--rows", "a", "b",
                          "--out-dirs", str(out / "a"), str(out / "b"), *evaluated],
             ("b/train.json",), progress=EVALUATE_PROGRESS, resumes_at="finished set", window=0.6),
        Kind("evaluation under masks", "maskbench.steps.nlu.evaluate_masks",
             lambda out: ["--model-dir", str(inputs / "ft"), "--masks", str(inputs / "m50.mask"),
                          str(inputs / "m50.mask"), "--rows", "a", "b", "--out-dirs", str(out / "a"), str(out / "b"),
                          *evaluated],
             ("b/train.json",), progress=EVALUATE_PROGRESS, resumes_at="finished set", window=0.6),
        # paper D's evaluation of a (dataset, level, seed): the vanilla model and two magnitude masks of it, a
        # record per run (each staged when scored; the third run starts after about two thirds of the lines)
        Kind("paper D evaluation", "maskbench.steps.vision.evaluate",
             lambda out: ["--runs", json.dumps([{"name": "vanilla", "model_dir": str(inputs / "vision" / "model"),
                                                 "mask": None}] +
                                               [{"name": f"magnitude {s}", "model_dir": str(inputs / "vision" / "model"),
                                                 "mask": str(inputs / "vision" / f"sparsity~{s}.mask")}
                                                for s in ("0.5", "0.9")]),
                          "--head-train", str(inputs / "vision" / "train.safetensors"),
                          "--test", str(inputs / "vision" / "val.safetensors"),
                          "--biased-test", str(inputs / "vision" / "train.safetensors"),
                          "--head-settings", json.dumps({"max_epochs": 3}), "--seed", "1", "--threads", "1",
                          "--out", str(out / "eval.json")],
             ("eval.json",), progress=VISION_EVALUATE_PROGRESS, resumes_at="finished run", window=0.6),
        Kind("FFW on the gender encoder", "maskbench.steps.gender.ffw",
             lambda out: ["--model", str(encoder), "--corpus", str(corpus), "--seed", "1", "--threads", "1",
                          "--settings", json.dumps({"max_gate_epochs": 4, "gate_patience": 0, "batch_size": 16,
                                                    "head": {"max_epochs": 2}}),
                          "--out", str(out / "g.mask"), "--summary", str(out / "g.json"), *every],
             ("g.mask", "g.json")),
        # paper B's masked-LM bias measures of the encoder: CrowS-Pairs (24 pairs, 4 sequences a batch: most of the
        # lines) and StereoSet, a record each (staged when computed)
        Kind("paper B masked-LM bias", "maskbench.steps.gender.lm_bias",
             lambda out: ["--model", str(encoder), "--head", str(inputs / "gender" / "head.safetensors"),
                          "--crows", str(REPO / "data/gender/crows_pairs_anonymized.csv"), "--crows-max-pairs", "24",
                          "--stereoset-intra", str(inputs / "gender" / "intrasentence.jsonl"),
                          "--batch-size", "4", "--max-length", "24", "--seed", "1", "--threads", "1",
                          "--out", str(out / "lm_bias.json"), "--details", str(out / "lm_bias_details.json")],
             ("lm_bias.json", "lm_bias_details.json"), progress=LM_BIAS_PROGRESS, resumes_at="finished benchmark",
             window=0.6),
        Kind("paper B pruning", "maskbench.steps.gender.debias",
             lambda out: ["--model", str(encoder), "--corpus", str(corpus), "--seed", "1", "--threads", "1",
                          "--spec", json.dumps({"granularity": "block", "block": 8, "layers": "last",
                                                "mode": "token", "score_learning_rate": 1.0}),
                          "--hparams", json.dumps({"epochs": 4, "batch_size": 16, "max_length": 24, "warmup": 0}),
                          "--out", str(out / "b.mask"), "--summary", str(out / "b.json"), *every],
             ("b.mask", "b.json")),
    ]}


def prepare_inputs(inputs: Path, nli_only: bool = False) -> None:
    """The tiny inputs every kind reads: NLI data, a fine-tuned and an initial model, a paper C mask, image splits
    with a trained MLP, a gender corpus and encoder (in this process: the kills are in the step processes);
    ``nli_only``: the NLI data alone (all fine-tuning needs)."""
    from maskbench.steps.nlu import finetune, srnet_mask_train

    nli = nli_data(inputs / "nli")
    if nli_only:
        return
    for name, lr in (("ft", 1e-3), ("init", 0.0)):
        assert finetune.main(["--train", str(nli / "train.parquet"), "--model-spec", json.dumps(TINY_BERT),
                              "--hparams", json.dumps({**FT_HP, "epochs": 1, "learning_rate": lr}), "--seed", "1",
                              "--out-dir", str(inputs / name), "--threads", "1"]) == 0
    assert srnet_mask_train.main([
        "--start-dir", str(inputs / "ft"), "--train", str(nli / "train.parquet"), "--dev", str(nli / "dev.parquet"),
        "--seed", "1", "--threads", "1", "--hparams", json.dumps({**SEARCH_HP, "epochs": 1}),
        "--spec", json.dumps({"sparsity": 0.5, "select_after": 0.5, "eval_every": 4, "reset_every": 4}),
        "--out-mask", str(inputs / "m50.mask"), "--summary", str(inputs / "m50.json")]) == 0
    vision_inputs(inputs / "vision", epochs=2)
    gender_inputs(inputs / "gender")


def run_harness(work: Path, plan: dict[str, tuple[str, ...]], seed: int = 0) -> dict:
    """Kill every kind of ``plan`` (kind -> the signals of its kills, in order) and return the record."""
    inputs = work / "inputs"
    if not (inputs / "gender" / "encoder").is_dir():
        prepare_inputs(inputs, nli_only=set(plan) == {"fine-tuning"})
    every = kinds(inputs)
    rng = random.Random(seed)
    kills: list[Kill] = []
    straight_seconds = {}
    for name, signals in plan.items():
        kind = every[name]
        folder = work / re.sub(r"\W+", "_", name)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        started = time.perf_counter()
        code, lines, _ = run_step(kind, folder / RUN, folder / "straight.log")
        straight_seconds[name] = round(time.perf_counter() - started, 1)
        if code != 0:
            raise RuntimeError(f"{name}: the uninterrupted run failed ({code}); see {folder / 'straight.log'}")
        (folder / RUN).rename(folder / "straight")
        for i, signame in enumerate(signals):
            kills.append(kill_once(kind, folder / "straight", lines, folder, f"kill{i}", signame, rng))
            print(f"kill harness: {name} {signame} at progress line {kills[-1].at_line}: exit {kills[-1].exit_code}, "
                  f"resumed from {kills[-1].resumed_from}, bit-equal {kills[-1].bit_equal}", flush=True)
    return record(kills, every, straight_seconds, seed)


def record(kills: list[Kill], every: dict[str, Kind], straight_seconds: dict, seed: int) -> dict:
    from maskbench.runtime import git_commit

    per_kind = {}
    for name in dict.fromkeys(k.kind for k in kills):
        mine = [k for k in kills if k.kind == name]
        per_kind[name] = {
            "resumes_mid_run": every[name].resumes,
            "resumes_at": every[name].resumes_at if every[name].resumes else None,
            "kills": len(mine),
            "sigterm": sum(k.signal == "SIGTERM" for k in mine),
            "sigkill": sum(k.signal == "SIGKILL" for k in mine),
            "stopped_with_exit_75": sum(k.exit_code == 75 for k in mine),
            "nothing_complete_after_kill": sum(not k.complete_looking for k in mine),
            "resumed": sum(k.resumed_from is not None for k in mine),
            "restarted": sum(k.resumed_from is None for k in mine),
            "bit_equal": sum(k.bit_equal and not k.states_left for k in mine),
            "uninterrupted_seconds": straight_seconds[name],
        }
    return {"what": "real step processes on tiny CPU data killed at seeded random training steps and rerun "
                    "(tests/kill_harness.py)",
            "commit": git_commit(REPO), "seed": seed, "date": time.strftime("%Y-%m-%d"),
            "checkpoint_every": int(CHECKPOINT_EVERY),
            "kills": len(kills), "kinds": per_kind,
            "runs": [{k: v for k, v in vars(kill).items()} for kill in kills]}

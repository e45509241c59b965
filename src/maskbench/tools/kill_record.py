"""Entry point: what a kill costs, and the kill harness's reliability table, as docs/cluster.md shows them.

    python -m maskbench.tools.kill_record --record results/benchmarks/kill_harness.json --measure-save
    python -m maskbench.tools.kill_record --record results/benchmarks/kill_harness.json --page docs/cluster.md

``--measure-save`` times the save of a BERT-base-sized resume state on this machine's CPU and disk and adds it to
the record (``bert_base_save``): ``transformers.BertConfig()`` at random initialisation (no download) with a
classification head, AdamW's two moments for every parameter (one optimiser step on zero gradients fills them),
the LR schedule and every random generator — what ``training.loop.fit`` saves — written by ``resume.write_state`` (checksum,
fsync, rename) and read back by ``resume.read_state`` (checksum verified, then loaded). ``--page`` writes the
section ``kill_reliability`` from the record (the harness's kills per step kind, tests/kill_harness.py), the save
measurement and the paper config's ``compute.checkpoint_every`` with the step rates of
``results/benchmarks/gpu_check.json`` (measured on the card it names) and ``maskbench.workflow.cluster_requests`` (the A100
assumption).
"""

from __future__ import annotations

import json
import os
import platform
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from maskbench.cli import parse_dataclass, setup_logging
from maskbench.report.captions import stamp
from maskbench.report.readme import replace_section, wrap_prose
from maskbench.runtime import atomic_write_text
from maskbench.steps import run_step

SECTION = "kill_reliability"
REPO = Path(__file__).resolve().parents[3]


@dataclass
class KillRecordArgs:
    record: Path = field(metadata={"help": "the kill harness's record (tests/test_kills.py --kills writes it)"})
    measure_save: bool = field(default=False, metadata={"help": "time a BERT-base state's save and add it"})
    page: Path | None = field(default=None, metadata={"help": "Markdown page to write the section into"})
    paper_config: Path = field(default=REPO / "configs/paper.yaml", metadata={"help": "for checkpoint_every"})
    gpu_check: Path = field(default=REPO / "results/benchmarks/gpu_check.json", metadata={
        "help": "measured GPU step rates"})
    profile: Path = field(default=REPO / "profiles/slurm/config.yaml", metadata={
        "help": "the SLURM profile (its --signal=USR1@SECONDS warning)"})


def measure_bert_base_save(folder: Path) -> dict:
    """Size and seconds of one save (and one verified load) of a BERT-base fine-tuning's resume state."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from maskbench.resume import read_state, rng_state, write_state
    from maskbench.training.optim import linear_schedule

    load = os.getloadavg()[0]  # the one-minute load average: whether other work shared the machine
    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(num_labels=3))
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    for param in model.parameters():
        param.grad = torch.zeros_like(param)
    optimizer.step()
    scheduler = linear_schedule(optimizer, 100, 1000)
    state = {"step": 1000, "epoch": 1, "batches_in_epoch": 1000, "curve": [], "running": [], "logged": {},
             "model": model.state_dict(), "outside": [], "optimizer": optimizer.state_dict(),
             "scheduler": scheduler.state_dict(), "epoch_generator": torch.Generator().get_state(),
             "rng": rng_state(), "key": "", "extra": None}
    path = folder / ".model.resume.pt"
    started = time.perf_counter()
    write_state(path, state)
    saved = time.perf_counter() - started
    size = path.stat().st_size
    started = time.perf_counter()
    read_state(path)
    loaded = time.perf_counter() - started
    return {"parameters": sum(p.numel() for p in model.parameters()), "bytes": size,
            "save_seconds": round(saved, 2), "verified_load_seconds": round(loaded, 2),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores at load average {load:.1f} before it, local disk",
            "torch": torch.__version__}


def paper_rates(gpu_check: Path) -> list[tuple[str, float, str]]:
    from maskbench.workflow.cluster_requests import GPU_STEPS_PER_S

    rates = []
    if gpu_check.is_file():
        sections = json.loads(gpu_check.read_text())["sections"]
        card = (sections.get("environment", {}).get("device_name") or "GPU").removeprefix("NVIDIA ").split(" ")[0]
        for section, what in (("finetune_steps", "fine-tuning"), ("mask_search_steps", "mask search")):
            rate = sections.get(section, {}).get("variants", {}).get("fp32", {}).get("steps_per_s")
            if rate:
                shown = gpu_check.relative_to(REPO) if gpu_check.is_relative_to(REPO) else gpu_check.name
                rates.append((f"{what}, fp32, one {card} (measured, `{shown}`)", rate, "measured"))
    rates.append(("BERT-base step, fp32, one A100 (`maskbench.workflow.cluster_requests.GPU_STEPS_PER_S`, an assumption)",
                  GPU_STEPS_PER_S, "assumed"))
    return rates


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def warning_seconds(profile: Path) -> int:
    """The seconds before a job's limit at which the profile asks Slurm for SIGUSR1 (``--signal=USR1@N``)."""
    extra = str(yaml.safe_load(profile.read_text())["default-resources"].get("slurm_extra", ""))
    found = re.search(r"--signal=(?:B:)?USR1@(\d+)", extra)
    if not found:
        raise ValueError(f"{profile}: field 'default-resources.slurm_extra' is {extra!r}, without --signal=USR1@N")
    return int(found.group(1))


def section(record: dict, paper_config: Path, gpu_check: Path, profile: Path) -> str:
    every = int(yaml.safe_load(paper_config.read_text())["compute"]["checkpoint_every"])
    warning = warning_seconds(profile)
    # the one-line stamp (maskbench.report.captions.stamp); the long record, with the commands that made it and any
    # later check, is docs/provenance.md#kill_harness
    lines = [stamp(record["commit"], [record["commit"]], "pytest tests/test_kills.py --kills -s", record["date"],
                   "kill_harness"), ""]
    save = record.get("bert_base_save")
    lines += ["**What a kill costs at paper scale** (`configs/paper.yaml`: a state every "
              f"`compute.checkpoint_every` = {every:,} optimiser steps):", ""]
    lines += ["| step rate | steps/s | a SIGKILL loses at most (interval × step time) |", "|---|---:|---:|"]
    for what, rate, _ in paper_rates(gpu_check):
        lines.append(f"| {what} | {rate:.1f} | {every:,} steps = {minutes(every / rate)} |")
    lines.append("")
    if save:
        lines += [f"One resume state of a BERT-base classifier with AdamW's moments (`BertConfig()`, "
                  f"{save['parameters']:,} parameters): **{save['bytes'] / 1e9:.2f} GB**, saved (checksum, fsync, "
                  f"rename) in **{save['save_seconds']:.1f} s** and read back verified in "
                  f"{save['verified_load_seconds']:.1f} s on {save['machine']} (torch {save['torch']}; measured "
                  f"once, not a benchmark). Two are kept while a job runs (the state and the one before), "
                  f"{2 * save['bytes'] / 1e9:.1f} GB beside its output.", ""]
    lines += ["A SIGTERM (a time limit, a pre-emption, `scancel`) costs the step in progress and one save; "
              f"the profile's SIGUSR1 {minutes(warning)} before the limit "
              f"(`{profile.relative_to(REPO) if profile.is_relative_to(REPO) else profile.name}`: "
              f"`--signal=USR1@{warning}`) saves once more, so a limit whose SIGTERM save is cut off by SIGKILL "
              f"loses at most those {minutes(warning)}; a SIGKILL with no warning (a node failure, an out-of-memory "
              "kill) loses the steps since the last periodic state, the table above.", ""]
    lines += ["**Reliability**: real step processes on tiny CPU data (tests/kill_harness.py), each killed once at a "
              "seeded random training step (an evaluation: batch), then run again to the end and compared with an uninterrupted run "
              f"({record['kills']} kills; a state every {record.get('checkpoint_every', 5)} steps, so a SIGKILL "
              "before the first one restarts from step 0)" + (f". {record['notes']}" if record.get("notes") else "")
              + ":", ""]
    lines += ["| step kind | mid-run state | kills (SIGTERM / SIGKILL) | SIGTERM: stopped with its state (exit 75) | "
              "nothing complete-looking left | rerun resumed (from a saved step or the finished sets) | restarted from 0 | "
              "bit-equal to the uninterrupted run |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, kind in record["kinds"].items():
        state = (f"yes ({'finished sets' if kind.get('resumes_at') == 'finished set' else 'saved steps'})"
                 if kind["resumes_mid_run"] else "no (restarts)")
        lines.append(f"| {name} | {state} | {kind['kills']} "
                     f"({kind['sigterm']} / {kind['sigkill']}) | {kind['stopped_with_exit_75']} of "
                     f"{kind['sigterm']} | {kind['nothing_complete_after_kill']} | {kind['resumed']} | "
                     f"{kind['restarted']} | {kind['bit_equal']} of {kind['kills']} |")
    total = {key: sum(k[key] for k in record["kinds"].values())
             for key in ("kills", "sigterm", "sigkill", "stopped_with_exit_75", "nothing_complete_after_kill",
                         "resumed", "restarted", "bit_equal")}
    lines.append(f"| **all** | | {total['kills']} ({total['sigterm']} / {total['sigkill']}) | "
                 f"{total['stopped_with_exit_75']} of {total['sigterm']} | {total['nothing_complete_after_kill']} | "
                 f"{total['resumed']} | {total['restarted']} | {total['bit_equal']} of {total['kills']} |")
    return wrap_prose("\n".join(lines)) + "\n"


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    args = parse_dataclass(KillRecordArgs, argv, "python -m maskbench.tools.kill_record", __doc__.splitlines()[0])
    if not args.record.is_file():
        raise SystemExit(f"maskbench.tools.kill_record: error: {args.record}: no such file (the kill harness's "
                         "record: pytest tests/test_kills.py --kills -s writes it)")
    record = json.loads(args.record.read_text())
    if args.measure_save:
        with tempfile.TemporaryDirectory(dir=args.record.parent) as tmp:
            record["bert_base_save"] = measure_bert_base_save(Path(tmp))
        atomic_write_text(args.record, json.dumps(record, indent=1) + "\n")
        print(json.dumps(record["bert_base_save"]))
    if args.page is not None:
        body = section(record, args.paper_config, args.gpu_check, args.profile)
        atomic_write_text(args.page, replace_section(args.page.read_text(encoding="utf-8"), SECTION, body,
                                                     str(args.page)))
    return 0


if __name__ == "__main__":
    run_step(main)

"""Write docs/facts.json: what the pages may state about the project's plans, from the plans themselves.

    python -m maskbench.tools.facts [--cost]

Every config's job count (`snakemake -n --cores 2` in an empty folder; the paper config with `--profile
profiles/slurm`, the files its user supplies stood in by empty ones), and with `--cost` the paper config's GPU-hours
at each recorded GPU check's rates (`python -m maskbench.tools.cost --fresh --gpu-check <record> --json -`, about a
minute each) and, at the first check's rates, each paper's target alone (the verdict table's price of a claim at the
paper's scale). Everything else the docs' consistency check compares prose with (seeds, time limits, wall times, GPU
checks, the cost sheet) is read from the configs and records when the check runs (``maskbench.report.facts``); the
docs tests check these job counts against today's plans, so a change to a plan that leaves this file behind fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from maskbench.report.facts import FACTS_FILE, planned_configs

REPO = Path(__file__).resolve().parents[3]
PAPER_USER_FILES = ("data/fever/fever.train.jsonl", "data/fever/fever.dev.jsonl", "data/paws_qqp/train.tsv",
                    "data/paws_qqp/dev_and_test.tsv")
SLURM_ENV = {"MASKBENCH_SLURM_ACCOUNT": "acct", "MASKBENCH_SLURM_PARTITION": "cpu",
             "MASKBENCH_SLURM_GPU_PARTITION": "gpu", "HF_HUB_OFFLINE": "1"}


def place_given_model(config: Path, folder: Path) -> None:
    """What docs/your-model.md's step 2 puts in place, as far as planning reads it: a config whose model was
    fine-tuned elsewhere (``model.init: finetuned``) at a local path plans only with the checkpoint's config.json
    there (its labels are checked while planning); written below ``folder``, naming the training sets' labels."""
    import yaml

    spec = yaml.safe_load(config.read_text(encoding="utf-8"))
    model = spec.get("model") or {}
    if model.get("init") != "finetuned" or not str(model.get("path", "")).startswith("models/"):
        return
    train = next(iter(spec["tasks"].values()))["train"]
    labels = spec["datasets"][train]["labels"]
    target = folder / model["path"]
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(json.dumps({"id2label": dict(enumerate(labels))}), encoding="utf-8")


def planned_total(config: str) -> int:
    """The total of `snakemake -n`'s job stats for ``config``, planned in an empty folder (a given model's
    config.json placed, ``place_given_model``)."""
    with tempfile.TemporaryDirectory() as folder:
        place_given_model(REPO / config, Path(folder))
        args = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "-n", "--directory", folder]
        if config == "configs/paper.yaml":
            for supplied in PAPER_USER_FILES:
                (Path(folder) / supplied).parent.mkdir(parents=True, exist_ok=True)
                (Path(folder) / supplied).touch()
            args += ["--configfile", str(REPO / config), "--profile", str(REPO / "profiles/slurm")]
        else:
            args += ["--cores", "2"] + ([] if config == "config.yaml" else ["--configfile", str(REPO / config)])
        done = subprocess.run(args, capture_output=True, text=True, cwd=folder, env={**os.environ, **SLURM_ENV})
    total = re.search(r"^total\s+(\d+)$", done.stdout.split("Job stats:")[-1], re.M)
    if done.returncode != 0 or total is None:
        raise SystemExit(f"facts: snakemake -n of {config} failed:\n{done.stderr[-2000:]}")
    return int(total.group(1))


def gpu_hours(record: Path, target: str | None = None) -> int:
    """The paper config's total GPU-hours priced at ``record``'s rates (with ``target``: that target's jobs)."""
    done = subprocess.run([sys.executable, "-m", "maskbench.tools.cost", "--configfile", "configs/paper.yaml",
                           "--profile", "profiles/slurm", "--fresh", "--gpu-check", str(record), "--json", "-",
                           *([target] if target else [])],
                          capture_output=True, text=True, cwd=REPO, env={**os.environ, **SLURM_ENV})
    if done.returncode != 0:
        raise SystemExit(f"facts: the cost sheet at {record.name}'s rates failed:\n{done.stderr[-2000:]}")
    return round(json.loads(done.stdout)["total"]["gpu_hours"])


ASSUMED = "assumed (no GPU check)"
PAPER_TARGETS = {"A": "paper_a", "B": "paper_b", "C": "paper_c", "D": "paper_d"}
"""Each paper's target in the paper config: what its tables cost there (the verdict table's last column)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maskbench.tools.facts", description=__doc__.splitlines()[0])
    parser.add_argument("--cost", action="store_true", help="also price the paper config at each GPU check's rates "
                        "and each paper's target at the first check's")
    parser.add_argument("--paper-prices", action="store_true", help="only each paper's target at the first GPU "
                        "check's rates (the verdict table's column), the totals kept")
    args = parser.parse_args(argv)
    path = REPO / FACTS_FILE
    old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    flag = " --cost" if args.cost else " --paper-prices" if args.paper_prices else ""
    out = {"written_by": "python -m maskbench.tools.facts" + flag,
           "jobs": {config: planned_total(config) for config in planned_configs(REPO)},
           "gpu_hours_by_card": old.get("gpu_hours_by_card", {}),
           "gpu_hours_priced_at": old.get("gpu_hours_priced_at", ""),  # the commit whose plan --cost priced
           "gpu_hours_by_paper": old.get("gpu_hours_by_paper", {})}
    if args.cost or args.paper_prices:
        first = REPO / "results/benchmarks/gpu_check.json"
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=REPO).stdout.strip()
        card = json.loads(first.read_text(encoding="utf-8"))["sections"]["environment"]["device_name"]
        out["gpu_hours_by_paper"] = {"priced_with": first.name, "priced_on": card, "priced_at": commit,
                                     **{paper: gpu_hours(first, target) for paper, target in PAPER_TARGETS.items()}}
    if args.cost:
        out["gpu_hours_by_card"] = {p.name: gpu_hours(p)
                                    for p in sorted((REPO / "results/benchmarks").glob("gpu_check*.json"))
                                    if "finetune_steps" in json.loads(p.read_text(encoding="utf-8"))["sections"]}
        # no GPU check: the sheet's assumed rates (maskbench.workflow.cost.assumptions), the cost page's A100 row
        out["gpu_hours_by_card"][ASSUMED] = gpu_hours(REPO / "results/benchmarks/no_such_gpu_check.json")
        out["gpu_hours_priced_at"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                                    text=True, cwd=REPO).stdout.strip()
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"facts: {path.relative_to(REPO)}: " + ", ".join(f"{c} {n}" for c, n in out["jobs"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The paper config in miniature: write inputs in every real source's own layout, run the paper DAG on them, and
measure it (job count, wall time, peak memory per rule kind, what failed).

    python -m maskbench.tools.miniature --workdir /tmp/paper-mini            # inputs, then the whole DAG locally
    python -m maskbench.tools.miniature --workdir /tmp/paper-mini --inputs-only
    python -m maskbench.tools.miniature --workdir /tmp/paper-mini -- paper_a_targets --forcerun table1

The run is `snakemake --configfile configs/paper.yaml configs/paper-miniature.yaml` in ``--workdir`` with
``HF_HOME=<workdir>/hf`` and ``HF_HUB_OFFLINE=1`` (also the datasets and transformers offline switches): every Hub
dataset and model comes from the fixture cache that `maskbench.miniature.hub_cache` writes in the Hub's own
layouts, read by the same loading code a cluster job runs after `python -m maskbench.tools.fetch`. The files a
researcher supplies (FEVER, PAWS-QQP, CIFAR-10-C, CelebA) are written where configs/paper.yaml looks for them, by
`maskbench.miniature.text_sources` and `maskbench.miniature.vision_sources`.

The summary (``<workdir>/<results>/miniature_run.json``, and a markdown table with ``--markdown``) reads the run's
snakemake log and each job's timing line (`maskbench.step_timing`: wall time and the step's peak resident memory).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

from maskbench.overhead import attach_timings, parse_snakemake_log

REPO = Path(__file__).resolve().parents[3]
PAPER_CONFIG = REPO / "configs" / "paper.yaml"
MINIATURE_CONFIG = REPO / "configs" / "paper-miniature.yaml"
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def results_folder() -> str:
    return yaml.safe_load(MINIATURE_CONFIG.read_text(encoding="utf-8"))["results"]


def run_env(workdir: Path, base: dict | None = None) -> dict:
    """The run's environment: the fixture cache as HF_HOME, the Hub offline; this interpreter's folder first on
    PATH (the rules call `python`)."""
    env = dict(os.environ if base is None else base)
    env.pop("MASKBENCH_HF_MIRROR", None)  # the Hub cache, not a mirror, is what this run checks
    path = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    return {**env, **OFFLINE_ENV, "HF_HOME": str(workdir / "hf"), "PATH": path}


def write_inputs(workdir: Path, seed: int = 0) -> dict:
    """Every input of the miniature in its real source's layout, under ``workdir``: the Hub cache, the files a
    researcher supplies, and the corpus where the fetch command (or the `gender_corpus_download` localrule) puts
    News Commentary. Returns what was written."""
    from maskbench.miniature.corpus import write_corpus
    from maskbench.miniature.hub_cache import write_hub_cache
    from maskbench.miniature.text_sources import write_text_sources
    from maskbench.miniature.vision_sources import write_vision_sources
    from maskbench.tools.fetch import corpus_target, read_configs

    workdir.mkdir(parents=True, exist_ok=True)
    config = read_configs([PAPER_CONFIG, MINIATURE_CONFIG])
    corpus = workdir / corpus_target(config, config["gender"]["corpus"]["source"])
    return {"hub_cache": write_hub_cache(workdir / "hf" / "hub", seed=seed),
            "text": write_text_sources(workdir, seed=seed),
            "vision": write_vision_sources(workdir, seed=seed),
            "corpus": str(write_corpus(corpus, REPO / "data" / "gender", seed=seed))}


def fetch_command() -> list[str]:
    """The fetch a cluster user runs on the login node, here without the network: it checks that the cache holds
    every Hub repo and the corpus the two configs ask for, and writes the lock."""
    return [sys.executable, "-m", "maskbench.tools.fetch", "--configfile", str(PAPER_CONFIG), str(MINIATURE_CONFIG),
            "--local-files-only"]


def snakemake_command(workdir: Path, args: list[str], cores: int) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(PAPER_CONFIG), str(MINIATURE_CONFIG), "--cores", str(cores), *args]


def newest_snakemake_log(workdir: Path, after: float) -> Path | None:
    logs = [p for p in (workdir / ".snakemake" / "log").glob("*.snakemake.log") if p.stat().st_mtime >= after]
    return max(logs, key=lambda p: p.stat().st_mtime) if logs else None


def summarize(workdir: Path, log_path: Path) -> dict:
    """Per rule kind: jobs started, finished, failed, the largest wall time and peak memory of its jobs."""
    text = log_path.read_text(errors="replace")
    jobs = parse_snakemake_log(text)
    attach_timings(jobs, workdir)
    failed_ids = set()
    for line in text.splitlines():
        if line.startswith("Error in rule "):
            failed_ids.add(line[len("Error in rule "):].rstrip(":"))
    per_rule: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "finished": 0, "max_wall_s": None,
                                                     "max_peak_rss_mb": None})
    for job in jobs.values():
        row = per_rule[job.rule]
        row["jobs"] += 1
        row["finished"] += job.finished is not None
        wall = job.wall_s
        if wall is not None:
            row["max_wall_s"] = round(max(row["max_wall_s"] or 0.0, wall), 2)
        rss = (job.timing or {}).get("peak_rss_mb")
        if rss is not None:
            row["max_peak_rss_mb"] = max(row["max_peak_rss_mb"] or 0.0, rss)
    for rule, row in per_rule.items():
        row["failed"] = rule in failed_ids
    return {"jobs": sum(r["jobs"] for r in per_rule.values()),
            "finished": sum(r["finished"] for r in per_rule.values()),
            "failed_rules": sorted(failed_ids), "rules": dict(sorted(per_rule.items()))}


def markdown(summary: dict) -> str:
    lines = ["| rule | jobs | finished | longest job (s) | peak RSS (MB) |", "|---|---:|---:|---:|---:|"]
    for rule, row in summary["rules"].items():
        wall = "–" if row["max_wall_s"] is None else f"{row['max_wall_s']:.1f}"
        rss = "–" if row["max_peak_rss_mb"] is None else f"{row['max_peak_rss_mb']:.0f}"
        lines.append(f"| {rule}{' (failed)' if row['failed'] else ''} | {row['jobs']} | {row['finished']} | {wall} | "
                     f"{rss} |")
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m maskbench.tools.miniature", description=__doc__.split("\n\n")[0],
        epilog="Arguments after `--` go to snakemake (targets, --forcerun, --keep-going, --profile ...).")
    parser.add_argument("--workdir", type=Path, required=True, help="the run's folder (inputs, cache, results)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--inputs-only", action="store_true", help="write the inputs and stop")
    parser.add_argument("--no-inputs", action="store_true", help="keep the inputs already in --workdir")
    parser.add_argument("--markdown", action="store_true", help="also print the per-rule table as markdown")
    parser.add_argument("snakemake_args", nargs="*", help="after `--`: passed to snakemake")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    workdir = args.workdir.resolve()
    if not args.no_inputs:
        written = write_inputs(workdir)
        print(f"inputs written under {workdir}: {', '.join(written)}", flush=True)
    if args.inputs_only:
        return 0
    fetched = subprocess.run(fetch_command(), env=run_env(workdir), cwd=workdir)
    if fetched.returncode != 0:
        return fetched.returncode
    started = time.time()
    result = subprocess.run(snakemake_command(workdir, args.snakemake_args, args.cores), env=run_env(workdir))
    wall = time.time() - started
    log_path = newest_snakemake_log(workdir, started)
    if log_path is None:
        print("no snakemake log was written: snakemake stopped before planning (see its output above)",
              file=sys.stderr)
        return result.returncode or 1
    summary = {"command": " ".join(["python -m maskbench.tools.miniature", *(argv or sys.argv[1:])]),
               "returncode": result.returncode, "wall_s": round(wall, 1), "cores": args.cores,
               "snakemake_log": str(log_path.relative_to(workdir)), **summarize(workdir, log_path)}
    out = workdir / results_folder() / "miniature_run.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"{summary['finished']} of {summary['jobs']} jobs finished in {wall:.0f} s; failed rules: "
          f"{', '.join(summary['failed_rules']) or 'none'}; summary {out}")
    if args.markdown:
        print(markdown(summary))
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())

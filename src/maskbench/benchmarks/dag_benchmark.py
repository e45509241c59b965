"""Entry point: how long `snakemake -n` takes to plan each config, and how that grows with the number of jobs.

    python -m maskbench.benchmarks.dag_benchmark --out results/benchmarks/dag.json [--repeats 3] [--scales 1 10]

For each config (the default, configs/paper.yaml through profiles/slurm with placeholder site facts, ...) and each
scale (the config's `seeds` repeated so that there are `scale` times as many: a synthetic grid of that many more
jobs), runs `snakemake -n` in an empty folder (`repeats` times at scale 1, once above) and records the planned jobs and the median wall
time of the whole command (Python start-up, snakemake's import, reading and checking the config, building the
DAG). Run from the repository's root (it plans ./Snakefile).

Beside each config at scale 1 it plans snakemake's floor for the same number of jobs: a one-rule workflow (each
job one output, no input, one shell line; shell commands printed when the config goes through the SLURM profile,
which prints them) planned the same way, interleaved with the config's plans. What a config costs above that floor
is the workflow's own; the floor is what no change to the workflow's rules removes at that job count.
"""

from __future__ import annotations

import json
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from maskbench.cli import parse_dataclass, setup_logging
from maskbench.runtime import atomic_path
from maskbench.steps import run_step
from maskbench.workflow.cost.plan import user_files  # a config's local files the repository does not ship

log = logging.getLogger("maskbench.benchmarks.dag_benchmark")

TARGET_S = {"configs/paper.yaml": 5.0}
SITE = {"MASKBENCH_SLURM_ACCOUNT": "account", "MASKBENCH_SLURM_PARTITION": "cpu",
        "MASKBENCH_SLURM_GPU_PARTITION": "gpu"}


@dataclass
class DagBenchmarkArgs:
    out: Path = field(metadata={"help": "JSON to write (atomically)"})
    configs: list[str] = field(default_factory=lambda: ["config.yaml", "configs/paper.yaml"],
                               metadata={"help": "config files to plan (relative to the repository)"})
    scales: list[int] = field(default_factory=lambda: [1, 10], metadata={"help": "seed multipliers"})
    repeats: int = field(default=3, metadata={"help": "plans per config at scale 1 (median reported)"})
    repo: Path = field(default=Path("."), metadata={"help": "the repository (its Snakefile is planned)"})

    def __post_init__(self):
        if self.repeats < 1 or not self.scales or min(self.scales) < 1:
            raise ValueError("--repeats and every --scales value must be at least 1")


def scaled_config(config: dict, scale: int) -> dict:
    """The config with `scale` times its seeds (new seeds numbered after the largest)."""
    seeds = [int(s) for s in config["seeds"]]
    extra = [max(seeds) + 1 + i for i in range(len(seeds) * (scale - 1))]
    return {**config, "seeds": seeds + extra}


def planned_total(output: str) -> int:
    found = re.findall(r"^total\s+(\d+)$", output, re.M)
    if not found:
        raise RuntimeError(f"snakemake -n printed no job total:\n{output[-2000:]}")
    return int(found[-1])


def floor_snakefile(jobs: int) -> str:
    """A one-rule workflow of exactly `jobs` jobs: `jobs - 1` jobs of rule `step` (one output each, no input) and the
    target rule `all` that asks for their outputs."""
    if jobs < 2:
        raise ValueError(f"the floor workflow needs at least 2 jobs, got {jobs}")
    return (f"rule all:\n    input: expand('out/{{i}}.txt', i=range({jobs - 1}))\n\n"
            "rule step:\n    output: 'out/{i}.txt'\n    shell: 'touch {output}'\n")


def plan_once(snakefile: Path, workdir: Path, options: list[str]) -> tuple[float, int]:
    cmd = [sys.executable, "-m", "snakemake", "-n", "--snakefile", str(snakefile), "--directory", str(workdir),
           *options]
    env = {**os.environ, **SITE, "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])}
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=workdir)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return seconds, planned_total(done.stdout + done.stderr)


def plan_floor(workdir: Path, jobs: int, print_commands: bool) -> float:
    """Seconds `snakemake -n` takes on the one-rule workflow of `jobs` jobs (checked to plan exactly that many)."""
    workdir.mkdir()
    (workdir / "Snakefile").write_text(floor_snakefile(jobs))
    seconds, planned = plan_once(workdir / "Snakefile", workdir, ["--printshellcmds"] if print_commands else [])
    if planned != jobs:
        raise RuntimeError(f"the floor workflow planned {planned} jobs, not {jobs}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    args = parse_dataclass(DagBenchmarkArgs, argv, "python -m maskbench.benchmarks.dag_benchmark", __doc__.splitlines()[0])
    repo = args.repo.resolve()
    rows = []
    with tempfile.TemporaryDirectory(prefix="dagbench-") as scratch:
        for name in args.configs:
            path = repo / name
            config = yaml.safe_load(path.read_text())
            profile = repo / "profiles/slurm" if "paper" in Path(name).stem else None
            for scale in args.scales:
                scaled = scaled_config(config, scale)
                configfile = Path(scratch) / f"{Path(name).stem}-x{scale}.yaml"
                configfile.write_text(yaml.safe_dump(scaled, sort_keys=False))
                options = ["--configfile", str(configfile)] + (["--profile", str(profile)] if profile else [])
                times, jobs, floor_times = [], None, []
                for i in range(args.repeats if scale == 1 else 1):  # a larger grid: planned once
                    workdir = Path(scratch) / f"{Path(name).stem}-x{scale}-{i}"
                    workdir.mkdir()
                    for placeholder in user_files(config, repo):
                        (workdir / placeholder).parent.mkdir(parents=True, exist_ok=True)
                        (workdir / placeholder).touch()
                    seconds, jobs = plan_once(repo / "Snakefile", workdir, options)
                    times.append(seconds)
                    if scale == 1:  # snakemake's floor at the same job count, interleaved with the config's plans
                        floor_times.append(plan_floor(Path(scratch) / f"{Path(name).stem}-floor-{i}", jobs,
                                                      print_commands=profile is not None))
                median = statistics.median(times)
                row = {"config": name, "profile": "profiles/slurm" if profile else None, "seed_scale": scale,
                       "seeds": len(scaled["seeds"]), "jobs": jobs,
                       "seconds": round(median, 3), "all_seconds": [round(t, 3) for t in times],
                       "ms_per_job": round(1000 * median / jobs, 2)}
                if floor_times:
                    floor = statistics.median(floor_times)
                    row.update({"floor_seconds": round(floor, 3),
                                "floor_all_seconds": [round(t, 3) for t in floor_times],
                                "ratio_to_floor": round(median / floor, 2)})
                if scale == 1 and name in TARGET_S:
                    row["target_s"] = TARGET_S[name]
                    row["meets_target"] = median <= TARGET_S[name]
                    row["floor_meets_target"] = row["floor_seconds"] <= TARGET_S[name]
                log.info("%s x%d: %d jobs planned in %.2f s", name, scale, jobs, median)
                rows.append(row)
    record = {"command": "snakemake -n (whole command: interpreter, import, config checks, DAG)",
              "floor": "snakemake -n of a one-rule workflow with the config's job count (floor_snakefile), "
                       "shell commands printed when the config's plan uses the SLURM profile",
              "repeats": args.repeats, "load_average": list(os.getloadavg()), "plans": rows}
    with atomic_path(args.out) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    run_step(main)

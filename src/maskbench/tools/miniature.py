"""The paper config in miniature: write inputs in every real source's own layout, run the paper DAG on them, and
measure it (job count, wall time, peak memory per rule kind, what failed).

    python -m maskbench.tools.miniature --workdir /tmp/paper-mini            # inputs, then the whole DAG locally
    python -m maskbench.tools.miniature --workdir /tmp/paper-mini --inputs-only
    python -m maskbench.tools.miniature --workdir /tmp/paper-mini -- --forcerun table1
    python -m maskbench.tools.miniature --workdir /tmp/paper-mini --no-inputs --slurm-one-per-rule

The run is `snakemake --configfile configs/paper.yaml configs/paper-miniature.yaml` in ``--workdir`` with
``HF_HOME=<workdir>/hf`` and ``HF_HUB_OFFLINE=1`` (also the datasets and transformers offline switches): every Hub
dataset and model comes from the fixture cache that `maskbench.miniature.hub_cache` writes in the Hub's own
layouts, read by the same loading code a cluster job runs after `python -m maskbench.steps fetch`. The files a
researcher supplies (FEVER, PAWS-QQP, CIFAR-10-C, CelebA) are written where configs/paper.yaml looks for them, by
`maskbench.miniature.text_sources` and `maskbench.miniature.vision_sources`.

The summary (``<workdir>/<results>/miniature_run.json``, and a markdown table with ``--markdown``) reads the run's
snakemake log and each job's timing line (`maskbench.workflow.step_timing`: wall time and the step's peak resident memory).

``--slurm-one-per-rule`` (after a complete local run, with a SLURM cluster's `env.sh` sourced): on a copy of the run
(``<workdir>-slurm``), one job of every rule kind again, through `profiles/slurm` with the paper config's own resource requests (`snakemake --force` on
one job per rule that goes through the executor, chosen by `maskbench.workflow.forced_jobs` so that forcing them reruns the
fewest other jobs), then the cluster's own records of what each job asked for (sacct's
requested TRES, time limit and partition) in ``<workdir>/<results>/miniature_slurm.json``. On the one-node cluster of
tests/slurm/start-cluster.sh, start it with a GPU node's shape (MASKBENCH_SLURM_NODE_CPUS=16
MASKBENCH_SLURM_NODE_MEM_MB=131072 MASKBENCH_SLURM_NODE_GPUS=1) so that those requests can be met.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import yaml

from maskbench.report.captions import stamp
from maskbench.report.readme import replace_section, wrap_prose, write_provenance
from maskbench.runtime import git_commit, git_output
from maskbench.workflow.forced_jobs import choose_jobs, forced_counts, local_rules, planned_outputs
from maskbench.workflow.overhead import attach_timings, parse_snakemake_log

REPO = Path(__file__).resolve().parents[3]
PAPER_CONFIG = REPO / "configs" / "paper.yaml"
MINIATURE_CONFIG = REPO / "configs" / "paper-miniature.yaml"
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
# what decides a run's outputs: a run counts for a commit only when these are that commit's
CODE_PATHS = ("src", "rules", "schemas", "configs", "config.yaml", "Snakefile")
DOCS_SECTION = "paper_miniature"


def code_state() -> dict:
    """HEAD's short hash, and whether the code paths are HEAD's (no uncommitted change)."""
    changed = git_output(REPO, "status", "--porcelain", "--", *CODE_PATHS)
    return {"commit": git_commit(REPO), "code_is_commit": changed is not None and changed.strip() == ""}


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
    from maskbench.config_files import read_configs
    from maskbench.miniature.corpus import write_corpus
    from maskbench.miniature.hub_cache import write_hub_cache
    from maskbench.miniature.text_sources import write_text_sources
    from maskbench.miniature.vision_sources import write_vision_sources
    from maskbench.tracks.gender.workflow_plan import corpus_target

    workdir.mkdir(parents=True, exist_ok=True)
    config = read_configs([PAPER_CONFIG, MINIATURE_CONFIG])
    corpus = workdir / corpus_target(config, config["gender"]["corpus"]["source"])
    # 40 rows a split: paper D's FFW on MNLI cuts three parts of at least 10 pairs from the training split
    return {"hub_cache": write_hub_cache(workdir / "hf" / "hub", rows=40, seed=seed),
            "text": write_text_sources(workdir, seed=seed),
            # 8 a class: Corrupted CIFAR-10's test part (a fifth of its test folder) keeps aligned images
            "vision": write_vision_sources(workdir, n_per_class=8, seed=seed),
            "corpus": str(write_corpus(corpus, REPO / "data" / "gender", seed=seed))}


def fetch_command() -> list[str]:
    """The fetch a cluster user runs on the login node, here without the network: it checks that the cache holds
    every Hub repo and the corpus the two configs ask for, and writes the lock."""
    return [sys.executable, "-m", "maskbench.steps", "fetch", "--configfile", str(PAPER_CONFIG), str(MINIATURE_CONFIG),
            "--local-files-only"]


def snakemake_command(workdir: Path, args: list[str], cores: int) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(PAPER_CONFIG), str(MINIATURE_CONFIG), "--cores", str(cores), *args]


def newest_snakemake_log(workdir: Path, after: float) -> Path | None:
    logs = [p for p in (workdir / ".snakemake" / "log").glob("*.snakemake.log") if p.stat().st_mtime >= after]
    return max(logs, key=lambda p: p.stat().st_mtime) if logs else None


def summarize(workdir: Path, log_path: Path) -> dict:
    """Per rule kind: jobs started, finished, failed attempts (a job the executor resubmitted and that then finished
    counts in both), the largest wall time and peak memory of its jobs. A rule failed when one of its jobs never
    finished."""
    text = log_path.read_text(errors="replace")
    jobs = parse_snakemake_log(text)
    attach_timings(jobs, workdir)
    per_rule: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "finished": 0, "failed_attempts": 0,
                                                     "max_wall_s": None, "max_peak_rss_mb": None})
    for line in text.splitlines():
        if line.startswith("Error in rule "):
            per_rule[line[len("Error in rule "):].rstrip(":")]["failed_attempts"] += 1
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
    for row in per_rule.values():
        row["failed"] = row["finished"] < row["jobs"]
    return {"jobs": sum(r["jobs"] for r in per_rule.values()),
            "finished": sum(r["finished"] for r in per_rule.values()),
            "failed_rules": sorted(rule for rule, row in per_rule.items() if row["failed"]),
            "failed_attempts": sum(r["failed_attempts"] for r in per_rule.values()),
            "rules": dict(sorted(per_rule.items()))}


def markdown(summary: dict) -> str:
    lines = ["| rule | jobs | finished | longest job (s) | peak RSS (MB) |", "|---|---:|---:|---:|---:|"]
    for rule, row in summary["rules"].items():
        wall = "–" if row["max_wall_s"] is None else f"{row['max_wall_s']:.1f}"
        rss = "–" if row["max_peak_rss_mb"] is None else f"{row['max_peak_rss_mb']:.0f}"
        lines.append(f"| {rule}{' (failed)' if row['failed'] else ''} | {row['jobs']} | {row['finished']} | {wall} | "
                     f"{rss} |")
    return "\n".join(lines)


def copy_run(workdir: Path, to: Path) -> None:
    """A copy of a finished run (inputs, cache, results, snakemake's records; modification times kept, so that only
    forced jobs are out of date), leaving the run itself as it is."""
    if to.exists():
        shutil.rmtree(to)
    shutil.copytree(workdir, to, symlinks=True,
                    ignore=shutil.ignore_patterns("locks", "incomplete", "log", "auxiliary", "slurm-logs"))


def slurm_one_per_rule(workdir: Path, cores: int) -> int:
    """Force one job of every rule kind through profiles/slurm on a copy of the finished local run
    (``<workdir>-slurm``); record what the cluster was asked for, per job (sacct), and which rules' jobs finished."""
    local = workdir
    workdir = workdir.with_name(workdir.name + "-slurm")
    copy_run(local, workdir)
    env = run_env(workdir)
    for name in ("MASKBENCH_SLURM_ACCOUNT", "MASKBENCH_SLURM_PARTITION", "MASKBENCH_SLURM_GPU_PARTITION"):
        if not env.get(name):
            print(f"--slurm-one-per-rule: ${name} is not set (source the cluster's env.sh)", file=sys.stderr)
            return 1
    plan = subprocess.run(snakemake_command(workdir, ["-n", "--forceall"], cores), env=env, capture_output=True,
                          text=True)
    if plan.returncode != 0:
        print(plan.stderr[-3000:], file=sys.stderr)
        return plan.returncode
    plan_jobs = planned_outputs(plan.stdout)
    chosen = choose_jobs(plan_jobs, skip=local_rules(REPO / "rules"))
    targets = [path for picked in chosen.values() for outputs, _ in picked for path in outputs]
    expected = forced_counts(plan_jobs, chosen)
    started = time.time()
    result = subprocess.run(snakemake_command(
        workdir, ["--profile", str(REPO / "profiles" / "slurm"), "--slurm-logdir", str(workdir / "slurm-logs"),
                  "--force", *targets, "--keep-going"], cores), env=env)
    wall = time.time() - started
    log_path = newest_snakemake_log(workdir, started)
    summary = summarize(workdir, log_path) if log_path else {"jobs": 0, "finished": 0, "failed_rules": [],
                                                             "rules": {}}
    acct = subprocess.run(["sacct", "-X", "-n", "-P", "-S", time.strftime("%Y-%m-%dT%H:%M:%S",
                                                                           time.localtime(started - 5)),
                           "-o", "JobID,JobName,Partition,Timelimit,AllocTRES,State,Comment,SubmitLine"],
                          capture_output=True, text=True, env=env)
    # the submit line last: the sbatch command the plugin ran (its GPU request among its options)
    records = [dict(zip(("job", "name", "partition", "timelimit", "alloc_tres", "state", "comment", "submit_line"),
                        line.split("|", 7), strict=False)) for line in acct.stdout.splitlines() if line.strip()]
    run_id = re.search(r"SLURM run ID: (\S+)", log_path.read_text(errors="replace")) if log_path else None
    if run_id:  # this run's submissions only (the plugin names every job of a run by its run ID)
        records = [r for r in records if r["name"] in (run_id.group(1), f"maskbench_{run_id.group(1)}")]
    report = {**code_state(), "returncode": result.returncode, "wall_s": round(wall, 1), "rules_forced": sorted(chosen),
              "snakemake_log": str(log_path) if log_path else None,
              "jobs_expected": sum(expected.values()),
              "sbatch_records": records, **summary}
    out = local / results_folder() / "miniature_slurm.json"
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"SLURM: {summary['finished']} of {summary['jobs']} jobs finished in {wall:.0f} s "
          f"({len(chosen)} rule kinds forced, {len(records)} sbatch submissions in the cluster's records); "
          f"failed rules: {', '.join(summary['failed_rules']) or 'none'}; {out}")
    return result.returncode


def minutes(seconds: float) -> str:
    """A wall time to the second: 539.9 -> "9 min 0 s" (rounded once, so never "8 min 60 s")."""
    whole, rest = divmod(round(seconds), 60)
    return f"{whole} min {rest} s"


def docs_section(run: dict, slurm: dict | None) -> str:
    """The measured section of docs/testing.md, from a run's summary (and its SLURM rerun's)."""
    if not run.get("code_is_commit"):
        raise ValueError(f"the run at {run.get('commit')} had uncommitted code changes: commit, run again, then write")
    rules = [r for r in run["rules"] if r != "all"]
    lines = [stamp(run["commit"], [run["commit"]], run["command"], run["date"], DOCS_SECTION),
             wrap_prose(f"{run['cores']} CPU cores, nothing else running. {run['finished']} of {run['jobs']} jobs "
                        f"finished ({len(rules)} rule kinds) in {minutes(run['wall_s'])}; rules with a failed job: "
                        f"{', '.join(run['failed_rules']) or 'none'}."), "", markdown(run)]
    if slurm is not None:
        records = slurm["sbatch_records"]
        states = ", ".join(f"{n} {state}" for state, n in sorted(Counter(r["state"] for r in records).items()))
        gpus = sum("--gpus=" in r.get("submit_line", "") for r in records)
        lines += ["", wrap_prose(f"*Through `profiles/slurm` with the paper config's requests (`--slurm-one-per-rule`, commit "
                      f"`{slurm['commit']}`, on the one-node cluster shaped as a GPU node): "
                      f"{len(slurm['rules_forced'])} rule kinds forced, {slurm['finished']} of {slurm['jobs']} "
                      f"jobs finished in {minutes(slurm['wall_s'])}; {len(records)} sbatch submissions in the "
                      f"cluster's records ({states}; {gpus} with `--gpus=1`); failed attempts "
                      f"{slurm['failed_attempts']}, each resubmitted (the profile's `retries: 1`); rules with a job "
                      f"that never finished: {', '.join(slurm['failed_rules']) or 'none'}.*")]
    return "\n".join(lines)


def write_docs(page: Path, workdir: Path) -> None:
    folder = workdir / results_folder()
    run = json.loads((folder / "miniature_run.json").read_text(encoding="utf-8"))
    slurm_path = folder / "miniature_slurm.json"
    slurm = json.loads(slurm_path.read_text(encoding="utf-8")) if slurm_path.is_file() else None
    write_provenance(page.resolve().parents[1], DOCS_SECTION,
                     f"Measured from the outputs of commit `{run['commit']}` on {run['date']}: `{run['command']}`.")
    page.write_text(replace_section(page.read_text(encoding="utf-8"), DOCS_SECTION, docs_section(run, slurm),
                                    str(page)), encoding="utf-8")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m maskbench.tools.miniature", description=__doc__.split("\n\n")[0],
        epilog="Arguments after `--` go to snakemake (targets, --forcerun, --keep-going, --profile ...).")
    parser.add_argument("--workdir", type=Path, required=True, help="the run's folder (inputs, cache, results)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--inputs-only", action="store_true", help="write the inputs and stop")
    parser.add_argument("--no-inputs", action="store_true", help="keep the inputs already in --workdir")
    parser.add_argument("--markdown", action="store_true", help="also print the per-rule table as markdown")
    parser.add_argument("--slurm-one-per-rule", action="store_true",
                        help="after a complete local run: one job of every rule kind again through profiles/slurm")
    parser.add_argument("--write-docs", type=Path, default=None, metavar="PAGE",
                        help="write the finished run's measured section into PAGE (docs/testing.md) and stop")
    parser.add_argument("snakemake_args", nargs="*", help="after `--`: passed to snakemake")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    workdir = args.workdir.resolve()
    if args.write_docs is not None:
        write_docs(args.write_docs, workdir)
        return 0
    if not args.no_inputs:
        written = write_inputs(workdir)
        print(f"inputs written under {workdir}: {', '.join(written)}", flush=True)
    if args.inputs_only:
        return 0
    if args.slurm_one_per_rule:
        return slurm_one_per_rule(workdir, args.cores)
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
               **code_state(), "date": time.strftime("%Y-%m-%d"), "returncode": result.returncode, "wall_s": round(wall, 1), "cores": args.cores,
               "snakemake_log": str(log_path.relative_to(workdir)), **summarize(workdir, log_path)}
    out = workdir / results_folder() / "miniature_run.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    if result.returncode != 0 and summary["jobs"] == 0:
        print(f"snakemake stopped before any job (exit code {result.returncode}): see its output above",
              file=sys.stderr)
    print(f"{summary['finished']} of {summary['jobs']} jobs finished in {wall:.0f} s; failed rules: "
          f"{', '.join(summary['failed_rules']) or 'none'}; summary {out}")
    if args.markdown:
        print(markdown(summary))
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())

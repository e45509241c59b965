"""The SLURM profile on a real cluster: the smoke DAG through `profiles/slurm` on the one-node cluster of
tests/slurm/start-cluster.sh (skipped without one), and the GPU requests of the profile's plan.

    tests/slurm/start-cluster.sh /var/lib/maskbench-slurm && . /var/lib/maskbench-slurm/env.sh
    pytest -m slurm -s      # -s shows the run's figures (jobs, wall time)
"""

import collections
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_workflow import REPO, planned_jobs, write_config

from maskbench.step_timing import read_timing

PROFILE = REPO / "profiles/slurm"
SLURM_ENV = ("MASKBENCH_SLURM_ACCOUNT", "MASKBENCH_SLURM_PARTITION", "MASKBENCH_SLURM_GPU_PARTITION")
# the rules that train a model, a mask or a subnetwork (each declares gpu=compute.gpus_per_training_job) and the
# evaluations (the profile gives them one GPU): the only jobs the profile sends to the GPU partition
TRAINING = re.compile(r"^(finetune_baseline|finetune_debiased|finetune_theta_ft\w*|train_bias_model|search_mask|"
                      r"srnet_(?!report$)\w+|search_mask_sweep|finetune_sweep|"
                      r"train_vision|ffw|gender_prune_frozen|gender_train_weights|gender_task(_original)?|gender_mlm_head)$")
EVALUATION = re.compile(r"^(evaluate_((masks_|srnets_|sweep_masks_|sweep_models_)?(mnli|qqp|fever)|vision)|"
                        r"gender_seat(_original)?|gender_lm_bias(_original)?)$")
RUN_LIMIT_S = 3600  # the SLURM smoke run takes ~15 min here; the limit only catches a hang


def env_with(extra=None) -> dict:
    # the rules call `python`: make it this interpreter (the one with maskbench installed); jobs inherit it
    # (the plugin submits with --export=ALL)
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", **(extra or {})}


def snakemake_cmd(workdir, *args) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--profile", str(PROFILE), *args]


def run(cmd, timeout, env=None, cwd=None) -> subprocess.CompletedProcess:
    """A command guarded by `timeout -s KILL` (the executor plugin ignores SIGTERM while it waits on sacct)."""
    return subprocess.run(["timeout", "-s", "KILL", str(timeout), *map(str, cmd)], capture_output=True, text=True,
                          env=env or env_with(), cwd=cwd, timeout=timeout + 30)


def planned_resources(stdout: str) -> list[tuple[str, bool, dict]]:
    """The jobs of a dry run: (rule, local, resources); the jobs of a group job are printed indented."""
    jobs = []
    for block in stdout.split("\n\n"):
        head = re.search(r"^\s*(local)?rule (\w+):$", block, re.M)
        if not head:
            continue
        line = re.search(r"^\s+resources: (.*)$", block, re.M)
        resources = dict(item.split("=", 1) for item in line.group(1).split(", ")) if line else {}
        jobs.append((head.group(2), bool(head.group(1)), resources))
    return jobs


def test_profile_requests_gpus_only_on_training_and_evaluation_jobs(tmp_path):
    """The plan of the SLURM profile with one GPU per training job (as in the paper config): a GPU and the GPU
    partition on every training and evaluation job, neither on data preparation, bias LR models or reports."""
    config = write_config(tmp_path, lambda c: c["compute"].update(gpus_per_training_job=1))
    env = env_with({"MASKBENCH_SLURM_ACCOUNT": "acct", "MASKBENCH_SLURM_PARTITION": "cpu",
                    "MASKBENCH_SLURM_GPU_PARTITION": "gpu"})
    result = run(snakemake_cmd(tmp_path, "-n", "--configfile", config), timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    planned = planned_resources(result.stdout)
    assert len(planned) == planned_jobs(result.stdout)["total"]
    jobs = [(rule, res) for rule, local, res in planned if not local]
    on_gpu = {rule for rule, res in jobs if int(res.get("gpu", 0)) > 0}
    assert on_gpu == {rule for rule, _ in jobs if TRAINING.match(rule) or EVALUATION.match(rule)}
    assert {"finetune_baseline", "search_mask", "srnet_a_mask_poe", "evaluate_masks_qqp"} <= on_gpu
    assert {"prepare_dataset", "bias_overlap_mnli", "evaluate_bias_mnli", "table1"}.isdisjoint(on_gpu)
    for rule, res in jobs:
        gpus = int(res.get("gpu", 0))
        assert gpus == (1 if rule in on_gpu else 0), (rule, res)
        assert res["slurm_partition"] == ("gpu" if rule in on_gpu else "cpu"), (rule, res)
        assert res["slurm_account"] == "acct", (rule, res)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("runuser") is None, reason="needs root and runuser")
def test_start_cluster_refuses_to_run_without_root(tmp_path):
    result = subprocess.run(["runuser", "-u", "nobody", "--", str(REPO / "tests/slurm/start-cluster.sh"),
                             str(tmp_path / "cluster")], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "must run as root" in result.stderr
    assert not (tmp_path / "cluster").exists()


def gpuless_set_resources() -> list[str]:
    """No GPU for the rules the profile gives one (the evaluations) on a cluster without GPUs. A --set-resources on
    the command line replaces the profile's whole `set-resources`: the partitions of its other entries fall back to
    MASKBENCH_SLURM_PARTITION, the same partition on the one-node cluster, and no CPUs per GPU are asked."""
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    return ["--set-resources", *(f"{rule}:gpu=0" for rule, res in profile["set-resources"].items() if "gpu" in res)]


# the rules snakemake runs itself: `localrule: True` (tables, figures, the wheel download; a dry run does not always
# mark them) and `all`, which runs no command; every other job goes through sbatch
LOCAL_RULES = {"all", "table1", "figure_id_ood", "dataset_summary", "bias_models_table", "mask_report", "srnet_report",
               "vision_report", "fetch_mnist_wheel", "tradeoff_report", "gender_report"}
# the smoke DAG's every job is short: beyond the profile's groups, the test groups the rest (a config with hours-long
# jobs keeps them apart), all paper C runs of a task together and every evaluation together
GROUP_OF = ((re.compile(r"^srnet_(?!report$)\w+$"), "srnet"),
            (re.compile(r"^(evaluate_\w+|mask_benchmark)$"), "evaluate"),
            (re.compile(r"^gender_(?!report$)\w+$"), "gender"))
JOBS_PER_GROUP_JOB = 12


def smoke_group_args(planned: collections.Counter, node_cpus: int) -> list[str]:
    """--groups / --group-components for the smoke DAG: the profile's lists (given on the command line, these replace
    them) and one group per other rule, or the shared groups of GROUP_OF; up to JOBS_PER_GROUP_JOB jobs of a group in
    one submission; --cores: a group job asks for at most the node's CPUs."""
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    groups = dict(item.split("=") for item in profile["groups"])
    components = {g: int(n) for g, n in (item.split("=") for item in profile["group-components"])}
    for rule in planned:
        if rule not in groups:
            groups[rule] = next((name for pattern, name in GROUP_OF if pattern.match(rule)), rule)
    jobs_per_group = collections.Counter()
    for rule, group in groups.items():
        jobs_per_group[group] += planned.get(rule, 0)
    for group, jobs in jobs_per_group.items():
        components.setdefault(group, min(jobs, JOBS_PER_GROUP_JOB) or 1)
    return ["--groups", *(f"{rule}={group}" for rule, group in groups.items()),
            "--group-components", *(f"{group}={n}" for group, n in components.items()), "--cores", str(node_cpus)]


def squeue(run_name: str) -> list[list[str]]:
    result = run(["squeue", "-h", f"--name={run_name}", "-o", "%i|%k|%T"], timeout=30)
    return [line.split("|") for line in result.stdout.splitlines() if line.count("|") == 2]


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory):
    """The smoke DAG through `snakemake --profile profiles/slurm`, its jobs grouped (smoke_group_args); while it
    runs, the group job of the baseline fine-tunings is cancelled with `scancel` once one of them has started (the
    profile's `retries: 1` must resubmit it)."""
    if not os.environ.get("MASKBENCH_SLURM_CLUSTER"):
        pytest.skip("no SLURM cluster: MASKBENCH_SLURM_CLUSTER is unset (as root: tests/slurm/start-cluster.sh DIR "
                    "and . DIR/env.sh)")
    for tool in ("sinfo", "sbatch", "squeue", "sacct", "scancel"):
        if shutil.which(tool) is None:
            pytest.skip(f"no SLURM cluster: `{tool}` is not installed")
    missing = [name for name in SLURM_ENV if not os.environ.get(name)]
    if missing:
        pytest.skip(f"no SLURM cluster: {', '.join(missing)} unset")
    # the cluster is said to be up: a node that is not is a failure, not a skip
    nodes = run(["sinfo", "-h", "-N", "-o", "%N|%t|%c"], timeout=30)
    assert nodes.returncode == 0 and re.search(r"\|(idle|mix|alloc)\|", nodes.stdout), nodes.stdout + nodes.stderr
    node_cpus = min(int(line.split("|")[2]) for line in nodes.stdout.split())

    workdir = tmp_path_factory.mktemp("slurm_smoke")
    args = ["--configfile", str(REPO / "configs/smoke.yaml"), "--slurm-init-seconds-before-status-checks", "5",
            *gpuless_set_resources()]
    plan = run(snakemake_cmd(workdir, "-n", *args), timeout=300)
    assert plan.returncode == 0, plan.stderr[-3000:]
    jobs = planned_resources(plan.stdout)
    # the node has no GPU: the smoke config's gpus_per_training_job is 0 and the evaluations' GPU is taken off
    assert not [(rule, res) for rule, _, res in jobs if int(res.get("gpu", 0))]
    planned_remote = [rule for rule, local, _ in jobs if not local and rule not in LOCAL_RULES]
    args += smoke_group_args(collections.Counter(planned_remote), node_cpus)

    log_path = workdir / "snakemake.log"
    start = time.monotonic()
    started_at = datetime.now() - timedelta(minutes=1)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["timeout", "-s", "KILL", str(RUN_LIMIT_S), *snakemake_cmd(workdir, *args)],
                                stdout=log, stderr=subprocess.STDOUT, env=env_with(), cwd=workdir)
    run_name, cancelled = None, None
    try:
        while proc.poll() is None:
            time.sleep(2)
            if run_name is None:
                found = re.search(r"SLURM run ID: (\S+)", log_path.read_text())
                run_name = found and found.group(1)
            if run_name and cancelled is None:
                for jobid, comment, state in squeue(run_name):
                    # the group job of the baseline fine-tunings (comment rule_<group>_<rules>), once the command of
                    # one of them has started (the shell creates its log)
                    if state != "RUNNING" or comment != "rule_finetune_baseline_finetune_baseline":
                        continue
                    if list((workdir / "results/logs/finetune_baseline").glob("*/seed~*.log")):
                        run(["scancel", jobid], timeout=30)
                        cancelled = (jobid, comment)
                        break
        proc.wait(timeout=RUN_LIMIT_S + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
    elapsed = time.monotonic() - start
    log = log_path.read_text()
    # a failed job's SLURM log is copied into the run's log (show-failed-logs); the inner snakemake in it runs its
    # jobs as local rules
    own_lines = re.sub(r"^Logfile [^\n]*:\n={80}\n.*?^={80}$", "", log, flags=re.M | re.S)
    local = set(re.findall(r"^localrule (\w+):$", own_lines, re.M))
    remote = collections.Counter(planned_remote)
    assert proc.returncode == 0, log[-5000:]
    assert run_name and cancelled, (run_name, cancelled, log[-3000:])

    acct = run(["sacct", "-X", "-n", "-P", f"--name={run_name}", "-S", started_at.strftime("%Y-%m-%dT%H:%M:%S"),
                "-E", "now", "-o", "JobID,JobName,State,Comment"], timeout=60)
    assert acct.returncode == 0, acct.stderr
    records = [line.split("|", 3) for line in acct.stdout.splitlines() if line.strip()]
    summary = {"command": "snakemake --profile profiles/slurm --configfile configs/smoke.yaml "
                          "--slurm-init-seconds-before-status-checks 5 " + " ".join(args[4:]),
               "jobs_planned": len(jobs), "jobs_through_sbatch": sum(remote.values()),
               "sbatch_submissions": len(records), "wall_time_s": round(elapsed), "cancelled": cancelled[1]}
    (workdir / "slurm_run.json").write_text(json.dumps(summary, indent=1))
    print(f"\nSLURM smoke run: {json.dumps(summary)}")
    return {"workdir": workdir, "log": log, "own_lines": own_lines, "remote": remote, "local": local,
            "records": records, "cancelled": cancelled}


@pytest.mark.slurm
def test_every_job_of_the_smoke_dag_completed_through_sbatch_in_group_jobs(slurm_run):
    records, remote, log = slurm_run["records"], slurm_run["remote"], slurm_run["log"]
    # what ran locally is what the rules declare local (reports, plots, the wheel download) and nothing else
    assert slurm_run["local"] <= LOCAL_RULES, slurm_run["local"]
    # every submission completed but the cancelled one, and every planned job finished, as many per rule as planned
    completed = [r for r in records if r[2] == "COMPLETED"]
    assert len(records) == len(completed) + 1
    finished = collections.Counter(re.findall(r"^Finished jobid: \d+ \(Rule: (\w+)\)$", slurm_run["own_lines"],
                                              re.M))
    assert {rule: finished[rule] for rule in remote} == dict(remote)
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    assert sorted(submitted, key=int) == sorted((r[0] for r in records), key=int)
    assert "localrule all:" in log
    # grouped: the data preparation and LR bias models in one submission, 12 fine-tunings in another, ...
    assert len(completed) <= sum(remote.values()) / 3, (len(completed), sum(remote.values()))
    groups = collections.Counter(comment for _, _, _, comment in completed)
    assert groups["rule_finetune_debiased_finetune_debiased"] == -(-remote["finetune_debiased"] // JOBS_PER_GROUP_JOB)


@pytest.mark.slurm
def test_the_jobs_of_a_group_job_fork_from_its_warm_server(slurm_run):
    """A group job of 4 or more jobs starts a server on its node (maskbench.warm.jobs_run_here); each job's log says
    whether it ran there. The fine-tunings with a debiasing loss run 12 and 6 to a group job: every one of them warm."""
    logs = slurm_run["workdir"] / "results/logs"
    timings = {path: read_timing(path.read_text()) for path in logs.rglob("*.log") if "slurm" not in path.parts}
    debiased = [t for path, t in timings.items() if path.is_relative_to(logs / "finetune_debiased")]
    assert len(debiased) == slurm_run["remote"]["finetune_debiased"]
    assert all(t is not None and t["warm"] for t in debiased), debiased
    assert sum(1 for t in timings.values() if t and t["warm"]) >= sum(slurm_run["remote"].values()) / 2


@pytest.mark.slurm
def test_a_job_cancelled_with_scancel_is_resubmitted_and_finishes(slurm_run):
    jobid, comment = slurm_run["cancelled"]
    states = {r[0]: (r[2], r[3]) for r in slurm_run["records"]}
    assert states[jobid][0].startswith("CANCELLED")
    retried = [j for j, (state, c) in states.items() if c == comment and j != jobid]
    assert len(retried) == 1 and int(retried[0]) > int(jobid) and states[retried[0]][0] == "COMPLETED"
    # the run reports the group job as failed, with the cancelled job's log, which ends with Slurm's cancellation
    assert re.search(rf"Error in group finetune_baseline\n\s+log: \S+/{jobid}\.log", slurm_run["log"])
    assert re.search(rf"\*\*\* JOB {jobid} ON \S+ CANCELLED AT", slurm_run["log"])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slurm
@pytest.mark.slow
def test_outputs_equal_those_of_a_local_run(slurm_run, smoke_run):
    cluster, local = slurm_run["workdir"] / "results", smoke_run / "results"
    # every table, byte for byte (Table 1, Table 5, bias models, pruning rates, sparsity and timing curves)
    tables = sorted(p.relative_to(local) for p in (local / "tables").rglob("*") if p.is_file())
    assert len(tables) >= 10
    assert {str(t): digest(cluster / t) for t in tables} == {str(t): digest(local / t) for t in tables}
    pd.testing.assert_frame_equal(pd.read_csv(cluster / "tables/table1.csv"), pd.read_csv(local / "tables/table1.csv"))
    # every evaluation's metrics and every mask
    evals = sorted(p.relative_to(local) for p in local.rglob("eval/**/*.json") if "vision" not in p.parts)
    assert len(evals) > 50
    for rel in evals:
        assert json.loads((cluster / rel).read_text())["metrics"] == json.loads((local / rel).read_text())["metrics"], rel
    # the vision track's records (one JSON per dataset level and seed), but where each process ran
    vision = sorted(p.relative_to(local) for p in (local / "vision").rglob("eval/*.json"))
    assert vision
    for rel in vision:
        ours, theirs = (json.loads((root / rel).read_text())["runs"] for root in (cluster, local))
        assert [{k: v for k, v in r.items() if k != "provenance"} for r in ours] == \
            [{k: v for k, v in r.items() if k != "provenance"} for r in theirs], rel
    masks = sorted(p.relative_to(local) for p in local.rglob("*.mask"))
    assert len(masks) >= 12
    assert {str(m): digest(cluster / m) for m in masks} == {str(m): digest(local / m) for m in masks}

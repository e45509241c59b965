"""The cluster requests derived from a config's step counts (src/maskbench/workflow/cluster_requests.py), on hand-made
numbers, and the planning-time refusal of a runtime below a job's estimate."""

import os
import subprocess
import sys

import pytest
import yaml
from test_workflow import REPO

from maskbench.workflow import cluster_requests as cr
from maskbench.workflow.cluster_requests import Estimate, check_requests, estimates
from maskbench.workflow.cost import assumptions


def small_config(**compute):
    # a made-up source of 3,200 training examples, batch 32, 2 epochs -> 200 steps
    return {"datasets": {"tr": {"source": "made:up"}},
            "tasks": {"t": {"train": "tr", "eval_sets": {}}},
            "finetune": {"epochs": 2, "batch_size": 32},
            "mask_search": {"hparams": {"epochs": 3, "batch_size": 128}},
            "compute": {"train_runtime_min": 60, "checkpoint_every": 0, **compute}}


@pytest.fixture
def made_up(monkeypatch):
    monkeypatch.setattr(cr, "TRAIN_SIZES", {("made:up", None, None): 3_200})
    monkeypatch.setattr(cr, "GPU_STEPS_PER_S", 0.1)  # 10 s a unit step (no measured curves passed)


def test_steps_times_cost_times_margin(made_up):
    found = {e.family.split(" ")[0]: e for e in estimates(small_config())}
    fine, search = found["finetune_baseline/finetune_debiased"], found["search_mask"]
    # 3,200 / 32 x 2 = 200 steps of 1 unit: 200 x 10 s x 1.5 = 3,000 s = 50 min
    assert (fine.steps, fine.units_per_step, fine.minutes) == (200, 1.0, 50)
    # 3,200 / 128 x 3 = 75 steps of 4 units: 75 x 40 s x 1.5 = 4,500 s = 75 min, above the 60 requested
    assert (search.steps, search.units_per_step, search.minutes) == (75, 4.0, 75)
    assert search.problem() == ("compute.train_runtime_min: 60 min is below the derived 75 min of search_mask (t) "
                                "(75 steps), which does not resume; ask for at least 75")
    with pytest.raises(ValueError, match=r"^compute.train_runtime_min: 60 min is below the derived 75 min"):
        check_requests(small_config())
    check_requests(small_config(train_runtime_min=75))


def test_a_resuming_job_may_ask_less_within_the_profiles_submissions(made_up):
    # checkpointing on: 60 min requested for a 75-min job is 2 submissions (the profile retries once)
    check_requests(small_config(checkpoint_every=10))
    # 30 min would need 3
    with pytest.raises(ValueError, match=r"compute.train_runtime_min: 30 min needs 3 submissions of search_mask"):
        check_requests(small_config(checkpoint_every=10, train_runtime_min=30))


def test_the_cap_applies_only_to_a_job_that_resumes():
    long = Estimate("x", "k", 1440, steps=9 * 60 * 60 * 30, units_per_step=1.0, resumes=True)  # 30 h x 1.5
    assert (long.minutes, long.request, long.submissions) == (2700, 1440, 2)
    assert Estimate("x", "k", 1440, long.steps, 1.0, resumes=False).request == 2700


def test_paper_config_estimates_at_the_recorded_checks_rates(tmp_path):
    """The recorded check's rates, written out here (the H200's at d5e41da): a step's seconds on the line through 32
    and 128 rows, at the family's precision and kind of step."""
    import json

    check = tmp_path / "gpu_check.json"
    check.write_text(json.dumps({"sections": {
        "environment": {"device_name": "NVIDIA H200"},
        "finetune_steps": {"status": "ok", "device": "cuda", "batch": 32, "seq": 128, "variants": {
            "fp32": {"steps_per_s": 17.269}, "bf16": {"steps_per_s": 26.482}, "fp16_scaler": {"steps_per_s": 26.852},
            "fp32_b128": {"steps_per_s": 5.083}, "bf16_b128": {"steps_per_s": 23.615}}},
        "mask_search_steps": {"status": "ok", "device": "cuda", "batch": 32, "seq": 128, "variants": {
            "fp32": {"steps_per_s": 14.978}, "bf16": {"steps_per_s": 15.11}, "fp32_b128": {"steps_per_s": 5.127},
            "bf16_b128": {"steps_per_s": 13.322}}}}}))
    curves = assumptions.recorded_curves(check)
    config = yaml.safe_load((REPO / "configs/paper.yaml").read_text())
    found = {e.family: e for e in estimates(config, curves)}
    # paper B (fp16; frozen-weight pruning at the search's rate, fp16 read as bf16): 24,600 steps of 2 x 128 rows
    # trained plus their forward pass: per row (1/13.322 - 1/15.11) / 96 s, fixed 1/15.11 - 32 x that; at 256 rows
    # 0.086908 s x 4/3 x 24,600 x 1.5 / 60 = 71.3 -> 72 min
    gender = found["gender_prune_frozen/gender_train_weights (paper B)"]
    assert (gender.steps, gender.minutes, gender.requested) == (24_600, 72, 780)
    # QQP's mask-training sweep (paper C, fp32, batch 32): 8 x 11,371 x 7 steps x 1/14.978 s x 1.5 = 1,063 min,
    # within the 24-h request: one submission
    qqp = found["srnet_mask_train (qqp, 8 sparsities in turn)"]
    assert (qqp.steps, qqp.minutes, qqp.request, qqp.submissions) == (636_776, 1063, 1063, 1)
    # paper A's fine-tuning (fp16 at 32 rows): 36,816 steps / 26.852 x 1.5 = 34.3 -> 35 min
    assert found["finetune_baseline/finetune_debiased (mnli)"].minutes == 35
    check_requests(config, curves=curves)
    found = {e.family: e for e in estimates(config)}  # no curves: the assumed 9 steps/s of an fp32 unit step
    assert found["gender_prune_frozen/gender_train_weights (paper B)"].minutes == 729  # 24,600 x 10.67 / 9 x 1.5


def test_only_the_jobs_a_run_executes_are_held_to_their_requests(made_up):
    # search_mask (t) needs 75 min against 60 requested and does not resume; the fine-tuning fits
    finetune, search = ("finetune_baseline", {"task": "t", "seed": "1"}), ("search_mask", {"task": "t", "seed": "1"})
    check_requests(small_config(), jobs=[finetune, ("prepare_dataset", {"dataset": "tr"})])
    check_requests(small_config(), jobs=[("search_mask", {"task": "other", "seed": "1"})])
    with pytest.raises(ValueError, match=r"^compute.train_runtime_min: 60 min is below the derived 75 min of "
                                         r"search_mask \(t\)"):
        check_requests(small_config(), jobs=[finetune, search])


def hub_config(tmp_path):
    """configs/real.yaml reading MNLI's training set from the Hub (paper A's 392,702 pairs), checkpointing every 100
    steps: 2 fine-tuning epochs (36 min at the recorded check's fp32 rate) fit its 60-min request, 6 mask-search
    epochs (73,632 steps / 14.978 x 1.5 = 123 min) do not fit the profile's two submissions."""
    config = yaml.safe_load((REPO / "configs/real.yaml").read_text())
    config["results"] = "results/hub"
    config["datasets"]["mnli_train"] = {
        "task": "mnli", "source": "hf:nyu-mll/glue", "config": "mnli", "split": "train", "revision": "main",
        "columns": {"id": "idx", "text_a": "premise", "text_b": "hypothesis", "label": "label"},
        "label_map": {"0": "entailment", "1": "neutral", "2": "contradiction"},
        "labels": ["entailment", "neutral", "contradiction"]}
    config["finetune"]["epochs"] = 2
    config["mask_search"]["hparams"]["epochs"] = 6
    path = tmp_path / "hub.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


MASK = "results/hub/nlu/mnli/minilm-l6/masks/method~movement_sigmoid/loss~ce/bias~none/seed~1.mask"
REFUSAL = ("compute.train_runtime_min: 60 min needs 3 submissions of search_mask (mnli) (derived 123 min, 73,632 "
           "steps); the SLURM profile retries a job 1 time(s): ask for at least 62")


def run(tmp_path, *args, path=None):
    env = {**os.environ, "MASKBENCH_WARM": "0", "MASKBENCH_SLURM_ACCOUNT": "acct", "MASKBENCH_SLURM_PARTITION": "cpu",
           "MASKBENCH_SLURM_GPU_PARTITION": "gpu", "HF_HUB_OFFLINE": "1",
           "PATH": os.pathsep.join([*(path or []), os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
    return subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory",
                           str(tmp_path), *args, "--configfile", str(hub_config(tmp_path))], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env=env)


def test_a_local_run_of_a_hub_config_is_not_held_to_cluster_runtimes(tmp_path):
    """A local run (here --touch: a real run's planning and start, no step executed) has no time limit: the mask
    search's 205 min against the 60 requested stops nothing (it stopped every local plan and run before)."""
    result = run(tmp_path, "--touch", "--cores", "1", MASK)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "search_mask" in result.stdout + result.stderr and REFUSAL not in result.stdout + result.stderr
    assert (tmp_path / "results/hub/.maskbench-config").read_text() == "hub.yaml\n"  # the run started


def test_a_cluster_run_is_refused_before_its_first_submission_for_a_job_it_will_execute(tmp_path):
    """Through profiles/slurm, on a machine whose Slurm commands only record that they were called: the run that
    would execute the mask search stops in one line before anything is submitted."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("sbatch", "squeue", "sacct", "scontrol", "sinfo", "scancel", "srun", "sacctmgr", "sshare"):
        (fake / name).write_text(f'#!/bin/sh\necho "{name} $*" >> "{fake}/calls"\nexit 1\n')
        (fake / name).chmod(0o755)
    result = run(tmp_path, "--profile", str(REPO / "profiles/slurm"), MASK, path=[str(fake)])
    assert result.returncode != 0
    assert REFUSAL in result.stderr.splitlines(), result.stderr[-3000:]
    calls = (fake / "calls").read_text() if (fake / "calls").exists() else ""
    assert "sbatch" not in calls and not (tmp_path / "results").exists()

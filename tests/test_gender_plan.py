"""Paper B's workflow plan (maskbench.tracks.gender.workflow_plan): the runs and files the gender rules build and
the settings each step gets, on a hand-written config."""

import subprocess
import sys
from pathlib import Path

import pytest

from maskbench.tracks.gender.workflow_plan import GenderPlan, GenderRun, debias_spec, grid_runs

SRC = Path(__file__).resolve().parents[1] / "src"


def config(**gender):
    """A small validated-looking config: two seeds, one granularity x two layer modes frozen, heads unfrozen, one
    debias-only grid point and one objectives row."""
    base = {
        "model": {"name": "tiny", "path": "hub/tiny"},
        "corpus": {"source": "generate:10", "heldout": 5, "seed": 3, "mixed": 2},
        "seat": {"tests": ["sent-weat6", "sent-weat8b"], "n_samples": 500, "seed": 1},
        "objective": {"variant": "paper_b", "alpha": 0.2, "beta": 0.8},
        "pruning": {"score_learning_rate": 0.5, "threshold_end": 0.1, "hparams": {"epochs": 2}},
        "debias_only": {"hparams": {"epochs": 1}},
        "runs": {
            "frozen": {"granularities": ["block8"], "layers": ["last", "all"], "modes": ["token"]},
            "unfrozen": {"granularities": ["head"], "layers": ["all"], "modes": ["sentence"]},
            "debias_only": {"layers": ["intermediate"], "modes": ["token"]},
            "objectives": {"kaneko_row": {"kind": "debias_only", "layers": "all", "mode": "token",
                                          "objective": {"variant": "kaneko", "batching": "context_debias"}}},
        },
    }
    return {"seeds": [1, 2], "compute": {"checkpoint_every": 7}, "gender": base | gender}


def test_the_grids_expand_in_order_and_the_rows_follow():
    plan = GenderPlan(config(), "res")
    assert [(r.kind, r.granularity, r.layers, r.mode, r.seed, r.objective) for r in plan.runs] == [
        ("frozen", "block8", "last", "token", 1, None), ("frozen", "block8", "last", "token", 2, None),
        ("frozen", "block8", "all", "token", 1, None), ("frozen", "block8", "all", "token", 2, None),
        ("unfrozen", "head", "all", "sentence", 1, None), ("unfrozen", "head", "all", "sentence", 2, None),
        ("debias_only", None, "intermediate", "token", 1, None), ("debias_only", None, "intermediate", "token", 2, None),
        ("debias_only", None, "all", "token", 1, "kaneko_row"), ("debias_only", None, "all", "token", 2, "kaneko_row")]
    # a kind the config leaves out plans nothing
    runs = {"frozen": {"granularities": ["head"], "layers": ["all"], "modes": ["token", "sentence"]}}
    assert len(grid_runs({"runs": runs}, [1, 2, 3], "b")) == 6


def test_each_run_knows_its_files():
    plan = GenderPlan(config(performance={"tasks": {"nli": {}}}, lm_bias={"head": "fit"}), "res")
    frozen, trained, row = plan.runs[0], plan.runs[4], plan.runs[8]
    assert frozen.folder == "frozen/block8/layers~last/mode~token"
    assert frozen.out == frozen.marker == "res/gender/tiny/frozen/block8/layers~last/mode~token/seed~1.mask"
    assert frozen.summary == "res/gender/tiny/frozen/block8/layers~last/mode~token/seed~1.json"
    assert frozen.seat == "res/gender/tiny/frozen/block8/layers~last/mode~token/seed~1.seat.json"
    assert frozen.tasks == {"nli": "res/gender/tiny/frozen/block8/layers~last/mode~token/seed~1.task~nli.json"}
    assert frozen.lm == "res/gender/tiny/frozen/block8/layers~last/mode~token/seed~1.lm.json"
    assert trained.out == "res/gender/tiny/unfrozen/head/layers~all/mode~sentence/seed~1"
    assert trained.marker == "res/gender/tiny/unfrozen/head/layers~all/mode~sentence/seed~1/train_summary.json"
    assert row.folder == "debias_only/layers~all/mode~token/objective~kaneko_row"
    assert row.marker == "res/gender/tiny/debias_only/layers~all/mode~token/objective~kaneko_row/seed~1/train_summary.json"
    assert row.evaluations == [row.seat, row.tasks["nli"], row.lm]
    assert row.record()["objective"] == "kaneko_row" and "objective" not in frozen.record()
    assert frozen.record() == {"kind": "frozen", "granularity": "block8", "layers": "last", "mode": "token", "seed": 1,
                               "summary": frozen.summary, "seat": frozen.seat, "tasks": frozen.tasks, "lm": frozen.lm}


def test_a_run_is_found_by_its_folder_and_seed_or_its_summary():
    plan = GenderPlan(config(), "res")
    row = plan.runs[9]
    assert plan.run("debias_only/layers~all/mode~token/objective~kaneko_row", "2") is row
    assert plan.run_writing(row.summary) is row
    with pytest.raises(KeyError, match="no planned run frozen/head/layers~all/mode~token/seed~1"):
        plan.run("frozen/head/layers~all/mode~token", 1)
    with pytest.raises(KeyError, match="no planned run writes"):
        plan.run_writing("res/gender/tiny/frozen/head/layers~all/mode~token/seed~1.json")
    assert plan.folders("unfrozen", "debias_only") == ["unfrozen/head/layers~all/mode~sentence",
                                                       "debias_only/layers~intermediate/mode~token",
                                                       "debias_only/layers~all/mode~token/objective~kaneko_row"]
    assert len(plan.folders()) == 5


def test_specs_merge_the_objective_the_pruning_and_the_grid_point():
    plan = GenderPlan(config(), "res")
    frozen, unfrozen, only, row = plan.runs[0], plan.runs[4], plan.runs[6], plan.runs[8]
    assert plan.spec(frozen) == {"layers": "last", "mode": "token", "variant": "paper_b", "alpha": 0.2, "beta": 0.8,
                                 "score_learning_rate": 0.5, "threshold_end": 0.1, "granularity": "block",
                                 "block": 8, "freeze_weights": True}
    assert plan.spec(unfrozen)["granularity"] == "head" and plan.spec(unfrozen)["freeze_weights"] is False
    assert plan.spec(only) == {"layers": "intermediate", "mode": "token", "variant": "paper_b", "alpha": 0.2,
                               "beta": 0.8, "granularity": "none", "freeze_weights": False}
    assert debias_spec(plan.gender, row)["variant"] == "kaneko" and plan.spec(row)["batching"] == "context_debias"
    assert plan.hparams("frozen") == plan.hparams("unfrozen") == {"epochs": 2} and plan.hparams(only.kind) == {"epochs": 1}
    assert plan.checkpoint_every == 7 and GenderPlan(config() | {"compute": {}}, "r").checkpoint_every == 0


def test_scratch_and_pretrained_encoders():
    pretrained = GenderPlan(config(), "res")
    assert pretrained.model == "hub/tiny" and pretrained.encoder_input == []
    scratch = GenderPlan(config(model={"name": "tiny", "init": "scratch", "bert_config": {"hidden_size": 8}}), "r s")
    assert scratch.model == "r s/gender/tiny/encoder"
    assert scratch.encoder_input == ["r s/gender/tiny/encoder/train_summary.json"]
    assert scratch.encoder_settings() == {"bert_config": {"hidden_size": 8}, "seed": 0}


def test_project_files_are_found_below_the_project_folder():
    plan = GenderPlan(config(words={"male": "/abs/male.txt"}, lm_bias={"crows_pairs": {"file": "d/crows.csv"}}),
                      "res", basedir="/proj")
    assert plan.words == {"male": "/abs/male.txt", "female": "/proj/data/gender/female.txt",
                          "stereotype": "/proj/data/gender/stereotype.txt"}
    assert plan.seat_files == ["/proj/data/gender/seat/sent-weat6.jsonl", "/proj/data/gender/seat/sent-weat8b.jsonl"]
    assert plan.crows == ["/proj/d/crows.csv"]


def test_corpus_settings_per_source():
    plan = GenderPlan(config(), "res")
    assert plan.corpus_source() == ("generate:10", "gender corpus", "gender.corpus.source")
    assert plan.corpus_source_arg(None) == "generate:10"
    assert plan.corpus_settings(None) == {"heldout": 5, "seed": 3, "mixed": 2, "dataset_spec": None,
                                          "local_file": None}
    local = GenderPlan(config(corpus={"source": "local:c.txt"}), "res")
    assert local.corpus_source_arg("/proj/c.txt") == "/proj/c.txt"
    assert local.corpus_settings("/proj/c.txt") == {"heldout": 1000, "seed": 0, "mixed": 0, "dataset_spec": None,
                                                    "local_file": None}
    entry = {"task": "mnli", "source": "local:m.tsv"}
    dataset = GenderPlan(config(corpus={"source": "dataset", "dataset": entry}), "res")
    assert dataset.corpus_source() == ("local:m.tsv", "gender corpus", "gender.corpus.dataset.source")
    settings = dataset.corpus_settings("/proj/m.tsv")
    assert dataset.corpus_source_arg("/proj/m.tsv") == "dataset" and settings["dataset_spec"] == entry
    assert settings["local_file"] == "/proj/m.tsv"


def test_evaluation_settings_and_the_originals():
    tasks = {"cola": {"single_text": True, "metric": "matthews", "train": {"source": "hf:glue"}, "dev": {"source": "x"}},
             "rte": {"train": {"source": "local:rte.tsv"}, "dev": {"source": "y"}}}
    lm = {"head": "from-model", "head_hparams": {"epochs": 2}, "crows_pairs": {"file": "c.csv", "max_pairs": 0},
          "stereoset": {"intrasentence": "hub", "intersentence": "hub"}}
    plan = GenderPlan(config(performance={"tasks": tasks, "hparams": {"epochs": 3}}, lm_bias=lm,
                             shrink={"granularities": ["block8"], "repeats": 2}), "res")
    assert plan.task_split("cola", "dev") == {"source": "x", "single_text": True}
    assert plan.task_split("rte", "train") == {"source": "local:rte.tsv"}
    assert plan.task_split_source("rte", "train") == ("local:rte.tsv", "gender task rte train",
                                                      "gender.performance.tasks.rte.train.source")
    assert plan.task_hparams() == {"epochs": 3}
    assert plan.task_metric("cola") == "matthews" and plan.task_metric("rte") == "accuracy"
    assert plan.task_data("rte", "dev") == "res/gender/data/tasks/rte/dev.parquet"
    assert plan.original_tasks == ["res/gender/tiny/original/seed~1.task~cola.json",
                                   "res/gender/tiny/original/seed~2.task~cola.json",
                                   "res/gender/tiny/original/seed~1.task~rte.json",
                                   "res/gender/tiny/original/seed~2.task~rte.json"]
    assert plan.mlm_head_settings() == {"source": "from-model", "epochs": 2}
    assert list(plan.lm_bias_settings().items()) == [
        ("batch_size", 64), ("max_length", 128), ("crows_max_pairs", 0), ("seed", 0), ("stereoset_intra", "hub"),
        ("stereoset_inter", "hub"), ("stereoset_split", "validation")]
    assert plan.original_lm == ["res/gender/tiny/original.lm.json"]
    assert plan.seat_settings() == {"n_samples": 500, "seed": 1}
    # the shrink benchmark reads the first seed's frozen masks of the named granularities
    assert plan.shrink_masks == [plan.runs[0].out, plan.runs[2].out]
    assert plan.shrink_settings() == {"batch": 32, "length": 32, "repeats": 2, "rounds": 3}
    assert plan.performance_figure == ["res/figures/gender/performance_bias.png"]


def test_targets_name_every_planned_file_once():
    plan = GenderPlan(config(lm_bias={"head": "fit"}), "res")
    targets = plan.targets()
    assert targets["prepare"] == ["res/gender/data/corpus.parquet"]
    assert targets["masks"] == [run.marker for run in plan.runs]
    assert len(targets["evaluate"]) == len(set(targets["evaluate"])) == 2 * len(plan.runs) + 2
    # the figures' data and one table per kind of run planned (all three); no shrink masks, no tasks: no
    # benchmark, no figure 3 and its points
    assert targets["all"] == ["res/tables/gender/runs.csv", "res/tables/gender/seat_long.csv",
                              "res/tables/gender/tables.md", "res/tables/gender/layer_density.csv",
                              "res/tables/gender/heads.csv", "res/tables/gender/table1.csv",
                              "res/tables/gender/table2.csv", "res/tables/gender/table4.csv",
                              "res/figures/gender/layer_density.png",
                              "res/figures/gender/heads.png"]
    assert [r["seed"] for r in plan.report_runs()] == [run.seed for run in plan.runs]


def test_a_run_record_is_a_value():
    a = GenderRun("frozen", "head", "all", "token", 1, "b")
    assert a == GenderRun("frozen", "head", "all", "token", 1, "b") and a.tasks == {} and a.lm is None


def test_the_plan_imports_nothing_heavy():
    code = ("import sys, maskbench.tracks.gender.workflow_plan\n"
            "print([m for m in sys.modules if m.split('.')[0] in ('torch', 'pandas', 'numpy')])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_ffw_runs_are_planned_scored_and_recorded_for_the_matrix():
    from maskbench.tracks.gender.workflow_plan import FFWRun

    ffw = {"methods": ["ffw", "ffw_structured"], "gammas": [1, 10.5], "alpha": 2.0, "task_column": True,
           "head": {"max_epochs": 3}}
    plan = GenderPlan(config(ffw=ffw, performance={"tasks": {"nli": {}}}, lm_bias={"crows_pairs": {"file": "c"}})
                      | {"matrix": {"delta": 1.0}}, "res")
    assert [(r.method, r.gamma, r.seed) for r in plan.ffw_runs] == [
        ("ffw", 1.0, 1), ("ffw", 1.0, 2), ("ffw", 10.5, 1), ("ffw", 10.5, 2),
        ("ffw_structured", 1.0, 1), ("ffw_structured", 1.0, 2), ("ffw_structured", 10.5, 1),
        ("ffw_structured", 10.5, 2)]
    run = plan.ffw_runs[2]
    assert run.folder == "ffw/ffw/gamma~10.5" and run.out == run.marker == "res/gender/tiny/ffw/ffw/gamma~10.5/seed~1.mask"
    assert run.evaluations == ["res/gender/tiny/ffw/ffw/gamma~10.5/seed~1.seat.json",
                               "res/gender/tiny/ffw/ffw/gamma~10.5/seed~1.task~nli.json",
                               "res/gender/tiny/ffw/ffw/gamma~10.5/seed~1.lm.json"]
    # the per-run evaluation rules find FFW runs by folder; paper B's own lists and report do not hold them
    assert plan.run("ffw/ffw/gamma~10.5", "1") is run and "ffw/ffw_structured/gamma~1" in plan.folders()
    assert plan.folders("frozen", "unfrozen", "debias_only") == plan.folders()[:5]
    assert all(not isinstance(r, FFWRun) for r in plan.runs) and plan.ffw_run_writing(run.out) is run
    assert plan.ffw_settings(run) == {"alpha": 2.0, "head": {"max_epochs": 3}, "gamma": 10.5}
    targets = plan.targets()
    assert run.marker in targets["masks"] and set(run.evaluations) <= set(targets["evaluate"]) & set(targets["all"])
    # the matrix: FFW (paper D, knob gamma), paper B's frozen and unfrozen pruning runs (native), the original
    assert plan.matrix_cells == "res/matrix/cells/gender.csv"
    assert plan.matrix_benchmarks() == ["gender_seat", "gender_crows"]
    records = plan.matrix_records()
    assert [(r["method"], r["seed"]) for r in records if r["paper"] == "B"] == [
        ("block_movement_frozen_block8_last_token", 1), ("block_movement_frozen_block8_last_token", 2),
        ("block_movement_frozen_block8_all_token", 1), ("block_movement_frozen_block8_all_token", 2),
        ("block_movement_unfrozen_head_all_sentence", 1), ("block_movement_unfrozen_head_all_sentence", 2)]
    assert records[2] == {"method": "ffw", "paper": "D", "native": False, "knob": "gamma", "value": 10.5, "seed": 1,
                          "summary": run.summary, "seat": run.seat, "lm": run.lm, "tasks": run.tasks}
    assert records[-1] == {"method": "baseline", "paper": "-", "native": False, "knob": "", "value": None, "seed": 2,
                           "summary": None, "seat": plan.original_seat, "lm": "res/gender/tiny/original.lm.json",
                           "tasks": {"nli": "res/gender/tiny/original/seed~2.task~nli.json"}}
    assert plan.original_seat in plan.matrix_inputs() and run.summary in plan.matrix_inputs()
    # without the task column no record reads a task file; without matrix: no records file
    quiet = GenderPlan(config(ffw={**ffw, "task_column": False}, performance={"tasks": {"nli": {}}}), "res")
    assert quiet.matrix_cells is None and quiet.ffw_runs[0].tasks == {}
    assert all(r["tasks"] == {} for r in quiet.matrix_records())
    assert GenderPlan(config(), "res").ffw_runs == []

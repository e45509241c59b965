"""Paper C's entry points on a tiny checkpoint: mask training, IMP (+ rewinding) and retraining under a mask."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from maskbench.data.schema import write_prepared
from maskbench.data.synthetic import generate
from maskbench.masking.apply import MaskMismatchError, model_fingerprint
from maskbench.masking.codec import read_mask_file, write_mask_file
from maskbench.masking.engine import plain_parameter_name
from maskbench.masking.ranking import prune_count
from maskbench.masking.selectors import ENCODER_KINDS, select_linear
from maskbench.objectives.losses import get_loss
from maskbench.steps.nlu import finetune as finetune_cli
from maskbench.steps.nlu import srnet_imp, srnet_mask_train, srnet_retrain
from maskbench.text.batches import EncodedPairs
from maskbench.text.models import load_classifier
from maskbench.tracks.nlu.srnets.methods import train_mask
from maskbench.tracks.nlu.srnets.pruning import magnitude_masks
from maskbench.tracks.nlu.srnets.spec import MaskTrainingSpec
from maskbench.training.hparams import TrainHParams

TINY_MODEL = {"name": "t", "init": "scratch", "tokenizer": "data_vocab",
              "bert_config": {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
                              "intermediate_size": 32, "max_position_embeddings": 64}}
TINY_HP = {"epochs": 1, "batch_size": 16, "learning_rate": 1e-3, "warmup": 0.1, "max_length": 64, "log_every": 2}
# 64 examples / 16 = 4 steps per epoch
MASK_HP = {"epochs": 2, "batch_size": 16, "learning_rate": 5e-3, "lr_schedule": "constant", "weight_decay": 0.0,
           "max_length": 64, "log_every": 2}  # 8 steps
IMP_HP = {"epochs": 3, "batch_size": 16, "learning_rate": 1e-3, "warmup": 0, "max_length": 64, "log_every": 1}
RETRAIN_HP = {"epochs": 1, "batch_size": 16, "learning_rate": 1e-3, "warmup": 0.1, "max_length": 64}
IMP_MODULES = 2 * len(ENCODER_KINDS) + 1  # six matrices per layer, two layers, and the pooler


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    folder = tmp_path_factory.mktemp("srnet")
    for split, n in (("train", 64), ("dev", 32)):
        frame, labels = generate("nli", split, n, seed=0, rho=0.9)
        write_prepared(frame, labels, folder / f"{split}.parquet", {"dataset": split, "task": "mnli"})
    # "ft": fine-tuned; "init": the same seed's initial weights (learning rate 0), the "pre-trained" model
    for name, lr in (("ft", 1e-3), ("init", 0.0)):
        assert finetune_cli.main([
            "--train", str(folder / "train.parquet"), "--model-spec", json.dumps(TINY_MODEL),
            "--hparams", json.dumps({**TINY_HP, "learning_rate": lr}), "--seed", "1",
            "--out-dir", str(folder / name), "--threads", "1"]) == 0
    assert mask_train(folder, "m50", {"sparsity": 0.5, "select_after": 0.7}) == 0
    return folder


def common(folder, start="ft", hp=None, spec=None):
    return ["--start-dir", str(folder / start), "--train", str(folder / "train.parquet"),
            "--dev", str(folder / "dev.parquet"), "--seed", "1", "--threads", "1",
            "--hparams", json.dumps(hp or {}), *(["--spec", json.dumps(spec)] if spec is not None else [])]


def mask_train(folder, name, spec, *extra, out=None):
    out = out or folder
    return srnet_mask_train.main([*common(folder, hp=MASK_HP, spec={"eval_every": 1, "reset_every": 2, **spec}),
                                  "--out-mask", str(out / f"{name}.mask"), "--summary", str(out / f"{name}.json"),
                                  *extra])


def pruned(mask):
    return int(mask.size - mask.sum())


def test_mask_train_on_the_finetuned_model_meets_the_sparsity_and_selects_late(work):
    masks, meta = read_mask_file(work / "m50.mask")
    summary = json.loads((work / "m50.json").read_text())
    assert len(masks) == IMP_MODULES + 1  # + classifier
    for name, mask in masks.items():
        assert pruned(mask) == prune_count(mask.size, 0.5), name  # exactly, per matrix
        assert summary["module_sparsity"][name] == pytest.approx(pruned(mask) / mask.size)
    assert summary["total_steps"] == 8 and summary["first_candidate_step"] == math.ceil(0.7 * 8)
    assert summary["selected_step"] >= 0.7 * summary["total_steps"]
    assert [e["step"] for e in summary["dev_accuracies"]] == list(range(9))  # every step and the final one
    assert not any(e["candidate"] for e in summary["dev_accuracies"] if e["step"] < 6)
    # hard init keeps the threshold phi until the first reset: one Adam step (<= lr = 0.005) cannot cross the
    # margin (alpha - 1) * phi = 0.01, so the mask after step 1 is still the magnitude mask
    assert summary["dev_accuracies"][1]["sparsity"] == 0.5
    assert [h["step"] for h in summary["sparsity_history"]] == [2, 4, 6]
    best = max(e["dev_accuracy"] for e in summary["dev_accuracies"] if e["candidate"])
    assert meta["dev_accuracy"] == best == summary["selected_dev_accuracy"]
    assert meta["method"] == "mask_train" and meta["sparsity"] == 0.5 and meta["selected_step"] >= 6
    assert meta["zero_bias_of_empty_rows"] is False
    # the mask belongs to the unchanged start model
    start, _ = load_classifier(work / "ft")
    assert meta["model_fingerprint"] == summary["model_fingerprint"] == model_fingerprint(start)
    assert summary["weights_unchanged"] is True


def test_mask_training_without_the_evaluations_before_its_window_scores_only_candidates(work, tmp_path):
    """score_before_window false: the dev set is scored only at candidate steps (>= 6 of 8 here), the selection
    and the saved mask as ever. Each evaluation draws one number from torch's generator (its DataLoader's seed), so
    the run's random stream differs from that of the run that also scored steps 0-5: its losses differ; at step 6,
    right after a threshold reset, both meet the target exactly."""
    assert mask_train(work, "m50_window", {"sparsity": 0.5, "select_after": 0.7, "score_before_window": False},
                      out=tmp_path) == 0
    full, windowed = (json.loads(path.read_text()) for path in (work / "m50.json", tmp_path / "m50_window.json"))
    assert [e["step"] for e in windowed["dev_accuracies"]] == [6, 7, 8]
    assert all(e["candidate"] for e in windowed["dev_accuracies"])
    assert windowed["dev_accuracies"][0]["sparsity"] == full["dev_accuracies"][6]["sparsity"] == 0.5
    assert [c["train_loss"] for c in windowed["curve"]] != [c["train_loss"] for c in full["curve"]]
    best = max(e["dev_accuracy"] for e in windowed["dev_accuracies"])
    assert windowed["selected_dev_accuracy"] == best and windowed["selected_step"] >= 6
    masks, meta = read_mask_file(tmp_path / "m50_window.mask")
    assert meta["dev_accuracy"] == best
    for name, mask in masks.items():
        assert pruned(mask) == prune_count(mask.size, 0.5), name


def test_train_mask_leaves_every_weight_bit_identical(work):
    model, tokenizer = load_classifier(work / "ft")
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    frame, _ = generate("nli", "train", 32, seed=0, rho=0.9)
    data = EncodedPairs(tokenizer, frame.text_a, frame.text_b, frame.label, 64)
    hp = TrainHParams(epochs=1, batch_size=16, learning_rate=5e-3, lr_schedule="constant", weight_decay=0.0)
    result = train_mask(model, data, get_loss("ce"), hp, 1, "cpu", lambda m: 50.0,
                        MaskTrainingSpec(0.3, reset_every=1, eval_every=1, select_after=0.0),
                        modules=["query", "classifier"])
    assert result.selected_step == 0  # ties keep the earliest candidate
    assert {n for n, _ in model.named_parameters()} == set(before)  # no score parametrization left
    for name, param in model.named_parameters():
        assert torch.equal(param, before[name]), name
        assert param.requires_grad is False  # frozen by mask training


def test_gradual_schedule_ends_at_the_final_sparsity(work):
    assert mask_train(work, "grad", {"sparsity": 0.6, "schedule": "gradual", "init": "soft",
                                     "initial_sparsity": 0.3, "gradual_end": 0.5, "select_after": 0}) == 0
    summary = json.loads((work / "grad.json").read_text())
    history = summary["sparsity_history"]
    assert [h["step"] for h in history] == [2, 4, 6]  # every --reset-every steps, none at step 0
    assert summary["dev_accuracies"][0]["target"] == pytest.approx(0.3)  # the initial sparsity
    assert 0.3 < history[0]["target"] < 0.6 and history[1]["target"] == history[2]["target"] == 0.6  # cubic
    assert all(h["sparsity"] == pytest.approx(h["target"], abs=0.01) for h in history)
    masks, meta = read_mask_file(work / "grad.mask")
    assert meta["schedule"] == "gradual" and meta["init"] == "soft"
    for mask in masks.values():
        assert pruned(mask) == prune_count(mask.size, 0.6)
    assert summary["exact_sparsity"] == pytest.approx(0.6, abs=0.01)


def plain_weights(folder):
    return load_file(str(folder / "model.safetensors"))


def test_imp_writes_every_level_with_exact_nested_zeros(work):
    out = work / "imp"
    assert srnet_imp.main([*common(work, hp=IMP_HP), "--sweep-dir", str(out)]) == 0
    levels = sorted(p.name for p in out.iterdir() if p.name.startswith("sparsity~"))
    assert levels == [f"sparsity~{r / 10:.1f}" for r in range(1, 10)]
    assert json.loads((out / "imp_summary.json").read_text())["levels"][-1]["sparsity"] == pytest.approx(0.9)
    start = plain_weights(work / "ft")
    previous = None
    for r in range(1, 10):
        folder = out / f"sparsity~{r / 10:.1f}"
        summary = json.loads((folder / "train_summary.json").read_text())
        masks, meta = read_mask_file(folder / "mask.mask")
        weights = plain_weights(folder)
        assert len(masks) == IMP_MODULES and not any("classifier" in n for n in masks)
        zeros = {}
        for name, mask in masks.items():
            weight = weights[f"{name}.weight"]
            zeros[name] = (weight == 0).numpy()
            assert int(zeros[name].sum()) == prune_count(weight.numel(), r / 10), (r, name)
            assert np.array_equal(zeros[name], ~mask)
            if previous is not None:
                assert not (previous[name] & ~zeros[name]).any()  # pruned weights stay pruned
        assert not (weights["classifier.weight"] == 0).any()
        assert summary["sparsity"] == pytest.approx(r / 10) and summary["dev_accuracy"] is not None
        assert summary["exact_sparsity"] == pytest.approx(r / 10, abs=1e-3)
        assert meta["start_model_fingerprint"] == model_fingerprint(load_classifier(work / "ft")[0])
        previous = zeros
    # the mask's fingerprint is that of the saved (baked) model, and training moved the kept weights
    assert meta["model_fingerprint"] == model_fingerprint(load_classifier(out / "sparsity~0.9")[0])
    name = "bert.encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(weights[name][weights[name] != 0], start[name][weights[name] != 0])


def test_imp_rewind_rewinds_after_every_prune(work):
    out = work / "imp_rw"
    start = {n: t for n, t in plain_weights(work / "init").items()}
    seen = []

    def on_prune(index, sparsity, model, masks):
        for name, param in model.named_parameters():
            plain = plain_parameter_name(name)
            if ".parametrizations." in name and not name.endswith(".original"):
                continue
            if plain.startswith("classifier."):
                if index > 1:  # trained, not rewound
                    assert not torch.equal(param.detach(), start[plain]), plain
                continue
            assert torch.equal(param.detach(), start[plain]), (index, plain)  # bit-exact rewind
        seen.append((index, sparsity))

    args = srnet_imp.parse_args([*common(work, start="init", hp=IMP_HP, spec={"rewind": True, "final_sparsity": 0.3}),
                                 "--sweep-dir", str(out)])
    assert srnet_imp.run(args, srnet_imp.check(args), on_prune=on_prune) == 0
    assert seen == [(1, 0.1), (2, 0.2), (3, 0.3)]
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("sparsity~")) == [
        "sparsity~0.1", "sparsity~0.2", "sparsity~0.3"]
    # level 1's mask is the 10 % magnitude mask of the start weights
    model, _ = load_classifier(work / "init")
    expected = magnitude_masks(select_linear(model, [*ENCODER_KINDS, "pooler"]), 0.1)
    masks, meta = read_mask_file(out / "sparsity~0.1" / "mask.mask")
    assert meta["rewind"] is True and set(masks) == set(expected)
    for name, keep in expected.items():
        assert np.array_equal(masks[name], keep.numpy()), name
    summary = json.loads((out / "sparsity~0.2" / "train_summary.json").read_text())
    assert summary["n_rewound"] > 0 and summary["rewind"] is True


def test_retrain_under_a_transferred_mask(work):
    out = work / "retrain"
    assert srnet_retrain.main([*common(work, start="init", hp=RETRAIN_HP), "--mask", str(work / "m50.mask"),
                               "--out-dir", str(out)]) == 0
    summary = json.loads((out / "train_summary.json").read_text())
    source, _ = read_mask_file(work / "m50.mask")
    masks, meta = read_mask_file(out / "mask.mask")
    assert set(masks) == {n for n in source if not n.startswith("classifier")}  # paper C: head trains dense
    weights, start = plain_weights(out), plain_weights(work / "init")
    for name, keep in masks.items():
        assert np.array_equal(keep, source[name])
        weight, before = weights[f"{name}.weight"].numpy(), start[f"{name}.weight"].numpy()
        assert (weight[~keep] == 0).all(), name
        assert np.mean(weight[keep] != before[keep]) > 0.9, name  # trained
    assert not (weights["classifier.weight"] == 0).any()
    assert summary["exact_sparsity"] == pytest.approx(0.5, abs=0.01) and summary["final_dev_accuracy"] is not None
    assert meta["source_model_fingerprint"] != meta["start_model_fingerprint"]  # the mask came from other weights
    assert meta["model_fingerprint"] == model_fingerprint(load_classifier(out)[0])


def test_errors_come_before_training_and_name_the_argument_or_file(work, tmp_path):
    source, meta = read_mask_file(work / "m50.mask")
    name = "bert.encoder.layer.0.attention.self.query"
    wrong_shape = {**source, name: np.ones((8, 8), dtype=bool)}
    write_mask_file(tmp_path / "shape.mask", wrong_shape, meta)
    write_mask_file(tmp_path / "arch.mask", {"roberta.encoder.layer.0.attention.self.query": source[name]}, meta)
    for bad in ("shape.mask", "arch.mask"):
        with pytest.raises(MaskMismatchError, match=bad):
            srnet_retrain.main([*common(work, start="init", hp=RETRAIN_HP), "--mask", str(tmp_path / bad),
                                "--out-dir", str(tmp_path / "out")])
    with pytest.raises(ValueError, match=r"imp: unknown field\(s\) \['prune'\]"):
        srnet_imp.main([*common(work, spec={"prune": 1}), "--sweep-dir", str(tmp_path / "out")])
    with pytest.raises(ValueError, match="needs --bias-probs"):
        mask_train(work, "x", {"sparsity": 0.5, "select_after": 0}, "--loss", "poe", out=tmp_path)
    with pytest.raises(ValueError, match="mask_training.sparsity must lie"):
        mask_train(work, "x", {"sparsity": 1.5, "select_after": 0}, out=tmp_path)
    with pytest.raises(ValueError, match=r"\['sparsity'\] missing"):
        mask_train(work, "x", {}, out=tmp_path)
    with pytest.raises(ValueError, match="mask_training.select_after must lie"):
        mask_train(work, "x", {"sparsity": 0.5, "select_after": 2}, out=tmp_path)
    with pytest.raises(ValueError, match="imp.final_sparsity 0.35 is not a multiple"):
        srnet_imp.main([*common(work, spec={"final_sparsity": 0.35}), "--sweep-dir", str(tmp_path / "out")])
    with pytest.raises(SystemExit):  # an argument of another method is refused by the parser
        srnet_imp.main([*common(work), "--sweep-dir", str(tmp_path / "out"), "--mask", str(work / "m50.mask")])
    assert not (tmp_path / "out").exists() and not (tmp_path / "x.mask").exists()


def test_a_sweep_runs_every_sparsity_in_one_process_and_retrains_each_mask(work, tmp_path):
    sweep = tmp_path / "sweep"
    spec = {"eval_every": 2, "reset_every": 2, "select_after": 0.7}
    assert srnet_mask_train.main([*common(work, hp=MASK_HP, spec=spec), "--sparsities", "0.3", "0.6",
                                  "--sweep-dir", str(sweep)]) == 0
    for sparsity in (0.3, 0.6):
        masks, meta = read_mask_file(sweep / f"sparsity~{sparsity}" / "mask.mask")
        assert meta["sparsity"] == sparsity
        assert all(pruned(m) == prune_count(m.size, sparsity) for m in masks.values())
        assert json.loads((sweep / f"sparsity~{sparsity}" / "search.json").read_text())["sparsity"] == sparsity
    retrained = tmp_path / "retrained"
    assert srnet_retrain.main([*common(work, start="init", hp=RETRAIN_HP), "--masks",
                               str(sweep / "sparsity~0.3" / "mask.mask"), str(sweep / "sparsity~0.6" / "mask.mask"),
                               "--sweep-dir", str(retrained)]) == 0
    for sparsity in (0.3, 0.6):
        summary = json.loads((retrained / f"sparsity~{sparsity}" / "train_summary.json").read_text())
        assert summary["source_sparsity"] == sparsity and summary["source_mask"].endswith(f"sparsity~{sparsity}/mask.mask")
    with pytest.raises(ValueError, match="--sparsities replaces the spec's sparsity"):
        srnet_mask_train.main([*common(work, hp=MASK_HP, spec={"select_after": 0, "sparsity": 0.5}),
                               "--sparsities", "0.3", "--sweep-dir", str(tmp_path / "x")])
    with pytest.raises(ValueError, match="needs --sweep-dir"):
        srnet_mask_train.main([*common(work, hp=MASK_HP, spec={"select_after": 0}), "--sparsities", "0.3"])
    with pytest.raises(ValueError, match="mask_training.sparsity must lie in"):  # every run checked first
        srnet_mask_train.main([*common(work, hp=MASK_HP, spec={"select_after": 0}), "--sparsities", "0.3", "1.5",
                               "--sweep-dir", str(tmp_path / "y")])
    assert not (tmp_path / "y").exists()


def test_a_runs_sweep_sets_the_schedule_and_the_start_of_each_run(work, tmp_path):
    """Table 5's schedules and the timing study's start checkpoints: one process, one folder per named run."""
    runs = [{"name": "fixed_hard", "init": "hard"},
            {"name": "gradual_0.2", "init": "soft", "schedule": "gradual", "initial_sparsity": 0.2},
            {"name": "step~0", "start_dir": str(work / "init"), "select_after": 0.0}]
    sweep = tmp_path / "runs"
    spec = {"eval_every": 2, "reset_every": 2, "select_after": 0.7, "sparsity": 0.6}
    assert srnet_mask_train.main([*common(work, hp=MASK_HP, spec=spec), "--runs", json.dumps(runs),
                                  "--sweep-dir", str(sweep)]) == 0
    metas = {}
    for run in runs:
        masks, metas[run["name"]] = read_mask_file(sweep / run["name"] / "mask.mask")
        assert all(pruned(m) == prune_count(m.size, 0.6) for m in masks.values()), run["name"]
    assert (metas["fixed_hard"]["init"], metas["fixed_hard"]["schedule"]) == ("hard", "fixed")
    assert (metas["gradual_0.2"]["init"], metas["gradual_0.2"]["schedule"]) == ("soft", "gradual")
    assert metas["gradual_0.2"]["initial_sparsity"] == 0.2
    assert metas["step~0"]["model_dir"] == str(work / "init") and metas["step~0"]["select_after"] == 0.0
    assert metas["fixed_hard"]["model_dir"] == str(work / "ft")
    assert metas["fixed_hard"]["start_step"] == 4  # the fine-tuned start's total steps (its summary says so)
    assert metas["step~0"]["model_fingerprint"] != metas["fixed_hard"]["model_fingerprint"]
    for bad, message in ((runs + [{"name": "fixed_hard"}], "'fixed_hard' is given twice"),
                         ([{"name": "x", "loss": "poe"}], r"\['loss'\] cannot be set per run"),
                         ([{"name": "a/b"}], "field 'name' must be a folder name"),
                         ([{"name": ".."}], "field 'name' must be a folder name")):
        with pytest.raises(ValueError, match=message):
            srnet_mask_train.main([*common(work, hp=MASK_HP, spec=spec), "--runs", json.dumps(bad),
                                   "--sweep-dir", str(tmp_path / "bad")])
    assert not (tmp_path / "bad").exists()


def test_mix_train_adds_the_ood_training_data_but_never_a_test_pair(work, tmp_path):
    hans, labels = generate("nli", "hans", 40, seed=1)
    write_prepared(hans, labels, tmp_path / "hans_train.parquet", {"dataset": "hans_train", "task": "mnli"})
    test = hans.iloc[:10].assign(id=[f"t{i}" for i in range(10)])  # ten of its pairs are "test" pairs
    write_prepared(test, labels, tmp_path / "hans_test.parquet", {"dataset": "hans", "task": "mnli"})
    mix = [{"path": str(tmp_path / "hans_train.parquet"), "repeat": 2, "label_map": {"non-entailment": "contradiction"}}]
    spec = {"eval_every": 4, "reset_every": 2, "select_after": 0, "sparsity": 0.5}
    args = [*common(work, hp=MASK_HP, spec=spec), "--mix-train", json.dumps(mix),
            "--mix-exclude", str(tmp_path / "hans_test.parquet"),
            "--out-mask", str(tmp_path / "ood.mask"), "--summary", str(tmp_path / "ood.json")]
    assert srnet_mask_train.main(args) == 0
    summary = json.loads((tmp_path / "ood.json").read_text())
    dropped = int(hans.assign(k=hans.text_a + "|" + hans.text_b).k.isin(test.text_a + "|" + test.text_b).sum())
    assert dropped >= 10
    assert summary["meta"]["n_train"] == 64 + 2 * (40 - dropped)
    assert summary["meta"]["mixed_in"][0]["n_dropped_as_test"] == dropped
    assert summary["total_steps"] == 2 * math.ceil((64 + 2 * (40 - dropped)) / 16)
    with pytest.raises(ValueError, match="--mix-train: loss 'poe' reads per-example"):
        srnet_mask_train.main([*args[:-4], "--loss", "poe", "--out-mask", str(tmp_path / "x.mask"),
                               "--summary", str(tmp_path / "x.json")])
    assert not (tmp_path / "x.mask").exists()


def test_evaluate_srnets_scores_masks_and_checkpoints_in_one_process(work, tmp_path):
    from maskbench.steps.nlu import evaluate as evaluate_cli
    from maskbench.steps.nlu import evaluate_masks, evaluate_srnets

    data = ["--data", str(work / "dev.parquet"), "--eval-sets", json.dumps([{"name": "dev", "metric": "accuracy"}]),
            "--task", "mnli", "--seed", "1", "--threads", "1"]
    assert evaluate_srnets.main([
        "--model-dirs", str(work / "ft"), str(work / "ft"), str(work / "init"),
        "--masks", str(work / "m50.mask"), "none", "none", "--rows", "srnets/a/0.5", "srnets/ft/0", "srnets/init/0",
        "--out-dirs", *(str(tmp_path / n) for n in ("masked", "ft", "init")), *data]) == 0
    # the same numbers as the single-purpose entry points
    assert evaluate_masks.main(["--model-dir", str(work / "ft"), "--masks", str(work / "m50.mask"), "--rows", "m",
                                "--out-dirs", str(tmp_path / "ref_masked"), *data]) == 0
    assert evaluate_cli.main(["--model-dirs", str(work / "ft"), str(work / "init"), "--rows", "ft", "init",
                              "--out-dirs", str(tmp_path / "ref_ft"), str(tmp_path / "ref_init"), *data]) == 0
    for ours, ref in (("masked", "ref_masked"), ("ft", "ref_ft"), ("init", "ref_init")):
        a, b = (json.loads((tmp_path / d / "dev.json").read_text()) for d in (ours, ref))
        assert a["metrics"] == b["metrics"], ours
    masked = json.loads((tmp_path / "masked" / "dev.json").read_text())
    assert masked["row"] == "srnets/a/0.5" and masked["mask_density"] == pytest.approx(0.5, abs=0.01)
    assert "mask" not in json.loads((tmp_path / "ft" / "dev.json").read_text())
    # a mask on a model it was not trained on is refused before anything is scored
    with pytest.raises(MaskMismatchError, match="m50.mask"):
        evaluate_srnets.main(["--model-dirs", str(work / "ft"), str(work / "init"), "--masks", "none",
                              str(work / "m50.mask"), "--rows", "x", "y", "--out-dirs", str(tmp_path / "x"),
                              str(tmp_path / "y"), *data])
    assert not (tmp_path / "x").exists()


def test_paper_cs_code_scores_only_on_its_grid_and_saves_a_gradual_mask_at_the_initial_sparsity(work):
    """The three departures of paper C's code, selected: no evaluation at step 0 or at a last step off the
    eval_every grid, the saved mask's thresholds re-set to the initial sparsity (a gradual 0.3 -> 0.6 run saves a
    30 % sparse mask), against the project's defaults on the same run."""
    model, tokenizer = load_classifier(work / "ft")
    frame, _ = generate("nli", "train", 80, seed=0, rho=0.9)
    data = EncodedPairs(tokenizer, frame.text_a, frame.text_b, frame.label, 64)
    hp = TrainHParams(epochs=1, batch_size=16, learning_rate=5e-3, lr_schedule="constant", weight_decay=0.0)

    def run(**options):
        fresh, _ = load_classifier(work / "ft")
        spec = MaskTrainingSpec(0.6, init="soft", schedule="gradual", initial_sparsity=0.3, reset_every=2,
                                eval_every=2, **{"select_after": 0.0, **options})
        return train_mask(fresh, data, get_loss("ce"), hp, 1, "cpu", lambda m: 50.0, spec,
                          modules=["query", "classifier"])

    ours = run()
    theirs = run(saved_mask_sparsity="initial", score_first_and_last=False, keep_threshold_when_saturated=True)
    assert ours.total_steps == theirs.total_steps == 5
    assert [e["step"] for e in ours.evals] == [0, 2, 4, 5] and [e["step"] for e in theirs.evals] == [2, 4]
    assert ours.selected_step == 0 and theirs.selected_step == 2  # ties keep the earliest candidate
    for name, mask in ours.masks.items():
        assert pruned(mask) == prune_count(mask.size, 0.6), name
        assert pruned(theirs.masks[name]) == prune_count(mask.size, 0.3), name
    with pytest.raises(ValueError, match="no evaluation fell in the selection window"):
        run(score_first_and_last=False, select_after=0.9)


def test_evaluate_srnets_cut_off_scores_only_the_rest_when_run_again(work, tmp_path, monkeypatch):
    # the job killed after its second item: snakemake deletes every declared output, the staged copies of the two
    # scored items come back, only the third is scored, and the files equal those of an uninterrupted run
    from maskbench.steps.nlu import evaluate_srnets

    outs = [tmp_path / n for n in ("masked", "ft", "init")]
    argv = ["--model-dirs", str(work / "ft"), str(work / "ft"), str(work / "init"),
            "--masks", str(work / "m50.mask"), "none", "none", "--rows", "srnets/a/0.5", "srnets/ft/0", "srnets/init/0",
            "--out-dirs", *map(str, outs), "--data", str(work / "dev.parquet"),
            "--eval-sets", json.dumps([{"name": "dev", "metric": "accuracy"}]), "--task", "mnli", "--seed", "1",
            "--threads", "1"]
    files = [d / name for d in outs for name in ("dev.json", "dev.predictions.parquet")]
    assert evaluate_srnets.main(argv) == 0
    straight = {f: f.read_bytes() for f in files}
    assert not [p for p in tmp_path.rglob(".*")]
    for f in files:
        f.unlink()
    real, scored = evaluate_srnets.score_all, []

    def dying(*args, **kwargs):
        if len(scored) == 2:
            raise KeyboardInterrupt("time limit")
        scored.append(args[5])
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluate_srnets, "score_all", dying)
    with pytest.raises(KeyboardInterrupt):
        evaluate_srnets.main(argv)
    for f in files:  # what snakemake does to a failed job's outputs
        f.unlink(missing_ok=True)
    scored.clear()
    monkeypatch.setattr(evaluate_srnets, "score_all", lambda *a, **k: (scored.append(a[5]), real(*a, **k)))
    assert evaluate_srnets.main(argv) == 0
    assert scored == [outs[2]]
    for f in files:  # the predictions byte for byte; the JSONs but for their wall-clock seconds
        if f.suffix == ".json":
            a, b = (json.loads(x) for x in (straight[f], f.read_bytes()))
            assert {**a, "seconds": 0} == {**b, "seconds": 0}, f
        else:
            assert f.read_bytes() == straight[f], f
    assert not [p for p in tmp_path.rglob(".*")]


def test_imp_cut_off_after_a_level_puts_it_back_and_goes_on_to_the_uninterrupted_outputs(work):
    """A run killed in round 3 (its first two levels written), its declared outputs then deleted as snakemake
    deletes a failed job's: the rerun puts levels 1-2 back from their staged copies, trains rounds 3-4 only, and
    every level's weights, mask and curve equal those of a run never cut off."""
    out, reference = work / "imp_cut", work / "imp_cut_reference"
    argv = [*common(work, hp=IMP_HP, spec={"final_sparsity": 0.4}), "--sweep-dir", str(out)]
    assert srnet_imp.main(argv) == 0
    out.rename(reference)
    rounds = []

    def cut_off(index, sparsity, model, masks):
        rounds.append(index)
        if index == 3:
            raise KeyboardInterrupt("killed in round 3")

    args = srnet_imp.parse_args(argv)
    with pytest.raises(KeyboardInterrupt):
        srnet_imp.run(args, srnet_imp.check(args), on_prune=cut_off)
    assert not (out / "sparsity~0.3").exists() and not (out / "imp_summary.json").exists()
    for level in ("sparsity~0.1", "sparsity~0.2"):
        for name in ("model.safetensors", "mask.mask", "train_summary.json"):
            (out / level / name).unlink()
    rounds.clear()
    args = srnet_imp.parse_args(argv)
    assert srnet_imp.run(args, srnet_imp.check(args), on_prune=lambda index, *_: rounds.append(index)) == 0
    assert rounds == [3, 4]
    for level in ("sparsity~0.1", "sparsity~0.2", "sparsity~0.3", "sparsity~0.4"):
        for name in ("model.safetensors", "mask.mask"):
            assert (out / level / name).read_bytes() == (reference / level / name).read_bytes(), (level, name)
        curves = [pd.read_csv(folder / level / "train_curve.csv").drop(columns="seconds") for folder in (out, reference)]
        pd.testing.assert_frame_equal(*curves)
        assert sorted(p.name for p in (out / level).iterdir()) == sorted(p.name for p in (reference / level).iterdir())
        mine, theirs = (json.loads((folder / level / "train_summary.json").read_text()) for folder in (out, reference))
        assert untimed(mine) == untimed(theirs)
        # the staged copies and the round's state go once the run is complete
        assert not list((out / level).glob(".*.staged-*")) and not (out / level / srnet_imp.ROUND_STATE).exists()
    mine, theirs = (json.loads((folder / "imp_summary.json").read_text()) for folder in (out, reference))
    assert untimed(mine["levels"]) == untimed(theirs["levels"]) and mine["checkpoints"] == theirs["checkpoints"]


def untimed(record):
    """A JSON record without its timings (``seconds``, at any depth)."""
    if isinstance(record, dict):
        return {k: untimed(v) for k, v in record.items() if k != "seconds"}
    return [untimed(v) for v in record] if isinstance(record, list) else record

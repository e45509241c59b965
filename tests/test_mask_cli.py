"""The mask entry points on a tiny checkpoint: search, evaluate under several masks, predict, report."""

import json
import re

import numpy as np
import pandas as pd
import pytest

from maskbench import console
from maskbench.data.schema import DataError, write_prepared
from maskbench.data.synthetic import generate
from maskbench.masking.apply import MaskMismatchError
from maskbench.masking.codec import read_mask_file
from maskbench.steps.nlu import evaluate_masks, mask_report, mask_search
from maskbench.steps.nlu import finetune as finetune_cli

TINY_MODEL = {"name": "t", "init": "scratch", "tokenizer": "data_vocab",
              "bert_config": {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
                              "intermediate_size": 32, "max_position_embeddings": 64}}
TINY_HP = {"epochs": 1, "batch_size": 16, "learning_rate": 1e-3, "warmup": 0.1, "max_length": 64, "log_every": 2}
SEARCH_HP = {"epochs": 2, "batch_size": 16, "learning_rate": 0.1, "lr_schedule": "constant", "weight_decay": 0.0,
             "max_grad_norm": 0, "max_length": 64, "log_every": 2}
EVAL_SETS = [{"name": "dev"}, {"name": "hans", "metric": "hans",
                               "merge": {"neutral": "non-entailment", "contradiction": "non-entailment"}}]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    folder = tmp_path_factory.mktemp("masks")
    for split, n in (("train", 64), ("dev", 32), ("hans", 40)):
        frame, labels = generate("nli", split, n, seed=0, rho=0.9)
        write_prepared(frame, labels, folder / f"{split}.parquet", {"dataset": split, "task": "mnli"})
    for seed in (1, 2):
        assert finetune_cli.main([
            "--train", str(folder / "train.parquet"), "--model-spec", json.dumps(TINY_MODEL),
            "--hparams", json.dumps(TINY_HP), "--seed", str(seed), "--out-dir", str(folder / f"ckpt{seed}"),
            "--threads", "1"]) == 0
    for seed in (1, 2):
        assert search(folder, seed, f"m{seed}") == 0
    return folder


def search(folder, seed, name, *extra):
    return mask_search.main([
        "--model-dir", str(folder / "ckpt1"), "--train", str(folder / "train.parquet"),
        "--dev", str(folder / "dev.parquet"), "--hparams", json.dumps(SEARCH_HP), "--seed", str(seed),
        "--out", str(folder / f"{name}.mask"), "--summary", str(folder / f"{name}.search.json"), "--threads", "1",
        *extra])


def test_search_writes_a_mask_file_and_its_summary(work):
    masks, meta = read_mask_file(work / "m1.mask")
    assert len(masks) == 12 and all(m.dtype == bool for m in masks.values())
    assert meta["method"] == "movement_sigmoid" and meta["loss"] == "ce" and meta["seed"] == 1
    assert len(meta["model_fingerprint"]) == 64 and meta["spec"]["threshold_end"] == 0.1
    summary = json.loads((work / "m1.search.json").read_text())
    kept = sum(int(m.sum()) for m in masks.values()) / sum(m.size for m in masks.values())
    assert summary["density"] == pytest.approx(kept) and 0 <= summary["pruned_percent"] <= 100
    assert summary["steps"] == 8 and summary["file"]["file_bytes"] == (work / "m1.mask").stat().st_size
    assert summary["final_dev_accuracy"] is not None


def test_search_refuses_a_foreign_bias_file_before_loading_the_model(work, tmp_path):
    probs = pd.DataFrame({"id": ["nope"], "prob_entailment": [1.0], "prob_neutral": [0.0],
                          "prob_contradiction": [0.0]})
    probs.to_parquet(tmp_path / "bias.parquet")
    with pytest.raises((DataError, ValueError), match="bias.parquet"):
        search(work, 1, "bad", "--loss", "reweight", "--bias-probs", str(tmp_path / "bias.parquet"))
    assert not (work / "bad.mask").exists()
    with pytest.raises(ValueError, match="needs --bias-probs"):
        search(work, 1, "bad", "--loss", "poe")


def test_evaluate_masks_scores_every_mask_on_one_model(work):
    out = [work / "eval" / r for r in ("r1", "r2")]
    assert evaluate_masks.main([
        "--model-dir", str(work / "ckpt1"), "--masks", str(work / "m1.mask"), str(work / "m2.mask"),
        "--rows", "r1", "r2", "--out-dirs", *map(str, out), "--data", str(work / "dev.parquet"),
        str(work / "hans.parquet"), "--eval-sets", json.dumps(EVAL_SETS), "--task", "mnli", "--seed", "1"]) == 0
    for folder, row in zip(out, ("r1", "r2"), strict=True):
        result = json.loads((folder / "hans.json").read_text())
        assert result["row"] == row and 0 <= result["metrics"]["accuracy"] <= 100 and result["mask_density"] > 0
        assert len(pd.read_parquet(folder / "dev.predictions.parquet")) == 32
    with pytest.raises(MaskMismatchError, match="m1.mask"):
        evaluate_masks.main([
            "--model-dir", str(work / "ckpt2"), "--masks", str(work / "m1.mask"), "--rows", "r1",
            "--out-dirs", str(work / "eval2"), "--data", str(work / "dev.parquet"), str(work / "hans.parquet"),
            "--eval-sets", json.dumps(EVAL_SETS)])
    assert not (work / "eval2").exists()


def test_predict_switches_masks_and_reports_each(work, tmp_path, capsys):
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"id": "x", "premise": "the cat sat", "hypothesis": "the cat"}\n'
                      '{"text_a": "a dog ran", "text_b": "a dog ran"}\n')
    out = tmp_path / "out.jsonl"
    assert console.main(["predict", "--model", str(work / "ckpt1"), "--mask", str(work / "m1.mask"),
                         str(work / "m2.mask"), "--input", str(inputs), "--output", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["x", "2"]
    assert set(lines[0]) == {"id", "none", str(work / "m1.mask"), str(work / "m2.mask")}
    for variant in ("none", str(work / "m1.mask")):
        assert sum(lines[0][variant]["probs"].values()) == pytest.approx(1.0, abs=1e-4)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sentence": "x"}\n')
    assert console.main(["predict", "--model", str(work / "ckpt1"), "--input", str(bad)]) == 1
    assert re.search(r"maskbench predict: error: .*bad.jsonl: line 1 has none of the fields", capsys.readouterr().err)


def test_mask_report_writes_rates_overlap_and_figure(work, tmp_path):
    assert mask_report.main([
        "--masks", str(work / "m1.mask"), str(work / "m2.mask"), "--keys", "mnli/mask_no_debias/1",
        "mnli/mask_no_debias/2", "--out-rates", str(tmp_path / "rates.csv"), "--out-figure", str(tmp_path / "f.png"),
        "--out-overlap", str(tmp_path / "o.csv"), "--out-overlap-summary", str(tmp_path / "os.csv")]) == 0
    rates = pd.read_csv(tmp_path / "rates.csv")
    masks = [read_mask_file(work / f"m{s}.mask")[0] for s in (1, 2)]
    pruned = [100 * (1 - np.mean(m["bert.encoder.layer.1.attention.self.key"])) for m in masks]
    cell = rates[(rates.layer == 1) & (rates.kind == "key")].iloc[0]
    assert cell.pruned_mean == pytest.approx(np.mean(pruned)) and cell.n_seeds == 2
    overlap = pd.read_csv(tmp_path / "o.csv")
    assert len(overlap) == 1 and 0 <= overlap.jaccard_pruned[0] <= 1
    assert (tmp_path / "f.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="task/row/seed"):
        mask_report.main(["--masks", str(work / "m1.mask"), "--keys", "mnli-1", "--out-rates", "a",
                          "--out-figure", "b", "--out-overlap", "c", "--out-overlap-summary", "d"])

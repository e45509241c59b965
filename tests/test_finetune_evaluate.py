"""Fine-tuning and evaluation entry points on tiny synthetic data (seconds on a CPU)."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from maskbench.data.schema import DataError, write_prepared
from maskbench.data.synthetic import generate
from maskbench.steps.nlu import evaluate as evaluate_cli
from maskbench.steps.nlu import finetune as finetune_cli
from maskbench.tracks.nlu.evaluation import map_predictions
from maskbench.training.hparams import warmup_steps
from maskbench.training.optim import linear_schedule

TINY_MODEL = {"name": "t", "init": "scratch", "tokenizer": "data_vocab",
              "bert_config": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                              "intermediate_size": 32, "max_position_embeddings": 64}}
TINY_HP = {"epochs": 1, "batch_size": 16, "learning_rate": 1e-3, "warmup": 0.1, "max_length": 64, "log_every": 2}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    for split, n in (("train", 64), ("dev", 32), ("hans", 40)):
        frame, labels = generate("nli", split, n, seed=0, rho=0.9)
        write_prepared(frame, labels, folder / f"{split}.parquet", {"dataset": split, "task": "mnli"})
    return folder


def run_finetune(data_dir, out_dir, seed=1):
    return finetune_cli.main([
        "--train", str(data_dir / "train.parquet"), "--dev", str(data_dir / "dev.parquet"),
        "--model-spec", json.dumps(TINY_MODEL), "--hparams", json.dumps(TINY_HP),
        "--seed", str(seed), "--out-dir", str(out_dir), "--threads", "1"])


@pytest.fixture(scope="module")
def checkpoint(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("ckpt") / "seed~1"
    assert run_finetune(data_dir, out) == 0
    return out


def test_finetune_writes_a_complete_checkpoint(checkpoint):
    names = {p.name for p in checkpoint.iterdir()}
    assert {"model.safetensors", "config.json", "vocab.txt", "train_curve.csv", "train_summary.json"} <= names
    summary = json.loads((checkpoint / "train_summary.json").read_text())
    assert summary["n_train"] == 64 and summary["labels"] == ["entailment", "neutral", "contradiction"]
    assert summary["provenance"]["seed"] == 1 and "torch" in summary["provenance"]["versions"]
    curve = pd.read_csv(checkpoint / "train_curve.csv")
    assert curve.train_loss.notna().any() and curve.dev_accuracy.notna().any()
    assert not [p for p in checkpoint.parent.iterdir() if p.name.startswith(".")]  # no staging left


def test_same_seed_gives_bit_identical_weights(data_dir, checkpoint, tmp_path):
    from safetensors.torch import load_file

    assert run_finetune(data_dir, tmp_path / "again", seed=1) == 0
    assert run_finetune(data_dir, tmp_path / "other", seed=2) == 0
    first, again = load_file(checkpoint / "model.safetensors"), load_file(tmp_path / "again" / "model.safetensors")
    other = load_file(tmp_path / "other" / "model.safetensors")
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)


def test_a_failed_fine_tuning_leaves_nothing_that_looks_complete(data_dir, tmp_path, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("killed half-way")

    monkeypatch.setattr(finetune_cli, "fit", explode)
    out = tmp_path / "seed~1"
    with pytest.raises(RuntimeError, match="half-way"):
        run_finetune(data_dir, out)
    assert not (out / "train_summary.json").exists() and not (out / "model.safetensors").exists()
    assert list(tmp_path.iterdir()) == []


def test_evaluate_writes_one_json_and_predictions_per_set(data_dir, checkpoint, tmp_path):
    sets = [{"name": "dev", "metric": "accuracy"},
            {"name": "hans", "metric": "hans", "merge": {"neutral": "non-entailment", "contradiction": "non-entailment"}}]
    assert evaluate_cli.main([
        "--model-dirs", str(checkpoint), str(checkpoint), "--rows", "baseline", "again",
        "--out-dirs", str(tmp_path), str(tmp_path / "again"), "--data", str(data_dir / "dev.parquet"),
        str(data_dir / "hans.parquet"), "--eval-sets", json.dumps(sets), "--task", "mnli", "--seed", "1",
        "--threads", "1"]) == 0
    hans = json.loads((tmp_path / "hans.json").read_text())
    again = json.loads((tmp_path / "again" / "hans.json").read_text())
    assert again["row"] == "again" and again["metrics"] == hans["metrics"]  # one process, several models
    assert hans["n_examples"] == 40 and hans["row"] == "baseline" and hans["seed"] == 1
    preds = pd.read_parquet(tmp_path / "hans.predictions.parquet")
    assert set(preds.pred) <= {"entailment", "non-entailment"}
    # the JSON's accuracy is exactly what the saved predictions say
    assert hans["metrics"]["accuracy"] == pytest.approx((preds.gold == preds.pred).mean() * 100)
    assert "accuracy/heuristic=lexical_overlap" in hans["metrics"]
    probs = preds[[c for c in preds if c.startswith("prob_")]].to_numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_an_evaluation_stopped_between_sets_keeps_them_and_its_rerun_scores_only_the_rest(data_dir, checkpoint,
                                                                                          tmp_path, caplog, monkeypatch):
    """SIGTERM (here the flag its handler sets) while a set is scored: the job ends after that set with the set
    staged (snakemake then deletes the declared outputs); the rerun puts it back, scores the other three and ends
    bit-equal to an uninterrupted run, with no staged copy left. A staged part of other inputs is never put back."""
    import shutil

    from maskbench import stop
    from maskbench.tools.compare_results import compare_file
    from maskbench.workflow import staged_evaluation

    score_all = staged_evaluation.score_all

    def stop_during_the_first_set(*args, **kwargs):
        written = score_all(*args, **kwargs)
        stop.request("SIGTERM")
        return written

    sets = [{"name": "dev", "metric": "accuracy"}, {"name": "train", "metric": "accuracy"}]
    out = tmp_path / "run"

    def run():
        return evaluate_cli.main([
            "--model-dirs", str(checkpoint), str(checkpoint), "--rows", "baseline", "again",
            "--out-dirs", str(out / "a"), str(out / "b"), "--data", str(data_dir / "dev.parquet"),
            str(data_dir / "train.parquet"), "--eval-sets", json.dumps(sets), "--task", "mnli", "--seed", "1",
            "--threads", "1"])

    assert run() == 0
    straight = tmp_path / "straight"
    out.rename(straight)
    monkeypatch.setattr(staged_evaluation, "score_all", stop_during_the_first_set)
    try:
        with pytest.raises(stop.StopRequested, match="after set 1 of 4"):
            run()
    finally:
        stop.clear()
    monkeypatch.undo()
    assert sorted(p.name for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")) == [
        "dev.json", "dev.predictions.parquet"]
    assert len(list(out.rglob(".dev.json.staged-*"))) == 1
    for path in out.rglob("*"):  # snakemake deletes a failed job's declared outputs, not the staged copies
        if path.is_file() and not path.name.startswith("."):
            path.unlink()
    caplog.set_level("INFO", logger="maskbench.workflow.staged_evaluation")
    assert run() == 0
    assert "at set 1 of 4" in caplog.text and "scored 3 of 4 (item, set) parts (1 put back" in caplog.text
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(straight) for p in straight.rglob("*") if p.is_file())  # nothing staged left
    assert [rel for rel in files if compare_file(straight / rel, out / rel)[1] is not None] == []
    # a part staged from other inputs is scored again: the model's weights rewritten since the cut-off
    shutil.rmtree(out)
    monkeypatch.setattr(staged_evaluation, "score_all", stop_during_the_first_set)
    try:
        with pytest.raises(stop.StopRequested):
            run()
    finally:
        stop.clear()
    monkeypatch.undo()
    weights = checkpoint / "model.safetensors"
    weights.write_bytes(weights.read_bytes())
    caplog.clear()
    assert run() == 0
    assert "scored 4 of 4 (item, set) parts (0 put back" in caplog.text
    # a stop during the job's last set: nothing is left to score, the job ends complete
    shutil.rmtree(out)
    calls = []

    def stop_during_the_last_set(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            stop.request("SIGTERM")
        return score_all(*args, **kwargs)

    monkeypatch.setattr(staged_evaluation, "score_all", stop_during_the_last_set)
    try:
        assert run() == 0
    finally:
        stop.clear()
    assert [rel for rel in files if compare_file(straight / rel, out / rel)[1] is not None] == []
    assert not list(out.rglob(".*.staged-*"))

def test_map_predictions_merges_and_refuses_unreachable_labels():
    mapped = map_predictions(["entailment", "neutral", "contradiction"],
                             {"neutral": "non-entailment", "contradiction": "non-entailment"},
                             ["entailment", "non-entailment"], "hans.parquet")
    assert mapped.tolist() == ["entailment", "non-entailment", "non-entailment"]
    with pytest.raises(DataError, match=r"hans.parquet: field 'label' has value 'non-entailment'"):
        map_predictions(["entailment", "neutral", "contradiction"], {}, ["entailment", "non-entailment"], "hans.parquet")
    with pytest.raises(DataError, match="field 'merge'"):
        map_predictions(["a", "b"], {"c": "a"}, ["a"], "x.parquet")


def test_linear_warmup_then_decay_by_hand():
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=1.0)
    sched = linear_schedule(opt, warmup=2, total=6)
    rates = []
    for _ in range(6):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    # step 0: 1/2, step 1: 2/2, then (6-2)/4, (6-3)/4, (6-4)/4, (6-5)/4
    assert rates == pytest.approx([0.5, 1.0, 1.0, 0.75, 0.5, 0.25])
    assert warmup_steps(0.2, 100) == 20 and warmup_steps(2000, 100) == 2000


def test_init_out_keeps_the_seeded_untrained_model(data_dir, checkpoint, tmp_path):
    """--init-out writes theta_pt (paper C's starting weights) without changing the run it belongs to."""
    from safetensors.torch import load_file

    from maskbench.text.models import load_classifier

    def run(seed, name):
        return finetune_cli.main([
            "--train", str(data_dir / "train.parquet"), "--model-spec", json.dumps(TINY_MODEL),
            "--hparams", json.dumps(TINY_HP), "--seed", str(seed), "--out-dir", str(tmp_path / name),
            "--init-out", str(tmp_path / f"{name}_init"), "--threads", "1", "--dev", str(data_dir / "dev.parquet")])

    assert run(1, "a") == 0 and run(1, "b") == 0 and run(2, "c") == 0
    trained = load_file(checkpoint / "model.safetensors")
    assert all(torch.equal(trained[k], v) for k, v in load_file(tmp_path / "a" / "model.safetensors").items())
    init_a, init_b = (load_file(tmp_path / f"{n}_init" / "model.safetensors") for n in ("a", "b"))
    assert set(init_a) == set(trained) and all(torch.equal(init_a[k], init_b[k]) for k in init_a)
    assert any(not torch.equal(init_a[k], trained[k]) for k in trained)  # training moved the weights
    init_c = load_file(tmp_path / "c_init" / "model.safetensors")
    assert any(not torch.equal(init_a[k], init_c[k]) for k in init_a)  # another seed, another init
    summary = json.loads((tmp_path / "a_init" / "train_summary.json").read_text())
    assert summary["initial_weights"] is True and summary["labels"] == ["entailment", "neutral", "contradiction"]
    model, _ = load_classifier(tmp_path / "a_init")
    assert model.config.maskbench_input_view == "pair"


def test_snapshots_hold_the_weights_after_that_many_steps(data_dir, tmp_path):
    """--snapshot-steps s writes the weights after s updates: bit-identical to a run that stops after s steps
    (constant learning rate, no warm-up: the schedule does not depend on the run's length)."""
    from safetensors.torch import load_file

    hp = {**TINY_HP, "epochs": 2, "warmup": 0, "lr_schedule": "constant"}
    common = ["--train", str(data_dir / "train.parquet"), "--model-spec", json.dumps(TINY_MODEL), "--seed", "4",
              "--threads", "1"]
    assert finetune_cli.main([*common, "--hparams", json.dumps(hp), "--out-dir", str(tmp_path / "full"),
                              "--snapshot-steps", "3", "1", "--snapshot-dir", str(tmp_path / "snaps")]) == 0
    n_batches = -(-len(pd.read_parquet(data_dir / "train.parquet")) // hp["batch_size"])
    short = {**hp, "epochs": (3 - 0.5) / n_batches}  # fit runs ceil(epochs x batches) = 3 steps
    assert finetune_cli.main([*common, "--hparams", json.dumps(short), "--out-dir", str(tmp_path / "short")]) == 0
    snap = load_file(tmp_path / "snaps" / "step~3" / "model.safetensors")
    stopped = load_file(tmp_path / "short" / "model.safetensors")
    assert set(snap) == set(stopped) and all(torch.equal(snap[k], stopped[k]) for k in snap)
    one = load_file(tmp_path / "snaps" / "step~1" / "model.safetensors")
    final = load_file(tmp_path / "full" / "model.safetensors")
    assert any(not torch.equal(one[k], snap[k]) for k in snap) and any(not torch.equal(final[k], snap[k]) for k in snap)
    summary = json.loads((tmp_path / "snaps" / "step~3" / "train_summary.json").read_text())
    assert summary["snapshot_step"] == 3 and summary["total_steps"] == 2 * n_batches
    with pytest.raises(ValueError, match=r"--snapshot-steps \[99\]: every step must lie in 1\.\."):
        finetune_cli.main([*common, "--hparams", json.dumps(hp), "--out-dir", str(tmp_path / "bad"),
                           "--snapshot-steps", "99", "--snapshot-dir", str(tmp_path / "bad_snaps")])
    assert not (tmp_path / "bad").exists()


def test_train_classifier_0_keeps_the_seeded_head_and_trains_the_encoder(data_dir, checkpoint, tmp_path):
    """Paper A's code: the optimiser never receives the head, so it keeps its initialisation; the encoder trains."""
    from safetensors.torch import load_file

    assert finetune_cli.main([
        "--train", str(data_dir / "train.parquet"), "--model-spec", json.dumps(TINY_MODEL),
        "--hparams", json.dumps(TINY_HP), "--seed", "1", "--out-dir", str(tmp_path / "frozen"),
        "--init-out", str(tmp_path / "init"), "--train-classifier", "0", "--threads", "1"]) == 0
    init, frozen = (load_file(tmp_path / name / "model.safetensors") for name in ("init", "frozen"))
    trained = load_file(checkpoint / "model.safetensors")  # the same seed with the head trained
    heads = [k for k in init if k.startswith("classifier.")]
    assert sorted(heads) == ["classifier.bias", "classifier.weight"]
    assert all(torch.equal(frozen[k], init[k]) for k in heads)
    assert all(not torch.equal(trained[k], init[k]) for k in heads)
    encoder = [k for k in init if k.startswith("bert.encoder.")]
    assert encoder and all(not torch.equal(frozen[k], init[k]) for k in encoder if k.endswith(".weight"))
    assert json.loads((tmp_path / "frozen" / "train_summary.json").read_text())["classifier_trained"] is False
    with pytest.raises(ValueError, match="--train-classifier must be 0 or 1, got 2"):
        finetune_cli.main(["--train", str(data_dir / "train.parquet"), "--model-spec", json.dumps(TINY_MODEL),
                           "--seed", "1", "--out-dir", str(tmp_path / "bad"), "--train-classifier", "2"])

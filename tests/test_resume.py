"""Resumable training: a fine-tuning or mask search killed at a fixed step and rerun goes on from its last saved
state and ends bit-identical to an uninterrupted run (CPU)."""

import json

import numpy as np
import pandas as pd
import pytest

import maskbench.training.loop as train_loop
from maskbench.data.schema import write_prepared
from maskbench.data.synthetic import generate
from maskbench.masking.codec import read_mask_file
from maskbench.resume import Resume, read_state, state_path_for
from maskbench.steps.nlu import finetune as finetune_cli
from maskbench.steps.nlu import mask_search, srnet_mask_train

TINY_MODEL = {"name": "t", "init": "scratch", "tokenizer": "data_vocab",
              "bert_config": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                              "intermediate_size": 32, "max_position_embeddings": 64}}
# 3 epochs of 5 batches (72 examples, batch 16: the last batch short), dev scored after every epoch: the
# dropout stream crosses evaluations, so a resume must restore every generator exactly
TINY_HP = {"epochs": 3, "batch_size": 16, "learning_rate": 1e-3, "warmup": 0.1, "max_length": 64, "log_every": 2}
SEARCH_HP = {"epochs": 2, "batch_size": 16, "learning_rate": 0.1, "lr_schedule": "constant", "weight_decay": 0.0,
             "max_grad_norm": 0, "max_length": 64, "log_every": 2}


class Killed(Exception):
    """Stands in for a kill -9 at a fixed step: nothing after it runs."""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resume")
    for split, n in (("train", 72), ("dev", 24)):
        frame, labels = generate("nli", split, n, seed=0, rho=0.9)
        write_prepared(frame, labels, folder / f"{split}.parquet", {"dataset": split, "task": "mnli"})
    return folder


def finetune(data, out, *extra):
    return finetune_cli.main(["--train", str(data / "train.parquet"), "--dev", str(data / "dev.parquet"),
                              "--model-spec", json.dumps(TINY_MODEL), "--hparams", json.dumps(TINY_HP),
                              "--seed", "3", "--out-dir", str(out), "--threads", "1", *extra])


def kill_at(monkeypatch, step_to_die):
    real = train_loop.train_step

    def dying(model, batch, objective, optimizer, scheduler, clip, norm, step, times=None, **precision):
        if step == step_to_die:
            raise Killed(f"killed before step {step}")
        return real(model, batch, objective, optimizer, scheduler, clip, norm, step, times, **precision)

    monkeypatch.setattr(train_loop, "train_step", dying)


def count_steps(monkeypatch) -> list:
    """Record the steps the loop runs (a resumed run must not redo the steps before its state)."""
    real, ran = train_loop.train_step, []

    def counting(model, batch, objective, optimizer, scheduler, clip, norm, step, times=None, **precision):
        ran.append(step)
        return real(model, batch, objective, optimizer, scheduler, clip, norm, step, times, **precision)

    monkeypatch.setattr(train_loop, "train_step", counting)
    return ran


def curve_without_seconds(folder):
    return pd.read_csv(folder / "train_curve.csv").drop(columns="seconds")


@pytest.fixture(scope="module")
def uninterrupted(data):
    out = data / "straight"
    assert finetune(data, out) == 0
    return out


@pytest.mark.parametrize("die_at, every", [(7, 3), (10, 5), (12, 4)])
def test_a_killed_fine_tuning_resumes_bit_identically(data, uninterrupted, tmp_path, monkeypatch, die_at, every):
    # (10, 5): the state is saved at the end of epoch 2, before that epoch's dev evaluation
    out = tmp_path / "seed~3"
    kill_at(monkeypatch, die_at)
    with pytest.raises(Killed):
        finetune(data, out, "--checkpoint-every", str(every))
    state = state_path_for(out)
    assert state.is_file() and not (out / "train_summary.json").exists()
    assert read_state(state)["step"] == (die_at // every) * every
    monkeypatch.undo()
    ran = count_steps(monkeypatch)
    assert finetune(data, out, "--checkpoint-every", str(every)) == 0
    assert ran == list(range((die_at // every) * every, 15))  # 3 epochs x 5 batches, from the saved step on
    assert not state.exists()  # removed once the outputs are complete
    assert (out / "model.safetensors").read_bytes() == (uninterrupted / "model.safetensors").read_bytes()
    pd.testing.assert_frame_equal(curve_without_seconds(out), curve_without_seconds(uninterrupted))


def test_a_killed_learned_mixin_run_resumes_with_its_gate(data, tmp_path, monkeypatch):
    # the learned-mixin gate trains outside the model: its weights must be part of the saved state
    from maskbench.tracks.nlu.bias.probs import write_probs

    frame = pd.read_parquet(data / "train.parquet")
    labels = ["entailment", "neutral", "contradiction"]
    probs = np.full((len(frame), 3), 0.1) + 0.7 * np.eye(3)[frame.label.to_numpy()]
    bias = tmp_path / "bias.parquet"
    write_probs(bias, frame.id, probs, labels, {"task": "mnli"})
    extra = ["--loss", "learned_mixin", "--bias-probs", str(bias)]
    assert finetune(data, tmp_path / "straight", *extra) == 0
    kill_at(monkeypatch, 8)
    with pytest.raises(Killed):
        finetune(data, tmp_path / "resumed", *extra, "--checkpoint-every", "6")
    monkeypatch.undo()
    assert finetune(data, tmp_path / "resumed", *extra, "--checkpoint-every", "6") == 0
    assert (tmp_path / "resumed" / "model.safetensors").read_bytes() == \
        (tmp_path / "straight" / "model.safetensors").read_bytes()
    pd.testing.assert_frame_equal(curve_without_seconds(tmp_path / "resumed"),
                                  curve_without_seconds(tmp_path / "straight"))


def test_checkpointing_alone_changes_nothing(data, uninterrupted, tmp_path):
    out = tmp_path / "seed~3"
    assert finetune(data, out, "--checkpoint-every", "2") == 0
    assert (out / "model.safetensors").read_bytes() == (uninterrupted / "model.safetensors").read_bytes()


def test_a_killed_mask_search_resumes_bit_identically(data, uninterrupted, tmp_path, monkeypatch):
    def search(name, *extra):
        return mask_search.main(["--model-dir", str(uninterrupted), "--train", str(data / "train.parquet"),
                                 "--dev", str(data / "dev.parquet"), "--hparams", json.dumps(SEARCH_HP),
                                 "--seed", "1", "--out", str(tmp_path / f"{name}.mask"),
                                 "--summary", str(tmp_path / f"{name}.json"), "--threads", "1", *extra])

    assert search("straight") == 0
    kill_at(monkeypatch, 6)
    with pytest.raises(Killed):
        search("resumed", "--checkpoint-every", "4")
    assert not (tmp_path / "resumed.mask").exists()
    monkeypatch.undo()
    ran = count_steps(monkeypatch)
    assert search("resumed", "--checkpoint-every", "4") == 0
    assert ran == list(range(4, 10))  # 2 epochs x 5 batches, resumed at the state of step 4
    straight, _ = read_mask_file(tmp_path / "straight.mask")
    resumed, _ = read_mask_file(tmp_path / "resumed.mask")
    assert straight.keys() == resumed.keys() and all(np.array_equal(straight[k], resumed[k]) for k in straight)
    curves = [json.loads((tmp_path / f"{n}.json").read_text())["curve"] for n in ("straight", "resumed")]
    assert [{k: v for k, v in p.items() if k != "seconds"} for p in curves[0]] == \
        [{k: v for k, v in p.items() if k != "seconds"} for p in curves[1]]


def test_a_state_of_other_arguments_is_not_resumed(data, uninterrupted, tmp_path, monkeypatch):
    # the config changed between the crash and the rerun (another learning rate): start from step 0
    out = tmp_path / "seed~3"
    kill_at(monkeypatch, 7)
    with pytest.raises(Killed):
        finetune(data, out, "--checkpoint-every", "3", "--loss-hparams", "{}", "--train-subset", "72")
    monkeypatch.undo()
    ran = count_steps(monkeypatch)
    assert finetune(data, out, "--checkpoint-every", "3") == 0
    assert ran == list(range(15))
    assert (out / "model.safetensors").read_bytes() == (uninterrupted / "model.safetensors").read_bytes()


def test_a_cut_off_state_is_not_trusted(tmp_path):
    path = tmp_path / ".x.resume.pt"
    path.write_bytes(b"PK\x03\x04 cut off")
    assert Resume(path, 5).load() is None
    with pytest.raises(ValueError, match="checkpoint_every must be a positive"):
        Resume(path, 0)


def test_a_killed_mask_training_resumes_with_its_selection_state(data, uninterrupted, tmp_path, monkeypatch):
    # paper C's mask training keeps state outside the model: the best candidate's scores, the dev evaluations and
    # the threshold resets; a resumed run must select the same step and write the same mask and summary
    def train(name, *extra):
        spec = {"sparsity": 0.5, "select_after": 0.3, "eval_every": 2, "reset_every": 3}
        return srnet_mask_train.main([
            "--start-dir", str(uninterrupted), "--train", str(data / "train.parquet"), "--dev", str(data / "dev.parquet"),
            "--seed", "1", "--threads", "1", "--spec", json.dumps(spec), "--hparams", json.dumps(SEARCH_HP),
            "--out-mask", str(tmp_path / f"{name}.mask"), "--summary", str(tmp_path / f"{name}.json"), *extra])

    assert train("straight") == 0
    kill_at(monkeypatch, 7)
    with pytest.raises(Killed):
        train("resumed", "--checkpoint-every", "5")
    monkeypatch.undo()
    ran = count_steps(monkeypatch)
    assert train("resumed", "--checkpoint-every", "5") == 0
    assert ran == list(range(5, 10))
    assert not state_path_for(tmp_path / "resumed.mask").exists()
    straight, _ = read_mask_file(tmp_path / "straight.mask")
    resumed, _ = read_mask_file(tmp_path / "resumed.mask")
    assert all(np.array_equal(straight[k], resumed[k]) for k in straight)
    keys = ("selected_step", "selected_dev_accuracy", "saved_mask_dev_accuracy", "dev_accuracies",
            "sparsity_history", "exact_sparsity")
    summaries = [json.loads((tmp_path / f"{n}.json").read_text()) for n in ("straight", "resumed")]
    assert {k: summaries[0][k] for k in keys} == {k: summaries[1][k] for k in keys}


def test_an_early_stopped_fine_tuning_keeps_its_best_epoch_and_resumes_bit_identically(data, tmp_path, monkeypatch):
    """early_stop_patience 1 on a 6-epoch cap: the run stops at the first epoch whose dev accuracy does not rise,
    its saved model is the best epoch's (its dev accuracy is the summary's), and a run killed mid-way and resumed
    writes the same bytes."""
    hp = {**TINY_HP, "epochs": 6, "learning_rate": 5e-3, "early_stop_patience": 1}

    def run(out, *extra):
        return finetune_cli.main(["--train", str(data / "train.parquet"), "--dev", str(data / "dev.parquet"),
                                  "--model-spec", json.dumps(TINY_MODEL), "--hparams", json.dumps(hp),
                                  "--seed", "3", "--out-dir", str(out), "--threads", "1", *extra])

    assert run(tmp_path / "straight") == 0
    summary = json.loads((tmp_path / "straight" / "train_summary.json").read_text())
    dev = [a for a in pd.read_csv(tmp_path / "straight" / "train_curve.csv")["dev_accuracy"] if a == a]
    stopped, best = summary["early_stop"]["stopped_epoch"], summary["early_stop"]["best_epoch"]
    assert stopped is not None and stopped == len(dev) and stopped < 6, dev
    assert dev[stopped - 1] <= max(dev[:stopped - 1]) and best == 1 + dev.index(max(dev))
    assert summary["final_dev_accuracy"] == max(dev)
    kill_at(monkeypatch, 7)
    with pytest.raises(Killed):
        run(tmp_path / "resumed", "--checkpoint-every", "3")
    monkeypatch.undo()
    assert run(tmp_path / "resumed", "--checkpoint-every", "3") == 0
    assert (tmp_path / "resumed" / "model.safetensors").read_bytes() == \
        (tmp_path / "straight" / "model.safetensors").read_bytes()


def without_seconds(value):
    """A summary less its wall-clock fields (every other field must reproduce)."""
    if isinstance(value, dict):
        return {k: without_seconds(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [without_seconds(v) for v in value]
    return value


def test_a_killed_sweep_keeps_its_finished_sparsities_and_resumes_the_cut_one(data, uninterrupted, tmp_path,
                                                                            monkeypatch):
    # paper C's sweep job (two sparsities here) killed in its second run: snakemake deletes the declared outputs,
    # so the first run's mask and summary come back from their staged copies (not trained again) and the second
    # run goes on from its saved state; the files equal those of an uninterrupted sweep
    sweep = tmp_path / "sweep"
    files = [sweep / level / name for level in ("sparsity~0.3", "sparsity~0.6") for name in ("mask.mask", "search.json")]

    def train():
        spec = {"select_after": 0.3, "eval_every": 2, "reset_every": 3}
        return srnet_mask_train.main([
            "--start-dir", str(uninterrupted), "--train", str(data / "train.parquet"), "--dev", str(data / "dev.parquet"),
            "--seed", "1", "--threads", "1", "--spec", json.dumps(spec), "--hparams", json.dumps(SEARCH_HP),
            "--sparsities", "0.3", "0.6", "--sweep-dir", str(sweep), "--checkpoint-every", "3"])

    assert train() == 0
    straight = {f: f.read_bytes() for f in files}
    assert not [p for p in sweep.rglob(".*")]  # no staged copy or state left by a completed sweep
    for f in files:
        f.unlink()
    calls = []
    real = train_loop.train_step

    def dying(*args, **kwargs):
        calls.append(args[7])
        if len(calls) == 15:  # the second run's step 5 (each run: 2 epochs x 5 batches)
            raise Killed("time limit")
        return real(*args, **kwargs)

    monkeypatch.setattr(train_loop, "train_step", dying)
    with pytest.raises(Killed):
        train()
    monkeypatch.undo()
    for f in files:  # what snakemake does to a failed job's outputs
        f.unlink(missing_ok=True)
    ran = count_steps(monkeypatch)
    assert train() == 0
    assert ran == list(range(3, 10))  # the first sparsity not trained again; the second from its step-3 state
    for f in files:
        if f.suffix == ".json":
            a, b = (without_seconds(json.loads(x)) for x in (straight[f], f.read_bytes()))
            assert a == b, f
        else:
            assert f.read_bytes() == straight[f], f
    assert not [p for p in sweep.rglob(".*")]


# ------------------------------------------------------------------ stop requests and verified states (maskbench.stop)
def signal_at(monkeypatch, step_to_signal, signum):
    """A real signal sent to this process right before the loop's step ``step_to_signal``."""
    import os

    real = train_loop.train_step

    def signalling(model, batch, objective, optimizer, scheduler, clip, norm, step, times=None, **precision):
        if step == step_to_signal:
            os.kill(os.getpid(), signum)
        return real(model, batch, objective, optimizer, scheduler, clip, norm, step, times, **precision)

    monkeypatch.setattr(train_loop, "train_step", signalling)


@pytest.fixture
def clean_stop():
    from maskbench import stop

    stop.clear()
    yield stop
    stop.clear()


def test_sigterm_saves_the_state_after_the_current_step_and_the_rerun_ends_bit_identically(
        data, uninterrupted, tmp_path, monkeypatch, clean_stop):
    import signal

    out = tmp_path / "seed~3"
    signal_at(monkeypatch, 8, signal.SIGTERM)
    with pytest.raises(clean_stop.StopRequested, match=r"stopped on SIGTERM after step 9 of 15"):
        finetune(data, out, "--checkpoint-every", "5")  # the periodic state is at step 5; the stop saves step 9
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the loop's handler is gone with the loop
    assert read_state(state_path_for(out))["step"] == 9
    assert read_state(state_path_for(out).with_name(state_path_for(out).name + ".prev"))["step"] == 5
    assert not out.exists() or not any(out.iterdir())  # nothing that looks like an output
    monkeypatch.undo()
    clean_stop.clear()
    ran = count_steps(monkeypatch)
    assert finetune(data, out, "--checkpoint-every", "5") == 0
    assert ran == list(range(9, 15))
    assert not list(tmp_path.glob(".*resume*"))  # the state and the previous one removed with the outputs written
    assert (out / "model.safetensors").read_bytes() == (uninterrupted / "model.safetensors").read_bytes()
    pd.testing.assert_frame_equal(curve_without_seconds(out), curve_without_seconds(uninterrupted))


def test_sigusr1_saves_the_state_and_the_run_goes_on_unchanged(data, uninterrupted, tmp_path, monkeypatch,
                                                                 clean_stop):
    import signal

    saved = []
    real_save = Resume.save
    monkeypatch.setattr(Resume, "save", lambda self, state: (saved.append(state["step"]), real_save(self, state)))
    signal_at(monkeypatch, 6, signal.SIGUSR1)
    out = tmp_path / "seed~3"
    assert finetune(data, out, "--checkpoint-every", "5") == 0
    assert saved == [5, 7, 10]  # the periodic states, and one after the step the signal came in
    assert (out / "model.safetensors").read_bytes() == (uninterrupted / "model.safetensors").read_bytes()


def test_a_damaged_state_is_refused_naming_it_and_the_previous_one_is_used(tmp_path, caplog):
    path = tmp_path / ".x.resume.pt"
    resume = Resume(path, 5, key="k")
    resume.save({"step": 5})
    resume.save({"step": 10})
    assert resume.load()["step"] == 10
    raw = bytearray(path.read_bytes())
    raw[-20] ^= 0x01  # one flipped bit in the tensors' bytes
    path.write_bytes(bytes(raw))
    with caplog.at_level("WARNING"):
        assert resume.load()["step"] == 5
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == 1 and refused[0].startswith(f"{path}: damaged: its bytes hash to sha256 ")
    assert "\n" not in refused[0]
    path.with_name(path.name + ".prev").write_bytes(b"PK\x03\x04 cut off")
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert resume.load() is None  # both damaged: from the beginning
    assert any("not a maskbench resume state" in r.getMessage() for r in caplog.records)
    resume.done()
    assert not list(tmp_path.iterdir())

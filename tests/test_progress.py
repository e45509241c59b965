"""Progress a long job reports while it runs (maskbench.progress): lines at least every interval on a slowed clock,
the curve written as a partial file and renamed at the end, TensorBoard scalars, and not one bit of output changed."""

import logging
import sys
import types

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from tiny_models import FeatureBatches
from torch import nn

from maskbench import progress
from maskbench.training.hparams import TrainHParams
from maskbench.training.loop import fit

HP = TrainHParams(epochs=5, batch_size=4, learning_rate=0.1, lr_schedule="constant", log_every=2)  # 20 steps


def objective(model, batch):
    loss = F.cross_entropy(model(batch["x"]), batch["labels"])
    return loss, {}


def tiny_fit(step_hook=None):
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    curve = fit(model, FeatureBatches(n=16), objective, HP, seed=3, device="cpu", step_hook=step_hook)
    return model, curve


def progress_lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "maskbench.progress"]


def test_a_slowed_run_writes_a_line_at_least_every_interval_and_its_curve_as_a_partial_file(tmp_path, monkeypatch,
                                                                                               caplog):
    now = [0.0]
    monkeypatch.setattr(progress, "clock", lambda: now[0])
    monkeypatch.setenv(progress.SECONDS_ENV, "10")
    monkeypatch.setenv(progress.FOLDER_ENV, str(tmp_path))
    seen = {}

    def slow_step(step, total):  # every step takes 4 s of the clock; look at the files before step 11
        now[0] += 4.0
        if step == 10:
            seen["partial"] = (tmp_path / "train_curve.csv.partial").read_text()
            seen["final_exists"] = (tmp_path / "train_curve.csv").exists()

    caplog.set_level(logging.INFO, logger="maskbench.progress")
    _, curve = tiny_fit(slow_step)
    lines = progress_lines(caplog)
    # 4 s a step, a line once 10 s have passed since the last: after steps 3, 6, ..., 18 (12 s apart), then the end
    assert [line.split(",")[0] for line in lines[:-1]] == [f"progress train: step {s}/20 ({5 * s:.1f}%)"
                                                          for s in (3, 6, 9, 12, 15, 18)]
    # step 3 at 12 s: 12 examples in 12 s, 0.25 steps/s, 17 steps left -> 68 s
    assert "1.0 examples/s" in lines[0] and "elapsed 0:00:12" in lines[0] and "ETA 0:01:08" in lines[0]
    assert "lr 0.1000" in lines[0] and " loss " in lines[0]
    assert lines[-1] == "progress train: done, step 20/20 in 0:01:20, 1.0 examples/s"
    # mid-run: a partial file with the curve so far, no file named complete; at the end: the final curve's bytes
    final = (tmp_path / "train_curve.csv").read_text()
    assert not seen["final_exists"] and final.startswith(seen["partial"]) and seen["partial"].count("\n") >= 3
    assert not (tmp_path / "train_curve.csv.partial").exists()
    written = tmp_path / "as_checkpoints_write_it.csv"
    pd.DataFrame(curve).to_csv(written, index=False)  # checkpoints.write_checkpoint's writer
    assert final == written.read_text()


def test_progress_settings_change_no_weight_and_no_curve_value(tmp_path, monkeypatch):
    monkeypatch.delenv(progress.SECONDS_ENV, raising=False)
    monkeypatch.delenv(progress.FOLDER_ENV, raising=False)
    quiet_model, quiet_curve = tiny_fit()
    monkeypatch.setenv(progress.SECONDS_ENV, "0")
    monkeypatch.setenv(progress.FOLDER_ENV, str(tmp_path))
    loud_model, loud_curve = tiny_fit()
    assert torch.equal(quiet_model.weight, loud_model.weight) and torch.equal(quiet_model.bias, loud_model.bias)
    drop = lambda rows: [{k: v for k, v in row.items() if k != "seconds"} for row in rows]  # noqa: E731
    assert drop(quiet_curve) == drop(loud_curve) and len(loud_curve) == 10


def test_tensorboard_gets_the_curve_and_the_rates(tmp_path, monkeypatch):
    written = []

    class Writer:
        def __init__(self, log_dir):
            written.append(("dir", log_dir))

        def add_scalar(self, tag, value, step):
            written.append((tag, round(float(value), 6), step))

        def close(self):
            written.append(("closed",))

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", types.SimpleNamespace(SummaryWriter=Writer))
    monkeypatch.setattr(progress, "tensorboard_available", lambda: True)
    monkeypatch.setattr(progress, "_RUNS", {})
    monkeypatch.setenv(progress.TENSORBOARD_ENV, "1")
    monkeypatch.setenv(progress.FOLDER_ENV, str(tmp_path))
    monkeypatch.setenv(progress.SECONDS_ENV, "1000")
    _, curve = tiny_fit()
    assert written[0] == ("dir", str(tmp_path / "tensorboard")) and written[-1] == ("closed",)
    losses = [(tag, value, step) for tag, value, step in written[1:-1] if tag == "train/curve/train_loss"]
    assert losses == [("train/curve/train_loss", round(row["train_loss"], 6), row["step"]) for row in curve]
    written.clear()
    progress.Progress("evaluate", 3, "batch").close()  # a scoring loop: log lines only, no event file
    assert written == []
    tiny_fit()  # a second run of the same job: its own tags
    assert {tag.split("/")[0] for tag, *_ in written[1:-1]} == {"train_2"}


def test_bad_settings_are_one_line_errors_naming_the_setting(monkeypatch):
    monkeypatch.setenv(progress.SECONDS_ENV, "soon")
    with pytest.raises(progress.ProgressSettingError, match="MASKBENCH_PROGRESS_SECONDS='soon'"):
        progress.interval()
    monkeypatch.setattr(progress, "tensorboard_available", lambda: False)
    with pytest.raises(progress.ProgressSettingError, match="logging.tensorboard=true: .* tensorboard package"):
        progress.job_settings({"tensorboard": True})
    assert progress.job_settings({"progress_seconds": 2.5}) == {progress.SECONDS_ENV: "2.5"}


def test_a_scoring_loop_reports_batches_done_and_its_eta(monkeypatch, caplog):
    from maskbench.tracks.vision.evaluation import task_accuracy

    now = [0.0]
    monkeypatch.setattr(progress, "clock", lambda: now[0])
    monkeypatch.setenv(progress.SECONDS_ENV, "5")

    class Slow(nn.Module):  # 3 s a batch
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 2)

        def forward(self, x):
            now[0] += 3.0
            return self.linear(x)

    batches = [{"image": torch.ones(2, 2), "label": torch.tensor([0, 1]), "bias": torch.tensor([[0], [1]])}] * 4
    caplog.set_level(logging.INFO, logger="maskbench.progress")
    task_accuracy(Slow(), batches)
    assert progress_lines(caplog) == [
        "progress task accuracy: batch 2/4 (50.0%), 0.7 examples/s, elapsed 0:00:06, ETA 0:00:06",
        "progress task accuracy: batch 4/4 (100.0%), 0.7 examples/s, elapsed 0:00:12",
        "progress task accuracy: done, batch 4/4 in 0:00:12, 0.7 examples/s"]

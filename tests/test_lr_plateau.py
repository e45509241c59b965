"""The "plateau" learning-rate schedule (paper D's CelebA recipe: torch's ReduceLROnPlateau on the unbiased-validation
loss, stop once the rate is below 1e-3) and the batched image fetch, both through the code the rules run."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import maskbench.training.loop as train_loop
from maskbench.steps.vision import train as vision_train
from maskbench.tracks.vision.images import ImageDataset, ImageSet, write_images
from maskbench.training.hooks import LRPlateau

LOSSES = [1.0, 0.9, 0.95, 0.91, 0.92, 0.93, 0.8, 0.85, 0.86, 0.87, 0.88, 0.89, 0.9, 0.91]


def bound(plateau: LRPlateau, lr: float = 0.1) -> torch.optim.Optimizer:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    for group in optimizer.param_groups:
        group["initial_lr"] = lr  # what LambdaLR records
    plateau.bind(optimizer)
    return optimizer


def test_the_plateau_schedule_lowers_the_rate_as_torch_does():
    """patience 2, cooldown 1, by hand: epochs 3-5 bad (0.9 stays best) -> x0.1 after epoch 5; epoch 6 bad but in
    the cooldown; 0.8 at epoch 7 is best; 8, 9, 10 bad -> x0.1 after epoch 10; 11 cooldown; 12, 13, 14 bad -> x0.1
    after epoch 14. The rate recorded after each epoch is the one the next epoch trains at."""
    ours = LRPlateau(steps_per_epoch=1, evaluate=None, factor=0.1, patience=2, cooldown=1)
    optimizer = bound(ours)
    reference_opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    reference = torch.optim.lr_scheduler.ReduceLROnPlateau(reference_opt, factor=0.1, patience=2, cooldown=1)
    mine, torchs = [], []
    for loss in LOSSES:
        ours.update(loss)
        reference.step(loss)
        mine.append(optimizer.param_groups[0]["lr"])
        torchs.append(reference_opt.param_groups[0]["lr"])
    assert mine == pytest.approx(torchs, rel=1e-12)
    expected = [0.1] * 4 + [0.01] * 5 + [0.001] * 4 + [1e-4]
    assert mine == pytest.approx(expected, rel=1e-12)
    assert [i + 1 for i, h in enumerate(ours.history) if h["lowered"]] == [5, 10, 14]


def test_the_plateau_schedule_stops_once_the_rate_is_below_min_lr():
    plateau = LRPlateau(steps_per_epoch=1, evaluate=None, factor=0.1, patience=0, min_lr=1e-3)
    bound(plateau, lr=0.1)
    stops = [plateau.update(1.0) for _ in range(4)]  # every epoch after the first is bad: 0.1, 0.01, 0.001, 1e-4
    assert stops == [False, False, False, True]
    assert plateau.scale == pytest.approx(1e-3)


def test_the_plateau_schedule_refuses_bad_settings():
    with pytest.raises(ValueError, match="factor must lie in"):
        LRPlateau(1, None, factor=1.5)
    with pytest.raises(ValueError, match="patience, cooldown, threshold and min_lr must be >= 0"):
        LRPlateau(1, None, patience=-1)


# ------------------------------------------------------------------------------------------- through the step


def tiny_split(path, n: int, seed: int, split: str):
    rng = np.random.default_rng(seed)
    label = np.arange(n) % 2
    images = rng.integers(0, 256, (n, 1, 4, 4), dtype=np.uint8)
    images[:, 0, 0, 0] = np.where(label == 1, 250, 5)  # a learnable pixel
    write_images(path, ImageSet(images=images, label=label, bias=(label[:, None] + np.arange(n)[:, None] % 3 > 1)
                                .astype(np.int64), ids=np.arange(n, dtype=np.int64), label_names=["a", "b"],
                                bias_names=["b"], bias_classes=[2], dataset="toy", split=split,
                                provenance={"seed": seed}))
    return path


MLP = {"arch": "mlp", "kwargs": {"hidden": 8, "layers": 2}, "normalize": {"mean": 0.5, "std": 0.5}}
PLATEAU_HP = {"optimizer": "sgd", "learning_rate": 0.5, "momentum": 0.9, "weight_decay": 0.0, "batch_size": 8,
              "epochs": 12, "lr_schedule": "plateau", "gamma": 0.1, "log_every": 1,
              "plateau": {"patience": 0, "cooldown": 0, "threshold": 0.5, "min_lr": 1e-3}}


def train(tmp_path, out, hp=PLATEAU_HP, *extra):
    train_file = tiny_split(tmp_path / "train.safetensors", 32, 0, "train")
    val_file = tiny_split(tmp_path / "val.safetensors", 16, 1, "unbiased_val")
    return vision_train.main(["--train", str(train_file), "--val", str(val_file), "--model-spec",
                              json.dumps({**MLP, "train": hp}), "--hparams", json.dumps(hp), "--seed", "4",
                              "--threads", "1", "--out-dir", str(out), *extra])


def test_a_plateau_run_lowers_its_rate_stops_and_resumes_bit_identically(tmp_path, monkeypatch):
    """threshold 0.5: an epoch must halve the best validation loss to count, so the rate is lowered after
    (nearly) every epoch and the run stops early once it is below 1e-3; killed at step 9 and rerun, it ends
    bit-identical to the straight run, the rates included."""
    assert train(tmp_path, tmp_path / "straight") == 0
    summary = json.loads((tmp_path / "straight" / "train_summary.json").read_text())
    history = summary["plateau"]["history"]
    rates = [h["lr"] for h in history]
    assert rates[-1] < 1e-3 <= rates[-2]  # stopped on the first epoch below min_lr
    assert len(history) < 12  # before the epoch budget
    steps = [p["step"] for p in summary["curve"] if "train_loss" in p]
    logged = {p["step"]: p["lr"] for p in summary["curve"] if "train_loss" in p}
    assert steps[-1] == 4 * len(history)  # 32 / 8 = 4 steps per epoch
    # the rate a step used is the rate after the previous epoch's decision
    for epoch, record in enumerate(history[:-1], start=1):
        assert logged[4 * epoch + 1] == pytest.approx(record["lr"], rel=1e-12)

    real, dead, ran = train_loop.train_step, {"done": False}, []

    def dying(model, batch, objective, optimizer, scheduler, clip, norm, step, times=None, **precision):
        if step == 9 and not dead["done"]:
            dead["done"] = True
            raise RuntimeError("killed")
        if dead["done"]:
            ran.append(step)
        return real(model, batch, objective, optimizer, scheduler, clip, norm, step, times, **precision)

    monkeypatch.setattr(train_loop, "train_step", dying)
    with pytest.raises(RuntimeError, match="killed"):
        train(tmp_path, tmp_path / "resumed", PLATEAU_HP, "--checkpoint-every", "2")
    assert train(tmp_path, tmp_path / "resumed", PLATEAU_HP, "--checkpoint-every", "2") == 0
    assert ran[0] == 8  # went on from the state saved after step 8, in the plateau's third epoch
    straight = load_file(tmp_path / "straight" / "model.safetensors")
    resumed = load_file(tmp_path / "resumed" / "model.safetensors")
    assert straight.keys() == resumed.keys()
    assert all(torch.equal(straight[k], resumed[k]) for k in straight)
    again = json.loads((tmp_path / "resumed" / "train_summary.json").read_text())["plateau"]["history"]
    assert [h["lr"] for h in again] == rates


def test_plateau_settings_without_the_plateau_schedule_are_refused(tmp_path):
    hp = {**PLATEAU_HP, "lr_schedule": "constant"}
    with pytest.raises(ValueError, match="'plateau' schedule needs its settings"):
        train(tmp_path, tmp_path / "never", hp)
    assert not (tmp_path / "never").exists()


def test_a_batch_fetched_at_once_equals_the_stacked_items():
    rng = np.random.default_rng(2)
    n = 9
    imageset = ImageSet(images=rng.integers(0, 256, (n, 3, 4, 5), dtype=np.uint8), label=np.arange(n) % 10,
                        bias=np.stack([np.arange(n) % 10, np.arange(n) % 3], 1).astype(np.int64),
                        ids=np.arange(n, dtype=np.int64), label_names=[str(i) for i in range(10)],
                        bias_names=["colour", "side"], bias_classes=[10, 3], dataset="toy", split="train",
                        provenance={})
    data = ImageDataset(imageset, mean=(0.1, 0.2, 0.3), std=(0.5, 0.6, 0.7))
    order = [4, 0, 8, 2, 2]
    one_by_one = data.collate([data[i] for i in order])
    at_once = data.collate(data.__getitems__(order))
    assert one_by_one.keys() == at_once.keys()
    for key in one_by_one:
        assert one_by_one[key].dtype == at_once[key].dtype
        assert torch.equal(one_by_one[key], at_once[key]), key

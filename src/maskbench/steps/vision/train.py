"""Entry point: train a vision model from scratch on a biased training split (paper D's vanilla model).

    python -m maskbench.steps vision.train --train T.safetensors --val V.safetensors --model-spec JSON \
        --hparams JSON --seed 1 --snapshot-epochs 1 10 --out-dir results/vision/biased_mnist/0.99/models/seed~1

Writes into ``--out-dir``: the model (``tracks.vision.models.save_model``), one folder ``epoch~<E>/`` per
``--snapshot-epochs`` (the model after E epochs: paper D's Table 6 extracts subnetworks from them) and, last,
``train_summary.json`` (the curve, the unbiased-validation accuracy per epoch; with the "plateau" schedule its
history of validation losses and rates) — a folder without the summary is an unfinished run. The "plateau" schedule
(``--hparams`` lr_schedule "plateau" with ``plateau: {patience, cooldown, threshold, min_lr}``, ``gamma`` its
factor) is torch's ReduceLROnPlateau on the ``--val`` loss, stopping once the rate is below ``min_lr`` (paper D's
CelebA recipe).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import field
from pathlib import Path

from maskbench import runtime
from maskbench.compute import Compute, start, step_arguments
from maskbench.resume import Resume, run_key, state_path_for
from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.data import image_dataset, loader, read_split, save_run_model
from maskbench.tracks.vision.evaluation import task_accuracy, task_loss
from maskbench.tracks.vision.models import build_model
from maskbench.tracks.vision.training import augmented_objective, classification_objective, train_vanilla
from maskbench.training.hooks import Hook, LRPlateau
from maskbench.training.hparams import TrainHParams

PRICED_AS = "images"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.vision.train")


@step_arguments(Compute)
class VisionTrainArgs:
    train: Path = field(metadata={"help": "the biased training split (prepared images)"})
    out_dir: Path = field(metadata={"help": "model folder to write"})
    model_spec: str = field(metadata={"help": "JSON: {arch, kwargs} (config vision.models.<name>)"})
    seed: int = field(metadata={"help": "fixes initialisation and data order"})
    val: Path | None = field(default=None, metadata={"help": "unbiased validation split, scored after each epoch"})
    hparams: str = field(default="{}", metadata={"help": "JSON of TrainHParams fields"})
    snapshot_epochs: list[int] = field(default_factory=list, metadata={
        "help": "also write the model after these many epochs to <out-dir>/epoch~<E>/"})
    checkpoint_every: int = field(default=0, metadata={
        "help": "save the run's state every N steps beside --out-dir and resume from it when rerun (0: never)"})
    deterministic: int = field(default=0, metadata={"help": "1: deterministic kernels only"})


class EpochSnapshots(Hook):
    """Writes the model after each wanted epoch (after the epoch's last step)."""

    def __init__(self, args: VisionTrainArgs, steps_per_epoch: int, record: dict):
        self.args, self.per_epoch, self.record = args, steps_per_epoch, record

    def after_step(self, step, total, model):
        if step % self.per_epoch == 0 and step // self.per_epoch in self.args.snapshot_epochs:
            epoch = step // self.per_epoch
            save_run_model(model, self.args.out_dir / f"epoch~{epoch}", {**self.record, "epoch": epoch})
            log.info("epoch %d: wrote the snapshot", epoch)
        return False


@step_main(VisionTrainArgs)
def main(args: VisionTrainArgs) -> int:
    hp_values = json.loads(args.hparams)
    plateau_settings = hp_values.pop("plateau", None)
    hp = TrainHParams(**{**hp_values, "milestones": tuple(hp_values.get("milestones", ()))})
    if (hp.lr_schedule == "plateau") != (plateau_settings is not None):
        raise ValueError(f"--hparams: lr_schedule {hp.lr_schedule!r} with plateau {plateau_settings!r}: the "
                         "'plateau' schedule needs its settings {patience, cooldown, threshold, min_lr}, and only it")
    spec = json.loads(args.model_spec)
    train = read_split(args.train)  # every input checked before a model is built
    val = read_split(args.val) if args.val else None
    if plateau_settings is not None and val is None:
        raise ValueError("--hparams: the 'plateau' schedule monitors the validation loss; give --val")
    epochs = int(math.ceil(hp.epochs))
    bad = [e for e in args.snapshot_epochs if not 1 <= e < epochs]
    if bad:
        raise ValueError(f"--snapshot-epochs {bad}: each must lie in 1..{epochs - 1} (the run has {epochs} epochs)")
    device = start(args, seed=args.seed)
    summary_path = args.out_dir / "train_summary.json"
    summary_path.unlink(missing_ok=True)
    shape = train.images.shape[1:]
    inputs = {"in_features": int(math.prod(shape))} if spec["arch"] == "mlp" else {"in_channels": int(shape[0])}
    model = build_model(spec["arch"], train.num_classes, **{**inputs, **spec.get("kwargs", {})})
    train_data = image_dataset(train, spec)
    val_loader = loader(image_dataset(val, spec), 500) if val is not None else None
    record = {"model_spec": spec, "seed": args.seed, "train": str(args.train), "dataset": train.dataset,
              "label_names": train.label_names, "bias_names": train.bias_names, "bias_classes": train.bias_classes}
    steps_per_epoch = math.ceil(len(train_data) / hp.batch_size)
    resume = (Resume(state_path_for(args.out_dir), args.checkpoint_every, run_key(args))
              if args.checkpoint_every > 0 else None)
    log.info("training %s on %s (%d images) on %s, seed %d", spec["arch"], args.train, len(train_data), device,
             args.seed)

    def evaluate(m):
        return task_accuracy(m, val_loader)[0] if val_loader is not None else float("nan")

    snapshots = EpochSnapshots(args, steps_per_epoch, record)
    plateau = (LRPlateau(steps_per_epoch, lambda m: task_loss(m, val_loader), factor=hp.gamma, **plateau_settings)
               if plateau_settings is not None else None)
    objective = classification_objective
    if spec.get("augment"):  # training batches only; the black pixel's normalised value pads the crop
        aug = spec["augment"]
        objective = augmented_objective(int(aug.get("crop_padding", 0)), bool(aug.get("hflip", False)),
                                        -train_data.mean.view(-1) / train_data.std.view(-1))
    curve = train_vanilla(model, train_data, hp, args.seed, device, evaluate if val is not None else None,
                          resume=resume, hooks=[snapshots], objective=objective, lr_plateau=plateau)
    save_run_model(model, args.out_dir, {**record, "epoch": epochs})
    extra = {"plateau": {**plateau_settings, "history": plateau.history}} if plateau is not None else {}
    runtime.atomic_write_json(summary_path, {**record, "hparams": {**hp.__dict__, "milestones": list(hp.milestones)},
                                             **extra, "curve": curve,
                                             "provenance": runtime.provenance(args, args.seed)})
    if resume is not None:
        resume.done()
    log.info("wrote %s", args.out_dir)
    return 0


if __name__ == "__main__":
    run_step(main)

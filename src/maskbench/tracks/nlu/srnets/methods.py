"""Paper C's sparse and robust subnetworks as library functions: mask training with checkpoint selection, iterative magnitude pruning with optional rewinding, and retraining under a transferred mask."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parametrize

from maskbench.masking.apply import MaskMismatchError
from maskbench.masking.density import sparsity as masks_sparsity
from maskbench.masking.selectors import ENCODER_KINDS, select_linear
from maskbench.resume import Resume, set_rng_state
from maskbench.text.batches import EncodedPairs
from maskbench.text.classifier_training import classification_objective
from maskbench.tracks.nlu.paths import level_name
from maskbench.tracks.nlu.srnets.pruning import (
    SparsityController,
    apply_fixed_masks,
    attach_mask_training,
    fixed_masks,
    magnitude_masks,
    rewind_weights,
)
from maskbench.tracks.nlu.srnets.spec import ImpSpec, MaskTrainingSpec
from maskbench.training.hparams import TrainHParams, total_steps
from maskbench.training.loop import fit

log = logging.getLogger(__name__)


MASK_TRAIN, IMP, IMP_REWIND, RETRAIN = "mask_train", "imp", "imp_rewind", "retrain"


METHODS = (MASK_TRAIN, IMP, IMP_REWIND, RETRAIN)


# paper C's masked modules (docs/paper-c.md, "The methods"): mask training masks the six encoder matrices of every layer,
# the pooler and the classifier; IMP prunes the six encoder matrices and the pooler, not the classifier
DEFAULT_MODULES = {
    MASK_TRAIN: (*ENCODER_KINDS, "pooler", "classifier"),
    IMP: (*ENCODER_KINDS, "pooler"),
    IMP_REWIND: (*ENCODER_KINDS, "pooler"),
}


# what rewinding leaves alone: the classifier has no pre-trained value (paper C rewinds keys containing `bert`)
REWIND_EXCLUDE = ("classifier",)


IMP_SUMMARY = "imp_summary.json"


@dataclass
class MaskTrainResult:
    """The selected mask of a mask-training run and how it was found."""

    masks: dict[str, np.ndarray]
    selected_step: int
    selected_dev_accuracy: float
    saved_dev_accuracy: float | None
    total_steps: int
    first_candidate_step: int
    evals: list[dict]
    curve: list[dict]
    history: list[dict]


def first_candidate(select_after: float, total: int) -> int:
    """The first step whose checkpoint may be selected: ceil(select_after x total), float noise removed."""
    return int(math.ceil(round(select_after * total, 9)))


def train_mask(model: nn.Module, data: EncodedPairs, loss_fn, hp: TrainHParams, seed: int, device,
               evaluate: Callable[[nn.Module], float], spec: MaskTrainingSpec, *, modules,
               example_tensors: dict | None = None, resume: Resume | None = None) -> MaskTrainResult:
    """Paper C's Algorithm 2 with its checkpoint selection (appendix B.3.3); the weights are never written.

    The settings are ``spec``'s. The scores train with ``fit``; a step hook first lets the ``SparsityController``
    reset the thresholds on schedule (after every ``reset_every`` steps, not at step 0, as paper C's trainer), then
    (every ``eval_every`` steps, as paper C right after the reset) scores the ID dev set with the current mask.
    The initial mask (step 0) and the final step are scored too; with ``score_before_window=False`` no step
    before the selection window is (those evaluations only record the curve; each draws one number from torch's
    generator, so without them training runs on another random stream). Among the evaluations at steps >=
    ``first_candidate(select_after, total)`` the best (earliest on ties) wins; its *scores* are kept, and before
    the mask is read the thresholds are reset to ``sparsity`` on them, so every matrix meets the target exactly
    (up to ties of scores, which only prune more). The saved mask is scored once more (``saved_dev_accuracy``).
    The model is returned without the score parametrizations. With ``resume`` the run's state (scores,
    thresholds, the best candidate so far, the evaluations and the sparsity history) is saved every
    ``resume.every`` steps and a rerun goes on from it.

    Paper C's code departs in three places, each selectable (the defaults are the project's):
    * ``saved_mask_sparsity="initial"``: the saved mask's thresholds are re-set to the run's *initial* sparsity
      (its ``init_sparsity``: 0.7 in the gradual 0.7 -> 0.9 runs, so their saved mask is 70 % sparse), and the
      live model's are too whenever a new best is found (training goes on with them until the next reset);
      "final" re-sets them to ``sparsity``, the run's target;
    * ``score_first_and_last=False``: evaluations only after every ``eval_every`` updates, as paper C's trainer
      (its ``logging_steps``): neither the initial mask (a candidate when ``select_after`` is 0) nor the last
      step unless it falls on one;
    * ``keep_threshold_when_saturated=True``: a reset leaves a module's threshold when the new one would be its
      largest score, or nothing is to be pruned (``ThresholdMaskTraining.reset_threshold``).
    """
    saved_sparsity = spec.saved_sparsity
    eval_every, keep_threshold_when_saturated = spec.eval_every, spec.keep_threshold_when_saturated
    masks = attach_mask_training(model, list(modules), spec)
    controller = SparsityController(masks, spec)
    total = total_steps(len(data), hp)
    first = first_candidate(spec.select_after, total)
    evals: list[dict] = []
    best: dict = {}

    def consider(step: int) -> None:
        accuracy = evaluate(model)
        model.train()
        record = {"step": int(step), "dev_accuracy": accuracy, "sparsity": masks.sparsity(),
                  "target": controller.sparsity_at(step, total), "candidate": step >= first}
        evals.append(record)
        log.info("step %d/%d: dev accuracy %.2f at sparsity %.4f%s", step, total, accuracy, record["sparsity"],
                 "" if record["candidate"] else " (before the selection window)")
        if record["candidate"] and (not best or accuracy > best["dev_accuracy"]):
            best.update(step=int(step), dev_accuracy=accuracy,
                        scores={name: mask.scores.detach().clone() for name, mask in masks.masks.items()})
            if spec.saved_mask_sparsity == "initial":
                masks.reset_thresholds(saved_sparsity, keep_threshold_when_saturated)

    def hook(step: int, total_: int) -> None:
        # no reset at step 0: the initial mask already meets the (initial) target per matrix, and a reset would
        # move the hard init's threshold from phi to the largest pruned score (0), so that any pruned score
        # with a positive first update would return; paper C's first reset comes after reset_every steps
        if step:
            controller(step, total_)
        if step % eval_every == 0 and (step or spec.score_first_and_last) \
                and (step >= first or spec.score_before_window):
            consider(step)

    if resume is not None:
        def extra() -> dict:
            return {"best": dict(best), "evals": list(evals), "history": list(controller.history),
                    "current": controller.current}

        def restore(state: dict) -> None:
            best.update(state["best"])
            evals[:] = state["evals"]
            controller.history[:] = state["history"]
            controller.current = state["current"]

        resume.extra, resume.restore = extra, restore
    try:
        curve = fit(model, data, classification_objective(loss_fn, device, example_tensors), hp, seed, device,
                    step_hook=hook, resume=resume)
        if spec.score_first_and_last or total % eval_every == 0:
            consider(total)
        if not best:
            raise ValueError(f"mask training: no evaluation fell in the selection window (steps >= {first} of "
                             f"{total}, every {eval_every} steps, none at the first and last step): lower eval_every "
                             "or select_after")
        with torch.no_grad():
            for name, mask in masks.masks.items():
                mask.scores.copy_(best["scores"][name])
        masks.reset_thresholds(saved_sparsity, keep_threshold_when_saturated)
        selected = masks.hard_masks()
        saved_accuracy = evaluate(model)
    finally:
        masks.detach()
    history = [{k: h[k] for k in ("step", "target", "sparsity")} for h in controller.history]
    return MaskTrainResult(selected, best["step"], best["dev_accuracy"], saved_accuracy, total, first, evals,
                           curve, history)


def mask_sparsity(masks: Mapping[str, np.ndarray]) -> tuple[dict[str, float], float]:
    """Pruned fraction of every mask (True = kept) and over all of them together."""
    return masks_sparsity(dict(masks))


def hparams_for_steps(hp: TrainHParams, steps: int, n_examples: int) -> TrainHParams:
    """``hp`` with ``epochs`` set so that ``fit`` runs exactly ``steps`` optimiser steps on ``n_examples``."""
    batches = math.ceil(n_examples / hp.batch_size)
    out = dataclasses.replace(hp, epochs=(steps - 0.5) / batches)  # ceil((steps - 0.5)) = steps, float-safe
    if total_steps(n_examples, out) != steps:
        raise AssertionError(f"hparams_for_steps: {steps} steps came out as {total_steps(n_examples, out)}")
    return out


def bake_fixed_masks(modules: Mapping[str, nn.Module]) -> dict[str, np.ndarray]:
    """Write the attached IMP masks into the weights (pruned entries become 0.0) and remove them; return them.

    Afterwards the model has plain parameter names and saves like any checkpoint."""
    masks = fixed_masks(modules)
    for module in modules.values():
        if parametrize.is_parametrized(module, "weight"):
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)
    return masks


def round_seed(seed: int, round_index: int) -> int:
    """The data-order seed of IMP round ``round_index`` (1-based): every ``fit`` call shuffles anew, and with the
    run's seed throughout, rounds shorter than an epoch would all see the same first batches."""
    return seed + 10_000 * (round_index - 1)


def iterative_magnitude_pruning(
    model: nn.Module, data: EncodedPairs, loss_fn, hp: TrainHParams, seed: int, device,
    evaluate: Callable[[nn.Module], float] | None = None, *, spec: ImpSpec, modules,
    example_tensors: dict | None = None,
    on_prune: Callable[[int, float, nn.Module, dict], None] | None = None,
    on_level: Callable[[dict, nn.Module], None] | None = None,
    resume_after: tuple[int, Mapping[str, np.ndarray], Mapping[str, torch.Tensor], dict] | None = None,
) -> list[dict]:
    """Paper C's Algorithm 1 (``spec``): ``rounds`` intervals of total // rounds steps; at the start of interval r
    the weights are pruned to r x ``step`` of every matrix's original size (``magnitude_masks``, local, pruned
    weights stay pruned) and, with ``rewind``, every weight but the classifier is reset to its start value;
    then the interval trains the surviving weights (one ``fit`` call, so the optimiser and LR schedule are
    re-created each round, paper C's "optimizer rewinding"). Pruning stops at ``final_sparsity``.

    After the interval of level s the masks are baked into the weights (zeros) and ``on_level(level, model)``
    is called with the plain model (e.g. to save it); the masks are re-attached afterwards. ``on_prune(r, s,
    model, masks)`` runs right after the prune (and rewind), before training. Returns one record per level.

    ``resume_after`` (rounds done, the last one's masks, its saved plain weights, the random generators' state at its
    end) goes on after those rounds from the state the run had then: each round seeds its own data order and
    re-creates its optimiser and schedule, and dropout draws from the generators, so the later levels are the
    uninterrupted run's. Only the later levels are returned.
    """
    chosen = select_linear(model, list(modules), "--modules")
    rewind = spec.rewind
    start_state = {k: v.detach().clone() for k, v in model.state_dict().items()} if rewind else None
    total = total_steps(len(data), hp)
    events = spec.schedule(total)
    interval = total // spec.rounds
    round_hp = hparams_for_steps(hp, interval, len(data))
    levels: list[dict] = []
    current: dict[str, torch.Tensor] | None = None
    done = 0
    if resume_after is not None:
        done, masks, weights, rng = resume_after
        model.load_state_dict(weights)  # the level's baked weights (zeros where pruned)
        current = {name: torch.as_tensor(np.asarray(keep), device=chosen[name].weight.device).to(torch.bool)
                   for name, keep in masks.items()}
        apply_fixed_masks(chosen, current)
        set_rng_state(rng)
    for index, (at_step, sparsity) in enumerate(events, 1):
        if index <= done:
            continue
        started = time.perf_counter()
        current = magnitude_masks(chosen, sparsity, current)
        apply_fixed_masks(chosen, current)
        rewound = rewind_weights(model, start_state, REWIND_EXCLUDE) if rewind else []
        if on_prune is not None:
            on_prune(index, sparsity, model, current)
        log.info("IMP round %d/%d: pruned to %.2f at step %d%s, training %d steps", index, len(events),
                 sparsity, at_step, f", rewound {len(rewound)} tensors" if rewind else "", interval)
        curve = fit(model, data, classification_objective(loss_fn, device, example_tensors), round_hp,
                    round_seed(seed, index), device)
        accuracy = evaluate(model) if evaluate is not None else None
        masks = bake_fixed_masks(chosen)
        per_module, overall = mask_sparsity(masks)
        level = {"round": index, "sparsity": sparsity, "prune_step": at_step, "end_step": at_step + interval,
                 "steps": interval, "dev_accuracy": accuracy, "exact_sparsity": overall,
                 "module_sparsity": per_module, "n_rewound": len(rewound), "masks": masks, "curve": curve,
                 "seconds": time.perf_counter() - started}
        log.info("IMP level %.2f: dev accuracy %s, exact sparsity %.6f", sparsity, accuracy, overall)
        if on_level is not None:
            on_level(level, model)
        apply_fixed_masks(chosen, current)
        levels.append(level)
    return levels


def check_transferable_mask(masks: Mapping[str, np.ndarray], model: nn.Module, path) -> dict[str, nn.Linear]:
    """The model's Linear modules the mask names; every name must exist and every shape fit (no fingerprint
    check: the mask comes from other weights on purpose). Errors name the file."""
    if not masks:
        raise MaskMismatchError(f"{path}: the mask file holds no module")
    linears = {name: m for name, m in model.named_modules() if isinstance(m, nn.Linear)}
    out = {}
    for name, mask in masks.items():
        module = linears.get(name)
        if module is None:
            raise MaskMismatchError(f"{path}: module {name!r} is not a Linear module of the start model (a mask of "
                                    f"another architecture?); its Linear modules are named like "
                                    f"{', '.join(list(linears)[:3])}, ...")
        if tuple(mask.shape) != tuple(module.weight.shape):
            raise MaskMismatchError(f"{path}: module {name!r} has shape {tuple(mask.shape)} in the mask but "
                                    f"{tuple(module.weight.shape)} in the start model (a mask of another "
                                    "architecture?)")
        out[name] = module
    return out


def retrain_with_mask(model: nn.Module, data: EncodedPairs, loss_fn, hp: TrainHParams, seed: int, device,
                      masks: Mapping[str, np.ndarray], evaluate=None, example_tensors=None,
                      path="mask", resume: Resume | None = None) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Paradigm (b): train every weight of ``model`` under the fixed ``masks``, then bake them in (zeros).

    Returns fit's curve and the applied masks."""
    modules = check_transferable_mask(masks, model, path)
    apply_fixed_masks(modules, {name: torch.from_numpy(np.asarray(m, dtype=bool)) for name, m in masks.items()})
    curve = fit(model, data, classification_objective(loss_fn, device, example_tensors), hp, seed, device, evaluate,
                resume=resume)
    return curve, bake_fixed_masks(modules)


def select_linear_or_none(model: nn.Module, target: str) -> dict[str, nn.Linear]:
    """``select_linear`` for one target, empty instead of an error when nothing matches."""
    try:
        return select_linear(model, [target])
    except ValueError:
        return {}


def level_dir(out_dir: Path, sparsity: float) -> Path:
    return out_dir / level_name(sparsity)


def start_step_of(start_dir: Path) -> int | None:
    """How many fine-tuning steps the start checkpoint had: 0 for theta_pt, a snapshot's step, a finished run's
    total; None when its summary does not say (paper C's timing study, section 5.1)."""
    path = Path(start_dir) / "train_summary.json"
    summary = json.loads(path.read_text()) if path.is_file() else {}
    if summary.get("initial_weights"):
        return 0
    for key in ("snapshot_step", "total_steps"):
        if isinstance(summary.get(key), int):
            return summary[key]
    return None

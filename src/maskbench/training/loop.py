"""The one training loop: ``fit(model, data, objective, hp, ...)`` — seeded batches, AdamW parameter groups each
with its own learning rate, weight decay and schedule, hooks that evaluate and may stop the run, normalisation
statistics optionally frozen, a progress bar on a terminal, progress lines in the job's log at least every 30 s
(``maskbench.progress``) and a training curve.

What is trainable is decided by the caller (``requires_grad``, or explicit ``groups``); the objective runs the
model itself (``maskbench.objectives.logits`` adapts the pure losses of ``maskbench.objectives.losses``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, RandomSampler
from tqdm.auto import tqdm

from maskbench import stop as stop_requests
from maskbench.precision import FP32, Precision, current
from maskbench.progress import Progress, examples_in, host_floats
from maskbench.resume import Resume, rng_state, set_rng_state
from maskbench.training.batches import LengthGroupedBatches
from maskbench.training.hooks import EarlyStop, FiniteLosses, Hook, LRPlateau, StepTimes, set_training
from maskbench.training.hparams import TrainHParams, total_steps
from maskbench.training.optim import group_schedule, make_optimizer, trainable_groups

log = logging.getLogger(__name__)


Objective = Callable[[torch.nn.Module, dict], tuple[torch.Tensor, dict]]
"""``objective(model, batch) -> (loss, logs)``: runs the model on a batch itself; ``logs`` are floats to
average into the training curve (e.g. the terms of a composite loss)."""


def train_step(model: torch.nn.Module, batch: dict, objective: Objective, optimizer, scheduler,
               clip_params: list, max_grad_norm: float, step: int,
               times: StepTimes | None = None, *, precision: Precision = FP32, device=None,
               scaler=None, finite: FiniteLosses | None = None) -> tuple[torch.Tensor, dict]:
    """One optimisation step: objective, backward, gradient clipping, update, schedule. The loop and the
    benchmarks run this same function.

    ``precision`` (on CUDA ``device`` only): the objective — forward pass and loss — runs under its autocast;
    backward, clipping and the update stay outside it, on the fp32 parameters and gradients. ``scaler`` (fp16's
    ``torch.amp.GradScaler``, ``Precision.grad_scaler``) scales the loss before backward and unscales the gradients
    before clipping; a step whose gradients overflowed is skipped by the scaler (the schedule still moves, as in
    Lightning's and Hugging Face's fp16 loops). With fp32, or on the CPU, the step is exactly the fp32 step.
    ``finite`` (``FiniteLosses``; None: checked here, at once) checks the loss; nothing in the step reads a value
    back to the host, so on CUDA the host queues the next step while the device runs this one."""
    started = time.perf_counter()
    with precision.autocast(device):
        loss, logs = objective(model, batch)
    if finite is None:
        if not torch.isfinite(loss):
            raise FloatingPointError(f"training loss became {loss.item()} at step {step}")
    else:
        finite.add(loss, step)
    marked = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    if scaler is not None:
        scaler.scale(loss).backward()
    else:
        loss.backward()
    backward = time.perf_counter()
    if max_grad_norm > 0:
        if scaler is not None:
            scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(clip_params, max_grad_norm)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    if scheduler is not None:
        scheduler.step()
    if times is not None:
        times.objective, times.backward, times.update = (marked - started, backward - marked,
                                                         time.perf_counter() - backward)
    return loss, logs


def clip_parameters(model: torch.nn.Module, groups: list[dict]) -> list:
    """The model's parameters in model order, then any group parameter outside the model (a separate head)."""
    params = list(model.parameters())
    known = {id(p) for p in params}
    return params + [p for g in groups for p in g["params"] if id(p) not in known]


def fit(
    model: torch.nn.Module,
    data,
    objective: Objective,
    hp: TrainHParams,
    seed: int,
    device,
    evaluate: Callable[[torch.nn.Module], float] | None = None,
    *,
    groups: list[dict] | None = None,
    step_hook: Callable[[int, int], None] | None = None,
    hooks: Sequence[Hook] = (),
    freeze_norm_stats: bool = False,
    resume: Resume | None = None,
    lr_plateau: LRPlateau | None = None,
    samples_per_epoch: int | None = None,
    early_stop: EarlyStop | None = None,
    precision: Precision | None = None,
) -> list[dict]:
    """Train in place; return the curve (one dict per logged step and per epoch end).

    ``data`` is a torch Dataset with a ``collate`` method (batches in a seeded order); ``objective(model,
    batch)`` runs the model and returns the loss and what to log; ``groups`` are AdamW parameter groups, each
    with its own ``lr``, ``weight_decay`` and optional ``schedule`` / ``warmup`` (default: the model's
    trainable parameters at ``hp.learning_rate``, ``trainable_groups``). ``step_hook(step, total)`` runs
    before every step's forward pass (a mask search moves its threshold there); ``hooks`` run around every
    step and may stop the run (``EvalHook``); ``evaluate(model)`` scores the dev set after each epoch (or the
    last, ``hp.eval_every_epoch``). ``freeze_norm_stats`` keeps BatchNorm statistics as they are.
    ``resume`` saves the run's state every ``resume.every`` steps and, when a saved state exists, goes on from it
    (``maskbench.resume``): the result is bit-identical to an uninterrupted run on CPU. Asked to stop (SIGTERM
    while the loop runs, ``maskbench.stop``), the loop saves the state after the step it is in and raises
    ``StopRequested`` (without ``resume`` it raises at once: a rerun starts afresh); SIGUSR1 saves it and goes
    on. ``lr_plateau`` drives the
    "plateau" schedule (it runs after ``hooks`` at every epoch end and may stop the run; its state is saved too).
    ``samples_per_epoch``: an epoch is this many items instead of all of ``data`` (torch's ``RandomSampler`` with
    ``num_samples``: a fresh seeded draw without replacement each epoch, whole permutations first when it exceeds
    ``len(data)``).
    ``early_stop`` reads every epoch's dev score (``evaluate``, which it needs) and may stop the run; the caller puts
    the best epoch's weights back (``EarlyStop.restore_best``); its state is saved too.
    ``precision`` (``maskbench.precision``; None: the step's, ``precision.current()``): autocast around every step's
    objective, TF32 switches and, for fp16, a GradScaler whose state is saved with the resume state — on CUDA only;
    on the CPU it changes nothing.
    """
    generator = torch.Generator().manual_seed(seed)
    # on CUDA batches are collated into pinned memory, so their copies to the device (non_blocking) overlap a step
    pinned = {"pin_memory": True} if torch.device(device).type == "cuda" else {}
    if hp.length_grouped:
        if samples_per_epoch is not None or not hasattr(data, "lengths"):
            raise ValueError("length_grouped batches need a dataset with `lengths` and whole epochs "
                             "(no samples_per_epoch)")
        loader = DataLoader(data, batch_sampler=LengthGroupedBatches(data.lengths, hp.batch_size, hp.length_grouped,
                                                                     generator),
                            collate_fn=getattr(data, "collate", None), **pinned)
        total = total_steps(len(data), hp)
    elif samples_per_epoch is None:
        loader = DataLoader(data, batch_size=hp.batch_size, shuffle=True, generator=generator,
                            collate_fn=getattr(data, "collate", None), **pinned)
        total = total_steps(len(data), hp)
    else:
        sampler = RandomSampler(data, num_samples=samples_per_epoch, generator=generator)
        loader = DataLoader(data, batch_size=hp.batch_size, sampler=sampler, collate_fn=getattr(data, "collate", None),
                            **pinned)
        total = total_steps(samples_per_epoch, hp)
    groups = groups if groups is not None else trainable_groups(model, hp.learning_rate, hp.weight_decay)
    model.to(device)  # before the optimiser: a fused one needs its parameters on the device
    optimizer = make_optimizer(groups, hp)
    if early_stop is not None and evaluate is None:
        raise ValueError("early stopping needs a dev set to evaluate after every epoch")
    scheduler = group_schedule(optimizer, groups, hp, total, lr_plateau)
    if lr_plateau is not None:
        lr_plateau.bind(optimizer)
        hooks = [*hooks, lr_plateau]
    clip_params = clip_parameters(model, groups)
    outside = clip_params[len(list(model.parameters())):]  # trained beside the model (a gate, a bias head)
    precision = precision if precision is not None else current()
    precision.apply_tf32(device)
    scaler = precision.grad_scaler(device)
    set_training(model, freeze_norm_stats)
    curve, step, running, logged, started = [], 0, [], {}, time.perf_counter()
    finite = FiniteLosses(device)
    epoch, stop, skip = 0, False, 0
    saved = resume.load() if resume is not None else None
    if saved is not None:
        model.load_state_dict(saved["model"])
        with torch.no_grad():
            for param, value in zip(outside, saved["outside"], strict=True):
                param.copy_(value)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        step, epoch, skip, curve = saved["step"], saved["epoch"] - 1, saved["batches_in_epoch"], saved["curve"]
        running, logged = saved["running"], saved["logged"]
        if lr_plateau is not None:
            lr_plateau.load_state(saved["plateau"])
        if early_stop is not None:
            early_stop.load_state(saved["early_stop"])
        if scaler is not None and saved.get("grad_scaler") is not None:
            scaler.load_state_dict(saved["grad_scaler"])
        if resume.restore is not None and saved.get("extra") is not None:
            resume.restore(saved["extra"])
    # the bar on a terminal only: in a log file its carriage returns run into the progress lines, which say more
    bar = tqdm(total=total, initial=step, desc="train", unit="step", mininterval=2.0, disable=None)
    progress = Progress("train", total, "step", done=step, tensorboard=True)

    def stopped(signal_name: str, at: int) -> stop_requests.StopRequested:
        err = stop_requests.StopRequested(signal_name, at, total, str(resume.path) if resume is not None else None)
        log.warning("%s", err)
        return err

    if stop_requests.requested() and step < total:  # asked before this run began (a sweep's earlier run)
        raise stopped(stop_requests.requested(), step)
    # until the loop ends SIGTERM and SIGUSR1 only set the flag read at every step boundary (maskbench.stop)
    with stop_requests.stop_signals():
        while step < total and not stop:
            epoch += 1
            if saved is not None:  # the data order of the interrupted epoch, then its batches already taken skipped
                generator.set_state(saved["epoch_generator"])
            epoch_generator = generator.get_state()
            taken = 0
            for batch in loader:
                if taken < skip:
                    taken += 1
                    continue
                if saved is not None:  # every generator as it was when the state was saved
                    set_rng_state(saved["rng"])
                    saved, skip = None, 0
                if step_hook is not None:
                    step_hook(step, total)
                for hook in hooks:
                    hook.before_step(step, total)
                loss, logs = train_step(model, batch, objective, optimizer, scheduler, clip_params, hp.max_grad_norm,
                                        step, precision=precision, device=device, scaler=scaler, finite=finite)
                step += 1
                taken += 1
                # losses and logged terms stay where they are (0-dim device tensors on CUDA) until a logged step
                # reads them all at once (host_floats): no step waits for the device
                running.append(loss.detach())
                for key, value in logs.items():
                    logged.setdefault(key, []).append(value.detach() if hasattr(value, "detach") else float(value))
                bar.update(1)
                progress.update(1, examples_in(batch), loss=running[-1], lr=scheduler.get_last_lr()[0])
                for hook in hooks:
                    stop = hook.after_step(step, total, model) or stop
                if step % hp.log_every == 0 or step == total or stop:
                    finite.check(step)
                    point = {"step": step, "epoch": epoch, "train_loss": float(np.mean(host_floats(running))),
                             "lr": scheduler.get_last_lr()[0], "seconds": time.perf_counter() - started,
                             **{key: float(np.mean(host_floats(values))) for key, values in logged.items()}}
                    curve.append(point)
                    log.info("step %d/%d epoch %d loss %.4f lr %.2e", step, total, epoch, point["train_loss"], point["lr"])
                    running, logged = [], {}
                    progress.curve(curve)
                going_on = step < total and not stop
                asked = stop_requests.requested() if going_on else None
                save_asked = stop_requests.take_save_request() if going_on else False
                if resume is not None and going_on and (step % resume.every == 0 or asked or save_asked):
                    if save_asked and not asked:
                        log.info("saving the state at step %d of %d when asked (SIGUSR1); going on", step, total)
                    finite.check(step)  # a non-finite step's weights are never saved
                    running = host_floats(running)  # the state holds plain floats, as written by every version
                    logged = {key: host_floats(values) for key, values in logged.items()}
                    resume.save({"step": step, "epoch": epoch, "batches_in_epoch": taken, "curve": curve,
                                 "running": running, "logged": logged, "model": model.state_dict(),
                                 "outside": [p.detach().clone() for p in outside],
                                 "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                                 "epoch_generator": epoch_generator, "rng": rng_state(),
                                 **({"plateau": lr_plateau.state()} if lr_plateau is not None else {}),
                                 **({"early_stop": early_stop.state()} if early_stop is not None else {}),
                                 **({"grad_scaler": scaler.state_dict()} if scaler is not None else {})})
                if asked:
                    raise stopped(asked, step)
                if step >= total or stop:
                    break
            if saved is not None:  # the state was taken after the epoch's last batch
                set_rng_state(saved["rng"])
                saved, skip = None, 0
            if evaluate is not None and (hp.eval_every_epoch or early_stop is not None or step >= total or stop):
                score = evaluate(model)
                set_training(model, freeze_norm_stats)
                curve.append({"step": step, "epoch": epoch, "dev_accuracy": score,
                              "seconds": time.perf_counter() - started})
                log.info("epoch %d done: dev accuracy %.2f", epoch, score)
                progress.curve(curve)
                if early_stop is not None and early_stop.update(epoch, score, model):
                    log.info("dev accuracy has not risen for %d epochs: stopping after epoch %d (best: epoch %d, %.2f)",
                             early_stop.patience, epoch, early_stop.best_epoch, early_stop.best)
                    stop = True
    finite.check(step)
    if stop:
        log.info("stopped by a hook at step %d of %d", step, total)
    bar.close()
    progress.curve(curve, final=True)
    progress.close()
    return curve

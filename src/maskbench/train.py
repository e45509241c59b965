"""The one training loop: batches, AdamW with linear warm-up and decay, a progress bar and a training curve.

What is trainable is decided by the caller (``requires_grad`` on the model's parameters); the objective is a
function from ``maskbench.losses``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from tqdm.auto import tqdm

log = logging.getLogger(__name__)


@dataclass
class TrainHParams:
    epochs: float = 3.0
    batch_size: int = 32
    learning_rate: float = 3e-5
    weight_decay: float = 0.1
    warmup: float = 0.2  # a fraction of all steps when < 1, else a number of steps
    max_grad_norm: float = 1.0
    max_length: int = 128
    eval_batch_size: int = 256
    log_every: int = 50
    lr_schedule: str = "linear"  # linear warm-up and decay, or "constant" (paper A's mask search: its scheduler
    # was returned under a key Lightning ignores, method_details.md §1)
    adam_eps: float = 1e-8
    eval_every_epoch: bool = True  # score the dev set after every epoch (False: after the last one only)


INPUT_VIEWS = ("pair", "text_a_only", "text_b_only")


def view_texts(text_a: Sequence[str], text_b: Sequence[str], view: str) -> tuple[list[str], list[str]]:
    """What the model reads: both texts, or only one (a hypothesis-only / claim-only bias model)."""
    if view == "pair":
        return list(text_a), list(text_b)
    if view == "text_b_only":
        return list(text_b), [""] * len(text_b)
    if view == "text_a_only":
        return list(text_a), [""] * len(text_a)
    raise ValueError(f"input view {view!r} is unknown; choose one of {INPUT_VIEWS}")


class EncodedPairs(Dataset):
    """Token ids of (text_a, text_b) pairs, kept unpadded; `collate` pads each batch to its longest row."""

    def __init__(self, tokenizer, text_a: Sequence[str], text_b: Sequence[str], labels=None, max_length=128,
                 view: str = "pair"):
        text_a, text_b = view_texts(text_a, text_b, view)
        pairs = [b if b else None for b in text_b]
        if all(p is None for p in pairs):
            enc = tokenizer(list(text_a), truncation=True, max_length=max_length)
        else:
            enc = tokenizer(list(text_a), [p or "" for p in pairs], truncation=True, max_length=max_length)
        self.input_ids = enc["input_ids"]
        self.token_type_ids = enc.get("token_type_ids")
        self.labels = None if labels is None else np.asarray(labels, dtype=np.int64)
        self.pad_id = tokenizer.pad_token_id or 0

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, i: int) -> int:
        return i

    def collate(self, indices: list[int]) -> dict[str, torch.Tensor]:
        width = max(len(self.input_ids[i]) for i in indices)
        ids = torch.full((len(indices), width), self.pad_id, dtype=torch.long)
        types = torch.zeros((len(indices), width), dtype=torch.long)
        mask = torch.zeros((len(indices), width), dtype=torch.long)
        for row, i in enumerate(indices):
            n = len(self.input_ids[i])
            ids[row, :n] = torch.tensor(self.input_ids[i])
            mask[row, :n] = 1
            if self.token_type_ids is not None:
                types[row, :n] = torch.tensor(self.token_type_ids[i])
        batch = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types,
                 "index": torch.tensor(indices, dtype=torch.long)}
        if self.labels is not None:
            batch["labels"] = torch.from_numpy(self.labels[indices])
        return batch


def total_steps(n_examples: int, hp: TrainHParams) -> int:
    """Optimiser steps of a run: ``epochs`` (may be fractional) times the batches per epoch."""
    return max(1, math.ceil(hp.epochs * math.ceil(n_examples / hp.batch_size)))


def warmup_steps(warmup: float, total_steps: int) -> int:
    return int(round(warmup * total_steps)) if warmup < 1 else int(warmup)


def linear_schedule(optimizer, warmup: int, total: int):
    """Linear warm-up from 0 to the peak rate over `warmup` steps, then linear decay to 0 at `total`."""

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


LR_SCHEDULES = ("linear", "constant")


def lr_schedule(optimizer, hp: TrainHParams, total: int):
    if hp.lr_schedule == "constant":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    if hp.lr_schedule == "linear":
        return linear_schedule(optimizer, warmup_steps(hp.warmup, total), total)
    raise ValueError(f"hparams.lr_schedule {hp.lr_schedule!r} is unknown; choose one of {LR_SCHEDULES}")


def adamw(model: torch.nn.Module, lr: float, weight_decay: float, eps: float = 1e-8) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters; biases and LayerNorm weights get no weight decay (as BERT)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(param)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    if not groups:
        raise ValueError("nothing to train: every parameter of the model has requires_grad False")
    return torch.optim.AdamW(groups, lr=lr, eps=eps)


def model_inputs(batch: dict[str, torch.Tensor], device) -> dict[str, torch.Tensor]:
    return {k: batch[k].to(device) for k in ("input_ids", "attention_mask", "token_type_ids")}


def fit(
    model: torch.nn.Module,
    data: EncodedPairs,
    loss_fn: Callable[..., torch.Tensor],
    hp: TrainHParams,
    seed: int,
    device,
    evaluate: Callable[[torch.nn.Module], float] | None = None,
    example_tensors: dict[str, torch.Tensor] | None = None,
    step_hook: Callable[[int, int], None] | None = None,
    regularizer: Callable[[], torch.Tensor] | None = None,
) -> list[dict]:
    """Train in place; return the curve (one dict per logged step and per epoch end).

    ``step_hook(step, total)`` runs before every step's forward pass (a mask search moves its threshold
    there); ``regularizer()`` is added to the objective (a mask search's penalty on its scores).

    ``example_tensors`` holds per-training-example inputs of the objective (bias or teacher probabilities),
    row i for example i; each batch passes its rows to ``loss_fn`` by keyword.
    """
    example_tensors = example_tensors or {}
    generator = torch.Generator().manual_seed(seed)
    loader = DataLoader(data, batch_size=hp.batch_size, shuffle=True, generator=generator, collate_fn=data.collate)
    total = total_steps(len(data), hp)
    optimizer = adamw(model, hp.learning_rate, hp.weight_decay, hp.adam_eps)
    scheduler = lr_schedule(optimizer, hp, total)
    model.to(device).train()
    curve, step, running, started = [], 0, [], time.perf_counter()
    bar = tqdm(total=total, desc="train", unit="step", mininterval=2.0)
    epoch = 0
    while step < total:
        epoch += 1
        for batch in loader:
            if step_hook is not None:
                step_hook(step, total)
            logits = model(**model_inputs(batch, device)).logits
            extra = {k: v[batch["index"]].to(device) for k, v in example_tensors.items()}
            loss = loss_fn(logits, batch["labels"].to(device), **extra)
            if regularizer is not None:
                loss = loss + regularizer()
            if not torch.isfinite(loss):
                raise FloatingPointError(f"training loss became {loss.item()} at step {step}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if hp.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), hp.max_grad_norm)
            optimizer.step()
            scheduler.step()
            step += 1
            running.append(loss.item())
            bar.update(1)
            if step % hp.log_every == 0 or step == total:
                point = {"step": step, "epoch": epoch, "train_loss": float(np.mean(running)),
                         "lr": scheduler.get_last_lr()[0], "seconds": time.perf_counter() - started}
                curve.append(point)
                log.info("step %d/%d epoch %d loss %.4f lr %.2e", step, total, epoch, point["train_loss"], point["lr"])
                running = []
            if step >= total:
                break
        if evaluate is not None and (hp.eval_every_epoch or step >= total):
            score = evaluate(model)
            model.train()
            curve.append({"step": step, "epoch": epoch, "dev_accuracy": score,
                          "seconds": time.perf_counter() - started})
            log.info("epoch %d done: dev accuracy %.2f", epoch, score)
    bar.close()
    return curve


@torch.no_grad()
def predict_proba(model: torch.nn.Module, data: EncodedPairs, batch_size: int, device) -> np.ndarray:
    """Softmax probabilities in the order of `data`."""
    model.to(device).eval()
    loader = DataLoader(data, batch_size=batch_size, shuffle=False, collate_fn=data.collate)
    out = [torch.softmax(model(**model_inputs(b, device)).logits.float(), dim=-1).cpu() for b in loader]
    return torch.cat(out).numpy()

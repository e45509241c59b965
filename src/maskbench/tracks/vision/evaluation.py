"""What paper D reports for a (possibly pruned) vision model: task accuracy on the unbiased test split (and on a
test split biased as the training data, to show how much the vanilla model leans on the bias), bias accuracy — a
fresh bias-extraction head trained on the model's features of the unbiased training split, scored on the unbiased
test split — and sparsity over the gated layers, overall and per layer."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from maskbench import runtime
from maskbench.ffw import heads as shared_heads
from maskbench.ffw.heads import HeadSettings
from maskbench.masking.density import density
from maskbench.precision import current
from maskbench.progress import Progress, batches_in
from maskbench.tracks.vision.ffw_adapter import VISION


@torch.no_grad()
def task_loss(model: nn.Module, data) -> float:
    """Mean cross-entropy of the task over a loader (paper D's CelebA schedule monitors it on unbiased
    validation)."""
    model.eval()
    device = next(model.parameters()).device
    total, count = 0.0, 0
    progress = Progress("task loss", batches_in(data), "batch")
    for batch in data:
        with current().autocast(device):  # the step's precision on CUDA; nothing on the CPU
            logits = model(batch["image"].to(device))
        total += float(nn.functional.cross_entropy(logits.float(), batch["label"].to(device), reduction="sum"))
        count += int(batch["label"].shape[0])
        progress.update(1, int(batch["label"].shape[0]))
    progress.close()
    return total / max(count, 1)


@torch.no_grad()
def task_accuracy(model: nn.Module, data, bias_names: list[str] | None = None) -> tuple[float, dict[str, float]]:
    """Accuracy (%) on a loader, and per group of bias alignment: for every bias attribute with as many classes
    as the task, a sample is aligned when its bias value equals its label; the groups are the combinations
    (paper D Table 5: both backgrounds aligned, left only, right only, neither)."""
    model.eval()
    device = next(model.parameters()).device
    correct, labels, biases = [], [], []
    num_classes = None
    progress = Progress("task accuracy", batches_in(data), "batch")
    for batch in data:
        with current().autocast(device):  # the step's precision on CUDA; nothing on the CPU
            logits = model(batch["image"].to(device))
        num_classes = logits.shape[1]
        correct.append(logits.argmax(dim=1).cpu() == batch["label"])
        labels.append(batch["label"])
        biases.append(batch["bias"])
        progress.update(1, int(batch["label"].shape[0]))
    progress.close()
    correct, labels, biases = torch.cat(correct), torch.cat(labels), torch.cat(biases)
    names = bias_names or [f"bias{b}" for b in range(biases.shape[1])]
    attributes = [b for b in range(biases.shape[1]) if int(biases[:, b].max()) < num_classes
                  and len(torch.unique(biases[:, b])) == num_classes]
    groups: dict[str, float] = {}
    if attributes:
        aligned = torch.stack([biases[:, b] == labels for b in attributes], dim=1)
        for code in torch.unique(aligned.to(torch.int64), dim=0):
            where = (aligned.to(torch.int64) == code).all(dim=1)
            key = ",".join(f"{names[b]}={'aligned' if c else 'conflicting'}"
                           for b, c in zip(attributes, code.tolist(), strict=True))
            groups[key] = 100.0 * float(correct[where].float().mean())
    return 100.0 * float(correct.float().mean()), groups


def group_mean_accuracy(groups: dict[str, float]) -> float | None:
    """Paper D's "Unbiased" accuracy on Multi-Color MNIST (Table 5): the unweighted mean of the per-group
    accuracies (its vanilla 58.9 = mean(100, 97.7, 30.37, 7.68)), not the accuracy pooled over the test set, which
    weights each group by its size. None without groups."""
    if not groups:
        return None
    return sum(groups.values()) / len(groups)


def bias_accuracy(model: nn.Module, train_data, test_data, bias_classes: list[int], settings: HeadSettings,
                  seed: int) -> dict[str, float]:
    """Per bias attribute: a fresh linear head on the model's bottleneck, trained on ``train_data`` (detached
    features), its accuracy (%) on ``test_data``."""
    return shared_heads.bias_accuracy(VISION, model, train_data, test_data, bias_classes, settings, seed)


def sparsity_report(keep: dict[str, np.ndarray] | None, model: nn.Module, gated: list[str]) -> dict:
    """Sparsity (%) over every gated layer's weights (a layer the mask leaves alone — the classifier under
    structured gates — counts as dense), and per layer (paper D's figure 4)."""
    modules = dict(model.named_modules())
    keep = keep or {}
    full = {name: keep[name] if name in keep else np.ones(_weight_shape(modules[name]), dtype=bool) for name in gated}
    per_layer = {name: 100.0 * (1.0 - float(mask.mean())) for name, mask in full.items()}
    return {"sparsity": 100.0 * (1.0 - density(full)), "layer_sparsity": per_layer,
            "weights": int(sum(mask.size for mask in full.values()))}


def _weight_shape(module: nn.Module) -> tuple[int, ...]:
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is not None and "weight" in parametrizations:
        return tuple(parametrizations.weight.original.shape)
    return tuple(module.weight.shape)


def matrix_readout(model: nn.Module, loaders: dict, test_bias_names: list[str], bias_classes: list[int],
                   head_settings: HeadSettings, seed: int) -> dict:
    """What a matrix cell run reports, as the evaluation step computes it for paper D's runs: task accuracy on the
    unbiased test split (pooled, per group, and the groups' unweighted mean), on the biased test split and on the
    biased dev split, and the bias accuracy of fresh heads (per attribute and their mean). ``loaders``: test,
    biased_test, biased_dev, head_train (the unbiased training split)."""
    runtime.seed_everything(seed)
    accuracy, groups = task_accuracy(model, loaders["test"], test_bias_names)
    out = {"task_accuracy": accuracy, "task_groups": groups, "unbiased_accuracy": group_mean_accuracy(groups),
           "biased_test_accuracy": task_accuracy(model, loaders["biased_test"])[0],
           "biased_dev_accuracy": task_accuracy(model, loaders["biased_dev"])[0]}
    per_attr = bias_accuracy(model, loaders["head_train"], loaders["test"], bias_classes, head_settings, seed)
    out["bias_accuracy_per_attribute"] = dict(zip(test_bias_names, per_attr.values(), strict=True))
    out["bias_accuracy"] = sum(per_attr.values()) / len(per_attr)
    return out

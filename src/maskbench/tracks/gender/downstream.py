"""Task performance of a gender run's encoder: paper B's GLUE column, "evaluated using only these weights in a
model that were not pruned" — the encoder as the run left it under a fresh classification head, fine-tuned with
every pruned weight held at zero.

A run's pruned weights are what its mask file drops (a frozen run's ``.mask``, an unfrozen run's ``mask.mask`` in
its checkpoint): the masked entries of each matrix and the biases of its fully masked rows, which the engine
zeroes with them. ``load_run`` writes them in as zeros; ``hold_pruned_at_zero`` multiplies
their gradients by 0: with a zero gradient AdamW's moments stay 0, its step is 0 / (0 + eps) = 0 and its decoupled
weight decay w ← w − lr·λ·w leaves 0 at 0, so no pruned weight revives (``pruned_still_zero`` checks it after
training). An unpruned encoder (the original, a debias-only run) has no mask and trains freely.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class PrunedEntries:
    """Where an encoder was pruned: the entries its run's mask drops, per parameter."""

    zeros: dict[str, torch.Tensor]  # name of a ``model.bert`` parameter -> True where pruned
    total: int  # entries of the transformer layers' matrices and biases

    @property
    def n_pruned(self) -> int:
        return int(sum(int(z.sum()) for z in self.zeros.values()))

    @property
    def density(self) -> float:
        return 1.0 - self.n_pruned / self.total if self.total else 1.0


def classifier_from_encoder(encoder, labels: list[str]):
    """A ``BertForSequenceClassification`` for ``labels`` holding ``encoder``'s weights (its pooler included) under
    a new head; seed torch first: the head is initialised here."""
    from transformers import BertForSequenceClassification

    config = encoder.config.__class__.from_dict({
        **encoder.config.to_dict(), "num_labels": len(labels), "id2label": dict(enumerate(labels)),
        "label2id": {name: i for i, name in enumerate(labels)}})
    model = BertForSequenceClassification(config)
    missing, unexpected = model.bert.load_state_dict(encoder.state_dict(), strict=False)
    missing = [k for k in missing if not k.startswith("pooler.")]
    if missing or unexpected:
        raise ValueError(f"the encoder's weights do not fit a {type(model.bert).__name__}: missing {missing[:5]}, "
                         f"unexpected {unexpected[:5]}")
    return model


def run_masks(run) -> dict | None:
    """The hard masks of a gender run (module name -> bool array; None when it pruned nothing): a ``.mask`` file,
    or the ``mask.mask`` a trained run's checkpoint holds."""
    from pathlib import Path

    from maskbench.masking.apply import MaskSet

    if run is None:
        return None
    run = Path(run)
    path = run if run.suffix == ".mask" else run / "mask.mask"
    return MaskSet.load(path).masks if path.is_file() else None


def pruned_entries(model, masks: dict | None) -> PrunedEntries:
    """The entries of ``model.bert`` that ``masks`` (encoder module name -> bool keep-array) drop: masked weight
    entries and the biases of fully masked rows. ``total`` counts the transformer layers' weights and biases
    (LayerNorm aside), the base of ``density``."""
    params = dict(model.bert.named_parameters())
    total = sum(p.numel() for n, p in model.bert.encoder.named_parameters() if "LayerNorm" not in n)
    zeros = {}
    for name, keep in (masks or {}).items():
        if f"{name}.weight" not in params:
            raise ValueError(f"the mask names module {name!r}, which the encoder does not have")
        keep = torch.as_tensor(keep, dtype=torch.bool)
        zeros[f"{name}.weight"] = ~keep
        if f"{name}.bias" in params:
            zeros[f"{name}.bias"] = ~keep.any(dim=1)
    return PrunedEntries({k: v for k, v in zeros.items() if v.any()}, total)


def hold_pruned_at_zero(model, pruned: PrunedEntries) -> list:
    """Zero the gradient of every pruned entry (see the module docstring); returns the hook handles."""
    params = dict(model.bert.named_parameters())
    handles = []
    for name, zero in pruned.zeros.items():
        keep = (~zero).to(params[name].dtype)
        handles.append(params[name].register_hook(lambda grad, keep=keep: grad * keep.to(grad.device)))
    return handles


def pruned_still_zero(model, pruned: PrunedEntries) -> bool:
    params = dict(model.bert.named_parameters())
    return all(bool((params[name].detach()[zero.to(params[name].device)] == 0).all())
               for name, zero in pruned.zeros.items())

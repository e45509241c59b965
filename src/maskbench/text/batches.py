"""Text-pair batches of the nlu track: what a model reads (pair or one text), token ids padded per batch, and softmax predictions."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from maskbench.precision import Precision, current
from maskbench.progress import Progress

log = logging.getLogger(__name__)


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

    @property
    def lengths(self) -> list[int]:
        """Each row's token count (what a batch pads to the longest of)."""
        return [len(ids) for ids in self.input_ids]

    def __getitem__(self, i: int) -> int:
        return i

    def collate(self, indices: list[int]) -> dict[str, torch.Tensor]:
        """The rows padded to the longest, built in a few numpy passes (no per-row tensors): ``input_ids`` (``pad_id``
        after each row), ``attention_mask`` (1 on a row's tokens), ``token_type_ids`` (0 past a row, and all 0
        without them), the rows' ``index`` and their ``labels``."""
        rows = [self.input_ids[i] for i in indices]
        lengths = np.fromiter((len(row) for row in rows), dtype=np.int64, count=len(rows))
        filled = np.arange(int(lengths.max())) < lengths[:, None]  # row-major: each row's tokens, in order
        count = int(lengths.sum())
        ids = np.full(filled.shape, self.pad_id, dtype=np.int64)
        ids[filled] = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=count)
        types = np.zeros(filled.shape, dtype=np.int64)
        if self.token_type_ids is not None:
            types[filled] = np.fromiter(itertools.chain.from_iterable(self.token_type_ids[i] for i in indices),
                                        dtype=np.int64, count=count)
        ids, types, mask = torch.from_numpy(ids), torch.from_numpy(types), torch.from_numpy(filled.astype(np.int64))
        batch = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types,
                 "index": torch.tensor(indices, dtype=torch.long)}
        if self.labels is not None:
            batch["labels"] = torch.from_numpy(self.labels[indices])
        return batch


def model_inputs(batch: dict[str, torch.Tensor], device) -> dict[str, torch.Tensor]:
    return {k: batch[k].to(device, non_blocking=True) for k in ("input_ids", "attention_mask", "token_type_ids")}


@torch.no_grad()
def predict_proba(model: torch.nn.Module, data: EncodedPairs, batch_size: int, device,
                  length_sorted: bool = False, precision: Precision | None = None) -> np.ndarray:
    """Softmax probabilities in the order of `data`. ``length_sorted``: score the rows in batches of similar length
    (sorted, longest first) and put them back in order. A batch pads to its longest row, so in the data's order
    every batch of 256 real MNLI pairs pads to ~128 tokens for a mean length of 39; padding is masked out of
    attention, so only the order of float sums differs (tests/test_length_batches.py bounds it). ``precision`` (None: the
    step's, ``precision.current()``): the forward pass under its autocast on CUDA (the softmax is taken in fp32);
    nothing changes on the CPU."""
    model.to(device).eval()
    order = list(range(len(data)))
    if length_sorted:
        order = torch.sort(torch.as_tensor(data.lengths, dtype=torch.long), descending=True, stable=True).indices.tolist()
    loader = DataLoader(order, batch_size=batch_size, shuffle=False, collate_fn=data.collate)
    progress = Progress("evaluate", len(loader), "batch")
    parts = []
    with (precision if precision is not None else current()).autocast(device):
        for b in loader:
            parts.append(torch.softmax(model(**model_inputs(b, device)).logits.float(), dim=-1).cpu())
            progress.update(1, len(parts[-1]))
    progress.close()
    out = torch.cat(parts)
    if length_sorted:
        out[torch.as_tensor(order, dtype=torch.long)] = out.clone()
    return out.numpy()

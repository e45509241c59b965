"""Likelihoods a masked LM gives token sequences, the quantities CrowS-Pairs and StereoSet compare.

``lm`` is any callable ``lm(input_ids, attention_mask, positions, token_type_ids=None)`` returning the vocabulary
logits at ``positions`` (batch, k) as (batch, k, vocab) — ``mlm.MaskedLM`` or, in the tests, a stub whose
log-probabilities are set by hand. Sequences are lists of token ids with their special tokens already in place.

* ``masked_log_probs``: pseudo-log-likelihood terms — for each (sequence, position), log P(token | the sequence
  with that one position masked). The (sequence, position) rows of all sequences are batched together, sorted by
  length so that a batch pads little.
* ``fill_probabilities``: for a sequence with some positions masked at once, the softmax probability of the
  wanted token at each of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from maskbench.progress import Progress


def _device(lm) -> torch.device:
    try:
        return next(lm.parameters()).device
    except (AttributeError, StopIteration):
        return torch.device("cpu")


def _batches(rows: list, batch_size: int):
    order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]


def _pad(rows, pad_id: int, device):
    width = max(len(r[0]) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    types = torch.zeros((len(rows), width), dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (seq, segs) in enumerate((r[0], r[1]) for r in rows):
        ids[i, :len(seq)] = torch.tensor(seq, dtype=torch.long)
        attention[i, :len(seq)] = 1
        if segs is not None:
            types[i, :len(seq)] = torch.tensor(segs, dtype=torch.long)
    return ids.to(device), attention.to(device), types.to(device)


def masked_log_probs(lm: Callable, sequences: Sequence[Sequence[int]], positions: Sequence[Sequence[int]],
                     mask_id: int, pad_id: int = 0, batch_size: int = 64,
                     token_types: Sequence[Sequence[int]] | None = None) -> list[list[float]]:
    """``out[s][i]`` = log P(sequences[s][positions[s][i]] | sequences[s] with that position masked)."""
    rows = []  # (masked sequence, its token types, sequence index, slot, position, wanted id)
    for s, (seq, where) in enumerate(zip(sequences, positions, strict=True)):
        for slot, p in enumerate(where):
            masked = list(seq)
            masked[p] = mask_id
            rows.append((masked, None if token_types is None else token_types[s], s, slot, p, seq[p]))
    out = [[0.0] * len(where) for where in positions]
    if not rows:
        return out
    device = _device(lm)
    progress = Progress("pseudo-log-likelihood", math.ceil(len(rows) / batch_size), "batch")
    with torch.no_grad():
        for chosen in _batches(rows, batch_size):
            batch = [rows[i] for i in chosen]
            ids, attention, types = _pad(batch, pad_id, device)
            where = torch.tensor([[r[4]] for r in batch], dtype=torch.long, device=device)
            logits = lm(ids, attention, where, token_type_ids=types if token_types is not None else None)
            logp = torch.log_softmax(logits[:, 0, :].float(), dim=-1)
            wanted = torch.tensor([r[5] for r in batch], dtype=torch.long, device=device)
            values = logp.gather(1, wanted[:, None]).squeeze(1).tolist()
            for r, value in zip(batch, values, strict=True):
                out[r[2]][r[3]] = value
            progress.update(1, len(batch))
    progress.close()
    return out


def fill_probabilities(lm: Callable, sequences: Sequence[Sequence[int]], positions: Sequence[Sequence[int]],
                       wanted: Sequence[Sequence[int]], pad_id: int = 0,
                       batch_size: int = 64) -> list[list[float]]:
    """``out[s][i]`` = softmax probability of ``wanted[s][i]`` at ``positions[s][i]`` of ``sequences[s]`` (the
    sequences hold their [MASK]s already; one forward pass a sequence)."""
    rows = [(list(seq), None, s) for s, seq in enumerate(sequences)]
    out: list[list[float]] = [[] for _ in sequences]
    device = _device(lm)
    progress = Progress("fill probabilities", math.ceil(len(rows) / batch_size), "batch")
    with torch.no_grad():
        for chosen in _batches(rows, batch_size):
            batch = [rows[i] for i in chosen]
            ids, attention, _ = _pad(batch, pad_id, device)
            k = max(len(positions[r[2]]) for r in batch)
            where = torch.zeros((len(batch), k), dtype=torch.long)
            for i, r in enumerate(batch):
                where[i, :len(positions[r[2]])] = torch.tensor(positions[r[2]], dtype=torch.long)
            probs = torch.softmax(lm(ids, attention, where.to(device)).float(), dim=-1).cpu()
            for i, r in enumerate(batch):
                n = len(positions[r[2]])
                out[r[2]] = probs[i, torch.arange(n), torch.tensor(wanted[r[2]], dtype=torch.long)].tolist()
            progress.update(1, len(batch))
    progress.close()
    return out

"""Batches of examples of similar length (``TrainHParams.length_grouped``): little padding per batch."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


class LengthGroupedBatches(torch.utils.data.Sampler):
    """Batches of similar length, in a random order: each epoch draws a permutation from ``generator``, sorts each
    run of ``group * batch_size`` items of it by length (longest first, ties in drawn order), cuts the runs into
    batches and shuffles the batches with the same generator. Every item appears once an epoch; the number of
    batches is ``ceil(n / batch_size)`` as with random batches, only the last run's last batch may be short.
    Text batches are padded to their longest row, so this cuts the padding a random batch carries (on real MNLI
    pairs of mean length 39 a random batch of 32 pads to 87 tokens)."""

    def __init__(self, lengths: Sequence[int], batch_size: int, group: int, generator: torch.Generator):
        if group < 1:
            raise ValueError(f"length_grouped must be a positive number of batches per group, got {group}")
        self.lengths = torch.as_tensor(list(lengths), dtype=torch.long)
        self.batch_size, self.group, self.generator = batch_size, group, generator

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self):
        order = torch.randperm(len(self.lengths), generator=self.generator)
        run = self.group * self.batch_size
        batches = []
        for start in range(0, len(order), run):
            chunk = order[start:start + run]
            chunk = chunk[torch.sort(self.lengths[chunk], descending=True, stable=True).indices]
            batches += [chunk[i:i + self.batch_size].tolist() for i in range(0, len(chunk), self.batch_size)]
        for i in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[i]

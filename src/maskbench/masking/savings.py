"""What a structured mask saves once its units are really removed: the parameters a model has and the CPU time of
one forward pass. Both tracks that shrink (the gender encoders, the vision models) measure with these."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
from torch import nn


def count_parameters(model: nn.Module, nonzero: bool = False) -> int:
    """Parameters of the model (``nonzero``: only the entries that are not 0)."""
    if nonzero:
        return sum(int(torch.count_nonzero(p)) for p in model.parameters())
    return sum(p.numel() for p in model.parameters())


@torch.no_grad()
def forward_latency(model: nn.Module, forward: Callable[[nn.Module], object], repeats: int = 20,
                    warmup: int = 3) -> float:
    """Median wall-clock seconds of ``forward(model)`` with the model in eval mode, after ``warmup`` calls (which
    absorb allocation and kernel selection)."""
    model = model.eval()
    for _ in range(warmup):
        forward(model)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        forward(model)
        times.append(time.perf_counter() - start)
    return statistics.median(times)

"""Resumable training: the state of a run written atomically every N steps, so that a job killed mid-epoch
restarts where it stopped and ends bit-identical to an uninterrupted run (on CPU).

The state holds the model (scores and weights), the optimiser, the LR scheduler, every random-number generator
(python, numpy, torch CPU and CUDA, and the data-order generator as it was at the start of the current epoch),
the step, the batches already taken from the current epoch, the curve so far, and whatever the caller's hooks
need (``Resume.extra`` / ``Resume.restore``). It lives beside the job's outputs under a hidden name and is removed
by the job once its outputs are complete (``Resume.done``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from maskbench.runtime import recorded_fields

log = logging.getLogger(__name__)


def rng_state() -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def run_key(args, ignore: tuple[str, ...] = ("threads", "device", "checkpoint_every")) -> str:
    """sha256 of an entry point's arguments (a dataclass) but those that do not change the result (and, as in the
    outputs' provenance, a setting added later at its default: ``runtime.recorded_fields``)."""
    values = {name: str(getattr(args, name)) for name in sorted(recorded_fields(args)) if name not in ignore}
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()


def state_path_for(output: str | os.PathLike) -> Path:
    """Where the resumable state of the job writing ``output`` lives: ``.<name>.resume.pt`` beside it."""
    output = Path(output)
    return output.parent / f".{output.name}.resume.pt"


@dataclass
class Resume:
    """How ``train.fit`` saves and restores a run: the state file, every how many steps, and the caller's own
    state (``extra() -> dict`` saved with it, ``restore(dict)`` called on resume before training goes on)."""

    path: Path
    every: int
    key: str = ""  # what the run is (``run_key``): a state saved by a different run is not resumed
    extra: Callable[[], dict] | None = None
    restore: Callable[[dict], None] | None = None

    def __post_init__(self):
        self.path = Path(self.path)
        if int(self.every) < 1:
            raise ValueError(f"checkpoint_every must be a positive number of steps, got {self.every}")

    def load(self) -> dict | None:
        """The saved state, or None when there is none (a fresh start)."""
        if not self.path.is_file():
            return None
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=False)
        except Exception as err:  # a state cut off by a crash is not trusted: start afresh
            log.warning("%s: unreadable resume state (%s); starting from the beginning", self.path, err)
            return None
        if state.get("key", "") != self.key:
            log.warning("%s: saved by a run with other arguments; starting from the beginning", self.path)
            return None
        log.info("resuming from %s at step %d", self.path, state["step"])
        return state

    def saved_step(self) -> int | None:
        """The step of the saved state (None without one)."""
        state = self.load()
        return None if state is None else int(state["step"])

    def save(self, state: dict) -> None:
        """Write the state through a temporary file and a rename: a kill leaves the old state or the new."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        torch.save({**state, "key": self.key, "extra": self.extra() if self.extra else None}, tmp)
        os.replace(tmp, self.path)

    def done(self) -> None:
        """The job's outputs are complete: the state is no longer needed."""
        self.path.unlink(missing_ok=True)
        self.path.with_name(self.path.name + ".tmp").unlink(missing_ok=True)

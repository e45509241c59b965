"""Resumable training: the state of a run written atomically every N steps, so that a job killed mid-epoch
restarts where it stopped and ends bit-identical to an uninterrupted run (on CPU).

The state holds the model (scores and weights), the optimiser, the LR scheduler, every random-number generator
(python, numpy, torch CPU and CUDA, and the data-order generator as it was at the start of the current epoch),
the step, the batches already taken from the current epoch, the curve so far, and whatever the caller's hooks
need (``Resume.extra`` / ``Resume.restore``). It lives beside the job's outputs under a hidden name and is removed
by the job once its outputs are complete (``Resume.done``).

A state file is written to a temporary name, flushed to disk (fsync) and renamed into place, the state it replaces
kept as ``<state>.prev`` until the next save: a kill at any moment leaves a whole state. It is verified: the file
starts with ``STATE_MAGIC`` and the sha256 of everything after its header line, checked before it is read; a
damaged, cut or foreign file is refused with one line naming it, and the run goes on from the previous state, or
from the beginning when that is no better. Besides every ``every`` steps, the loop saves when it is asked to stop
(``maskbench.stop``).
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import logging
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from maskbench import runtime
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


STATE_MAGIC = b"maskbench-resume-state sha256="
"""The first bytes of a state file; the 64 hex digits of the sha256 of the rest of the file and a newline follow."""
_HEADER_LEN = len(STATE_MAGIC) + 64 + 1
_CHUNK = 1 << 20


class _Hashing(io.RawIOBase):
    """A write-only stream that hashes what it passes on (torch.save writes the state through it)."""

    def __init__(self, handle, hasher):
        super().__init__()
        self.handle, self.hasher = handle, hasher

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.hasher.update(data)
        return self.handle.write(data)


def write_state(path: str | os.PathLike, state: dict) -> Path:
    """Write ``state`` to ``path`` with its checksum header, atomically: a temporary file, fsync, the old file kept
    as ``<path>.prev``, a rename, fsync of the folder. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    hasher = hashlib.sha256()
    try:
        with open(tmp, "wb") as handle:
            handle.write(STATE_MAGIC + b"0" * 64 + b"\n")
            torch.save(state, _Hashing(handle, hasher))
            handle.flush()
            handle.seek(len(STATE_MAGIC))
            handle.write(hasher.hexdigest().encode())
            handle.flush()
            os.fsync(handle.fileno())
    except Exception as err:
        written = tmp.stat().st_size if tmp.exists() else None
        tmp.unlink(missing_ok=True)
        if runtime.is_disk_full(err, path.parent):
            full = runtime.disk_full(path, written=written)
            kept = (f"; the last good state ({path.name}) is kept: a rerun goes on from its step" if path.is_file()
                    else "")
            raise runtime.DiskFullError(errno.ENOSPC, f"{full.strerror}{kept}") from err
        raise
    if path.is_file():
        os.replace(path, previous_path(path))
    os.replace(tmp, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
    return path


class DamagedState(ValueError):
    """A state file whose bytes do not match its checksum (or that has none); the message names the file."""


def read_state(path: str | os.PathLike) -> dict:
    """The state saved at ``path``, verified against its checksum first (``DamagedState`` naming the file)."""
    path = Path(path)
    with open(path, "rb") as handle:
        header = handle.read(_HEADER_LEN)
        if len(header) < _HEADER_LEN or not header.startswith(STATE_MAGIC) or header[-1:] != b"\n":
            raise DamagedState(f"{path}: not a maskbench resume state (no checksum header; cut off, or written "
                               f"by an older version)")
        recorded = header[len(STATE_MAGIC):-1].decode("ascii", "replace")
        hasher = hashlib.sha256()
        payload = io.BytesIO()
        while chunk := handle.read(_CHUNK):
            hasher.update(chunk)
            payload.write(chunk)
    if hasher.hexdigest() != recorded:
        raise DamagedState(f"{path}: damaged: its bytes hash to sha256 {hasher.hexdigest()[:16]}…, not the "
                           f"{recorded[:16]}… recorded when it was saved")
    payload.seek(0)
    try:
        return torch.load(payload, map_location="cpu", weights_only=False)
    except Exception as err:
        raise DamagedState(f"{path}: unreadable although its checksum matches ({err})") from err


def previous_path(path: Path) -> Path:
    """Where the state before the last save is kept until the next one."""
    return path.with_name(path.name + ".prev")


def resume_of(args, output: str | os.PathLike | None = None) -> Resume | None:
    """The resumable state of an entry point's run writing ``output`` (default: its ``out``), saved every
    ``args.checkpoint_every`` steps; None when that is 0."""
    if args.checkpoint_every <= 0:
        return None
    return Resume(state_path_for(output if output is not None else args.out), args.checkpoint_every, run_key(args))


def state_path_for(output: str | os.PathLike) -> Path:
    """Where the resumable state of the job writing ``output`` lives: ``.<name>.resume.pt`` beside it."""
    output = Path(output)
    return output.parent / f".{output.name}.resume.pt"


@dataclass
class Resume:
    """How ``training.loop.fit`` saves and restores a run: the state file, every how many steps, and the caller's own
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
        """The saved state, or None when there is none (a fresh start). A damaged state is refused, naming it, and
        the previous one is tried; a state of another run (``key``) is not resumed."""
        for path in (self.path, previous_path(self.path)):
            if not path.is_file():
                continue
            try:
                state = read_state(path)
            except (OSError, DamagedState) as err:
                log.warning("%s; refused", str(err).splitlines()[0] if str(err) else path)
                continue
            if state.get("key", "") != self.key:
                log.warning("%s: saved by a run with other arguments; not resumed", path)
                continue
            log.info("resuming from %s at step %d", path, state["step"])
            return state
        if self.path.is_file() or previous_path(self.path).is_file():
            log.warning("%s: no usable resume state; starting from the beginning", self.path)
        return None

    def saved_step(self) -> int | None:
        """The step of the saved state (None without one)."""
        state = self.load()
        return None if state is None else int(state["step"])

    def save(self, state: dict) -> None:
        """Write the state (``write_state``): a kill leaves the old state or the new, both whole."""
        write_state(self.path, {**state, "key": self.key, "extra": self.extra() if self.extra else None})

    def done(self) -> None:
        """The job's outputs are complete: the state is no longer needed."""
        for path in (self.path, previous_path(self.path), self.path.with_name(self.path.name + ".tmp")):
            path.unlink(missing_ok=True)

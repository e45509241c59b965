"""The arguments a step shares with others — CPU threads, device, precision, TF32, determinism, how often to save
its state (the config's ``compute`` section) — each declared once, and the start-up that applies them.

A step's argument dataclass holds its own fields and names the shared groups it takes, in order:

    @step_arguments(GateCheckpoint, Compute)
    class NluFFWArgs:
        model_dir: Path = field(metadata={"help": "..."})
        ...

makes ``NluFFWArgs`` a dataclass of its own fields followed by ``--checkpoint-every``, ``--threads``, ``--device``,
``--precision`` and ``--tf32``, in that order: the order of the command line's help and of the arguments its
outputs record (``runtime.provenance``). ``start(args)`` then sets what they say and returns the device.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from maskbench import precision, runtime
from maskbench.precision import precision_field, tf32_field
from maskbench.runtime import RECORDED_WHEN_SET

T = TypeVar("T")


def checkpoint_every_field(what: str = "steps"):
    """A step's ``--checkpoint-every`` added after its results existed: recorded in its outputs only when set
    (``runtime.RECORDED_WHEN_SET``), so that at 0 they stay the bytes they were."""
    return field(default=0, metadata={
        "help": f"save the run's state every N {what} (and when told to stop) beside its output and resume from it "
                "when rerun (0: never)", RECORDED_WHEN_SET: True})


@dataclass
class Threads:
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})


@dataclass
class Device(Threads):
    device: str = field(default="auto", metadata={"help": "auto, cpu or cuda[:N]"})


@dataclass
class Compute(Device):
    """What a training or scoring step runs on: threads, device, precision and TF32."""

    precision: str = precision_field()
    tf32: bool = tf32_field()


@dataclass
class Deterministic:
    deterministic: int = field(default=0, metadata={
        "help": "1: deterministic kernels only (repeatable bits on GPUs, some speed lost; CPU runs are already)"})


@dataclass
class Checkpoint:
    checkpoint_every: int = checkpoint_every_field()


@dataclass
class GateCheckpoint:
    checkpoint_every: int = checkpoint_every_field("gate steps")


def step_arguments(*groups: type, kw_only: bool = False) -> Callable[[type[T]], type[T]]:
    """``@dataclass`` for a step's arguments: the class's own fields, then those of each of ``groups`` (shared
    argument dataclasses such as ``Compute``) in the order given."""

    def make(cls: type[T]) -> type[T]:
        annotations = dict(cls.__dict__.get("__annotations__", {}))
        for group in groups:
            for f in dataclasses.fields(group):
                if f.name in annotations:
                    raise TypeError(f"{cls.__name__}.{f.name} is also a field of {group.__name__}")
                annotations[f.name] = f.type
                setattr(cls, f.name, field(default=f.default, default_factory=f.default_factory,
                                           metadata=f.metadata))
        cls.__annotations__ = annotations
        return dataclass(kw_only=kw_only)(cls)

    return make


def start(args, seed: int | None = None):
    """A step's start-up from its shared arguments: torch's CPU threads, deterministic kernels (a step with
    ``deterministic``), the process's precision and TF32 (a step with ``precision``), and, given ``seed``, every
    random generator seeded last. Returns the device (``device``; None for a step without one)."""
    runtime.set_threads(args.threads)
    if hasattr(args, "deterministic"):
        runtime.set_deterministic(bool(args.deterministic))
    if hasattr(args, "precision"):
        precision.use_args(args)
    device = runtime.pick_device(args.device) if hasattr(args, "device") else None
    if seed is not None:
        runtime.seed_everything(seed)
    return device

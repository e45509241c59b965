"""Numeric precision of training and evaluation on CUDA: fp32, bf16 or fp16 autocast, and TF32 matmuls.

The papers trained in mixed precision (paper A's Lightning trainer ``precision: 16``, paper B's fp16, ...);
``Precision`` carries that setting from a config's ``compute`` section to the training loop (``training.loop.fit`` /
``training.loop.train_step``), the mask searches, FFW and evaluation:

* ``autocast()`` wraps a forward pass and its loss in ``torch.autocast(device_type="cuda", dtype=...)`` for bf16
  and fp16; fp32 is no context at all;
* ``grad_scaler()`` is a ``torch.amp.GradScaler`` for fp16 (a loss scaled up so that small fp16 gradients do not
  flush to zero; its state travels with the resume checkpoint); bf16 keeps fp32's exponent range and needs none;
* ``apply_tf32()`` sets ``torch.backends.cuda.matmul.allow_tf32`` and ``torch.backends.cudnn.allow_tf32``.

On the CPU every one of them is a no-op: an offline run's outputs are byte-identical whatever the setting (CPU
autocast to bf16 exists in torch but would change every CPU number and run slower on most CPUs).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from maskbench.runtime import RECORDED_WHEN_SET

PRECISIONS = ("fp32", "bf16", "fp16")


class PrecisionError(ValueError):
    """An unknown precision name."""


@dataclass(frozen=True)
class Precision:
    """``kind``: fp32, bf16 or fp16; ``tf32``: TF32 tensor-core matmuls and convolutions for what stays fp32."""

    kind: str = "fp32"
    tf32: bool = False

    def __post_init__(self):
        if self.kind not in PRECISIONS:
            raise PrecisionError(f"precision {self.kind!r} is unknown; choose one of {list(PRECISIONS)}")

    def active(self, device) -> bool:
        """True when the setting changes anything on ``device``: CUDA only."""
        return _device_type(device) == "cuda"

    def dtype(self):
        import torch

        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[self.kind]

    def autocast(self, device):
        """The context a forward pass and its loss run in: autocast to bf16/fp16 on CUDA, else nothing."""
        if self.kind == "fp32" or not self.active(device):
            return contextlib.nullcontext()
        import torch

        return torch.autocast(device_type="cuda", dtype=self.dtype())

    def grad_scaler(self, device):
        """A GradScaler for fp16 on CUDA; None otherwise (the step then runs exactly as in fp32)."""
        if self.kind != "fp16" or not self.active(device):
            return None
        import torch

        return torch.amp.GradScaler("cuda")

    def apply_tf32(self, device) -> None:
        """Set cuBLAS's and cuDNN's TF32 switches from ``tf32`` (CUDA only; nothing on the CPU)."""
        if not self.active(device):
            return
        import torch

        torch.backends.cuda.matmul.allow_tf32 = bool(self.tf32)
        torch.backends.cudnn.allow_tf32 = bool(self.tf32)


FP32 = Precision()
_current = FP32


def use(precision: Precision) -> None:
    """Make ``precision`` the process's default (a step's start-up, ``compute.start``, calls this once from its
    ``--precision`` and ``--tf32``): ``training.loop.fit``, ``text.batches.predict_proba`` and the
    tracks' scoring read it through ``current()`` unless given one. One step is one process and one setting, so the
    setting need not be threaded through every track's training and scoring functions."""
    global _current
    _current = precision


def current() -> Precision:
    """The process's precision (fp32 unless a step said otherwise through ``use``)."""
    return _current


def _device_type(device) -> str:
    if device is None:
        return "cpu"
    return getattr(device, "type", None) or str(device).split(":")[0]


PRECISION_HELP = ("fp32, bf16 or fp16: autocast on CUDA around the forward pass and loss (fp16 with a GradScaler); "
                  "the CPU ignores it")
TF32_HELP = "TF32 matmuls and cuDNN convolutions on CUDA (the CPU ignores it)"


def precision_field():
    """A step's ``precision`` argument; recorded in its outputs only when not fp32 (``runtime.recorded_fields``)."""
    return field(default="fp32", metadata={"help": PRECISION_HELP, "choices": PRECISIONS, RECORDED_WHEN_SET: True})


def tf32_field():
    """A step's ``tf32`` argument; recorded in its outputs only when true."""
    return field(default=False, metadata={"help": TF32_HELP, RECORDED_WHEN_SET: True})


def use_args(args) -> Precision:
    """A step's ``--precision`` / ``--tf32`` made the process's precision (``use``); an unknown name is an error
    naming the option and value, raised before the step loads anything."""
    precision = parse_precision(args.precision, args.tf32)
    use(precision)
    return precision


def parse_precision(kind: str, tf32: bool | int | str = False) -> Precision:
    """A step's ``--precision`` / ``--tf32`` as a ``Precision`` (an unknown name: one-line error naming it)."""
    if isinstance(tf32, str):
        lowered = tf32.lower()
        if lowered not in ("true", "false", "1", "0"):
            raise PrecisionError(f"--tf32: expected true or false, got {tf32!r}")
        tf32 = lowered in ("true", "1")
    if kind not in PRECISIONS:
        raise PrecisionError(f"--precision: {kind!r} is unknown; choose one of {list(PRECISIONS)}")
    return Precision(kind=kind, tf32=bool(tf32))

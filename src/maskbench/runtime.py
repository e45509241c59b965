"""What every entry point needs: seeding, the device, atomic writes and a provenance record."""

from __future__ import annotations

import json
import os
import platform
import random
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (CPU and CUDA) so that data order, initialisation and dropout repeat."""
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def set_deterministic(on: bool) -> None:
    """Ask torch for deterministic kernels everywhere (``compute.deterministic``).

    On the CPU every run here is already bit-identical for a fixed seed and commit; on GPUs cuBLAS and cuDNN pick
    non-deterministic kernels by default (atomics in reductions, autotuned convolutions), so two runs may differ
    in the last bits. This switch trades some GPU speed for repeatable bits: cuDNN autotuning off, deterministic
    algorithms required (an op without one raises), and cuBLAS's workspace fixed."""
    if not on:
        return
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True


def pick_device(requested: str = "auto"):
    """CUDA when present (or asked for), otherwise the CPU."""
    import torch

    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {requested!r} was requested but torch sees no CUDA device")
    return torch.device(requested)


def set_threads(threads: int | None) -> None:
    import torch

    if threads and threads > 0:
        torch.set_num_threads(threads)


def versions() -> dict[str, str]:
    """Installed versions, read from package metadata (importing torch just to ask would cost seconds); maskbench's
    from the package that runs, which the rules import from the workflow's src/, installed or not."""
    from maskbench._version import __version__

    out = {"python": platform.python_version(), "maskbench": __version__}
    for name in ("torch", "transformers", "datasets", "pandas", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def git_output(repo: str | os.PathLike, *args: str) -> str | None:
    """``git -C repo ARGS``'s output, or None when git is missing or the folder is not a repository."""
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def git_commit(repo: str | os.PathLike) -> str | None:
    """HEAD's short hash in ``repo``, or None outside a git repository."""
    out = git_output(repo, "rev-parse", "--short", "HEAD")
    return out.strip() if out else None


RECORDED_WHEN_SET = "recorded_when_set"


def recorded_fields(args: Any) -> list[str]:
    """The fields of an entry point's argument dataclass that its outputs record: all, but a field marked
    ``metadata={RECORDED_WHEN_SET: True}`` only when it differs from its default. Such a field is a setting added
    after results existed (the CUDA-only ``--precision`` / ``--tf32``): at its default an output stays the bytes it
    was, its mask files' headers included."""
    fields = args.__dataclass_fields__
    return [name for name, f in fields.items()
            if not (f.metadata.get(RECORDED_WHEN_SET) and getattr(args, name) == f.default)]


def provenance(args: Any, seed: int | None = None) -> dict[str, Any]:
    """The resolved arguments, seed and library versions, recorded in every output JSON."""
    record = {"argv": sys.argv[1:], "versions": versions()}
    if seed is not None:
        record["seed"] = seed
    if hasattr(args, "__dataclass_fields__"):
        record["args"] = {k: _jsonable(getattr(args, k)) for k in recorded_fields(args)}
    return record


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def sweep_temporaries(path: str | os.PathLike) -> list[Path]:
    """Remove the temporary files of ``path`` (``atomic_path``'s ``.<name>.<8 hex>.tmp<suffix>``) that a killed
    job (``kill -9``, a cancelled cluster job) left behind; one output has one writer, so any is a leftover."""
    path = Path(path)
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[0-9a-f]{{8}}\.tmp{re.escape(path.suffix)}")
    if not path.parent.is_dir():
        return []
    stale = sorted(item for item in path.parent.iterdir() if pattern.fullmatch(item.name) and item.is_file())
    for item in stale:
        item.unlink(missing_ok=True)
    return stale


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the folder of ``path``; rename it onto ``path`` if the block succeeds, remove it
    if it fails, so that a killed job never leaves half a file where a rule expects a finished one.

    The temporary name keeps the real suffix (``.x.csv.<random>.tmp.csv``) for writers that infer the format from
    it (matplotlib), and the file is created with the mode a plain ``open`` gives (0644 under the usual umask),
    not ``mkstemp``'s 0600. Missing parent folders are created, and the temporaries of ``path`` that a killed
    earlier writer left are removed (``sweep_temporaries``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_temporaries(path)
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp{path.suffix}")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write via a temporary file in the same folder and rename (``atomic_path``)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=_jsonable) + "\n")


def atomic_write_parquet(frame, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)

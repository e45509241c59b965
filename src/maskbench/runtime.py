"""What every entry point needs: seeding, the device, atomic writes and a provenance record."""

from __future__ import annotations

import errno
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


class DiskFullError(OSError):
    """A write that failed for lack of space (or quota): the message names the file and the bytes it needed; the
    partial file is gone, so nothing that looks complete is left (``atomic_path``)."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
# how libraries that do not raise a plain OSError say it: pyarrow (an OSError whose errno is unset), safetensors
# (Rust's io::ErrorKind), torch's stream writer ("file write failed": the free space decides, below)
DISK_FULL_WORDS = ("No space left on device", "Disk quota exceeded", "StorageFull", "QuotaExceeded")
NEARLY_FULL = 1 << 20  # bytes: a write that failed with less than this left on the device failed for space


def free_bytes(path: str | os.PathLike) -> int | None:
    """The bytes an unprivileged writer may still use on the file system holding ``path`` (its nearest existing
    folder); None where the system does not say."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def is_disk_full(err: BaseException, where: str | os.PathLike) -> bool:
    """Whether ``err`` (or an error it was raised from) says the device or the quota is full, or is a write error
    on a device that has (nearly) no space left."""
    seen: set[int] = set()
    chain: BaseException | None = err
    while chain is not None and id(chain) not in seen:
        seen.add(id(chain))
        if isinstance(chain, OSError) and chain.errno in DISK_FULL_ERRNOS:
            return True
        if any(word in str(chain) for word in DISK_FULL_WORDS):
            return True
        chain = chain.__cause__ or chain.__context__
    if isinstance(err, (OSError, RuntimeError)):
        free = free_bytes(where)
        return free is not None and free < NEARLY_FULL
    return False


def disk_full(path: str | os.PathLike, needed: int | None = None, written: int | None = None,
              about: bool = False) -> DiskFullError:
    """The one-line error of a write to ``path`` that found no space: how many bytes it needed (exactly when the
    writer knows its size, ``about`` that many for an estimate, else more than what was written before the device
    filled) and how many are free."""
    path = Path(path)
    free = free_bytes(path.parent)
    if needed is not None:
        need = f"needed {'about ' if about else ''}{needed:,} bytes"
    elif written:
        need = f"needed more than the {written:,} bytes written before the device filled"
    else:
        need = "needed more space than the device had"
    have = f", {free:,} bytes free there" if free is not None else ""
    return DiskFullError(errno.ENOSPC, f"{path}: no space left on the device writing it: {need}{have}; nothing of "
                                       "it was kept: free space (or point results: at a larger disk) and run the "
                                       "job again")


def require_space(path: str | os.PathLike, needed: int) -> None:
    """Refuse, before writing anything, a write of ``needed`` bytes to ``path`` that cannot fit."""
    free = free_bytes(Path(path).parent)
    if free is not None and needed > free:
        raise disk_full(path, needed=needed)


@contextmanager
def atomic_path(path: str | os.PathLike, size: int | None = None) -> Iterator[Path]:
    """Yield a temporary path in the folder of ``path``; rename it onto ``path`` if the block succeeds, remove it
    if it fails, so that a killed job never leaves half a file where a rule expects a finished one.

    The temporary name keeps the real suffix (``.x.csv.<random>.tmp.csv``) for writers that infer the format from
    it (matplotlib), and the file is created with the mode a plain ``open`` gives (0644 under the usual umask),
    not ``mkstemp``'s 0600. Missing parent folders are created, and the temporaries of ``path`` that a killed
    earlier writer left are removed (``sweep_temporaries``).

    A write that fails for lack of space raises ``DiskFullError`` naming ``path`` and the bytes needed: ``size``,
    when the writer knows it (then a write that cannot fit is refused before it starts), else more than the bytes
    written before the device filled.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_temporaries(path)
    if size is not None:
        require_space(path, size)
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
    except BaseException as err:
        written = tmp.stat().st_size if tmp.exists() else None
        tmp.unlink(missing_ok=True)
        if isinstance(err, Exception) and not isinstance(err, DiskFullError) and is_disk_full(err, path.parent):
            raise disk_full(path, needed=size, written=written) from err
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write via a temporary file in the same folder and rename (``atomic_path``)."""
    data = text.encode("utf-8")
    with atomic_path(path, size=len(data)) as tmp:
        tmp.write_bytes(data)


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=_jsonable) + "\n")


def atomic_write_parquet(frame, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)

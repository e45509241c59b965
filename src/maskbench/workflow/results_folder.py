"""One results folder per config, one run at a time: a run claims its config's `results:` folder, a config that
names a folder another config has claimed is refused at planning, before any job runs, and a run that finds the
folder in use by another run is refused before its first job (`lock_results_folder`).

The claim is a small file, `<results>/.maskbench-config`, holding the name of the config that first ran there (the
last `--configfile`'s file name: `smoke.yaml` for configs/smoke.yaml; `config.yaml` for the embedded default). Planning reads it (no side effect: dry runs and cluster jobs only read); the workflow's `onstart`
writes it when a run starts. A folder without a claim is free; deleting the claim file frees it.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path

CLAIM_FILE = ".maskbench-config"
LOCK_FILE = ".maskbench-lock"
log = logging.getLogger("maskbench.results_folder")  # the name its log lines carried before it moved to maskbench.workflow


class ResultsFolderTaken(ValueError):
    """The config's results folder holds another config's results."""


def config_name(configfiles: Sequence[str | os.PathLike], default: str = "config.yaml") -> str:
    """The name a run's results folder is claimed by: the last config file's name (an overlay such as
    configs/paper-miniature.yaml, given after configs/paper.yaml, names the run), `default` when none is given."""
    if not configfiles:
        return default
    return Path(configfiles[-1]).name


def claim_path(results: str | os.PathLike) -> Path:
    return Path(results) / CLAIM_FILE


def check_results_folder(results: str | os.PathLike, name: str) -> None:
    """Refuses a results folder claimed by another config, in one line naming the folder, the claim and the config."""
    claim = claim_path(results)
    if not claim.is_file():
        return
    owner = claim.read_text(encoding="utf-8").strip()
    if owner and owner != name:
        raise ResultsFolderTaken(
            f"{claim}: the results folder {str(results)!r} holds the results of config {owner!r}; config {name!r} "
            f"(field results: {str(results)!r}) would overwrite them — give this config a folder of its own (its "
            f"`results:` key, or --config results=...), or delete {claim} to hand the folder over")


def claim_results_folder(results: str | os.PathLike, name: str) -> None:
    """Writes the claim when the folder has none (after check_results_folder has let the run through)."""
    claim = claim_path(results)
    if claim.is_file():
        return
    claim.parent.mkdir(parents=True, exist_ok=True)
    partial = claim.with_name(claim.name + ".partial")
    partial.write_text(name + "\n", encoding="utf-8")
    os.replace(partial, claim)


class ResultsFolderBusy(ValueError):
    """Another run holds the results folder's lock."""


def lock_path(results: str | os.PathLike) -> Path:
    return Path(results) / LOCK_FILE


def lock_results_folder(results: str | os.PathLike, name: str, workdir: str | os.PathLike) -> int | None:
    """Hold the results folder for this process: an exclusive ``flock`` on ``<results>/.maskbench-lock``, which
    records who holds it. Snakemake's own lock covers one working directory; two runs from two working directories
    (or with --config results=...) that name one folder would otherwise write the same files at once.

    The lock lasts as long as the process (the system releases it when the process ends, however it ends, so a
    crashed run leaves no lock behind); the returned descriptor must stay open. A second run is refused with
    ``ResultsFolderBusy``, in one line naming the holder and how to clear a stale lock. On a file system without
    ``flock`` the folder is not locked (a warning says so) and None is returned."""
    import fcntl

    path = lock_path(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise ResultsFolderBusy(
            f"{path}: the results folder {str(results)!r} is in use by another run ({holder}); wait for it to end, "
            f"or stop it — two runs writing one folder overwrite each other's files. If that process no longer runs "
            f"(the system releases its lock when it ends, but a crashed host's lock on a network file system can "
            f"outlive it), delete {path} and start again") from None
    except OSError as err:
        os.close(fd)
        if err.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            log.warning("%s: the file system does not lock files (%s); two runs on this folder are not kept apart",
                        path, err.strerror)
            return None
        raise
    record = {"pid": os.getpid(), "host": socket.gethostname(), "config": name, "workdir": str(workdir),
              "since": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": " ".join(sys.argv)}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
    return fd


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder recorded it."""
    try:
        record = json.loads(os.pread(fd, 65536, 0).decode() or "{}")
    except (OSError, ValueError):
        record = {}
    if not record:
        return "its holder recorded nothing yet"
    return (f"pid {record.get('pid')} on host {record.get('host')}, config {record.get('config')!r}, working "
            f"directory {record.get('workdir')}, since {record.get('since')}")

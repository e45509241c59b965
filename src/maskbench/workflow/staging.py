"""Finished parts of a long job kept across a kill, outside the job's declared outputs.

A sweep (paper C's eight sparsities in one job) or an evaluation of many subnetworks writes its outputs part by part.
When SLURM kills the job at its time limit, snakemake deletes every declared output, finished parts included. So
each finished part's files are also hard-linked (copied where links fail) to a hidden sibling
``.<name>.staged-<key>`` beside each file; when the job runs again, a part whose every staged file is there is put
back in place and skipped. The key (a hash of the part's arguments) keeps a part of other arguments from being put
back. The job removes the staged copies once all its outputs are complete (``discard``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger("maskbench.staging")  # the name its log lines carried before it moved to maskbench.workflow


def part_key(*values) -> str:
    """A short hash of what a part is (its arguments, as JSON-able values)."""
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:16]


def inputs_stamp(paths: Iterable[str | os.PathLike | None]) -> list:
    """Size and modification time of each input file (a folder: of its files), so that a part computed from inputs
    since rewritten is not put back."""
    stamp = []
    for path in paths:
        if path is None:
            continue
        path = Path(path)
        files = (sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
                 if path.is_dir() else [path])
        stamp += [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files if f.exists()]
    return stamp


def staged_path(path: str | os.PathLike, key: str) -> Path:
    path = Path(path)
    return path.parent / f".{path.name}.staged-{key}"


def _link(source: Path, target: Path) -> None:
    if target.exists() and os.path.samefile(source, target):
        return  # already this file (a rename over a hard link of itself would leave the temporary name behind)
    tmp = target.with_name(target.name + ".tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copy2(source, tmp)
    os.replace(tmp, target)


def keep(paths: Iterable[str | os.PathLike], key: str) -> None:
    """A part is complete: stage a copy of each of its files (the last one staged marks it complete)."""
    for path in paths:
        _link(Path(path), staged_path(path, key))


def restore(paths: Iterable[str | os.PathLike], key: str) -> bool:
    """Put a part staged by an earlier try of the job back in place; False (nothing changed) unless every file
    of the part is staged."""
    paths = [Path(p) for p in paths]
    if not all(staged_path(p, key).is_file() for p in paths):
        return False
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        _link(staged_path(path, key), path)
    log.info("restored %d file(s) of a part finished before the job was cut off: %s", len(paths), paths[0])
    return True


def discard(paths: Iterable[str | os.PathLike], key: str) -> None:
    """The job's outputs are complete: its staged copies are no longer needed."""
    for path in paths:
        staged = staged_path(path, key)
        staged.unlink(missing_ok=True)
        staged.with_name(staged.name + ".tmp").unlink(missing_ok=True)

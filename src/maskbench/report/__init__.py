"""Tables and figures built from the evaluation JSONs (paper A's Table 1 and its plots).

Submodules: ``table1`` (aggregation over seeds, Markdown/LaTeX rendering), ``figures`` (matplotlib).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it onto ``path`` only if the block succeeds.

    Workflow rules must never see a half-written output, so every report file goes through this.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # keep the real suffix so writers that infer the format from the name (matplotlib) still work
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def json_arg(text: str):
    """A command-line JSON value: inline JSON (``'{"a": 1}'``) or the path of a JSON file.

    Snakemake rules pass config fragments inline; a file path keeps long configs readable by hand.
    """
    stripped = text.strip()
    if stripped[:1] in ("{", "[", '"') or not Path(stripped).is_file():
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as err:
            raise ValueError(f"not valid JSON and not an existing file: {text!r} ({err})") from err
    with open(stripped, encoding="utf-8") as fh:
        return json.load(fh)

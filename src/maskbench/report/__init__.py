"""Tables and figures built from the evaluation JSONs (paper A's Table 1 and its plots).

Submodules: ``table1`` (aggregation over seeds, Markdown/LaTeX rendering), ``figures`` (matplotlib),
``pruning_rates`` (paper A's figure 2), ``sparsity_curves`` (paper C), ``density`` (kept and pruned counts of
masks). Every file is written through ``maskbench.runtime.atomic_path``.
"""

from __future__ import annotations

import json
from pathlib import Path


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


def json_object_arg(text: str) -> dict:
    """``json_arg`` for a value that must be a non-empty JSON object (a columns config)."""
    value = json_arg(text)
    if not isinstance(value, dict) or not value:
        raise ValueError(f"not a non-empty JSON object: {text!r}")
    return value

"""maskbench: a Snakemake benchmark suite for debiasing by pruning masks.

The public Python API (maskbench/api.py) is importable from here — ``from maskbench import load_mask, apply_mask,
remove_mask, search_mask, evaluate_model, predict, inspect_mask, export_model`` — and loaded on first use, so that
``import maskbench.<module>`` (the workflow's parse-time imports, the steps' launcher) stays free of torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from maskbench._version import __version__

API = (
    "ExportError", "ExportResult", "MaskFileError", "MaskMismatchError", "MaskSet", "MaskSwitch", "apply_mask",
    "evaluate_model", "export_model", "inspect_mask", "load_mask", "load_model", "predict", "remove_mask",
    "search_mask",
)
__all__ = ["__version__", *API]

if TYPE_CHECKING:  # for type checkers and editors; at run time the names come from __getattr__
    from maskbench.api import (  # noqa: F401
        ExportError,
        ExportResult,
        MaskFileError,
        MaskMismatchError,
        MaskSet,
        MaskSwitch,
        apply_mask,
        evaluate_model,
        export_model,
        inspect_mask,
        load_mask,
        load_model,
        predict,
        remove_mask,
        search_mask,
    )


def __getattr__(name: str):
    if name in API:
        from maskbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'maskbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *API})

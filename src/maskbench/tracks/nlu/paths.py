"""Folder names of the nlu track that the workflow (rules/nlu/) and the library both build, in a module without
torch so that planning imports it in milliseconds."""

from __future__ import annotations


def level_name(sparsity: float) -> str:
    """The folder of one sparsity level of a sweep, ``sparsity~0.3``: one decimal on IMP's 10% grid, else the
    shortest form of the value (``sparsity~0.35``)."""
    s = float(sparsity)
    return f"sparsity~{s:.1f}" if abs(s * 10 - round(s * 10)) < 1e-9 else f"sparsity~{s:g}"

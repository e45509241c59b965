"""How a sweep point of the trade-off is named in paths and evaluation JSONs: standard library only, so that the
rules can import it when the Snakefile is parsed (no pandas, no report code at parse time)."""

from __future__ import annotations


def point_name(row: str, knob: str, value: float) -> str:
    """The name a sweep point's files and evaluation JSONs carry."""
    return f"{row}@{knob}~{value_text(value)}"


def value_text(value: float) -> str:
    """A knob value as it appears in paths: 0.03, 1e-05, 2 (``format(v, "g")``)."""
    return format(float(value), "g")

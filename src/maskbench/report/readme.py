"""The README's measured sections, generated from a run's tables: never typed by hand.

A generated section sits between two markers, ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``;
``replace_section`` swaps what is between them and nothing else. The tracks' sections are built in
``tracks/<track>/report/readme_sections.py``; this module holds what they share (a cell, the data caption).
"""

from __future__ import annotations

import math

import pandas as pd


def markers(name: str) -> tuple[str, str]:
    return f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"


def replace_section(text: str, name: str, body: str, where: str = "README") -> str:
    """``text`` with the lines between the markers of section ``name`` replaced by ``body``."""
    start, end = markers(name)
    if text.count(start) != 1 or text.count(end) != 1:
        raise ValueError(f"{where}: section {name!r} needs exactly one {start!r} and one {end!r} line "
                         f"(found {text.count(start)} and {text.count(end)})")
    i, j = text.index(start) + len(start), text.index(end)
    if j < i:
        raise ValueError(f"{where}: section {name!r} ends before it starts")
    return text[:i] + "\n" + body.strip("\n") + "\n" + text[j:]


def cell(mean: float, std: float) -> str:
    """``"72.0 ± 0.5"``; the std left out for a single seed (NaN)."""
    if math.isnan(mean):
        return "–"
    return f"{mean:.1f}" if math.isnan(std) else f"{mean:.1f} ± {std:.1f}"


def demote_headings(markdown: str, levels: int = 1) -> str:
    """Every ATX heading one (or ``levels``) level deeper, so that a generated file's headings sit under the README
    section they are put in."""
    return "\n".join("#" * levels + line if line.startswith("#") else line for line in markdown.split("\n"))


def data_kind(source: str) -> str:
    """What a dataset's source is: real text or images (a local file, the Hub, a package), synthetic, or derived."""
    if source.startswith("synthetic:"):
        return "synthetic"
    if source.startswith(("local:", "hf:", "package:")):
        return "real"
    return "derived"


def data_caption(datasets: pd.DataFrame, config: dict, config_path: str) -> str:
    """One line naming what a run is on, from its own ``tables/datasets.csv`` and config: every dataset with its
    size and kind (real / synthetic; a subset named by its source), the model, the seeds and the config."""
    def described(source: str) -> str:
        kind = data_kind(source)
        if kind == "derived":
            return source  # e.g. "negation subset of ...": says itself what it is
        return f"{kind}, `{source}`" + (", generated" if kind == "synthetic" else "")

    parts = [f"{rec.dataset} {int(rec.n_examples):,} ({described(str(rec.source))})"
             for rec in datasets.itertuples(index=False)]
    kinds = {data_kind(str(s)) for s in datasets["source"]} - {"derived"}
    banner = "real text" if kinds == {"real"} else "synthetic data" if kinds == {"synthetic"} else "real and synthetic data"
    model = config.get("model", {})
    model_text = f"{model.get('name', '?')} ({model.get('init', '?')}"
    model_text += f", `{model['path']}`)" if model.get("path") else ")"
    seeds = ", ".join(str(s) for s in config.get("seeds", []))
    return (f"**On {banner}.** Data: {'; '.join(parts)}. Model: {model_text}. Seeds: {seeds}. "
            f"Config: `{config_path}`.")

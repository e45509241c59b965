"""The README's measured sections, generated from a run's tables: never typed by hand.

A generated section sits between two markers, ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``;
``replace_section`` swaps what is between them and nothing else. The tracks' sections are built in
``tracks/<track>/report/readme_sections.py``; this module holds what they share (the markers, a cell, the headings'
level); the captions are ``report/captions.py``'s.
"""

from __future__ import annotations

import math


def markers(name: str) -> tuple[str, str]:
    return f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"


def replace_section(text: str, name: str, body: str, where: str = "README", insert_before: str | None = None) -> str:
    """``text`` with the lines between the markers of section ``name`` replaced by ``body``. A section ``text`` does
    not have yet is first added, as an empty pair of markers, before the line ``insert_before`` when one is given (a
    line found exactly once)."""
    start, end = markers(name)
    if insert_before is not None and start not in text and end not in text:
        lines = text.split("\n")
        if lines.count(insert_before) != 1:
            raise ValueError(f"{where}: the line {insert_before!r} to add section {name!r} before is found "
                             f"{lines.count(insert_before)} times, not once")
        at = lines.index(insert_before)
        text = "\n".join([*lines[:at], start, end, "", *lines[at:]])
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

"""The README's measured sections, generated from a run's tables: never typed by hand.

A generated section sits between two markers, ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``;
``replace_section`` swaps what is between them and nothing else. The tracks' sections are built in
``tracks/<track>/report/readme_sections.py``; this module holds what they share (the markers, a cell, the headings'
level); the captions are ``report/captions.py``'s.
"""

from __future__ import annotations

import math
import re
from pathlib import Path


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


def wrap_prose(markdown: str, width: int = 160) -> str:
    """``markdown`` with every line of prose longer than ``width`` broken at spaces (a paragraph renders the same);
    table rows, code blocks, headings and HTML comments are left as they are."""
    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or len(line) <= width or line.lstrip().startswith(("|", "#", "<!--")):
            out.append(line)
            continue
        indent = len(line) - len(line.lstrip())
        item = re.match(r"(?:[-*] |\d+\. |> )", line.lstrip())
        lead = line[:indent] + ("" if item is None else "> " if item.group(0) == "> " else " " * len(item.group(0)))
        if line.lstrip().startswith("**"):
            lead = line[:indent]
        out += fill(line, width, lead)
    return "\n".join(out)


def put_record(text: str, name: str, body: str, end: str, where: str = "provenance") -> str:
    """The provenance page ``text`` with record ``name`` (a heading and a generated section) set to ``body``; a record
    the page lacks is added before its line ``end``."""
    start, _ = markers(name)
    if start not in text:
        lines = text.split("\n")
        if lines.count(end) != 1:
            raise ValueError(f"{where}: the line {end!r} to add record {name!r} before is found {lines.count(end)} "
                             "times, not once")
        at = lines.index(end)
        text = "\n".join([*lines[:at], f"### {name}", "", *markers(name), "", *lines[at:]])
    return replace_section(text, name, wrap_prose(body), where)


PROVENANCE_HEAD = ("# Provenance of the generated sections\n\nEach generated section's one-line stamp links its record "
                   "here: the run's wall time,\nthe report's commit and every later check that the plan is unchanged "
                   "([the glossary](glossary.md) defines the words).\n\n")


def write_provenance(repo: Path, name: str, record: str) -> None:
    """Set record ``name`` of the repository's provenance page (``report.captions.PROVENANCE_PAGE``, created when
    missing), written whole or not at all."""
    from maskbench.report.captions import PROVENANCE_END, PROVENANCE_PAGE

    page = Path(repo) / PROVENANCE_PAGE
    page.parent.mkdir(parents=True, exist_ok=True)
    text = page.read_text(encoding="utf-8") if page.is_file() else PROVENANCE_HEAD + PROVENANCE_END + "\n"
    tmp = page.with_name(page.name + ".tmp")
    tmp.write_text(put_record(text, name, record, PROVENANCE_END, str(page)), encoding="utf-8")
    tmp.replace(page)


# a line that starts so would open a list, a quote, a heading or a rule instead of continuing the paragraph
OPENS_BLOCK = re.compile(r"^(?:[-+*>#=]+|\d+[.)])$")


def fill(line: str, width: int, lead: str) -> list[str]:
    """``line`` broken at spaces into lines of at most ``width`` characters (a word longer stays whole), each after
    the first led by ``lead``; never before a word that would open a block (a list marker, "#", ">")."""
    words = line.split(" ")
    lines = [words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 1 + len(word) <= width or not word or OPENS_BLOCK.match(word) or lines[-1] == lead:
            lines[-1] += (" " if lines[-1] != lead else "") + word
        else:
            lines.append(lead + word)
    return lines

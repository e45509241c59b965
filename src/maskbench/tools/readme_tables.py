"""Write a run's Table 1 and its effects against the baseline into a page's generated sections, stamped.

    python -m maskbench.tools.readme_tables --readme docs/paper-a.md --tables results/tables --name default \\
        --command "snakemake --cores 2" --wall "27 min 30 s" --config config.yaml

`--readme` is the Markdown file that holds the sections (any file: README.md or a page of docs/); without it, the
kind's page: docs/paper-a.md (table1), docs/paper-c.md (srnets), docs/paper-d.md (vision), docs/paper-b.md (gender).

Rewrites, between their markers, each headed by the commit the outputs came from, the command and the wall time:
`--kind table1` (default): `<NAME>_table1` (results/tables/table1.md), `<NAME>_effects` (every row minus the
baseline, ± its standard error over seeds, "≈" where within two standard errors) and `<NAME>_benchmark` (the mask
benchmark, results/benchmarks/masks.json, when the run wrote it) and `<NAME>_tradeoff` (the trade-off curves, their
summary and the selection rule's picks, when the run has `tradeoff:`); `--kind srnets`: `<NAME>_curves`
(paper C's sparsity curves as ID / OOD tables with the full model's line) and `<NAME>_table5` (table5.md);
`--kind vision`: `<NAME>_tables` (the vision report's tables.md, its headings one level down) and `<NAME>_shrunk` (the structured subnetworks
shrunk to dense models, results/benchmarks/vision_structured.json); `--kind gender`: `<NAME>_tables` (the gender
report's tables.md) and `<NAME>_shrunk` (its masks shrunk to dense encoders, results/benchmarks/structured.json). The commit is the repository's HEAD; the step
refuses when the code, rules, schemas or configs differ from HEAD (then the outputs are not that commit's).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from maskbench.report.readme import data_caption, demote_headings, replace_section
from maskbench.runtime import atomic_path, git_commit, git_output
from maskbench.steps import run_step
from maskbench.tracks.gender.report.readme_sections import shrunk_encoders_markdown
from maskbench.tracks.nlu.report.readme_sections import (
    effects,
    effects_markdown,
    mask_benchmark_markdown,
    selection_markdown,
    sparsity_curves_markdown,
    tradeoff_curves_markdown,
)
from maskbench.tracks.vision.report.readme_sections import shrunk_models_markdown

# what decides a run's outputs; a change here that is not committed means the outputs are not HEAD's
CODE_PATHS = ("src", "rules", "schemas", "configs", "config.yaml", "Snakefile")
KINDS = ("table1", "srnets", "vision", "gender")
# the page that holds each kind's sections when --readme is not given
PAGES = {"table1": Path("docs/paper-a.md"), "srnets": Path("docs/paper-c.md"), "vision": Path("docs/paper-d.md"),
         "gender": Path("docs/paper-b.md")}


@dataclass
class Args:
    readme: Path
    tables: Path
    name: str
    command: str
    wall: str
    kind: str = "table1"
    config: Path | None = None
    figures: Path | None = None


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(prog="python -m maskbench.tools.readme_tables",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--readme", type=Path, default=None,
                        help="the Markdown file holding the sections (default: the kind's page, " +
                             ", ".join(f"{k}: {v}" for k, v in PAGES.items()) + ")")
    parser.add_argument("--tables", type=Path, default=Path("results/tables"), help="the run's results/tables")
    parser.add_argument("--name", default="default", help="section prefix: <name>_table1, <name>_effects")
    parser.add_argument("--command", required=True, help="the command that produced the outputs")
    parser.add_argument("--wall", required=True, help="its wall time, as measured (e.g. '22 min 40 s')")
    parser.add_argument("--kind", choices=KINDS, default="table1", help="which tables: " + ", ".join(KINDS))
    parser.add_argument("--config", type=Path, default=None,
                        help="the run's config: each section then says what it is on (data from the run's "
                             "tables/datasets.csv, real or synthetic, sizes; the model; the seeds)")
    parser.add_argument("--figures", type=Path, default=None,
                        help="a folder of the repository (docs/figures) that receives the run's trade-off figures as "
                             "<name>_tradeoff_<file>.png, shown in the <name>_tradeoff section")
    ns = parser.parse_args(argv)
    return Args(ns.readme or PAGES[ns.kind], ns.tables, ns.name, ns.command, ns.wall, ns.kind, ns.config, ns.figures)


def head_commit(folder: Path) -> str:
    """HEAD's short hash, refusing a tree whose code differs from it. ``folder`` is any folder of the repository
    (the page's): the code paths are looked up from the repository's top, not from a docs/ page's folder."""
    top = git_output(folder, "rev-parse", "--show-toplevel")
    repo = Path(top.strip()) if top else folder
    changed = git_output(repo, "status", "--porcelain", "--", *CODE_PATHS)
    commit = git_commit(repo)
    if changed is None or commit is None:
        raise SystemExit(f"readme_tables: {repo} is not a git repository: the stamp needs the outputs' commit")
    if changed.strip():
        raise SystemExit(f"readme_tables: the tree differs from HEAD in {', '.join(CODE_PATHS)}:\n{changed.strip()}\n"
                         "commit first, rerun the workflow, then generate (the stamp names the outputs' commit)")
    return commit


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    commit = head_commit(args.readme.resolve().parent)
    stamp = (f"*Generated by `python -m maskbench.tools.readme_tables` from the outputs of commit `{commit}`: "
             f"`{args.command}`, {args.wall} wall clock, {datetime.date.today().isoformat()}.*")
    if args.config is not None:
        config = yaml.safe_load(args.config.read_text(encoding="utf-8"))
        stamp += "\n" + data_caption(pd.read_csv(args.tables / "datasets.csv"), config, str(args.config))
    writer = {"table1": table1_sections, "srnets": srnets_sections, "vision": vision_sections,
              "gender": gender_sections}[args.kind]
    text = writer(text, args, stamp)
    with atomic_path(args.readme) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
    return 0


def srnets_sections(text: str, args: Args, stamp: str) -> str:
    curves = pd.read_csv(args.tables / "sparsity_curves.csv")
    full = None
    if (args.tables / "table1.csv").is_file():  # the run's baseline: the full fine-tuned model
        long = pd.read_csv(args.tables / "table1.csv")
        full = long[long["row"] == "baseline"].drop_duplicates(["task", "eval_set"])
    text = replace_section(text, f"{args.name}_curves",
                           f"{stamp}\nID / OOD score of the subnetworks at each sparsity "
                           f"(`results/srnets/tables/sparsity_curves.csv`):\n\n"
                           + sparsity_curves_markdown(curves, full), str(args.readme))
    if (args.tables / "table5.md").is_file():
        text = replace_section(text, f"{args.name}_table5",
                               f"{stamp}\n`table5.md` (mean ± std over seeds, paper C's BERT-base value in "
                               f"brackets):\n\n" + (args.tables / "table5.md").read_text(encoding="utf-8"),
                               str(args.readme))
    return text


def vision_sections(text: str, args: Args, stamp: str) -> str:
    text = replace_section(text, f"{args.name}_tables",
                           f"{stamp}\n\n" + demote_headings((args.tables / "tables.md").read_text(encoding="utf-8")),
                           str(args.readme))
    shrunk = args.tables.parent.parent / "benchmarks" / "vision_structured.json"  # results/tables/vision -> results
    if shrunk.is_file():
        records = json.loads(shrunk.read_text(encoding="utf-8"))["records"]
        text = replace_section(text, f"{args.name}_shrunk",
                               f"{stamp}\nStructured FFW subnetworks shrunk to dense models "
                               f"(`results/benchmarks/vision_structured.json`):\n\n" + shrunk_models_markdown(records),
                               str(args.readme))
    return text


def gender_sections(text: str, args: Args, stamp: str) -> str:
    text = replace_section(text, f"{args.name}_tables",
                           f"{stamp}\n\n" + demote_headings((args.tables / "tables.md").read_text(encoding="utf-8")),
                           str(args.readme))
    shrunk = args.tables.parent.parent / "benchmarks" / "structured.json"  # results/tables/gender -> results
    if shrunk.is_file():
        text = replace_section(text, f"{args.name}_shrunk",
                               f"{stamp}\nFrozen masks shrunk into smaller dense encoders "
                               f"(`results/benchmarks/structured.json`):\n\n"
                               + shrunk_encoders_markdown(json.loads(shrunk.read_text(encoding="utf-8"))),
                               str(args.readme))
    return text


def table1_sections(text: str, args: Args, stamp: str) -> str:
    long = pd.read_csv(args.tables / "table1.csv")
    table_md = (args.tables / "table1.md").read_text(encoding="utf-8")
    n_seeds = " or ".join(str(n) for n in sorted(set(long["n_seeds"])))
    text = replace_section(text, f"{args.name}_table1",
                           f"{stamp}\n`{args.tables / 'table1.md'}` (mean ± sample std over {n_seeds} seeds; paper "
                           f"A's BERT-base figure on its own data in brackets where it reports one):\n\n{table_md}",
                           str(args.readme))
    text = replace_section(text, f"{args.name}_effects",
                           f"{stamp}\nEvery row minus the baseline, ± the standard error of that difference over "
                           "seeds; ≈ marks a difference within two standard errors (no effect shown):\n\n"
                           + effects_markdown(effects(long)), str(args.readme))
    if (args.tables / "tradeoff.csv").is_file():
        selection = pd.read_csv(args.tables / "tradeoff_selection.csv")
        figures = args.tables.parent / "figures" / "tradeoff"
        text = replace_section(text, f"{args.name}_tradeoff",
                               f"{stamp}\nThe curves (`{args.tables / 'tradeoff.csv'}`; figures in "
                               f"`{figures}/`):\n\n" + tradeoff_curves_markdown(
                                   pd.read_csv(args.tables / "tradeoff.csv"))
                               + f"\n\nWhat each curve does (`{args.tables / 'tradeoff_summary.md'}`):\n\n"
                               + (args.tables / "tradeoff_summary.md").read_text(encoding="utf-8")
                               + f"\nThe selection rule's picks (`{args.tables / 'tradeoff_selection.csv'}`):\n\n"
                               + selection_markdown(selection) + shown_figures(args, figures), str(args.readme))
    if (args.tables / "baseline_curve.md").is_file():
        text = replace_section(text, f"{args.name}_baseline_curve",
                               f"{stamp}\nThe baselines' dev accuracy after every epoch "
                               f"(`{args.tables / 'baseline_curve.md'}`):\n\n"
                               + (args.tables / "baseline_curve.md").read_text(encoding="utf-8"), str(args.readme))
    bench = args.tables.parent / "benchmarks" / "masks.json"  # results/tables -> results/benchmarks
    if bench.is_file():
        text = replace_section(text, f"{args.name}_benchmark",
                               f"{stamp}\n`{bench}`, everything measured side by side in one "
                               "process, medians:\n\n" + mask_benchmark_markdown(json.loads(bench.read_text())),
                               str(args.readme))
    return text


def shown_figures(args: Args, figures: Path) -> str:
    """Copy the run's trade-off figures into ``args.figures`` (a folder of the repository, e.g. docs/figures) and
    return their Markdown image lines, relative to the page; nothing without ``--figures``."""
    if args.figures is None:
        return ""
    args.figures.mkdir(parents=True, exist_ok=True)
    lines = []
    for png in sorted(figures.glob("*.png")):
        copy = args.figures / f"{args.name}_tradeoff_{png.name}"
        shutil.copyfile(png, copy)
        where = os.path.relpath(copy.resolve(), args.readme.resolve().parent)
        lines.append(f"![{png.stem}: ID accuracy against {png.stem.split('_', 1)[-1]} accuracy]({where})")
    return "\n" + "\n\n".join(lines) + "\n" if lines else ""


if __name__ == "__main__":
    run_step(main)

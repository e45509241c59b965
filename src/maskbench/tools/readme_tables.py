"""Write a run's tables into a page's generated sections, each under a stamp and a caption.

    python -m maskbench.tools.readme_tables --readme docs/paper-a.md --config config.yaml --name default \\
        --command "snakemake --cores 2" --wall "22 min 40 s" [--ran-at COMMIT ...]

`--readme` is the Markdown file that holds the sections (any file: README.md or a page of docs/); without it, the
kind's page: docs/paper-a.md (table1), docs/paper-c.md (srnets), docs/paper-d.md (vision), docs/paper-b.md (gender),
docs/matrix.md (matrix), docs/budget-study.md (budget), README.md (verdict).

Every section starts with a one-paragraph stamp (the commit(s) the DAG ran at, the command, the date, the commit
through which the plan is unchanged — the report's — and a link to the run's record in docs/provenance.md, which
holds the wall time and what changed in between) and a caption (``report.captions``: every dataset with its kind — real, synthetic, stand-in — and size,
the model, the seeds, the config and its results folder). Every path is the config's (``results:``), shown as the
config names it. Sections, between their markers:
`--kind table1` (default): `<NAME>_table1` (<results>/tables/table1.md), `<NAME>_effects` (every row minus the
baseline, ± its standard error over seeds, "≈" where within two standard errors), `<NAME>_benchmark` (the mask
benchmark, <results>/benchmarks/masks.json, when the run wrote it), `<NAME>_tradeoff` (the trade-off curves, their
summary and the selection rule's picks, when the run has `tradeoff:`) and `<NAME>_baseline_curve`; `--kind
srnets`: `<NAME>_curves` (paper C's sparsity curves as ID / OOD tables with the full model's line) and
`<NAME>_table5` (table5.md); `--kind vision`: `<NAME>_tables` (the vision report's tables.md, its headings one level
down) and `<NAME>_shrunk` (the structured subnetworks shrunk to dense models,
<results>/benchmarks/vision_structured.json); `--kind gender`: `<NAME>_tables` (the gender report's tables.md) and
`<NAME>_shrunk` (its masks shrunk to dense encoders, <results>/benchmarks/structured.json); `--kind matrix`:
`<NAME>_matrix` (the cross-paper matrix, <results>/tables/matrix.md, and its figure); `--kind budget`: `<NAME>_study`
(the budget study's table, <results>/tables/budget_study.md, and its figure, into docs/budget-study.md); `--kind
verdict`: `<NAME>_verdict` (the four papers' verdict table, <results>/tables/verdict.md, into README.md; with `--paper
X` that paper's row alone, the opening of its page).

The report's commit is the repository's HEAD; the step refuses when the code, rules, schemas or configs differ from
HEAD, and when a ``--ran-at`` commit's differ from HEAD's unless ``--code-changed`` says what changed and how the
numbers were checked (then the stamp says it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from maskbench.report.captions import (
    PROVENANCE_PAGE,
    nli_data_caption,
    provenance_record,
    set_kinds_of,
    stamp,
    task_kinds,
)
from maskbench.report.evidence import MIN_SEEDS
from maskbench.report.readme import demote_headings, replace_section, wrap_prose, write_provenance
from maskbench.runtime import atomic_path, git_commit, git_output
from maskbench.steps import run_step
from maskbench.tracks.gender.report.readme_sections import data_caption as gender_data_caption
from maskbench.tracks.gender.report.readme_sections import shrunk_encoders_markdown
from maskbench.tracks.nlu.report.readme_sections import (
    effects,
    effects_markdown,
    full_model_scores,
    mask_benchmark_markdown,
    selection_markdown,
    sparsity_curves_markdown,
    tradeoff_curves_markdown,
)
from maskbench.tracks.vision.report.readme_sections import data_caption as vision_data_caption
from maskbench.tracks.vision.report.readme_sections import shrunk_models_markdown

# what decides a run's outputs; a change here that is not committed means the outputs are not HEAD's
CODE_PATHS = ("src", "rules", "schemas", "configs", "config.yaml", "Snakefile")
KINDS = ("table1", "srnets", "vision", "gender", "matrix", "budget", "verdict")
TRACK_TABLES = {"table1": "", "srnets": "", "vision": "vision", "gender": "gender", "matrix": "",
                "budget": "", "verdict": ""}  # <results>/tables/<track>
# the page that holds each kind's sections when --readme is not given
PAGES = {"table1": Path("docs/paper-a.md"), "srnets": Path("docs/paper-c.md"), "vision": Path("docs/paper-d.md"),
         "gender": Path("docs/paper-b.md"), "matrix": Path("docs/matrix.md"), "budget": Path("docs/budget-study.md"),
         "verdict": Path("README.md")}


@dataclass
class Args:
    readme: Path
    config: Path
    name: str
    command: str
    wall: str
    kind: str = "table1"
    tables: Path | None = None
    figures: Path | None = None
    ran_at: list[str] = field(default_factory=list)
    code_changed: str = ""
    insert_before: str | None = None  # a line of the page: sections it lacks are added before it
    only: list[str] = field(default_factory=list)  # the sections to write (without the prefix); empty: all
    paper: str | None = None  # --kind verdict: that paper's row alone (a paper's page); None: the whole table
    results: Path = Path("results")  # the config's results folder, set by main
    seeds: list[int] = field(default_factory=list)  # the config's seeds, set by main


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(prog="python -m maskbench.tools.readme_tables",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--readme", type=Path, default=None,
                        help="the Markdown file holding the sections (default: the kind's page, " +
                             ", ".join(f"{k}: {v}" for k, v in PAGES.items()) + ")")
    parser.add_argument("--config", type=Path, required=True,
                        help="the run's config: its results folder, and what each section's caption says the run is "
                             "on (data from the run's tables/datasets.csv or the config: real, synthetic or stand-in, "
                             "sizes; the model; the seeds)")
    parser.add_argument("--tables", type=Path, default=None,
                        help="the run's tables (default: the config's <results>/tables, /vision or /gender by --kind)")
    parser.add_argument("--name", default="default", help="section prefix: <name>_table1, <name>_effects")
    parser.add_argument("--command", required=True, help="the command that produced the outputs")
    parser.add_argument("--wall", required=True, help="its wall time, as measured (e.g. '22 min 40 s')")
    parser.add_argument("--kind", choices=KINDS, default="table1", help="which tables: " + ", ".join(KINDS))
    parser.add_argument("--ran-at", nargs="+", default=[],
                        help="the commit(s) the DAG ran at (default: HEAD, the report's commit)")
    parser.add_argument("--code-changed", default="",
                        help="when a --ran-at commit's src, rules, schemas or configs differ from HEAD's: what changed "
                             "and how the numbers were checked (e.g. 'later commits change no job: snakemake -n plans "
                             "nothing'), said in the stamp")
    parser.add_argument("--figures", type=Path, default=None,
                        help="a folder of the repository (docs/figures) that receives the run's trade-off figures as "
                             "<name>_tradeoff_<file>.png, shown in the <name>_tradeoff section")
    parser.add_argument("--insert-before", default=None, metavar="LINE",
                        help="a line of the page (e.g. an HTML comment): each section the page lacks is added, as an "
                             "empty pair of markers, before it (without: a missing section is an error)")
    parser.add_argument("--only", nargs="+", default=[], metavar="SECTION",
                        help="write only these of the kind's sections, named without the prefix (table1 effects "
                             "tradeoff ...); the others are left as they are")
    parser.add_argument("--paper", choices=("A", "B", "C", "D"), default=None,
                        help="--kind verdict: write that paper's row alone (its page's opening); without: the table")
    ns = parser.parse_args(argv)
    if ns.paper and ns.kind != "verdict":
        parser.error(f"--paper {ns.paper}: only --kind verdict writes one paper's row (--kind is {ns.kind})")
    return Args(ns.readme or PAGES[ns.kind], ns.config, ns.name, ns.command, ns.wall, ns.kind, ns.tables, ns.figures,
                ns.ran_at, ns.code_changed, ns.insert_before, ns.only, ns.paper)


def repository_top(folder: Path) -> Path:
    """The repository's top folder from any folder in it (a page's, e.g. docs/): the code paths are looked up from
    there, not from the page's folder."""
    top = git_output(folder, "rev-parse", "--show-toplevel")
    return Path(top.strip()) if top else folder


def head_commit(repo: Path) -> str:
    """HEAD's short hash, refusing a tree whose code differs from it."""
    changed = git_output(repo, "status", "--porcelain", "--", *CODE_PATHS)
    commit = git_commit(repo)
    if changed is None or commit is None:
        raise SystemExit(f"readme_tables: {repo} is not a git repository: the stamp needs the outputs' commit")
    if changed.strip():
        raise SystemExit(f"readme_tables: the tree differs from HEAD in {', '.join(CODE_PATHS)}:\n{changed.strip()}\n"
                         "commit first, rerun the workflow, then generate (the stamp names the outputs' commit)")
    return commit


def run_commits(repo: Path, report: str, ran_at: list[str], code_changed: str) -> list[str]:
    """The short hashes of the commits the DAG ran at (HEAD without ``--ran-at``); refuses one whose code differs
    from HEAD's unless ``code_changed`` says what changed and how the numbers were checked."""
    commits = []
    for ref in ran_at or [report]:
        short = git_output(repo, "rev-parse", "--short", f"{ref}^{{commit}}")
        if short is None:
            raise SystemExit(f"readme_tables: --ran-at {ref}: not a commit of {repo}")
        diff = git_output(repo, "diff", "--name-only", short.strip(), "HEAD", "--", *CODE_PATHS) or ""
        if diff.strip() and not code_changed:
            files = diff.split()
            raise SystemExit(f"readme_tables: the run's commit {short.strip()} and HEAD differ in {len(files)} file(s) of "
                             f"{', '.join(CODE_PATHS)} (e.g. {', '.join(files[:3])}): rerun at HEAD, or say with "
                             "--code-changed what changed and how the numbers were checked")
        commits.append(short.strip())
    return commits


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    repo = repository_top(args.readme.resolve().parent)
    commit = head_commit(repo)
    ran_at = run_commits(repo, commit, args.ran_at, args.code_changed)
    config = load_config(args.config, repo)
    args.results = Path(str(config.get("results", "results")))
    if args.tables is None:
        args.tables = args.results / "tables" / TRACK_TABLES[args.kind]
    today = datetime.date.today().isoformat()
    write_provenance(repo, args.name, provenance_record(commit, ran_at, args.command, args.wall, today,
                                                        args.code_changed))
    link = os.path.relpath(repo / PROVENANCE_PAGE, args.readme.resolve().parent)
    header = stamp(commit, ran_at, args.command, today, args.name, link)
    if args.kind != "verdict":  # the verdict's sections say what they are on in their own paragraph
        header += "\n" + wrap_prose(caption_of(args, config))
    args.seeds = [int(seed) for seed in config.get("seeds", [])]
    writer = {"table1": table1_sections, "srnets": srnets_sections, "vision": vision_sections,
              "gender": gender_sections, "matrix": matrix_sections, "budget": budget_sections,
              "verdict": verdict_sections}[args.kind]
    text = writer(text, args, header)
    with atomic_path(args.readme) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
    return 0


def load_config(path: Path, repo: Path) -> dict:
    """The run's config as the workflow reads it: validated against the repository's schemas, which fill in their
    defaults (what a caption names must be what the run used, e.g. vision.mnist's source when the file omits it)."""
    # the workflow's own validation (rules/setup.smk)
    from maskbench.workflow.config_schema import validate_config

    return validate_config(yaml.safe_load(path.read_text(encoding="utf-8")), repo / "schemas")


def caption_of(args: Args, config: dict) -> str:
    """What the run is on, in one line: the nlu track's from its tables/datasets.csv, the others' from the config."""
    if args.kind == "vision":
        return vision_data_caption(config, str(args.config))
    if args.kind == "budget":
        return (f"Config `{args.config}` (outputs below `{args.results}/`), seeds {config['seeds']}: "
                f"{config.get('label', '')}; each training set's size is the table's `pairs` column.\n")
    if args.kind == "matrix":
        return (f"Config `{args.config}` (outputs below `{args.results}/`), seeds {config['seeds']}; each "
                "benchmark's data (real / synthetic / stand-in, sizes) and model are listed under the grid.\n")
    if args.kind == "gender":
        corpus = args.results / "gender" / "data" / "corpus.parquet"
        rows = len(pd.read_parquet(corpus, columns=[])) if corpus.is_file() else None
        return gender_data_caption(config, str(args.config), rows)
    return nli_data_caption(pd.read_csv(args.tables / "datasets.csv"), config, str(args.config))


def kinds_of_sets(args: Args) -> dict[str, str]:
    """{dataset: kind} from the run's tables/datasets.csv (empty without it)."""
    path = args.tables / "datasets.csv"
    return set_kinds_of(pd.read_csv(path)) if path.is_file() else {}


def kinds_of_tasks(args: Args, sets: pd.Series) -> dict[str, set[str]]:
    """{task: the kinds of the datasets among ``sets`` (the evaluation sets a table shows)} from the run's
    tables/datasets.csv (empty without it): a bias model's synthetic training set does not make real MNLI mixed."""
    path = args.tables / "datasets.csv"
    if not path.is_file():
        return {}
    datasets = pd.read_csv(path)
    return task_kinds(datasets[datasets["dataset"].isin(set(sets))])


def put(args: Args, text: str, name: str, body: str) -> str:
    """``text`` with section ``name`` set to ``body`` (added before ``--insert-before`` when missing), unless
    ``--only`` leaves it out."""
    if args.only and name.removeprefix(f"{args.name}_") not in args.only:
        return text
    return replace_section(text, name, wrap_prose(body), str(args.readme), args.insert_before)


def srnets_sections(text: str, args: Args, stamp: str) -> str:
    curves = pd.read_csv(args.tables / "sparsity_curves.csv")
    # the run's baseline, the full fine-tuned model: Table 1's row, its dev score from the trade-off curves
    full = full_model_scores(*(pd.read_csv(args.tables / f) if (args.tables / f).is_file() else None
                               for f in ("table1.csv", "tradeoff.csv")))
    text = put(args, text, f"{args.name}_curves",
               f"{stamp}\nID / OOD score of the subnetworks at each sparsity "
               f"(`{args.tables / 'sparsity_curves.csv'}`):\n\n"
               + sparsity_curves_markdown(curves, full, kinds_of_tasks(args, curves["eval_set"])))
    if (args.tables / "table5.md").is_file():
        text = put(args, text, f"{args.name}_table5",
                   f"{stamp}\n`{args.tables / 'table5.md'}` (mean ± std over seeds, paper C's "
                   "BERT-base value on its own data in "
                   f"brackets):\n\n" + (args.tables / "table5.md").read_text(encoding="utf-8"))
    return text


def vision_sections(text: str, args: Args, stamp: str) -> str:
    text = put(args, text, f"{args.name}_tables",
               f"{stamp}\n\n" + demote_headings((args.tables / "tables.md").read_text(encoding="utf-8")))
    shrunk = args.results / "benchmarks" / "vision_structured.json"
    if shrunk.is_file():
        records = json.loads(shrunk.read_text(encoding="utf-8"))["records"]
        text = put(args, text, f"{args.name}_shrunk",
                   f"{stamp}\nStructured FFW subnetworks shrunk to dense models "
                   f"(`{shrunk}`):\n\n" + shrunk_models_markdown(records))
    return text


def gender_sections(text: str, args: Args, stamp: str) -> str:
    text = put(args, text, f"{args.name}_tables",
               f"{stamp}\n\n" + demote_headings((args.tables / "tables.md").read_text(encoding="utf-8")))
    shrunk = args.results / "benchmarks" / "structured.json"
    if shrunk.is_file():
        text = put(args, text, f"{args.name}_shrunk",
                   f"{stamp}\nFrozen masks shrunk into smaller dense encoders "
                   f"(`{shrunk}`):\n\n"
                   + shrunk_encoders_markdown(json.loads(shrunk.read_text(encoding="utf-8"))))
    return text


def committed_copy(args: Args, source: Path, name: str) -> str:
    """Copy a run's file into ``--figures`` (a folder of the repository) as ``name``; its link from the page."""
    args.figures.mkdir(parents=True, exist_ok=True)
    copy = args.figures / name
    shutil.copyfile(source, copy)
    return os.path.relpath(copy.resolve(), args.readme.resolve().parent)


def matrix_sections(text: str, args: Args, stamp: str) -> str:
    figure = args.results / "figures" / "matrix.png"
    shown = ""
    if args.figures is not None:
        where = committed_copy(args, figure, f"{args.name}_matrix.png")
        shown = f"\n![the matrix: each method's pick per benchmark, ID against OOD or bias]({where})\n"
    return put(args, text, f"{args.name}_matrix",
               f"{stamp}\n`{args.tables / 'matrix.md'}` (long form: `{args.tables / 'matrix.csv'}`; "
               f"figure: `{figure}`):\n\n" + (args.tables / "matrix.md").read_text(encoding="utf-8")
               + shown)


def verdict_sections(text: str, args: Args, stamp: str) -> str:
    """The four papers' verdict table (the README's headline) or, with ``--paper``, that paper's row alone (the
    opening of its page): <results>/tables/verdict.md as the run wrote it, or its header and that row."""
    source = args.tables / "verdict.md"
    written = source.read_text(encoding="utf-8")
    here = args.readme.resolve().parent
    docs = repository_top(here) / "docs"
    on = (f"config `{args.config}`, seeds {', '.join(map(str, args.seeds))}; each claim's data and model are its "
          f"benchmark's in [the matrix]({os.path.relpath(docs / 'matrix.md', here)}); the words: "
          f"[the glossary]({os.path.relpath(docs / 'glossary.md', here)})")
    if args.paper is None:
        return put(args, text, f"{args.name}_verdict", f"{stamp}\n`{source}` ({on}):\n\n" + written)
    lines = written.splitlines()
    head = [i for i, line in enumerate(lines) if line.startswith("| paper |")]
    row = [line for line in lines if line.startswith(f"| {args.paper} |")]
    if not head or len(row) != 1:
        raise SystemExit(f"readme_tables: {source}: no table row for paper {args.paper!r} under a '| paper |' header")
    return put(args, text, f"{args.name}_verdict",
               f"{stamp}\nThis paper's row of the four papers' verdict table (`{source}`, the README's headline; {on}):"
               "\n\n" + "\n".join([*lines[head[0]:head[0] + 2], row[0]]) + "\n")


def budget_sections(text: str, args: Args, stamp: str) -> str:
    figure = args.results / "figures" / "budget_study.png"
    shown = ""
    if args.figures is not None:
        where = committed_copy(args, figure, f"{args.name}_budget_study.png")
        # the CSV is committed beside its figure
        csv_where = committed_copy(args, args.tables / "budget_study.csv", f"{args.name}_budget_study.csv")
        shown = (f"\n![the budget study: the baseline's dev curve and each mask row's density and dev]({where})\n\n"
                 f"The CSV, committed: [{csv_where}]({csv_where}).\n")
    return put(args, text, f"{args.name}_study",
               f"{stamp}\n`{args.tables / 'budget_study.md'}` (long form: `{args.tables / 'budget_study.csv'}`; "
               f"figure: `{figure}`):\n\n"
               + demote_headings((args.tables / "budget_study.md").read_text(encoding="utf-8")) + shown)


def table1_sections(text: str, args: Args, stamp: str) -> str:
    long = pd.read_csv(args.tables / "table1.csv")
    table_md = (args.tables / "table1.md").read_text(encoding="utf-8")
    n_seeds = " or ".join(str(n) for n in sorted(set(long["n_seeds"])))
    text = put(args, text, f"{args.name}_table1",
               f"{stamp}\n`{args.tables / 'table1.md'}` (mean ± sample std over {n_seeds} seeds; paper "
               f"A's BERT-base figure on its own, real data in brackets where it reports one):\n\n"
               f"{table_md}")
    text = put(args, text, f"{args.name}_effects",
               f"{stamp}\nEvery row minus the baseline, ± the standard error of that difference over "
               "seeds; ≈ marks a difference within two standard errors (no effect shown); one beyond them "
               f"over fewer than {MIN_SEEDS} seeds only moves (no claim):\n\n"
               + effects_markdown(effects(long), set_kinds=kinds_of_sets(args)))
    if (args.tables / "tradeoff.csv").is_file():
        selection = pd.read_csv(args.tables / "tradeoff_selection.csv")
        curves = pd.read_csv(args.tables / "tradeoff.csv")
        figures = args.results / "figures" / "tradeoff"
        text = put(args, text, f"{args.name}_tradeoff",
                   f"{stamp}\nThe curves (`{args.tables / 'tradeoff.csv'}`; figures in "
                   f"`{figures}/`):\n\n"
                   + tradeoff_curves_markdown(curves, kinds_of_tasks(args, curves["eval_set"]))
                   + f"\n\nWhat each curve does (`{args.tables / 'tradeoff_summary.md'}`):\n\n"
                   + (args.tables / "tradeoff_summary.md").read_text(encoding="utf-8")
                   + f"\nThe selection rule's picks (`{args.tables / 'tradeoff_selection.csv'}`):\n\n"
                   + selection_markdown(selection) + shown_figures(args, figures))
    if (args.tables / "baseline_curve.md").is_file():
        text = put(args, text, f"{args.name}_baseline_curve",
                   f"{stamp}\nThe baselines' dev accuracy after every epoch "
                   f"(`{args.tables / 'baseline_curve.md'}`):\n\n"
                   + (args.tables / "baseline_curve.md").read_text(encoding="utf-8"))
    bench = args.results / "benchmarks" / "masks.json"
    if bench.is_file():
        text = put(args, text, f"{args.name}_benchmark",
                   f"{stamp}\n`{bench}`, everything measured side by side in one "
                   "process, medians:\n\n" + mask_benchmark_markdown(json.loads(bench.read_text())))
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

"""Every page's generated sections from one run of the offline suite (config.yaml): paper A's Table 1, effects,
trade-off curves and baseline curve (docs/paper-a.md), paper B's tables (docs/paper-b.md), paper C's curves
(docs/paper-c.md), paper D's tables (docs/paper-d.md), the matrix (docs/matrix.md), the README's headline (the four
papers' verdict table) and Table 1, and each paper's verdict row at the top of its page.

    snakemake --cores 2                                    # the suite, into results/default/
    python -m maskbench.tools.suite_pages --wall "2 h 41 min (two invocations: ...)" [--ran-at C1 C2]
                                          [--code-changed "..."]

Each section is written by ``python -m maskbench.tools.readme_tables``, named ``suite_<section>``, under the stamp
that tool writes (the commit, the command, the wall time, what the run is on). A page that lacks a section gets it,
as a new pair of markers, before its line ``<!-- suite sections end -->``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

CONFIG = "config.yaml"
COMMAND = "snakemake --cores 2"
ANCHOR = "<!-- suite sections end -->"
# (kind, page, figures folder or None, only these sections or None: all the kind writes, the verdict row's paper
# or None: the whole verdict table)
PAGES = (("table1", "docs/paper-a.md", "docs/figures", None, None),
         ("gender", "docs/paper-b.md", None, None, None),
         ("srnets", "docs/paper-c.md", None, None, None),
         ("vision", "docs/paper-d.md", None, None, None),
         ("matrix", "docs/matrix.md", "docs/figures", None, None),
         ("table1", "README.md", None, ["table1"], None),
         ("verdict", "README.md", None, None, None),
         *(("verdict", f"docs/paper-{paper.lower()}.md", None, None, paper) for paper in "ABCD"))


def arguments(kind: str, page: str, figures: str | None, only: list[str] | None, paper: str | None,
              args: argparse.Namespace, repo: Path) -> list[str]:
    argv = ["--readme", str(repo / page), "--config", CONFIG, "--name", "suite", "--kind", kind,
            "--command", COMMAND, "--wall", args.wall, "--insert-before", ANCHOR]
    argv += ["--figures", str(repo / figures)] if figures else []
    argv += ["--only", *only] if only else []
    argv += ["--paper", paper] if paper else []
    argv += ["--ran-at", *args.ran_at] if args.ran_at else []
    argv += ["--code-changed", args.code_changed] if args.code_changed else []
    return argv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maskbench.tools.suite_pages", description=__doc__.splitlines()[0])
    parser.add_argument("--wall", required=True, help="the suite's wall time, as measured (and how: invocations)")
    parser.add_argument("--ran-at", nargs="+", default=[], help="the commit(s) the suite ran at (default: HEAD)")
    parser.add_argument("--code-changed", default="", help="readme_tables' --code-changed, for every section")
    args = parser.parse_args(argv)
    repo = Path(".")  # run from the checkout's top: the stamps name results/default/... as they are there
    for kind, page, figures, only, paper in PAGES:
        text = (repo / page).read_text(encoding="utf-8")
        if ANCHOR not in text.split("\n"):
            raise SystemExit(f"suite_pages: {page} has no line {ANCHOR!r} to add the suite's sections before")
        # a tool never imports another (tests/test_architecture.py): readme_tables runs as its own command
        done = subprocess.run([sys.executable, "-m", "maskbench.tools.readme_tables",
                               *arguments(kind, page, figures, only, paper, args, repo)])
        if done.returncode != 0:
            raise SystemExit(f"suite_pages: readme_tables failed on {page} ({kind}), exit {done.returncode}")
        print(f"suite_pages: {page}: {kind} sections written", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Entry point: where a finished DAG run's time went, per rule and along its critical path.

    python -m maskbench.tools.overhead_report --out results/benchmarks/overhead.json [--log LOG] [--workdir DIR]

Run it after `snakemake` in the same working directory: LOG defaults to the newest snakemake log of a run there
(.snakemake/log/). maskbench/workflow/overhead.py says what is measured and how.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.cli import parse_dataclass, setup_logging
from maskbench.runtime import atomic_path, git_commit
from maskbench.steps import run_step
from maskbench.workflow.overhead import parse_snakemake_log, summarize


@dataclass
class OverheadArgs:
    out: Path = field(metadata={"help": "JSON to write (atomically)"})
    log: Path | None = field(default=None, metadata={"help": "snakemake log of the run (default: the newest)"})
    workdir: Path = field(default=Path("."), metadata={"help": "the run's working directory"})
    label: str = field(default="", metadata={"help": "what was run, e.g. 'snakemake --cores 2' (recorded)"})


def newest_run_log(workdir: Path) -> Path:
    """The newest snakemake log under workdir that records jobs (dry runs and report runs record none)."""
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"), reverse=True)
    for log in logs:
        if parse_snakemake_log(log.read_text(errors="replace")):
            return log
    raise FileNotFoundError(f"no snakemake log of a run under {workdir / '.snakemake' / 'log'}: run snakemake first")


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    args = parse_dataclass(OverheadArgs, argv, "python -m maskbench.tools.overhead_report", __doc__.splitlines()[0])
    log = args.log or newest_run_log(args.workdir)
    record = {"label": args.label, "commit": git_commit(args.workdir), **summarize(log, args.workdir)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.out) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    run_step(main)

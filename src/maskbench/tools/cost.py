"""Entry point: the cost sheet of the jobs snakemake would run, before submitting them.

    python -m maskbench.tools.cost --configfile configs/paper.yaml [TARGET ...] [--profile profiles/slurm]
                                   [--fresh] [--json OUT.json] [--write-docs docs/cost.md]

Plans the config and targets with `snakemake -n --printshellcmds` (maskbench.workflow.cost.plan says why the dry run's text),
prices every job from its own command line (maskbench.workflow.cost.sheet; every figure and its source in
maskbench.workflow.cost.assumptions, per-step rates from results/benchmarks/gpu_check.json when it holds CUDA numbers) and
prints, per rule family and in total: GPU-hours, peak GPU and host memory, disk written, the tables and figures the
family serves (each report rule's docstring, `snakemake --list-rules`), the requests (runtime, memory) that do not
cover their estimate, and the files and folders the planned jobs read from you that are not there yet
(maskbench.workflow.user_data; planning does not need them). `--profile` plans through a profile (profiles/slurm: its set-resources give the evaluations their GPU); `--fresh` plans in an empty folder (the
whole run, as from nothing; a user-supplied data file is an empty placeholder there), else the current folder's
finished jobs are left out. `--write-docs PAGE` puts the sheet into PAGE's `cost_<name>` generated section
(`--docs-name`), stamped with HEAD's commit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from maskbench.config_files import read_configs
from maskbench.report.captions import PROVENANCE_PAGE, stamp
from maskbench.report.readme import wrap_prose, write_provenance
from maskbench.workflow import forced_jobs, user_data
from maskbench.workflow.cost import assumptions, plan, sheet

REPO = Path(__file__).resolve().parents[3]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m maskbench.tools.cost", description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="rules or files to plan (default: the config's default target)")
    parser.add_argument("--configfile", nargs="+", type=Path, required=True, help="config file(s), as for snakemake")
    parser.add_argument("--profile", type=Path, help="plan through this snakemake profile (e.g. profiles/slurm)")
    parser.add_argument("--fresh", action="store_true", help="plan the whole run in an empty folder")
    parser.add_argument("--snakefile", type=Path, default=REPO / "Snakefile")
    parser.add_argument("--gpu-check", type=Path, default=None,
                        help="measured rates (default: results/benchmarks/gpu_check.json when it exists)")
    parser.add_argument("--json", type=Path, help="also write the sheet as JSON here ('-': stdout, no Markdown)")
    parser.add_argument("--write-docs", type=Path, help="write the sheet into this page's generated section")
    parser.add_argument("--docs-name", default="paper", help="the section: <!-- generated:cost_<name> -->")
    return parser.parse_args(argv)


def price_plan(stdout: str, config: dict, gpu_check: Path | None = None, reports: dict[str, str] | None = None):
    jobs = plan.parse_dry_run(stdout)
    rates = assumptions.per_step_figures(gpu_check)
    search = assumptions.search_step_figures(gpu_check, rates)
    pricer = sheet.Pricer(config, rates, search, assumptions.step_curves(gpu_check, rates, search))
    costs = [pricer.price(job) for job in jobs]
    families, total = sheet.summarise(jobs, costs, forced_jobs.local_rules(REPO / "rules"), reports)
    return families, total, pricer


def missing_inputs(stdout: str, config: dict, workdir: Path) -> list[str]:
    """The files and folders the planned jobs read from the user that are not in `workdir` (or the project) in
    their layouts: one line each, naming the config key, the path, what is expected and the command that makes it."""
    jobs = [(job.rule, job.wildcards) for job in plan.parse_dry_run(stdout)]
    return user_data.problems_for_jobs(user_data.user_inputs(config), jobs, workdir, REPO)


def missing_markdown(lines: list[str]) -> str:
    if not lines:
        return ""
    return ("\nNot there yet — the plan is priced without them; a run whose jobs read them is refused before it "
            f"starts ({len(lines)}; docs/data.md):\n" + "".join(f"- {line}\n" for line in lines))


def write_section(page: Path, name: str, body: str) -> None:
    text = page.read_text()
    section = f"<!-- generated:{name} -->\n{body}<!-- /generated:{name} -->"
    pattern = re.compile(rf"<!-- generated:{name} -->\n.*?<!-- /generated:{name} -->", re.S)
    if not pattern.search(text):
        raise SystemExit(f"cost: {page}: no section <!-- generated:{name} --> to write")
    page.write_text(pattern.sub(lambda _: section, text))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for path in args.configfile:
        if not path.exists():
            raise SystemExit(f"cost: --configfile: file {path} does not exist")
    config = read_configs(list(args.configfile))
    extra = ["--profile", str(args.profile.resolve())] if args.profile else []
    configfiles = [p.resolve() for p in args.configfile]
    try:
        if args.fresh:
            with tempfile.TemporaryDirectory(prefix="maskbench-cost-") as scratch:
                for placeholder in plan.user_files(config, Path.cwd()):
                    (Path(scratch) / placeholder).parent.mkdir(parents=True, exist_ok=True)
                    (Path(scratch) / placeholder).touch()
                stdout = plan.dry_run(args.snakefile.resolve(), Path(scratch), configfiles, args.targets, extra)
        else:
            stdout = plan.dry_run(args.snakefile.resolve(), Path.cwd(), configfiles, args.targets, extra)
        # what each report rule makes, from its docstring (the "serves" column)
        reports = plan.rule_docstrings(args.snakefile.resolve(), Path.cwd(), configfiles, extra)
        families, total, pricer = price_plan(stdout, config, args.gpu_check, reports)
        missing = missing_inputs(stdout, config, Path.cwd())
    except (RuntimeError, ValueError) as err:
        raise SystemExit(f"cost: {err}") from None
    precision = pricer.default_precision
    text = sheet.markdown(families, total, pricer.rates, precision, pricer.search_rates, pricer.curves)
    if args.json:
        doc = {"configfiles": [str(p) for p in args.configfile], "targets": args.targets, "fresh": args.fresh,
               **sheet.as_json(families, total, pricer.rates, precision), "missing_user_inputs": missing}
        if str(args.json) == "-":
            print(json.dumps(doc, indent=1))
            return 0
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(text + missing_markdown(missing))
    if args.write_docs:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=REPO).stdout.strip()
        command = " ".join(["python -m maskbench.tools.cost", "--configfile", *map(str, args.configfile),
                            *(["--profile", str(args.profile)] if args.profile else []),
                            *(["--fresh"] if args.fresh else []), *args.targets])
        name, today = f"cost_{args.docs_name}", datetime.date.today().isoformat()
        link = os.path.relpath(REPO / PROVENANCE_PAGE, args.write_docs.resolve().parent)
        write_provenance(REPO, name, f"Priced from the plan of commit `{commit}`, {today}: `{command}`.")
        body = wrap_prose(f"{stamp(commit, [commit], command, today, name, link)}\n\n{text}\n"
                          f"{sheet.assumptions_markdown()}")
        write_section(args.write_docs, name, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Which jobs of a finished run to force again so that one job of every rule kind reruns — through a cluster
profile, say — while as few other jobs as can be run with them.

Forcing a job's outputs (`snakemake --force <outputs>`) reruns it and every job between two forced ones (a
descendant of one that another depends on: its inputs change). `choose_jobs` picks, per rule, the job that adds the
fewest waves (chains of jobs that wait for another's outputs) and jobs. Used by tests/test_slurm.py (the smoke DAG)
and `maskbench.tools.miniature --slurm-one-per-rule` (the paper DAG in miniature).
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

Plan = dict[str, list[tuple[list[str], str, list[str]]]]


def local_rules(rules_dir: Path) -> set[str]:
    """The rules snakemake runs itself, read from the rule files: those declaring `localrule: True` (tables,
    figures, the matrix records, downloads; a dry run does not always mark them), and `all`, which runs no command.
    Every other job goes through the executor."""
    found = {"all"}
    for path in Path(rules_dir).rglob("*.smk"):
        text = path.read_text()
        heads = list(re.finditer(r"^\s*rule (\w+):$", text, re.M))
        for head, after in zip(heads, heads[1:] + [None], strict=False):
            if re.search(r"^\s+localrule: True$", text[head.end():after.start() if after else len(text)], re.M):
                found.add(head.group(1))
    return found


def planned_outputs(stdout: str) -> Plan:
    """The jobs of a dry run, per rule: (outputs, log, inputs) of each job, in the order printed."""
    jobs = collections.defaultdict(list)
    heads = list(re.finditer(r"^\s*(?:local)?rule (\w+):$", stdout, re.M))
    for head, after in zip(heads, [*heads[1:], None], strict=True):
        block = stdout[head.end():after.start() if after else len(stdout)]
        out = re.search(r"^\s+output: (.*)$", block, re.M)
        if out:
            log = re.search(r"^\s+log: (.*)$", block, re.M)
            inputs = re.search(r"^\s+input: (.*)$", block, re.M)
            jobs[head.group(1)].append((out.group(1).split(", "), log.group(1) if log else "",
                                        inputs.group(1).split(", ") if inputs else []))
    return jobs


def lineage(plan: Plan) -> dict[tuple[str, int], set[tuple[str, int]]]:
    """Job (rule, index) -> every job it depends on, directly or not (an input of it is an output of that job)."""
    producer = {path: (rule, i) for rule, jobs in plan.items() for i, (outs, _, _) in enumerate(jobs) for path in outs}
    parents = {(rule, i): {producer[p] for p in ins if p in producer}
               for rule, jobs in plan.items() for i, (_, _, ins) in enumerate(jobs)}
    ancestors: dict[tuple[str, int], set[tuple[str, int]]] = {}

    def of(job):
        if job not in ancestors:
            ancestors[job] = set()
            for parent in parents[job]:
                ancestors[job] |= {parent, *of(parent)}
        return ancestors[job]

    for job in parents:
        of(job)
    return ancestors


def forced_closure(chosen_ids: list, ancestors: dict) -> tuple[set, int]:
    """What forcing `chosen_ids` runs (them, and every job between two of them: a descendant of one that another
    depends on) and in how many waves (the longest chain of those jobs)."""
    chosen = set(chosen_ids)
    run_set = chosen | {job for job, above in ancestors.items()
                        if above & chosen and any(job in ancestors[c] for c in chosen)}
    depth: dict = {}

    def wave(job):
        if job not in depth:
            depth[job] = 1 + max((wave(a) for a in ancestors[job] if a in run_set), default=0)
        return depth[job]

    return run_set, max((wave(j) for j in run_set), default=0)


def _allowed(job: tuple[str, int], chosen_ids: list, ancestors: dict, own: Iterable[str],
             strict: bool = True) -> bool:
    """Not chosen yet, no ancestor of a job of the `own` rules — nor, when `strict`, a descendant of one (so that
    the own rules' group jobs neither wait for the others nor hold them back) — and for those rules themselves free
    of every chosen job."""
    own = set(own)
    if job in chosen_ids or any(job in ancestors[p] or (strict and p in ancestors[job])
                                for p in chosen_ids if p[0] in own):
        return False
    return job[0] not in own or not any(c in ancestors[job] or job in ancestors[c] for c in chosen_ids)


def _added(job: tuple[str, int], chosen_ids: list, ancestors: dict) -> tuple[int, int]:
    """The waves and jobs that forcing `job` beside `chosen_ids` runs."""
    run_set, waves = forced_closure([*chosen_ids, job], ancestors)
    return waves, len(run_set)


def choose_jobs(plan: Plan, skip: Iterable[str] = (), own: Iterable[str] = (),
                count: Mapping[str, int] | None = None) -> dict[str, list[tuple[list[str], str]]]:
    """Per rule not in `skip`, the job(s) to rerun (``count[rule]`` of them, else one), chosen so that forcing them
    runs as few waves and as few jobs as can be. The `own` rules choose first, jobs that depend on none of each
    other; then the other rules, fewest jobs first (they have the least choice), each the job that adds the least
    (first by outputs among equals) and is neither an ancestor nor, where the rule has another, a descendant of those
    first ones."""
    ancestors = lineage(plan)
    skip, own, count = set(skip), [r for r in own if r in plan], dict(count or {})
    chosen_ids: list[tuple[str, int]] = []
    rest = sorted((r for r in plan if r not in skip and r not in own), key=lambda r: (len(plan[r]), r))
    for rule in [*own, *rest]:
        order = sorted(range(len(plan[rule])), key=lambda i: plan[rule][i][0])
        for _ in range(count.get(rule, 1)):
            candidates = ([(rule, i) for i in order if _allowed((rule, i), chosen_ids, ancestors, own)]
                          or [(rule, i) for i in order if _allowed((rule, i), chosen_ids, ancestors, own, False)])
            if not candidates:
                raise ValueError(f"no job of rule {rule} can be chosen")
            chosen_ids.append(min(candidates, key=lambda job: _added(job, chosen_ids, ancestors)))
    chosen = collections.defaultdict(list)
    for rule, i in chosen_ids:
        outs, log, _ = plan[rule][i]
        chosen[rule].append((outs, log))
    return dict(chosen)


def forced_counts(plan: Plan, chosen: dict) -> collections.Counter:
    """Per rule, how many jobs forcing `chosen` runs (forced_closure): what the dry run with --force must plan."""
    ids = [(rule, next(i for i, job in enumerate(plan[rule]) if job[0] == outs))
           for rule, picked in chosen.items() for outs, _ in picked]
    run_set, _ = forced_closure(ids, lineage(plan))
    return collections.Counter(rule for rule, _ in run_set)

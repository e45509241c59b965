"""Where a DAG run's time goes: per rule, process start-up and imports against work, and the critical path.

Reads a finished run's snakemake log (.snakemake/log/*.snakemake.log: each job's rule, inputs, outputs, log file and
its start and finish times, to the second) and each job's own timing line in its log file (maskbench/workflow/step_timing.py:
start-up + imports and `main()`, to 10 ms). A job's wall time is its process's start-up + work when its log has the
line, otherwise the snakemake log's finish minus start. The critical path is the longest chain of jobs by those wall
times along the DAG's edges (an output of one job is an input of the next).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from maskbench.workflow.step_timing import read_timing

_STAMP = re.compile(r"^\[(\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4})\]$")
_RULE = re.compile(r"^(?:local)?rule (\w+):$")
_FIELD = re.compile(r"^\s+(input|output|log|jobid): ?(.*)$")
_FINISHED = re.compile(r"^Finished jobid: (\d+)|^Finished job (\d+)\.")
# what the project promises for a job's fixed cost: a report or preparation job's wall time, an evaluation's
# start-up + imports; the steps of each kind
FIXED_COST_TARGETS_S = {"report_or_prepare_wall": 2.0, "evaluation_startup": 3.0}
REPORT_OR_PREPARE_STEPS = ("prepare", "negation_subset", "dataset_summary", "vision_prepare", "table1",
                           "figure_id_ood", "bias_models_table", "mask_report", "srnet_report", "vision_report")
EVALUATION_STEPS = ("evaluate", "evaluate_masks", "evaluate_srnets", "vision_evaluate")


@dataclass
class Job:
    jobid: int
    rule: str
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    log: str | None = None
    started: datetime | None = None
    finished: datetime | None = None
    timing: dict | None = None

    @property
    def wall_s(self) -> float | None:
        if self.timing is not None:
            return self.timing["startup_s"] + self.timing["work_s"]
        if self.started is not None and self.finished is not None:
            return (self.finished - self.started).total_seconds()
        return None


def _paths(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


def parse_snakemake_log(text: str) -> dict[int, Job]:
    """The jobs a snakemake log started, by jobid (rules with no shell command, such as `all`, included)."""
    jobs: dict[int, Job] = {}
    stamp: datetime | None = None
    pending: dict | None = None
    for line in text.splitlines():
        if m := _STAMP.match(line):
            stamp = datetime.strptime(re.sub(" +", " ", m.group(1)), "%a %b %d %H:%M:%S %Y")
        elif m := _RULE.match(line):
            pending = {"rule": m.group(1), "started": stamp}
        elif pending is not None and (m := _FIELD.match(line)):
            key, value = m.groups()
            if key == "jobid":
                job = Job(int(value), pending["rule"], pending.get("input", []), pending.get("output", []),
                          (pending.get("log") or [None])[0], pending["started"])
                jobs[job.jobid] = job
                pending = None
            else:
                pending[key] = _paths(value)
        elif m := _FINISHED.match(line):
            jobid = int(m.group(1) or m.group(2))
            if jobid in jobs:
                jobs[jobid].finished = stamp
    return jobs


def attach_timings(jobs: dict[int, Job], workdir: Path) -> None:
    """Each job's timing line, read from its log file (relative to the run's working directory)."""
    for job in jobs.values():
        if job.log is None:
            continue
        path = workdir / job.log
        if path.is_file():
            job.timing = read_timing(path.read_text(errors="replace"))


def critical_path(jobs: dict[int, Job]) -> tuple[float, list[Job]]:
    """The longest chain of jobs by wall time, following output -> input edges; (seconds, jobs in order)."""
    producer = {out: job.jobid for job in jobs.values() for out in job.outputs}
    parents = {j: {producer[i] for i in job.inputs if i in producer and producer[i] != j} for j, job in jobs.items()}
    best: dict[int, tuple[float, int, int | None]] = {}  # job -> (seconds, jobs, parent) of its longest chain

    def visit(j: int) -> tuple[float, int]:
        if j not in best:
            own = jobs[j].wall_s or 0.0
            tail = max(((*visit(p), p) for p in parents[j]), default=(0.0, 0, None))
            best[j] = (own + tail[0], tail[1] + 1, tail[2])
        return best[j][:2]

    for j in sorted(jobs):
        visit(j)
    if not best:
        return 0.0, []
    end = max(best, key=lambda j: best[j][:2])  # on a tie, the longer chain (down to `all`)
    chain, j = [], end
    while j is not None:
        chain.append(jobs[j])
        j = best[j][2]
    return best[end][0], chain[::-1]


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def rule_table(jobs: dict[int, Job]) -> dict[str, dict]:
    """Per rule: jobs, median wall, start-up + imports and work (s), and the jobs run by the warm runner."""
    by_rule: dict[str, list[Job]] = {}
    for job in jobs.values():
        by_rule.setdefault(job.rule, []).append(job)
    table = {}
    for rule, members in sorted(by_rule.items()):
        timed = [j.timing for j in members if j.timing is not None]
        walls = [j.wall_s for j in members if j.wall_s is not None]
        table[rule] = {
            "step": timed[0]["step"] if timed else None,
            "jobs": len(members),
            "median_wall_s": _median(walls),
            "total_wall_s": round(sum(walls), 3),
            "median_startup_s": _median([t["startup_s"] for t in timed]),
            "median_work_s": _median([t["work_s"] for t in timed]),
            "timed_jobs": len(timed),
            "warm_jobs": sum(1 for t in timed if t.get("warm")),
        }
    return table


def summarize(log_path: Path, workdir: Path) -> dict:
    """The overhead record of one finished run."""
    jobs = parse_snakemake_log(log_path.read_text(errors="replace"))
    if not jobs:
        raise ValueError(f"{log_path}: no jobs found (is it a snakemake log of a run, not of a dry run?)")
    attach_timings(jobs, workdir)
    length, chain = critical_path(jobs)
    rules = rule_table(jobs)
    stamps = [t for j in jobs.values() for t in (j.started, j.finished) if t is not None]
    timed = [j for j in jobs.values() if j.timing is not None]
    return {
        "snakemake_log": str(log_path),
        "jobs": len(jobs),
        "timed_jobs": len(timed),
        "warm_jobs": sum(1 for j in timed if j.timing.get("warm")),
        "span_s": (max(stamps) - min(stamps)).total_seconds() if stamps else None,
        "job_seconds": round(sum(j.wall_s or 0.0 for j in jobs.values()), 3),
        "startup_seconds": round(sum(j.timing["startup_s"] for j in timed), 3),
        "work_seconds": round(sum(j.timing["work_s"] for j in timed), 3),
        "rules": rules,
        "critical_path": {"seconds": round(length, 3),
                          "jobs": [{"rule": j.rule, "jobid": j.jobid, "wall_s": j.wall_s} for j in chain]},
        "fixed_costs": fixed_costs(rules),
    }


def fixed_costs(table: dict[str, dict]) -> dict:
    """The slowest median, over the rules of each kind (a `rule_table`), against its target."""
    kinds = {"report_or_prepare_wall": (REPORT_OR_PREPARE_STEPS, "median_wall_s"),
             "evaluation_startup": (EVALUATION_STEPS, "median_startup_s")}
    out = {}
    for kind, (steps, column) in kinds.items():
        rows = {rule: row[column] for rule, row in table.items() if row["step"] in steps and row[column] is not None}
        worst = max(rows.values(), default=None)
        out[kind] = {"target_s": FIXED_COST_TARGETS_S[kind], "worst_rule_median_s": worst,
                     "meets_target": worst is not None and worst <= FIXED_COST_TARGETS_S[kind], "rules": rows}
    return out

"""maskbench/workflow/overhead.py: a run's per-rule split and critical path, from a hand-written snakemake log."""

import json
import subprocess
import sys

import pytest

from maskbench.workflow.overhead import critical_path, parse_snakemake_log, summarize
from maskbench.workflow.step_timing import PREFIX, read_timing, timing_line

LOG = """\
Building DAG of jobs...
[Mon Nov 23 10:00:00 2026]
localrule prepare_dataset:
    output: data/a.parquet
    log: logs/prepare/a.log
    jobid: 1
    reason: Missing output files: data/a.parquet
    resources: tmpdir=/tmp

[Mon Nov 23 10:00:02 2026]
Finished jobid: 1 (Rule: prepare_dataset)
1 of 4 steps (25%) done

[Mon Nov 23 10:00:02 2026]
localrule finetune:
    input: data/a.parquet
    output: models/x.safetensors, models/x.json
    log: logs/finetune/x.log
    jobid: 2

[Mon Nov 23 10:00:02 2026]
localrule table1:
    input: data/a.parquet
    output: tables/t.csv
    log: logs/table1/t.log
    jobid: 3

[Mon Nov 23 10:00:05 2026]
Finished jobid: 3 (Rule: table1)
[Mon Nov 23 10:00:12 2026]
Finished jobid: 2 (Rule: finetune)

[Mon Nov 23 10:00:12 2026]
localrule all:
    input: models/x.safetensors, tables/t.csv
    jobid: 0

[Mon Nov 23 10:00:12 2026]
Finished jobid: 0 (Rule: all)
"""


def test_the_log_gives_each_jobs_rule_files_and_times():
    jobs = parse_snakemake_log(LOG)
    assert sorted(jobs) == [0, 1, 2, 3]
    assert jobs[2].rule == "finetune" and jobs[2].inputs == ["data/a.parquet"]
    assert jobs[2].outputs == ["models/x.safetensors", "models/x.json"] and jobs[2].log == "logs/finetune/x.log"
    assert jobs[2].wall_s == 10.0 and jobs[3].wall_s == 3.0 and jobs[0].wall_s == 0.0


def test_critical_path_follows_outputs_into_inputs():
    jobs = parse_snakemake_log(LOG)
    seconds, chain = critical_path(jobs)
    # prepare (2 s) -> finetune (10 s) -> all (0 s); the table (3 s) is off the path
    assert seconds == 12.0 and [j.rule for j in chain] == ["prepare_dataset", "finetune", "all"]


def test_timing_lines_round_trip_and_the_last_one_counts():
    line = timing_line("finetune", 100.0, 109.25, 110.5, warm=True)
    assert line.startswith(PREFIX)
    assert read_timing(f"noise\n{timing_line('x', 0, 1, 2, False)}\n{line}\n") == {
        "step": "finetune", "startup_s": 9.25, "work_s": 1.25, "warm": True}
    assert read_timing("no timing here") is None
    assert read_timing(timing_line("search", 0.0, 1.0, 3.5, False, 812.4)) == {
        "step": "search", "startup_s": 1.0, "work_s": 2.5, "warm": False, "peak_rss_mb": 812.4}


def test_peak_rss_is_this_process_high_water_mark():
    """getrusage's ru_maxrss (KiB on Linux) in MB: a fresh interpreter's mark holds the 256 MB buffer it fills."""
    code = ("from maskbench.workflow.step_timing import peak_rss_mb; before = peak_rss_mb(); "
            "buffer = bytearray(256 * 1024 * 1024); after = peak_rss_mb(); print(before, after)")
    # from a small shell's fork: Linux keeps ru_maxrss across exec, so a child exec'd straight from pytest would start
    # at pytest's own mark; `; exit` makes sh fork for the interpreter instead of exec'ing it
    out = subprocess.run(["sh", "-c", '"$0" -c "$1"; exit $?', sys.executable, code], capture_output=True, text=True,
                         check=True).stdout.split()
    before, after = map(float, out)
    assert before < 200 and 256 <= after < before + 300  # the mark holds the buffer, and not much more


@pytest.fixture
def run_folder(tmp_path):
    (tmp_path / ".snakemake/log").mkdir(parents=True)
    (tmp_path / ".snakemake/log/2026-11-23T100000.000000.snakemake.log").write_text(LOG)
    for log, (step, startup, work) in {"logs/prepare/a.log": ("prepare", 0.5, 1.0),
                                       "logs/finetune/x.log": ("finetune", 9.0, 0.5),
                                       "logs/table1/t.log": ("table1", 1.5, 0.25)}.items():
        (tmp_path / log).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / log).write_text("INFO something\n" + timing_line(step, 0.0, startup, startup + work, False) + "\n")
    return tmp_path


def test_summary_splits_each_rule_into_startup_and_work(run_folder):
    record = summarize(next((run_folder / ".snakemake/log").iterdir()), run_folder)
    assert record["jobs"] == 4 and record["timed_jobs"] == 3 and record["warm_jobs"] == 0
    assert record["rules"]["finetune"] == {"step": "finetune", "jobs": 1, "median_wall_s": 9.5, "total_wall_s": 9.5,
                                           "median_startup_s": 9.0, "median_work_s": 0.5, "timed_jobs": 1,
                                           "warm_jobs": 0}
    # the timed jobs' own walls: 1.5 + 9.5 + 0 (all)
    assert record["critical_path"]["seconds"] == 11.0
    assert record["startup_seconds"] == 11.0 and record["work_seconds"] == 1.75
    costs = record["fixed_costs"]["report_or_prepare_wall"]
    assert costs["rules"] == {"prepare_dataset": 1.5, "table1": 1.75} and costs["meets_target"] is True


def test_entry_point_reads_the_newest_run_and_writes_json(run_folder):
    out = run_folder / "overhead.json"
    done = subprocess.run([sys.executable, "-m", "maskbench.tools.overhead_report", "--out", str(out),
                           "--workdir", str(run_folder), "--label", "test"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    assert record["label"] == "test" and record["jobs"] == 4 and record["rules"]["table1"]["median_work_s"] == 0.25


def test_a_folder_without_a_run_is_refused_naming_it(tmp_path):
    done = subprocess.run([sys.executable, "-m", "maskbench.tools.overhead_report", "--out", str(tmp_path / "o.json"),
                           "--workdir", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode != 0 and "no snakemake log of a run" in done.stderr and str(tmp_path) in done.stderr

"""Real kills (tests/kill_harness.py): a step process sent SIGTERM mid-training stops with its state saved (exit 75),
leaves nothing that looks finished, and its rerun resumes and ends bit-identical to an uninterrupted run.

The default run kills one fine-tuning (about 15 s: two step processes). The full harness — every step kind, SIGTERM
and SIGKILL at seeded random steps, 22 kills — runs with ``--kills`` (docs/testing.md) and writes its record, from
which ``python -m maskbench.tools.kill_record`` writes the reliability table of docs/cluster.md:

    pytest tests/test_kills.py --kills -s [--kills-record results/benchmarks/kill_harness.json]
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kill_harness import REPO, run_harness

# the full harness: kind -> the signals of its kills. Kinds that resume mid-run get three kills (SIGTERM, SIGKILL,
# SIGTERM), those that restart (IMP, FFW) two
FULL_PLAN = {
    "fine-tuning": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "mask search": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "paper C mask training": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "paper C retraining": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "paper D training": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "paper B pruning": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "paper C IMP": ("SIGTERM", "SIGKILL"),
    "paper D FFW": ("SIGTERM", "SIGKILL"),
}


def check(record: dict) -> None:
    for run in record["runs"]:
        where = f"{run['kind']}, {run['signal']} at progress line {run['at_line']}"
        assert run["exit_code"] == (75 if run["signal"] == "SIGTERM" else -9), where
        assert run["complete_looking"] == [], where
        assert run["rerun_exit"] == 0, where
        assert run["differences"] == [] and run["bit_equal"], (where, run["differences"][:5])
        assert run["states_left"] == [], where
    for name, kind in record["kinds"].items():
        if kind["resumes_mid_run"]:
            assert kind["resumed"] == kind["kills"], name


def test_a_fine_tuning_sent_sigterm_stops_with_its_state_and_resumes_bit_identically(tmp_path):
    record = run_harness(tmp_path, {"fine-tuning": ("SIGTERM",)}, seed=1)
    check(record)
    run = record["runs"][0]
    assert run["resumed_from"] >= 1


@pytest.mark.kills
def test_the_full_kill_harness(tmp_path, request):
    record = run_harness(tmp_path, FULL_PLAN, seed=0)
    out = Path(request.config.getoption("--kills-record") or REPO / "results" / "benchmarks" / "kill_harness.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    assert record["kills"] >= 20
    check(record)

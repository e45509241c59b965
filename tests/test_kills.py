"""Real kills (tests/kill_harness.py): a step process sent SIGTERM mid-training stops with its state saved (exit 75),
leaves nothing that looks finished, and its rerun resumes and ends bit-identical to an uninterrupted run.

The default run kills one fine-tuning (three step processes: the uninterrupted run, the killed one, its rerun). The full harness — every step kind, SIGTERM
and SIGKILL at seeded random steps, 33 kills — runs with ``--kills`` (docs/testing.md) and writes its record, from
which ``python -m maskbench.tools.kill_record`` writes the reliability table of docs/cluster.md:

    pytest tests/test_kills.py --kills -s [--kills-record results/benchmarks/kill_harness.json]
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import background
import pytest
from kill_harness import CHECKPOINT_EVERY, REPO, expected_exit, kinds, prepare_inputs, run_harness, run_step

# the full harness: kind -> the signals of its kills. Most kinds that resume mid-run get three kills (SIGTERM, SIGKILL,
# SIGTERM); IMP (restarts its round), the matrix's FFW kinds and the evaluations (resume at a finished set, run or
# benchmark) two
FULL_PLAN = {
    "fine-tuning": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "mask search": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "paper C mask training": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "paper C retraining": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "paper D training": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "paper B pruning": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "paper C IMP": ("SIGTERM", "SIGKILL"),
    "paper D FFW": ("SIGTERM", "SIGKILL", "SIGTERM"),
    "paper D FFW, online heads": ("SIGTERM", "SIGKILL"),
    "FFW on the gender encoder": ("SIGTERM", "SIGKILL"),
    "FFW on the NLU baseline": ("SIGTERM", "SIGKILL"),
    "evaluation": ("SIGTERM", "SIGKILL"),
    "evaluation under masks": ("SIGTERM", "SIGKILL"),
    "paper D evaluation": ("SIGTERM", "SIGKILL"),
    "paper B masked-LM bias": ("SIGTERM", "SIGKILL"),
}


def check(record: dict) -> None:
    for run in record["runs"]:
        where = (f"{run['kind']}, {run['signal']} at progress line {run['at_line']} "
                 f"({run.get('late_reads', 0)} tries read too late)")
        assert run["exit_code"] == expected_exit(run["signal"]), (where, run.get("killed_log_tail"))
        assert run["complete_looking"] == [], where
        assert run["rerun_exit"] == 0, where
        assert run["differences"] == [] and run["bit_equal"], (where, run["differences"][:5])
        assert run["states_left"] == [], where
        if not record["kinds"][run["kind"]]["resumes_mid_run"]:
            assert run["resumed_from"] is None, where
        elif run["signal"] == "SIGTERM":
            assert run["resumed_from"] is not None and run["resumed_from"] >= 1, where  # the step the stop saved
        elif record["kinds"][run["kind"]]["resumes_at"] == "saved step":
            # SIGKILL: from the last periodic state, or from step 0 when killed before the first
            assert run["resumed_from"] is None or run["resumed_from"] % int(CHECKPOINT_EVERY) == 0, where


def kill_one_fine_tuning(factory) -> dict:
    """The default run's record: one fine-tuning killed with SIGTERM (in the background lane, tests/conftest.py)."""
    return run_harness(factory.mktemp("kill"), {"fine-tuning": ("SIGTERM",)}, seed=1)


@pytest.fixture
def one_kill_record(tmp_path_factory):
    return background.result("one_kill_record", lambda: kill_one_fine_tuning(tmp_path_factory))


def test_a_fine_tuning_sent_sigterm_stops_with_its_state_and_resumes_bit_identically(one_kill_record):
    check(one_kill_record)
    run = one_kill_record["runs"][0]
    assert run["resumed_from"] >= 1


def test_a_step_that_ran_past_the_kill_window_before_its_line_was_read_is_not_signalled(tmp_path):
    """The harness pauses the step when it reads the kill line and signals it only inside the window: a reader that
    lags (here: the 40th line read, the window ending at the 10th) leaves the step to finish; inside it, the step stops
    at the line it had reached when paused."""
    prepare_inputs(tmp_path / "inputs", nli_only=True)
    kind = kinds(tmp_path / "inputs")["fine-tuning"]
    assert run_step(kind, tmp_path / "late", tmp_path / "late.log", 40, signal.SIGTERM, kill_by=10) == (0, 48, None)
    code, _, sent_at = run_step(kind, tmp_path / "in", tmp_path / "in.log", 5, signal.SIGTERM, kill_by=33)
    assert code == expected_exit("SIGTERM") and 5 <= sent_at <= 33
    log = (tmp_path / "in.log").read_text()  # paused before or after its flag check for the step of that line
    assert any(f"stopped on SIGTERM after step {step} of 48" in log for step in (sent_at, sent_at + 1)), log[-500:]


@pytest.mark.kills
def test_the_full_kill_harness(tmp_path, request):
    record = run_harness(tmp_path, FULL_PLAN, seed=0)
    out = Path(request.config.getoption("--kills-record") or REPO / "results" / "benchmarks" / "kill_harness.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    assert record["kills"] >= 20
    check(record)


def test_the_page_shows_the_record_as_the_tool_renders_it():
    from maskbench.tools.kill_record import SECTION, section

    record_path = REPO / "results" / "benchmarks" / "kill_harness.json"
    record = json.loads(record_path.read_text())
    page = (REPO / "docs" / "cluster.md").read_text()
    body = page.split(f"<!-- generated:{SECTION} -->\n", 1)[1].split(f"<!-- /generated:{SECTION} -->", 1)[0]
    assert body == section(record, REPO / "configs/paper.yaml", REPO / "results/benchmarks/gpu_check.json",
                           REPO / "profiles/slurm/config.yaml")
    assert record["kills"] >= 20 and sum(k["kills"] for k in record["kinds"].values()) == record["kills"]
    assert all(k["bit_equal"] == k["kills"] for k in record["kinds"].values())


def test_the_cost_of_a_kill_is_the_interval_times_the_step_time(tmp_path):
    from maskbench.tools.kill_record import section

    config = tmp_path / "paper.yaml"
    config.write_text("compute: {checkpoint_every: 1000}\n")
    check = tmp_path / "gpu_check.json"
    check.write_text(json.dumps({"sections": {"finetune_steps": {"variants": {"fp32": {"steps_per_s": 12.5}}}}}))
    record = {"commit": "abc1234", "date": "2026-11-29", "seed": 0, "kills": 1,
              "bert_base_save": {"parameters": 109_484_547, "bytes": 1_314_000_000, "save_seconds": 4.24,
                                 "verified_load_seconds": 3.1, "machine": "x86_64", "torch": "2"},
              "kinds": {"fine-tuning": {"resumes_mid_run": True, "kills": 1, "sigterm": 1, "sigkill": 0,
                                        "stopped_with_exit_75": 1, "nothing_complete_after_kill": 1, "resumed": 1,
                                        "restarted": 0, "bit_equal": 1}}}
    profile = tmp_path / "profile.yaml"
    profile.write_text("default-resources: {slurm_extra: '--signal=USR1@240'}\n")
    wrapped = section(record, config, check, profile)
    assert all(len(line) <= 160 for line in wrapped.splitlines() if not line.startswith("|"))
    # prose is wrapped at 160 characters (a paragraph renders the same): read it with its lines joined
    text = "\n".join(line if line.startswith("|") else line + " " for line in wrapped.splitlines())
    text = text.replace(" \n", " ")
    assert "SIGUSR1 4.0 min before the limit (`profile.yaml`: `--signal=USR1@240`)" in text
    assert "| 12.5 | 1,000 steps = 1.3 min |" in text  # 1000 / 12.5 = 80 s
    assert "| 9.0 | 1,000 steps = 1.9 min |" in text  # the A100 assumption: 1000 / 9 = 111 s
    assert "**1.31 GB**, saved (checksum, fsync, rename) in **4.2 s**" in text
    assert "| fine-tuning | yes (saved steps) | 1 (1 / 0) | 1 of 1 | 1 | 1 | 0 | 1 of 1 |" in text

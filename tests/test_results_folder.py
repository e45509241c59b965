"""Each config in its own results folder: the shipped configs name distinct, unnested folders; a run claims its
folder; a config naming a folder another config claimed is refused at planning (src/maskbench/workflow/results_folder.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import PurePosixPath

import pytest
import yaml
from test_workflow import REPO, snakemake

from maskbench.workflow.results_folder import (
    CLAIM_FILE,
    LOCK_FILE,
    ResultsFolderBusy,
    ResultsFolderTaken,
    check_results_folder,
    claim_results_folder,
    config_name,
    lock_results_folder,
)

SHIPPED = sorted(["config.yaml", *(f"configs/{p.name}" for p in (REPO / "configs").glob("*.yaml"))])


def results_of(path: str) -> str:
    return yaml.safe_load((REPO / path).read_text(encoding="utf-8"))["results"]


def test_every_shipped_config_has_a_results_folder_of_its_own():
    folders = {path: PurePosixPath(results_of(path)) for path in SHIPPED}
    assert len(folders) >= 10
    for a, fa in folders.items():
        for b, fb in folders.items():
            if a < b:
                # neither the same folder nor one inside the other (a run of one would write into the other's tree)
                assert fa != fb and fa not in fb.parents and fb not in fa.parents, (a, fa, b, fb)
    # named after the config, so a reader finds each config's outputs
    assert folders["configs/smoke.yaml"] == PurePosixPath("results/smoke")
    assert folders["config.yaml"] == PurePosixPath("results/default")


def test_the_claim_names_the_last_config_file():
    assert config_name([]) == "config.yaml"
    assert config_name(["configs/paper.yaml", "configs/paper-miniature.yaml"]) == "paper-miniature.yaml"


def test_a_free_folder_is_claimed_once_and_then_refused_to_another_config(tmp_path):
    results = tmp_path / "res"
    check_results_folder(results, "smoke.yaml")  # no folder yet: free
    claim_results_folder(results, "smoke.yaml")
    assert (results / CLAIM_FILE).read_text() == "smoke.yaml\n"
    claim_results_folder(results, "other.yaml")  # a claim is never replaced
    assert (results / CLAIM_FILE).read_text() == "smoke.yaml\n"
    check_results_folder(results, "smoke.yaml")  # its own config passes
    with pytest.raises(ResultsFolderTaken) as err:
        check_results_folder(results, "mine.yaml")
    message = str(err.value)
    assert "\n" not in message and str(results / CLAIM_FILE) in message
    assert "'smoke.yaml'" in message and "'mine.yaml'" in message and f"results: {str(results)!r}" in message


def test_planning_refuses_a_folder_another_config_claimed(tmp_path):
    claim = tmp_path / "results" / "smoke" / CLAIM_FILE
    claim.parent.mkdir(parents=True)
    claim.write_text("config.yaml\n")
    result = snakemake("-n", "--cores", "1", "--configfile", str(REPO / "configs/smoke.yaml"), workdir=tmp_path)
    assert result.returncode != 0
    assert (f"{claim.relative_to(tmp_path)}: the results folder 'results/smoke' holds the results of config "
            "'config.yaml'; config 'smoke.yaml'") in result.stdout + result.stderr
    # planning wrote nothing: the refusal comes before any job
    assert sorted(p.name for p in claim.parent.iterdir()) == [CLAIM_FILE]


def test_a_run_claims_its_folder(smoke_run):
    assert (smoke_run / "results/smoke" / CLAIM_FILE).read_text() == "smoke.yaml\n"


def test_a_second_run_on_a_folder_in_use_is_refused_in_one_line_and_a_dead_holders_lock_is_gone(tmp_path):
    """Snakemake locks its working directory; two runs from two working directories (or with --config
    results=...) naming one results folder are kept apart by the folder's own lock: the second is refused before its
    first job, naming the holder. The system releases the lock when its holder ends, however it ends."""
    from test_cluster_requests import MASK, run

    results = tmp_path / "results/hub"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from maskbench.workflow.results_folder import lock_results_folder; "
         "lock_results_folder(sys.argv[1], 'other.yaml', sys.argv[2]); print('held', flush=True); time.sleep(300)",
         str(results), "/elsewhere"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        refused = run(tmp_path, "--touch", "--cores", "1", MASK)
        assert refused.returncode != 0
        [line] = [row for row in refused.stderr.splitlines() if LOCK_FILE in row]
        assert line.startswith(f"results/hub/{LOCK_FILE}: the results folder 'results/hub' is in use by another run "
                               f"(pid {holder.pid} on host {socket.gethostname()}, config 'other.yaml', working "
                               "directory /elsewhere, since ")
        assert line.endswith(f"delete results/hub/{LOCK_FILE} and start again")
        assert not (results / CLAIM_FILE).exists()  # refused before the run claimed the folder or ran a job
        with pytest.raises(ResultsFolderBusy, match=f"pid {holder.pid} "):
            lock_results_folder(results, "hub.yaml", tmp_path)
    finally:
        holder.kill()
        holder.wait()
    held = lock_results_folder(results, "hub.yaml", tmp_path)  # the killed holder's lock went with it
    assert json.loads((results / LOCK_FILE).read_text())["pid"] == os.getpid()
    os.close(held)

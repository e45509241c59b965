"""A time limit on the one-node SLURM cluster (tests/slurm/start-cluster.sh): one fine-tuning of the smoke config,
made long (thousands of steps of the tiny model), asked for 1 minute on its first submission. It meets the limit
(state TIMEOUT in sacct), its step stops on the limit's SIGTERM with its state saved, the profile's `retries`
resubmits it (with 20 minutes: the `attempt` of --set-resources), the second submission's step goes on from the
saved step (its log says from which) and the model equals that of an uninterrupted local run of the same job bit
for bit.

Minutes by construction (a limit of whole minutes; 17 min 12 s measured on a busy 2-core machine), so
it runs with the kill harness, not in every CI run:

    tests/slurm/start-cluster.sh /var/lib/maskbench-slurm && . /var/lib/maskbench-slurm/env.sh
    pytest tests/test_slurm_timeout.py --kills -m slurm -s
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta

import pytest
import yaml
from test_slurm import env_with, run, snakemake_cmd
from test_workflow import REPO

TARGET = "results/smoke/nlu/mnli/bert-scratch-tiny/models/method~finetune/loss~ce/seed~1"
LOG = "results/smoke/logs/finetune_baseline/mnli/seed~1.log"
PREPARED = ["results/smoke/nlu/data/prepared/mnli_train.parquet", "results/smoke/nlu/data/prepared/mnli_dev.parquet"]
EPOCHS = 1500  # 300 examples in batches of 32: 15,000 steps, about 2 minutes of the tiny model on one shared core
CHECKPOINT_EVERY = 2000  # far apart: the step a rerun goes on from is the one the stop request saved


def local_cmd(workdir, *args) -> list[str]:
    """snakemake on this host, without the SLURM profile."""
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--cores", "1", *args]


def long_config(folder) -> str:
    config = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    config["finetune"].update(epochs=EPOCHS, early_stop_patience=0, log_every=500)
    config["compute"]["checkpoint_every"] = CHECKPOINT_EVERY
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


@pytest.mark.slurm
@pytest.mark.kills
def test_a_job_that_meets_its_time_limit_is_resubmitted_and_resumes_bit_identically(tmp_path):
    if not os.environ.get("MASKBENCH_SLURM_CLUSTER"):
        pytest.skip("no SLURM cluster: MASKBENCH_SLURM_CLUSTER is unset (as root: tests/slurm/start-cluster.sh DIR "
                    "and . DIR/env.sh)")
    for tool in ("sinfo", "sbatch", "sacct"):
        if shutil.which(tool) is None:
            pytest.skip(f"no SLURM cluster: `{tool}` is not installed")
    config = long_config(tmp_path)
    cluster, local = tmp_path / "cluster", tmp_path / "local"
    for workdir in (cluster, local):
        workdir.mkdir()
        prepared = run(local_cmd(workdir, *PREPARED, "--configfile", config), timeout=300)
        assert prepared.returncode == 0, prepared.stderr[-3000:]
    target = f"{TARGET}/train_summary.json"
    # the uninterrupted reference, on the host beside the cluster's job (one thread each)
    reference = subprocess.Popen(local_cmd(local, target, "--configfile", config), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.STDOUT, env=env_with())
    started_at = datetime.now() - timedelta(minutes=1)
    try:
        result = run(snakemake_cmd(cluster, target, "--configfile", config,
                                   "--slurm-init-seconds-before-status-checks", "5",
                                   "--set-resources", "finetune_baseline:runtime=1 if attempt == 1 else 20",
                                   "finetune_baseline:slurm_extra='--signal=USR1@20'"), timeout=2400)
        assert reference.wait(timeout=1800) == 0
    finally:
        if reference.poll() is None:
            reference.kill()
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    run_name = re.search(r"SLURM run ID: (\S+)", result.stdout + result.stderr).group(1)
    acct = run(["sacct", "-X", "-n", "-P", f"--name={run_name}", "-S", started_at.strftime("%Y-%m-%dT%H:%M:%S"),
                "-E", "now", "-o", "JobID,State,Timelimit,Elapsed"], timeout=60)
    states = [line.split("|") for line in acct.stdout.splitlines() if line.strip()]
    assert [s[1] for s in states] == ["TIMEOUT", "COMPLETED"], acct.stdout
    assert states[0][2] == "00:01:00", states
    log = (cluster / LOG).read_text()  # the second submission's (the shell rewrites the log)
    resumed = re.findall(r"resuming from (\S+) at step (\d+)", log)
    assert len(resumed) == 1 and resumed[0][0].endswith(".seed~1.resume.pt"), log[-3000:]
    step = int(resumed[0][1])
    total = EPOCHS * 10
    assert 0 < step < total and step % CHECKPOINT_EVERY, (step, "not the step a stop request saved")
    print(f"\nSLURM time limit: {states}; the second submission resumed from step {step} of {total}")
    for name in ("model.safetensors", "train_probs.parquet"):
        assert (cluster / TARGET / name).read_bytes() == (local / TARGET / name).read_bytes(), name
    assert not list((cluster / TARGET).parent.glob(".*resume*"))

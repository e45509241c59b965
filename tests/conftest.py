"""Fixtures shared by test modules."""

import pytest


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """The smoke DAG run locally, once per session: tests/test_workflow.py checks its outputs and
    tests/test_slurm.py compares the SLURM run's outputs with it."""
    from test_workflow import REPO, snakemake

    workdir = tmp_path_factory.mktemp("smoke")
    # about 2 minutes on 2 free cores (121 jobs, forked from the warm runner); the limit only catches a hang
    result = snakemake("--cores", "2", "--configfile", str(REPO / "configs/smoke.yaml"), workdir=workdir,
                       timeout=1800)
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir

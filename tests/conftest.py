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


@pytest.fixture(scope="session")
def dry_run(tmp_path_factory):
    """`dry_run(configfile)`: the stdout of `snakemake -n --cores 2` of a config (None: config.yaml) in a fresh
    folder, planned once per session and shared by the workflow tests and the docs test."""
    from test_workflow import REPO, snakemake

    planned: dict[str | None, str] = {}

    def run(configfile: str | None) -> str:
        if configfile not in planned:
            args = ["-n", "--cores", "2"] + (["--configfile", str(REPO / configfile)] if configfile else [])
            result = snakemake(*args, workdir=tmp_path_factory.mktemp("dry"))
            assert result.returncode == 0, result.stderr[-3000:]
            planned[configfile] = result.stdout
        return planned[configfile]

    return run


@pytest.fixture(scope="session")
def paper_dry_run(tmp_path_factory):
    """`snakemake -n` of the paper config with the SLURM profile (site facts from the environment), once per
    session."""
    from test_workflow import PAPER_USER_FILES, REPO, snakemake

    env = {"MASKBENCH_SLURM_ACCOUNT": "acct", "MASKBENCH_SLURM_PARTITION": "cpu",
           "MASKBENCH_SLURM_GPU_PARTITION": "gpu"}
    workdir = tmp_path_factory.mktemp("paper")
    # the files its user supplies (a local file is an input of its preparation: a missing one stops the dry run);
    # FEVER-Symmetric is found in the project's data/nli/
    for supplied in PAPER_USER_FILES:
        (workdir / supplied).parent.mkdir(parents=True, exist_ok=True)
        (workdir / supplied).touch()
    result = snakemake("-n", "--configfile", str(REPO / "configs/paper.yaml"), "--profile",
                       str(REPO / "profiles/slurm"), workdir=workdir, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result

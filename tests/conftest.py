"""Fixtures shared by test modules."""

import os

import pytest


@pytest.fixture(scope="session")
def deps_only_python(tmp_path_factory):
    """A Python with maskbench's dependencies but not maskbench itself, as in the per-rule environment of
    `--software-deployment-method conda` (envs/maskbench.yaml): a venv whose one .pth line names this interpreter's
    site-packages folders. A path line adds the folder only; the .pth files in it, the editable install of
    maskbench among them, are not read. (About 3 s.)"""
    import site
    import subprocess
    import sys
    from pathlib import Path

    venv = tmp_path_factory.mktemp("deps-only") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    own = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"], check=True,
                         capture_output=True, text=True).stdout.strip()
    Path(own, "maskbench_dependencies.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))
    probe = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('maskbench') is None,"
                            " u.find_spec('torch') is not None)"], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": ""}, check=True)
    assert probe.stdout.split() == ["True", "True"], f"not a dependencies-only Python: {probe.stdout}"
    return python


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory, deps_only_python):
    """The smoke DAG run locally, once per session: tests/test_workflow.py checks its outputs and
    tests/test_slurm.py compares the SLURM run's outputs with it. It runs under a Python without maskbench
    installed (and no PYTHONPATH of ours): the rules reach the code through the PYTHONPATH the workflow sets
    (rules/common.smk), as in a per-rule conda environment."""
    from test_workflow import REPO, snakemake

    workdir = tmp_path_factory.mktemp("smoke")
    # about 2 minutes on 2 free cores (121 jobs, forked from the warm runner); the limit only catches a hang
    result = snakemake("--cores", "2", "--configfile", str(REPO / "configs/smoke.yaml"), workdir=workdir,
                       timeout=1800, python=deps_only_python, env={"PYTHONPATH": ""})
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
    session, as from a fresh clone: without the files and folders its user supplies (planning does not need them;
    FEVER-Symmetric is found in the project's data/nli/)."""
    from test_workflow import REPO, snakemake

    env = {"MASKBENCH_SLURM_ACCOUNT": "acct", "MASKBENCH_SLURM_PARTITION": "cpu",
           "MASKBENCH_SLURM_GPU_PARTITION": "gpu"}
    workdir = tmp_path_factory.mktemp("paper")
    result = snakemake("-n", "--configfile", str(REPO / "configs/paper.yaml"), "--profile",
                       str(REPO / "profiles/slurm"), workdir=workdir, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="session")
def smoke_report(smoke_run, deps_only_python):
    """`snakemake --report report.html` of the smoke run, once per session (tests/test_workflow.py and
    tests/test_report.py read it)."""
    from test_workflow import REPO, snakemake

    report = smoke_run / "report.html"
    result = snakemake("--report", str(report), "--configfile", str(REPO / "configs/smoke.yaml"), workdir=smoke_run,
                       python=deps_only_python, env={"PYTHONPATH": ""})
    assert result.returncode == 0, result.stderr[-3000:]
    return report


def pytest_addoption(parser):
    parser.addoption("--kills", action="store_true", default=False,
                     help="run the full kill harness (tests/test_kills.py, marker `kills`: 29 kills, minutes)")
    parser.addoption("--kills-record", default=None,
                     help="where the full kill harness writes its record (default results/benchmarks/kill_harness.json)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--kills"):
        return
    skip = pytest.mark.skip(reason="the full kill harness runs with --kills (docs/testing.md)")
    for item in items:
        if "kills" in item.keywords:
            item.add_marker(skip)

"""maskbench as a Snakemake module of a host workflow (docs/module.md): a host Snakefile elsewhere imports it with
`module` + `use rule * from`, and plans the smoke DAG with the same jobs and the same commands as maskbench's own
Snakefile does: every path the workflow reads (config.yaml, schemas/, src/, data/) resolves against maskbench's
folder, not the host's."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter

import background
import pytest
from conftest import planned_config
from test_workflow import REPO, planned_jobs

HOST_SNAKEFILE = """\
configfile: {config!r}


module maskbench:
    snakefile:
        {snakefile!r}
    config:
        config


use rule * from maskbench
"""


def planned_commands(stdout: str) -> Counter:
    """(rule, outputs, shell command) of every job of a `snakemake -n -p` plan."""
    jobs = Counter()
    for block in re.split(r"\n(?=\[[^\n]*\]\n(?:local)?rule )", stdout):
        head = re.search(r"^(?:local)?rule (\w+):$", block, re.M)
        if head:
            outputs = re.search(r"^\s+output: (.*)$", block, re.M)
            command = re.search(r"^Shell command: (.*)$", block, re.M)
            jobs[head.group(1), outputs.group(1) if outputs else "", command.group(1) if command else ""] += 1
    return jobs


def plan_hosted_and_direct(factory):
    """The smoke config planned (`-n -p`) by a host workflow that imports maskbench's as a module, from the host's
    own folder (no --snakefile: snakemake finds host/Snakefile), and directly (the background lane runs it,
    tests/conftest.py)."""
    folder = factory.mktemp("module")
    host = folder / "host"
    host.mkdir()
    (host / "Snakefile").write_text(HOST_SNAKEFILE.format(config=str(REPO / "configs/smoke.yaml"),
                                                          snakefile=str(REPO / "Snakefile")))
    hosted = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "2"], cwd=host,
                            capture_output=True, text=True, timeout=600)
    # directly: `snakemake -n -p --cores 2 --configfile configs/smoke.yaml` in a fresh folder, the session's one plan of it
    return hosted, planned_config(factory, "configs/smoke.yaml")


@pytest.fixture(scope="session")
def hosted_and_direct_plans(tmp_path_factory):
    """The two plans of ``plan_hosted_and_direct``, from the background lane (tests/conftest.py)."""
    return background.result("hosted_and_direct_plans", lambda: plan_hosted_and_direct(tmp_path_factory))


def test_a_host_workflow_imports_maskbench_as_a_module_and_plans_the_same_jobs(hosted_and_direct_plans):
    hosted, direct = hosted_and_direct_plans
    assert hosted.returncode == 0, hosted.stderr[-3000:]
    assert planned_jobs(hosted.stdout) == planned_jobs(direct)
    hosted_jobs, direct_jobs = planned_commands(hosted.stdout), planned_commands(direct)
    assert sum(direct_jobs.values()) == planned_jobs(direct)["total"] > 200
    assert hosted_jobs == direct_jobs
    # a local data file the smoke config names is read from maskbench's data/, not the host's folder
    assert f"input: {REPO}/data/nli/mnli_dev_matched.tsv" in hosted.stdout

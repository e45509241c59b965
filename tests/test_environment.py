"""The per-rule environment of `--software-deployment-method conda` (envs/maskbench.yaml): it lists maskbench's
dependencies, pinned inside pyproject.toml's ranges, and no install of the project itself (the rules import the
workflow's own src/ from their PYTHONPATH, rules/setup.smk); its pins resolve on the package index this machine
reaches. That the workflow runs with the dependencies alone, maskbench not installed, the smoke run shows: it runs
under `deps_only_python` (tests/conftest.py)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tomllib
from urllib.parse import urlparse

import background
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from test_workflow import REPO

ENV_FILE = REPO / "envs" / "maskbench.yaml"
# what runs the workflow rather than what its jobs import: snakemake starts the jobs from its own environment
RUNNER = {"snakemake", "snakemake-executor-plugin-slurm"}


def env_file():
    return yaml.safe_load(ENV_FILE.read_text())


def pip_lines() -> list[str]:
    pips = [d["pip"] for d in env_file()["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pips) == 1, f"{ENV_FILE}: expected one pip: section, found {len(pips)}"
    return [str(line) for line in pips[0]]


def pins() -> dict[str, Requirement]:
    """The env file's pip requirements (its pip options left out), by normalised name."""
    return {canonicalize_name(r.name): r for r in map(Requirement, (p for p in pip_lines() if not p.startswith("-")))}


def test_env_file_lists_pyproject_dependencies_pinned_inside_their_ranges():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = {canonicalize_name(r.name): r for r in map(Requirement, project["dependencies"] + project[
        "optional-dependencies"]["minilm"])}
    for name in RUNNER:
        wanted.pop(name)
    listed = pins()
    # no `-e ..` or other local install: snakemake builds the env from a copy of this file in .snakemake/conda/
    assert not [p for p in pip_lines() if p.startswith(("-e", ".", "/")) or "file:" in p]
    assert sorted(listed) == sorted(wanted)
    for name, pin in listed.items():
        (spec,) = pin.specifier
        assert spec.operator == "==", f"{ENV_FILE}: {name} is not pinned ({pin})"
        assert wanted[name].specifier.contains(spec.version, prereleases=True), (name, str(pin), str(wanted[name]))
    python = next(str(d) for d in env_file()["dependencies"] if str(d).startswith("python="))
    assert SpecifierSet(project["requires-python"]).contains(python.removeprefix("python=") + ".0")


def index_url() -> str:
    from pip._internal.models.index import PyPI

    return os.environ.get("PIP_INDEX_URL") or PyPI.simple_url


def reachable(url: str) -> bool:
    parsed = urlparse(url)
    try:
        socket.create_connection((parsed.hostname, parsed.port or 443), timeout=3).close()
    except OSError:
        return False
    return True


def resolve_env_pins(factory) -> dict:
    """pip's report of the env file's pins resolved on the index for the env's Python (a dry run, no dependencies:
    about 4 s alone, with them 17 s; run in the background lane, tests/conftest.py)."""
    import json

    if not reachable(index_url()):
        pytest.skip(f"the package index {index_url()} is unreachable from here")
    folder = factory.mktemp("pins")
    python = next(str(d) for d in env_file()["dependencies"] if str(d).startswith("python="))
    requirements = folder / "requirements.txt"
    requirements.write_text("\n".join(pip_lines()) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "--quiet",
         "--only-binary=:all:", "--python-version", python.removeprefix("python="), "--target", str(folder / "t"),
         "--report", str(folder / "report.json"), "-r", str(requirements)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((folder / "report.json").read_text())


@pytest.fixture
def env_pins_report(tmp_path_factory):
    return background.result("env_pins_report", lambda: resolve_env_pins(tmp_path_factory))


def test_env_file_pins_resolve_on_the_package_index(env_pins_report):
    """Each pinned requirement exists on the index for the env's Python."""
    resolved = {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"]
                for i in env_pins_report["install"]}
    # a local build (torch's +cpu) is the pinned release
    assert {n: re.sub(r"\+.*", "", v) for n, v in resolved.items()} == \
        {n: next(iter(r.specifier)).version for n, r in pins().items()}


def test_the_recorded_maskbench_version_is_the_projects():
    """Steps record maskbench's version from the package that runs (maskbench.runtime.versions), which need not be
    installed: it is pyproject's version."""
    from maskbench import runtime

    assert runtime.versions()["maskbench"] == tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]

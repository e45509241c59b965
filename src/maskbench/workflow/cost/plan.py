"""The jobs snakemake would run for a config and targets, read from `snakemake -n --printshellcmds`.

Why the dry run's text and not snakemake's Python API: the API (snakemake.api) stops at `execute_workflow`; its job
objects are internals that change between 9.x releases, while the dry run prints, for every job, exactly what a
cluster submission gets — rule, outputs, inputs, wildcards, threads, resources after the profile's set-resources,
and the shell command with every typed argument the step receives — and it is what `maskbench.workflow.forced_jobs` and the
tests already read. A job is priced from its own command line (its `--hparams`, `--train`, `--sparsities`, ...),
so the sheet prices what would run, not a second reading of the config.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

# placeholders for the SLURM profile's site facts: planning reads them, never submits
SITE = {"MASKBENCH_SLURM_ACCOUNT": "account", "MASKBENCH_SLURM_PARTITION": "cpu",
        "MASKBENCH_SLURM_GPU_PARTITION": "gpu"}


@dataclass(frozen=True)
class PlannedJob:
    rule: str
    outputs: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    wildcards: Mapping[str, str] = field(default_factory=dict)
    threads: int = 1
    resources: Mapping[str, str] = field(default_factory=dict)
    command: str = ""
    local: bool = False
    temporary: tuple[str, ...] = ()  # the outputs its rule flags temp(): deleted once every job reading them is done

    def resource(self, key: str, default: float = 0) -> float:
        value = self.resources.get(key)
        try:
            return float(value) if value is not None else default
        except ValueError:
            return default

    @property
    def gpus(self) -> int:
        return int(self.resource("gpu"))

    def step(self) -> tuple[str, dict[str, list[str]]]:
        """The `python -m maskbench.steps <step>` a job runs and its options (each a list of values); ('', {})
        for a job that runs no step."""
        try:
            words = shlex.split(self.command)
        except ValueError:
            return "", {}
        if ">" in words:
            words = words[:words.index(">")]
        for i in range(len(words) - 2):
            if words[i] == "-m" and words[i + 1] == "maskbench.steps":
                return words[i + 2], _options(words[i + 3:])
            if words[i] == "-m" and words[i + 1].startswith("maskbench.steps."):
                return words[i + 1].removeprefix("maskbench.steps."), _options(words[i + 2:])
        return "", {}


def _options(words: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    key = None
    for word in words:
        if word.startswith("--") and len(word) > 2 and not word[2].isdigit():
            key = word[2:]
            out[key] = []
        elif key is not None:
            out[key].append(word)
    return out


_HEAD = re.compile(r"^\s*(localrule|rule|checkpoint) (\w+):\s*$", re.M)
_TEMPORARY = re.compile(r"^Would remove temporary output (.+)$", re.M)


def _pairs(text: str) -> dict[str, str]:
    out = {}
    for item in text.split(", "):
        key, sep, value = item.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def parse_dry_run(stdout: str) -> list[PlannedJob]:
    """Every job block of a dry run's output (group jobs' members included), in the order printed; each job's
    temporary outputs from the run's `Would remove temporary output` lines (the rules' own temp() flags)."""
    temporary = set(_TEMPORARY.findall(stdout))
    jobs = []
    heads = list(_HEAD.finditer(stdout))
    for head, after in zip(heads, [*heads[1:], None], strict=True):
        block = stdout[head.end():after.start() if after else len(stdout)]

        def line(name: str, block: str = block) -> str:
            found = re.search(rf"^\s+{name}: (.*)$", block, re.M)
            return found.group(1) if found else ""

        command = re.search(r"^\s*Shell command: (.*)$", block, re.M)
        outputs, inputs = line("output"), line("input")
        jobs.append(PlannedJob(
            rule=head.group(2), outputs=tuple(outputs.split(", ")) if outputs else (),
            inputs=tuple(inputs.split(", ")) if inputs else (), wildcards=_pairs(line("wildcards")),
            threads=int(line("threads") or 1), resources=_pairs(line("resources")),
            command=command.group(1) if command and command.group(1) != "None" else "",
            local=head.group(1) == "localrule",
            temporary=tuple(path for path in outputs.split(", ") if path in temporary) if outputs else ()))
    return jobs


def user_files(config: Mapping, where: Path) -> list[str]:
    """The local files a config's datasets read that are not under `where` (configs/paper.yaml's FEVER and
    PAWS-QQP): a fresh plan needs them present, so it plans against empty placeholders."""
    files = []
    for spec in (config.get("datasets") or {}).values():
        source = str(spec.get("source", ""))
        if source.startswith("local:") and not (where / source.removeprefix("local:")).exists():
            files.append(source.removeprefix("local:"))
    return sorted(set(files))


def dry_run(snakefile: Path, workdir: Path, configfiles: Iterable[Path], targets: Iterable[str],
            extra: Iterable[str] = ()) -> str:
    """The text of `snakemake -n --printshellcmds` in `workdir` (the site facts of profiles/slurm filled with
    placeholders where the environment lacks them)."""
    return _snakemake(["-n", "--printshellcmds"], snakefile, workdir, configfiles, targets, extra)


_RULE_DOC = re.compile(r"^(\w+) \((.*)\)$", re.M)


def rule_docstrings(snakefile: Path, workdir: Path, configfiles: Iterable[Path], extra: Iterable[str] = ()
                    ) -> dict[str, str]:
    """{rule: its docstring} for the rules that have one, from `snakemake --list-rules`: each rule that writes a
    table, figure or benchmark says in its docstring what it makes (the cost sheet's "serves" column)."""
    return dict(_RULE_DOC.findall(_snakemake(["--list-rules"], snakefile, workdir, configfiles, (), extra)))


def _snakemake(mode: list[str], snakefile: Path, workdir: Path, configfiles: Iterable[Path], targets: Iterable[str],
               extra: Iterable[str]) -> str:
    cmd = [sys.executable, "-m", "snakemake", *mode, "--snakefile", str(snakefile),
           "--directory", str(workdir), *extra, *targets, "--configfile", *map(str, configfiles)]
    env = {**SITE, **os.environ,
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=workdir)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-15:]
        raise RuntimeError(f"snakemake {' '.join(mode)} failed: " + " | ".join(tail))
    return done.stdout

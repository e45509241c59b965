"""A job that writes one JSON of several records (a record per run, per benchmark), each record kept across a
cut-off (a time limit, a kill) as soon as it is computed.

``vision.evaluate`` scores every run of a (dataset, level, seed) into one JSON, ``gender.lm_bias`` CrowS-Pairs and
StereoSet into one. Each finished record is written beside the job's output as a hidden sibling
``.<output name>.staged-<key>`` (``maskbench.workflow.staging.staged_path``: snakemake deletes only the declared
output of a failed job); when the job runs again the records staged by the earlier try are read back and only the
rest are computed. The key of a record holds the job's arguments, the record's name and the size and time of every
input, so a record of other inputs or arguments is never read back. A record read back is the JSON that was written
(Python's floats round-trip exactly), so the job's output is byte-equal to an uninterrupted run's.

Between two records a stop request (SIGTERM) ends the job with exit status 75 (``maskbench.stop``); SIGKILL loses
only the record being computed; SLURM's warning (SIGUSR1) changes nothing, every finished record being staged
already. The staged records are removed when the output is written (``finish``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from maskbench import runtime, stop
from maskbench.workflow import staging

log = logging.getLogger("maskbench.workflow.staged_records")


class StagedRecords:
    """The records of one job writing ``out``; ``job``: what shapes every record (the step's name and its
    arguments, JSON-able), ``inputs``: the files the records derive from, ``names``: every record's name, in the
    order the job computes them; ``unit``: what a record is, for the log and the stop message."""

    def __init__(self, out: str | os.PathLike, job: tuple, inputs: Iterable[str | os.PathLike | None],
                 names: list[str], unit: str):
        self.out, self.names, self.unit = Path(out), list(names), unit
        stamp = staging.inputs_stamp(inputs)
        self.keys = {name: staging.part_key(job, str(self.out), name, stamp) for name in self.names}
        self.restored = self.computed = 0

    def _path(self, name: str) -> Path:
        return staging.staged_path(self.out, self.keys[name])

    def get(self, name: str) -> dict | None:
        """The record ``name`` staged by an earlier try, or None (then the caller computes it: ``put``). Asked in
        the job's order; before a record to compute, a stop request ends the job."""
        path = self._path(name)
        if path.is_file():
            with contextlib.suppress(ValueError):  # a damaged staged record is computed again
                record = json.loads(path.read_text())
                self.restored += 1
                return record
        stop.take_save_request()  # SIGUSR1: every finished record is already staged, nothing more to save
        if stop.requested() is not None:
            raise stop.StopRequested(stop.requested(), self.restored + self.computed, len(self.names),
                                     f"finished {self.unit}s staged beside {self.out}", unit=self.unit)
        if self.restored and not self.computed:
            # the line the kill harness (tests/kill_harness.py) reads: how many records this try did not compute
            log.info("resuming from %s at %s %d of %d: the %ss computed before a cut-off were read back",
                     self.out, self.unit, self.restored, len(self.names), self.unit)
        return None

    def put(self, name: str, record: dict) -> dict:
        """Stage a computed record (atomically: a kill while writing leaves no staged record); return it as it
        will be read back (the JSON round trip), so that a straight run writes what a resumed one does."""
        path = self._path(name)
        runtime.atomic_write_json(path, record)
        self.computed += 1
        return json.loads(path.read_text())

    def finish(self) -> None:
        """The output is written: the staged records go."""
        for name in self.names:
            self._path(name).unlink(missing_ok=True)
        log.info("computed %d of %d %ss (%d read back, computed before a cut-off)", self.computed, len(self.names),
                 self.unit, self.restored)

    @contextlib.contextmanager
    def signals(self) -> Iterator[StagedRecords]:
        """While the records are computed, SIGTERM asks for a stop after the record being computed (one that comes
        during the last record lets the job end complete) and SIGUSR1 is taken (``maskbench.stop.stop_signals``)."""
        with stop.stop_signals():
            yield self

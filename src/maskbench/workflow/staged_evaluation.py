"""An evaluation job's sets scored one at a time, each kept across a cut-off (a time limit, a kill).

``nlu.evaluate`` and ``nlu.evaluate_masks`` score several models or masks on several sets in one job. Each finished
(item, set) part — its metrics JSON and its predictions — is staged beside its files (``maskbench.workflow.staging``:
snakemake deletes a failed job's declared outputs); when the job runs again the parts staged by the earlier try are
put back and only the rest are scored. The key of a part holds the job's arguments, the item's output folder, the
set's name and the size and time of every input, so a part of other inputs or arguments is never put back.

SIGTERM during scoring ends the job after the set being scored, with exit status 75 (``maskbench.stop``), unless
that set was its last (then the job is complete); SIGKILL loses only that set; SLURM's warning (SIGUSR1) changes
nothing, every finished set being staged already. The staged copies are removed when the job is complete.
"""

from __future__ import annotations

import logging
from pathlib import Path

from maskbench import stop
from maskbench.tracks.nlu.evaluation import score_all
from maskbench.workflow import staging

log = logging.getLogger("maskbench.workflow.staged_evaluation")


def job_fields(step: str, args) -> tuple:
    """What shapes every scored part of an evaluation job: its step's name and its evaluation arguments
    (``EvalSetArgs``), a part of a staging key (``maskbench.workflow.staging.part_key``)."""
    return (step, args.task, args.seed, args.eval_sets, [str(d) for d in args.data], args.max_length,
            args.batch_size, args.length_sorted)


class StagedSets:
    """The (item, set) parts of one evaluation job of step ``step`` with arguments ``args``; ``total``: the number
    of parts the job scores (items × sets), for the log and the stop message."""

    def __init__(self, step: str, args, total: int):
        self.common, self.total = job_fields(step, args), total
        self.parts: list[tuple[list[Path], str]] = []
        self.restored = self.scored = 0

    def score(self, model, tokenizer, loaded: list[tuple], args, device, out_dir: Path, record: dict,
              model_dir: Path, inputs: list) -> list[str]:
        """``score_all`` set by set: a set staged by an earlier try is put back, the others are scored and staged;
        a stop request is honoured before the next set is scored (one that comes during the job's last set lets the
        job end complete). ``inputs``: the files the item's scores derive from."""
        stamp = staging.inputs_stamp(inputs)
        written = []
        for entry in loaded:
            name = entry[0].name
            files = [out_dir / f"{name}.json", out_dir / f"{name}.predictions.parquet"]
            key = staging.part_key(self.common, str(out_dir), name, stamp)
            self.parts.append((files, key))
            if staging.restore(files, key):
                self.restored += 1
            else:
                self._stop_if_asked()
                if self.restored and not self.scored:
                    self._log_resume(out_dir)
                score_all(model, tokenizer, [entry], args, device, out_dir, record, model_dir)
                staging.keep(files, key)
                self.scored += 1
            written.append(str(files[0]))
        return written

    def finish(self) -> None:
        """Every part is in place: the staged copies go."""
        if self.restored and not self.scored:
            self._log_resume(None)
        for files, key in self.parts:
            staging.discard(files, key)
        log.info("scored %d of %d (item, set) parts (%d put back, scored before a cut-off)",
                 self.scored, self.total, self.restored)

    def _log_resume(self, out_dir: Path | None) -> None:
        # the line the kill harness (tests/kill_harness.py) reads: how many parts this try did not score again
        log.info("resuming from %s at set %d of %d: the sets scored before a cut-off were put back",
                 out_dir if out_dir is not None else "staged-outputs", self.restored, self.total)

    def _stop_if_asked(self) -> None:
        stop.take_save_request()  # SIGUSR1: every finished set is already staged, nothing more to save
        if stop.requested() is not None:
            raise stop.StopRequested(stop.requested(), self.restored + self.scored, self.total,
                                     "finished sets staged beside the outputs", unit="set")


"""Progress a long job reports while it runs: a line in its log at least every ``interval()`` seconds, the training
curve so far, and optionally TensorBoard scalars.

A training, mask-search, FFW or scoring loop makes a ``Progress`` and calls ``update`` once per step or batch::

    progress train: step 120/5000 (2.4%), loss 0.6931, lr 2.00e-05, 48.0 examples/s, elapsed 0:00:30, ETA 0:16:56

The line goes through ``logging`` to stderr, which every rule redirects into the job's own log, so the console shows
nothing new. What a job computes never depends on any of this: no random generator is touched, no tensor is read
that the loop does not read anyway, and a job's outputs are the same bits whatever the settings.

Settings (the workflow sets them from the config's ``logging:`` section, rules/setup.smk; an exported value wins):

* ``MASKBENCH_PROGRESS_SECONDS`` (default 30): the longest gap between two lines; 0 writes one every step or batch.
* ``MASKBENCH_TENSORBOARD`` (``1``: on): a training run's scalars (its curve's numbers, loss, lr and examples per
  second) into TensorBoard event files under the job's progress folder, via ``torch.utils.tensorboard.SummaryWriter``
  (scoring loops log lines only; a job's second training run, paper C's next round, is tagged ``train_2/...``).
* ``MASKBENCH_PROGRESS_DIR``: the job's progress folder. Unset, it is the job's log file with ``.progress`` for
  ``.log`` (``logs/finetune/seed~1.log`` -> ``logs/finetune/seed~1.progress/``), found from stderr, which the rule
  points at the log; a job whose stderr is not a file (a terminal, a pipe) writes no files, only log lines.

The training curve (``fit``'s) is rewritten into ``<progress folder>/train_curve.csv.partial`` as it grows (at most
once an interval, with the same writer as the final ``train_curve.csv``), and renamed to ``train_curve.csv`` when the
run ends, so a killed job leaves a file named partial, never one that looks complete (a step that trains several
times, paper C's rounds, keeps its last run's). The job's real outputs are written as before, by the step.
"""

from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)

SECONDS_ENV = "MASKBENCH_PROGRESS_SECONDS"
TENSORBOARD_ENV = "MASKBENCH_TENSORBOARD"
FOLDER_ENV = "MASKBENCH_PROGRESS_DIR"
DEFAULT_SECONDS = 30.0
CURVE = "train_curve.csv"

clock = time.monotonic  # the one clock every report reads (tests replace it with a slowed one)


class ProgressSettingError(ValueError):
    """An environment setting of the progress reports is not a value it can take."""


def interval() -> float:
    """The longest gap between two progress lines, in seconds (``MASKBENCH_PROGRESS_SECONDS``, default 30)."""
    text = os.environ.get(SECONDS_ENV, "").strip()
    if not text:
        return DEFAULT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value >= 0 and math.isfinite(value)):
        raise ProgressSettingError(f"environment {SECONDS_ENV}={text!r}: not a number of seconds >= 0")
    return value


def tensorboard_on() -> bool:
    text = os.environ.get(TENSORBOARD_ENV, "").strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise ProgressSettingError(f"environment {TENSORBOARD_ENV}={text!r}: not one of 1/0, true/false, yes/no, on/off")


def tensorboard_available() -> bool:
    """Whether ``torch.utils.tensorboard`` can be used (it needs the ``tensorboard`` package)."""
    import importlib.util

    return importlib.util.find_spec("tensorboard") is not None


def job_settings(logging_config: dict) -> dict[str, str]:
    """The environment a job reads its progress settings from, for the config's ``logging:`` section; TensorBoard
    asked for without its package is an error naming the key."""
    out = {SECONDS_ENV: f"{float(logging_config.get('progress_seconds', DEFAULT_SECONDS)):g}"}
    if logging_config.get("tensorboard"):
        if not tensorboard_available():
            raise ProgressSettingError("config logging.tensorboard=true: TensorBoard event files need the tensorboard "
                                       "package, which is not installed (pip install tensorboard)")
        out[TENSORBOARD_ENV] = "1"
    return out


def job_folder() -> Path | None:
    """The job's progress folder (``MASKBENCH_PROGRESS_DIR``, else beside the log file stderr writes to), or None."""
    given = os.environ.get(FOLDER_ENV, "").strip()
    if given:
        return Path(given)
    try:
        target = Path(os.readlink("/proc/self/fd/2"))
    except OSError:  # not Linux, or no stderr
        return None
    if not target.is_absolute() or not target.is_file():  # a terminal, a pipe, a socket
        return None
    return target.with_name(target.stem + ".progress") if target.suffix == ".log" else None


def clock_text(seconds: float) -> str:
    """``h:mm:ss`` of a number of seconds (rounded down)."""
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _number(value: float) -> str:
    return f"{value:.2e}" if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5) else f"{value:.4f}"


_RUNS: dict[str, int] = {}  # the loops of this process that wrote TensorBoard scalars, per name


class Progress:
    """Reports of one loop of ``total`` units (steps, batches, tests): ``update`` after each; a line in the log when
    ``seconds`` (default ``interval()``) have passed since the last one, and at ``close``. ``update``'s ``values``
    (loss, lr, ...) appear on the line and, for a loop made with ``tensorboard=True`` while the job's setting turns
    TensorBoard on, as scalars ``<what>/<name>``."""

    def __init__(self, what: str, total: int, unit: str = "step", *, done: int = 0, seconds: float | None = None,
                 folder: Path | None = None, tensorboard: bool = False):
        self.what, self.total, self.unit, self.done = what, max(0, int(total)), unit, int(done)
        self.seconds = interval() if seconds is None else float(seconds)
        self.folder = job_folder() if folder is None else Path(folder)
        want_tensorboard = tensorboard and tensorboard_on()
        if want_tensorboard and not tensorboard_available():
            raise ProgressSettingError(f"environment {TENSORBOARD_ENV}=1: TensorBoard logging needs the tensorboard "
                                       "package, which is not installed (pip install tensorboard)")
        self.writer, self.tag = None, what
        if want_tensorboard and self.folder is not None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=str(self.folder / "tensorboard"))
            _RUNS[what] = _RUNS.get(what, 0) + 1
            self.tag = what if _RUNS[what] == 1 else f"{what}_{_RUNS[what]}"
        self.started = self.last = clock()
        self.first_done, self.examples, self.lines = self.done, 0, 0
        self.values: dict[str, list[float]] = {}
        self.curve_rows, self.curve_written = 0, self.last

    def update(self, n: int = 1, examples: int | None = None, **values: float) -> bool:
        """``n`` more units done (``examples`` of them, where a unit is a batch); True when a line was written."""
        self.done += n
        self.examples += examples if examples is not None else 0
        for key, value in values.items():  # a device scalar is read when the line is written, not every step
            self.values.setdefault(key, []).append(value)
        if clock() - self.last < self.seconds:
            return False
        self.report()
        return True

    def rate(self, now: float) -> tuple[float, float]:
        """Units and examples per second since this loop began (or was resumed)."""
        elapsed = max(now - self.started, 1e-9)
        return (self.done - self.first_done) / elapsed, self.examples / elapsed

    def line(self, now: float) -> str:
        self.values = {key: host_floats(v) for key, v in self.values.items()}
        per_unit, per_example = self.rate(now)
        percent = f" ({100.0 * self.done / self.total:.1f}%)" if self.total else ""
        parts = [f"progress {self.what}: {self.unit} {self.done}/{self.total}{percent}"]
        parts += [f"{key} {_number(sum(v) / len(v))}" for key, v in self.values.items() if v]
        parts.append(f"{per_example:.1f} examples/s" if self.examples else f"{per_unit:.2f} {self.unit}s/s")
        parts.append(f"elapsed {clock_text(now - self.started)}")
        left = self.total - self.done
        if left > 0 and per_unit > 0:
            parts.append(f"ETA {clock_text(left / per_unit)}")
        return ", ".join(parts)

    def report(self) -> None:
        now = clock()
        log.info(self.line(now))
        if self.writer is not None:
            for key, v in self.values.items():
                if v:
                    self.writer.add_scalar(f"{self.tag}/{key}", sum(v) / len(v), self.done)
            per_unit, per_example = self.rate(now)
            self.writer.add_scalar(f"{self.tag}/examples_per_second" if self.examples
                                   else f"{self.tag}/{self.unit}s_per_second",
                                   per_example if self.examples else per_unit, self.done)
        self.values = {}
        self.last, self.lines = now, self.lines + 1

    # ------------------------------------------------------------------------------------------ a training curve
    def curve(self, rows: list[dict], final: bool = False) -> None:
        """The training curve so far: new rows go to TensorBoard; the file ``train_curve.csv.partial`` is rewritten
        when rows were added and an interval has passed (``final``: always, then renamed to ``train_curve.csv``)."""
        if self.writer is not None:
            for row in rows[self.curve_rows:]:
                for key, value in row.items():
                    if key not in ("step", "epoch", "seconds") and isinstance(value, int | float):
                        self.writer.add_scalar(f"{self.tag}/curve/{key}", value, row["step"])
        grew, self.curve_rows = len(rows) > self.curve_rows, len(rows)
        if self.folder is None or not rows or not (final or (grew and clock() - self.curve_written >= self.seconds)):
            return
        from maskbench.runtime import atomic_write_text

        partial = self.folder / (CURVE + ".partial")
        atomic_write_text(partial, curve_csv(rows))
        self.curve_written = clock()
        if final:
            os.replace(partial, self.folder / CURVE)

    def close(self) -> None:
        """The loop ended: a last line (units done, time taken) where the loop wrote any (a loop shorter than an
        interval stays silent: a run's many short dev evaluations add nothing to its log), TensorBoard's files
        flushed and closed."""
        now = clock()
        per_unit, per_example = self.rate(now)
        speed = f"{per_example:.1f} examples/s" if self.examples else f"{per_unit:.2f} {self.unit}s/s"
        if self.lines:
                log.info("progress %s: done, %s %d/%d in %s, %s", self.what, self.unit, self.done, self.total,
                     clock_text(now - self.started), speed)
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def curve_csv(rows: list[dict]) -> str:
    """The text of ``train_curve.csv`` (``checkpoints.write_checkpoint`` writes the same: pandas' ``to_csv``)."""
    import pandas as pd

    return pd.DataFrame(rows).to_csv(index=False)


def host_floats(values: list) -> list[float]:
    """Python floats of a list of numbers and 0-dim tensors (a training loop's losses kept on the device between
    reports): the tensors are read in one transfer per device (``torch.stack(...).tolist()``: one host sync however
    many), each the very value ``float(tensor)`` gives (widened to float64 first, which is exact)."""
    out = list(values)
    by_device: dict = {}
    for i, value in enumerate(values):
        if hasattr(value, "dim"):
            by_device.setdefault(value.device, []).append(i)
        else:
            out[i] = float(value)
    if by_device:
        import torch

        for indices in by_device.values():
            read = torch.stack([values[i].detach().reshape(()).double() for i in indices]).tolist()
            for i, value in zip(indices, read, strict=True):
                out[i] = value
    return out


def batches_in(loader) -> int:
    """The number of batches of a loader, or 0 where it has no length (a stream)."""
    try:
        return len(loader)
    except TypeError:
        return 0


def examples_in(batch) -> int | None:
    """The rows of a batch: the first dimension of its first tensor (a dict's, a tuple's, or the batch itself)."""
    values = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, list | tuple) else [batch]
    for value in values:
        shape = getattr(value, "shape", None)
        if shape is not None and len(shape) > 0:
            return int(shape[0])
    return None

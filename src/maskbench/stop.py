"""Stop and save requests to a training job, by signal.

* **SIGTERM** (a time limit reached, a pre-emption, ``scancel``, a ``kill``): the loop saves its resume state at the
  next step boundary and the step exits with ``STOPPED_EXIT`` (75, EX_TEMPFAIL: "try again").
* **SIGUSR1** (the warning the SLURM profile asks for a few minutes before a job's time limit, ``--signal``): the
  loop saves its resume state at the next step boundary and goes on. The job keeps its whole time, and when the
  limit's SIGTERM comes the last state is at most that warning old even if the second save is cut off by SLURM's
  SIGKILL (``KillWait`` seconds after the SIGTERM).

While ``training.loop.fit`` runs the signals only set a flag (``stop_signals``); the loop reads it after every optimiser
step (``requested``, ``take_save_request``), saves the state (``maskbench.resume``) and, for a stop, raises
``StopRequested``, which ``steps.run_step`` turns into one line and exit status 75. Nothing the step declares as an
output has been written at that point (every step writes its outputs after training, through a temporary name), so
snakemake treats the job as failed: it deletes partial outputs and resubmits it (the profile's ``retries``) or
reruns it (``--rerun-incomplete``), and the step goes on from the saved state. Outside a training loop the signals
keep their usual meaning (SIGTERM ends the process), except in the NLU evaluations, which stop after the set they
are scoring (maskbench/workflow/staged_evaluation.py). A stop received
once stays for the rest of the process: a sweep whose run is finishing when it arrives stops before the next run.

Standard library only: the step launcher imports it before torch.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOPPED_EXIT = 75
"""A step's exit status after a stop request it honoured: its state is saved, a rerun goes on from it."""

SIGNALS = ("SIGTERM", "SIGUSR1")

_requested: str | None = None
_save_requested = False


class StopRequested(BaseException):
    """Raised by the training loop once the state is saved (or, without a resume state, at once). A BaseException,
    as KeyboardInterrupt: no ``except Exception`` on the way may swallow it."""

    def __init__(self, signal_name: str, step: int, total: int, state: str | None, unit: str = "step"):
        self.signal_name, self.step, self.total, self.state = signal_name, step, total, state
        where = (f"state saved to {state}; a rerun goes on from {unit} {step}" if state is not None
                 else "no resume state (checkpoint_every 0): a rerun starts from step 0")
        super().__init__(f"stopped on {signal_name} after {unit} {step} of {total}: {where}")


def requested() -> str | None:
    """The name of the signal that asked this process to stop, or None."""
    return _requested


def request(name: str = "SIGTERM") -> None:
    """Ask the running loop to stop at its next step boundary, as the signal would (used by the signal handler and
    by tests)."""
    global _requested
    _requested = name


def request_save() -> None:
    """Ask the running loop to save its state at its next step boundary and go on (SIGUSR1)."""
    global _save_requested
    _save_requested = True


def take_save_request() -> bool:
    """Whether a save was asked for since the last call (the request is used up)."""
    global _save_requested
    asked, _save_requested = _save_requested, False
    return asked


def clear() -> None:
    """Forget every request (tests; a process is never asked to go on once asked to stop)."""
    global _requested, _save_requested
    _requested, _save_requested = None, False


def _handler(signum, frame) -> None:  # noqa: ARG001 - the signal module's signature
    if signum == signal.SIGUSR1:
        request_save()
    else:
        request(signal.Signals(signum).name)


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """While the block runs, SIGTERM sets the stop flag and SIGUSR1 the save flag instead of ending the process;
    the handlers of before are put back afterwards. Off the main thread (where Python cannot take signals) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {}
    for name in SIGNALS:
        number = getattr(signal, name)
        before[number] = signal.signal(number, _handler)
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)

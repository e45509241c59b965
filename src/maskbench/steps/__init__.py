"""The rule entry points, one module per step, grouped by track: `steps/nlu/` (papers A and C), `steps/gender/`
(paper B), `steps/vision/` (paper D); `steps/prepare.py` serves both text tracks, `steps/fetch.py` and
`steps/download.py` are the login node's downloads. Each parses its arguments, calls the library, writes its
outputs and ends with `run_step(main)`; none imports another.

Rules start a step through the launcher, `python -m maskbench.steps <track>.<step> ARGS` (steps/__main__.py), which
hands the job to the warm runner (maskbench/workflow/warm.py) when one listens and otherwise runs it in its own process.
`python -m maskbench.steps.<track>.<step> ARGS` runs the same step, always in its own process. Entry points that no
rule calls live in maskbench/tools/."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import NoReturn

from maskbench import errors, stop
from maskbench.workflow import step_timing, warm

_IMPORTED = time.time()


def run_step(main: Callable[[], int | None]) -> NoReturn:
    """Run a step's `main()`, write its timing line to stderr (maskbench/workflow/step_timing.py) and exit with its code.

    A user-facing error of the library (a bad data, mask or checkpoint file, a mask of another model, ...;
    maskbench/errors.py) ends the step with one line, ``<step module>: error: <message>``, and exit code 1; any
    other exception is a bug and keeps its traceback. A step that stopped when asked to (SIGTERM or SIGUSR1 during
    training, maskbench/stop.py) ends with one line and exit code 75 (``stop.STOPPED_EXIT``), its state saved."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    module = main.__module__ if main.__module__ != "__main__" else (spec.name if spec is not None else "?")
    work_started = time.time()
    code: int | None = 1
    try:
        code = main()
    except stop.StopRequested as err:
        print(f"{module}: stopped: {err}", file=sys.stderr, flush=True)
        code = stop.STOPPED_EXIT
    except Exception as err:
        if not errors.is_user_error(err):
            raise
        print(f"{module}: error: {errors.one_line(err)}", file=sys.stderr, flush=True)
        code = 1
    finally:
        ended = time.time()
        step = module.rsplit(".", 1)[-1]
        started = warm.JOB_STARTED or step_timing.process_started() or _IMPORTED
        print(step_timing.timing_line(step, started, work_started, ended, warm.JOB_STARTED is not None,
                                      step_timing.peak_rss_mb()), file=sys.stderr, flush=True)
    sys.exit(code)

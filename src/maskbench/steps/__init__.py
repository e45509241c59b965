"""The `python -m maskbench.steps.<step>` entry points: each parses its arguments, calls the library and writes
its outputs. None imports another; each ends with `run_step(main)`.

Imported before the step itself: in a local snakemake run the step is handed to the warm runner here
(maskbench/warm.py), which has torch and transformers imported already; otherwise this returns and the step runs
in this process."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import NoReturn

from maskbench import step_timing, warm

_IMPORTED = time.time()
warm.delegate_if_warm()


def run_step(main: Callable[[], int | None]) -> NoReturn:
    """Run a step's `main()`, write its timing line to stderr (maskbench/step_timing.py) and exit with its code."""
    work_started = time.time()
    code: int | None = 1
    try:
        code = main()
    finally:
        ended = time.time()
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        step = spec.name.rsplit(".", 1)[-1] if spec is not None else "?"
        started = warm.JOB_STARTED or step_timing.process_started() or _IMPORTED
        print(step_timing.timing_line(step, started, work_started, ended, warm.JOB_STARTED is not None),
              file=sys.stderr, flush=True)
    sys.exit(code)

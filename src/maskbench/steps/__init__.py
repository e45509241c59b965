"""The rule entry points, one module per step, grouped by track: `steps/nlu/` (papers A and C), `steps/gender/`
(paper B), `steps/vision/` (paper D); `steps/prepare.py` serves both text tracks, `steps/fetch.py` and
`steps/download.py` are the login node's downloads. Each is its argument dataclass (its own fields, then the
shared ones of maskbench/compute.py it names), a `main(args)` made into the entry point by `@step_main`, which
calls the library and writes its outputs, and `run_step(main)` at the end; none imports another.

Rules start a step through the launcher, `python -m maskbench.steps <track>.<step> ARGS` (steps/__main__.py), which
hands the job to the warm runner (maskbench/workflow/warm.py) when one listens and otherwise runs it in its own process.
`python -m maskbench.steps.<track>.<step> ARGS` runs the same step, always in its own process. Entry points that no
rule calls live in maskbench/tools/."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import NoReturn, TypeVar

from maskbench import errors, stop
from maskbench.cli import parse_dataclass, setup_logging
from maskbench.workflow import step_timing, warm

_IMPORTED = time.time()
T = TypeVar("T")


def _step_module(function: Callable) -> str:
    """The module a step's function is defined in, by its name also when it runs as ``__main__``."""
    spec = function.__globals__.get("__spec__")
    name = function.__globals__.get("__name__", "?")
    return spec.name if name == "__main__" and spec is not None else name


def step_main(arguments: type[T]) -> Callable[[Callable[[T], int | None]], Callable[..., int | None]]:
    """Make a step's ``main(args)`` its entry point ``main(argv=None)``: logging set up, then ``arguments`` (a
    dataclass) parsed from ``argv`` by ``cli.parse_dataclass`` with the usage ``python -m maskbench.steps
    <track>.<step>`` and the first line of the step module's docstring, then ``main(args)`` called. The parser alone
    is the entry point's ``parse_args(argv=None)``."""

    def make(body: Callable[[T], int | None]) -> Callable[..., int | None]:
        module = _step_module(body)
        prog = "python -m maskbench.steps " + module.removeprefix("maskbench.steps.")
        description = (body.__globals__.get("__doc__") or "").partition("\n")[0]

        def parse_args(argv: list[str] | None = None) -> T:
            return parse_dataclass(arguments, argv, prog, description)

        @functools.wraps(body)
        def main(argv: list[str] | None = None) -> int | None:
            setup_logging()
            return body(parse_args(argv))

        main.parse_args = parse_args
        return main

    return make


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

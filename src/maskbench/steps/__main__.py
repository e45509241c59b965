"""The launcher the rules call: `python -m maskbench.steps <track>.<step> ARGS`.

It hands the job to the warm runner (maskbench/workflow/warm.py) when a server listens, before anything heavy is imported,
and otherwise runs `maskbench.steps.<track>.<step>` in this process, as `python -m maskbench.steps.<track>.<step>
ARGS` would. The hand-off is this module's explicit call: importing a step module never hands anything over."""

from __future__ import annotations

import importlib.util
import runpy
import sys

from maskbench.workflow import warm

USAGE = "usage: python -m maskbench.steps <track>.<step> [ARGS]   (e.g. nlu.finetune, gender.seat, prepare)"


def main(argv: list[str]) -> None:
    if not argv or argv[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    module = warm.STEP_PREFIX + argv[0]
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        print(f"maskbench.steps: no step {argv[0]!r} ({module} does not exist)\n{USAGE}", file=sys.stderr)
        sys.exit(2)
    warm.delegate_if_warm(module, argv[1:])  # returns only when no server takes the job
    sys.argv = [module, *argv[1:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])

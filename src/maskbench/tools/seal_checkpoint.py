"""Tool (no rule calls it): add the checksum to model checkpoints written before maskbench checksummed them.

    python -m maskbench.tools.seal_checkpoint results/nlu/models/.../seed~1 results/vision/.../model.safetensors

Every loader refuses a maskbench checkpoint without its checksum (maskbench/checkpoint_integrity.py): its bytes
cannot be told from damaged ones. Rerunning the job that wrote it is the safe way on; this tool is the other, for
files you trust: it writes the checksum of the file as it is now into its header (the tensors are not touched).
Each argument is a ``.safetensors`` file or a folder (its ``*.safetensors`` files). A file that already has a
checksum is only verified — one whose bytes no longer match it is refused, not sealed again. Exit code 1 when any
file was refused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from maskbench.checkpoint_integrity import (
    DIGEST_KEY,
    METADATA_KEY,
    CheckpointError,
    check_safetensors,
    seal_safetensors,
    verify_safetensors,
)


def files_of(paths: list[Path]) -> list[Path]:
    """The safetensors files named or inside the folders named, in order."""
    found = []
    for path in paths:
        found += sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
    return found


def has_checksum(path: Path) -> bool:
    import json

    with open(path, "rb") as handle:
        length = int.from_bytes(handle.read(8), "little")
        metadata = json.loads(handle.read(length)).get(METADATA_KEY) or {}
    return DIGEST_KEY in metadata


def seal(path: Path) -> str:
    """What was done to ``path``: verified (it had a checksum) or sealed; a CheckpointError when refused."""
    check_safetensors(path)
    if has_checksum(path):
        verify_safetensors(path)
        return "OK: its checksum matches (left as it is)"
    digest = seal_safetensors(path)
    verify_safetensors(path)
    return f"sealed: sha256 {digest}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maskbench.tools.seal_checkpoint",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="safetensors files or checkpoint folders")
    args = parser.parse_args(argv)
    files = files_of(args.paths)
    if not files:
        parser.error(f"no .safetensors file in {', '.join(map(str, args.paths))}")
    refused = 0
    for path in files:
        try:
            print(f"{path}: {seal(path)}")
        except (CheckpointError, OSError) as err:
            print(f"maskbench.tools.seal_checkpoint: error: {err}", file=sys.stderr)
            refused += 1
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())

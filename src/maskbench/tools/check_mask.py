"""Entry point: check mask files (checksums, layout, decoding) and print every module's density.

    python -m maskbench.tools.check_mask results/nlu/mnli/.../seed~1.mask [more.mask ...]

Reads each file the way every step does (`maskbench.masking.codec.read_mask_file`: the header's sha256, each
module's CRC32, then its decoding) and prints, per module, its shape, encoding, payload bytes, density and OK,
then one line per file. Exit status 0 when every file is sound, 1 when any is not (the message names the file,
and the module when its payload is damaged); nothing is written.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from maskbench.masking.codec import MaskFileError, read_mask_file, read_mask_header
from maskbench.masking.density import density, module_density
from maskbench.steps import run_step

# the recorded densities (`MaskSet.save`) are floats of the same counts: they agree to rounding
_TOLERANCE = 1e-9


def check_file(path: Path, out=None) -> None:
    """Print the report of one file (to ``out``, default stdout); raise MaskFileError when it is damaged or
    inconsistent."""
    out = out or sys.stdout
    masks, meta = read_mask_file(path)
    modules = {m["name"]: m for m in read_mask_header(path)["modules"]}
    recorded = meta.get("module_density") or {}
    densities = module_density(masks)
    for name, value in densities.items():
        expected = recorded.get(name)
        if isinstance(expected, float) and not (math.isnan(value) or abs(expected - value) <= _TOLERANCE):
            raise MaskFileError(f"{path}: module {name!r}: density {value:.6f} but the header records {expected:.6f}")
    what = ", ".join(f"{key} {meta[key]}" for key in ("method", "loss", "seed") if key in meta)
    print(f"{path}: OK — {len(masks)} modules, density {density(masks):.4f}, {path.stat().st_size} bytes"
          + (f" ({what})" if what else ""), file=out)
    width = max((len(name) for name in masks), default=0)
    for name, value in densities.items():
        entry = modules[name]
        shape = "x".join(map(str, entry["shape"])) or "scalar"
        print(f"  {name:<{width}}  {shape:>11}  {entry['encoding']:<8} {entry['nbytes']:>9} B  "
              f"density {value:.4f}  OK", file=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maskbench.tools.check_mask", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="mask files to check")
    args = parser.parse_args(argv)
    failed = 0
    for path in args.files:
        try:
            check_file(path)
        except (MaskFileError, OSError) as err:
            failed += 1
            print(f"maskbench.tools.check_mask: error: {err}", file=sys.stderr)
    if len(args.files) > 1:
        print(f"{len(args.files) - failed} of {len(args.files)} mask files OK")
    return 1 if failed else 0


if __name__ == "__main__":
    run_step(main)

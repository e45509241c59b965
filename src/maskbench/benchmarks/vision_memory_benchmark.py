"""Peak memory of preparing and reading a CelebA-layout split: whole-array (the reader before the streamed one) against
streamed (a chunk of rows at a time), each in its own process.

    python -m maskbench.benchmarks.vision_memory_benchmark --n 1300 --size 224 --out results/benchmarks/vision_memory.json

Writes ``n`` tiny CelebA JPEGs (``maskbench.miniature.vision_sources``), then per mode: read CelebA's splits at
``size`` px, write the train split, read it back with its checksum, one pass over batches of 32. ``ru_maxrss``
is taken after the imports (baseline) and at the end (peak); glibc's mmap threshold is fixed at 1 MiB so that
freed batches are not counted as the allocator's retained heap.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CELEBA_TRAIN = 162_770
MODES = ("whole_array", "streamed")

SCRIPT = '''
import hashlib, resource, sys
from pathlib import Path
import numpy as np, pandas, torch, PIL.Image  # noqa: F401
from maskbench.tracks.vision import images as im
from maskbench.tracks.vision.data import image_dataset, loader
from maskbench.tracks.vision.sources import read_celeba_folder
mode, root, out, size = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
train = read_celeba_folder(root, image_size=size)["train"]
if mode == "whole_array":  # what the code did before: a decoded array, save_file's copy, get_tensor + tobytes()
    from safetensors.numpy import save_file
    from safetensors import safe_open
    train.images = np.asarray(train.images)
    tensors, metadata = im._to_file(train)
    save_file({k: v for k, v in tensors.items()}, str(out), metadata=metadata)
    del tensors
    with safe_open(str(out), framework="np") as handle:
        loaded = {k: handle.get_tensor(k) for k in handle.keys()}
    digest = hashlib.sha256()
    for name in sorted(loaded):
        digest.update(loaded[name].tobytes())
    train.images = loaded["images"]
    back = train
else:
    im.write_images(out, train)
    back = im.read_images(out)
seen = 0
for batch in loader(image_dataset(back, {}), 32):
    seen += int(batch["image"].shape[0])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(baseline * 1024, peak * 1024, seen, out.stat().st_size)
'''


def measure(mode: str, root: Path, out: Path, size: int) -> dict:
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 20)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode, str(root), str(out), str(size)], capture_output=True,
                          text=True, env=env, check=False)
    if done.returncode:
        raise RuntimeError(f"vision memory benchmark, mode {mode}: {done.stderr.strip().splitlines()[-1:]}")
    baseline, peak, seen, file_bytes = (int(v) for v in done.stdout.split())
    return {"baseline_rss_bytes": baseline, "peak_rss_bytes": peak, "above_baseline_bytes": peak - baseline,
            "file_bytes": file_bytes, "above_baseline_per_file_byte": (peak - baseline) / file_bytes,
            "images_in_epoch": seen}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1300, help="train images (CelebA layout)")
    parser.add_argument("--size", type=int, default=224, help="image side after resizing")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/vision_memory.json"))
    args = parser.parse_args(argv)
    from maskbench.miniature.vision_sources import celeba_image_bytes, write_celeba_files
    from maskbench.runtime import atomic_write_text

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "celeba"
        tiny = [celeba_image_bytes(i) for i in range(16)]
        rows = [(0, {"Blond_Hair": 1 if i % 2 else -1, "Male": 1 if i % 3 else -1}) for i in range(args.n)]
        rows += [(p, {"Blond_Hair": b, "Male": m}) for p in (1, 2) for b in (-1, 1) for m in (-1, 1)]
        write_celeba_files(root, rows, image_bytes=lambda i: tiny[i % 16])
        results = {mode: measure(mode, root, Path(tmp) / f"{mode}.safetensors", args.size) for mode in MODES}
    celeba_bytes = CELEBA_TRAIN * 3 * args.size * args.size
    record = {"n_train": args.n, "image_size": args.size, "batch_size": 32, "modes": results,
              "celeba_train_file_bytes": celeba_bytes,
              # whole-array memory grows with the file; streamed memory is a chunk plus a batch, whatever the file
              "celeba_train_estimate_peak_bytes": {
                  "whole_array": results["whole_array"]["baseline_rss_bytes"]
                  + results["whole_array"]["above_baseline_per_file_byte"] * celeba_bytes,
                  "streamed": results["streamed"]["peak_rss_bytes"]}}
    atomic_write_text(args.out, json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

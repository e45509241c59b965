"""Compare two runs' output trees file by file: the proof that a change moved no number.

python -m maskbench.tools.compare_results BEFORE AFTER [--rename OLD=NEW ...] [--out REPORT.json]

Every file below BEFORE (but for logs, benchmarks and snakemake's own folders) must exist below AFTER, at the
same relative path or at the path a `--rename OLD=NEW` prefix rule gives, and hold the same values:
- `.safetensors`: every tensor bit for bit (the header's metadata names the host and the commit);
- `.parquet`: the frames cell for cell;
- `.json`: the documents equal once the keys that record where, when, how fast and at which commit a job ran are
  dropped (`provenance`, IGNORED_JSON_KEYS, any key ending in `seconds`) and each tree's project folder is taken
  out of the paths the documents name;
- `.csv` that differ in bytes (training curves): equal once the timing columns (`seconds`, `*_seconds`) are
  dropped, and counted apart ("csv without timing") so that a report shows which files needed it;
- `.mask` that differ in bytes: every mask equal and the metadata equal once its `provenance` (the step's command
  line, which a change of the rules may reorder) is dropped, counted apart ("mask without provenance");
- anything else (Markdown / LaTeX tables, mask files, figures): byte for byte.
Files only AFTER has are listed, not failed (a change may add outputs). Exit code 0 when every file matches, 1
otherwise; the report lists each mismatch with what differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections import Counter
from pathlib import Path

from maskbench.runtime import atomic_path

SKIPPED_PARTS = {"logs", "benchmarks", ".snakemake", "warm"}
SKIPPED_FILES = {"README.md"}  # results/README.md: the map of outputs, part of the repository
# keys whose values say where, when, how fast or at which commit a job ran, at any depth
IGNORED_JSON_KEYS = {"provenance", "seconds", "wall_seconds", "train_seconds", "elapsed_s", "started", "ended",
                     "host", "hostname", "commit", "git_commit", "duration_s", "time_s", "startup_s", "work_s"}


def _outputs(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*")
                  if p.is_file() and not SKIPPED_PARTS & set(p.relative_to(root).parts)
                  and p.relative_to(root).as_posix() not in SKIPPED_FILES)


def renamed(rel: Path, rules: list[tuple[str, str]]) -> Path:
    text = rel.as_posix()
    for old, new in rules:
        if text == old or text.startswith(old.rstrip("/") + "/"):
            return Path(new + text[len(old):])
    return rel


def timing_key(key: str) -> bool:
    return key in IGNORED_JSON_KEYS or key.endswith("seconds")


def without_ignored(value, project: str = ""):
    """`value` without timing and provenance keys, `project` (a tree's project folder) replaced in its strings."""
    if isinstance(value, dict):
        return {k: without_ignored(v, project) for k, v in value.items() if not timing_key(k)}
    if isinstance(value, list):
        return [without_ignored(v, project) for v in value]
    if isinstance(value, str) and project:
        return value.replace(project, "<project>")
    return value


def _json_equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def compare_file(before: Path, after: Path, projects: tuple[str, str] = ("", "")) -> tuple[str, str | None]:
    """(how it was compared, None when equal or what differs); `projects` are the trees' project folders."""
    if before.suffix == ".safetensors":
        import torch
        from safetensors.torch import load_file

        a, b = load_file(before), load_file(after)
        if a.keys() != b.keys():
            return "tensors", f"tensor names differ: {sorted(set(a) ^ set(b))[:5]}"
        bad = [k for k in a if a[k].dtype != b[k].dtype or not torch.equal(a[k], b[k])]
        return "tensors", (f"{len(bad)} of {len(a)} tensors differ, e.g. {bad[0]}" if bad else None)
    if before.suffix == ".parquet":
        import pandas as pd

        try:
            pd.testing.assert_frame_equal(pd.read_parquet(before), pd.read_parquet(after))
        except AssertionError as err:
            return "frame", str(err).splitlines()[0]
        return "frame", None
    if before.suffix == ".json":
        try:
            a, b = json.loads(before.read_text()), json.loads(after.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError):
            pass
        else:
            if _json_equal(without_ignored(a, projects[0]), without_ignored(b, projects[1])):
                return "json", None
            return "json", "values differ (timing and provenance keys ignored)"
    same = hashlib.sha256(before.read_bytes()).digest() == hashlib.sha256(after.read_bytes()).digest()
    if not same and before.suffix == ".mask":
        return "mask without provenance", _mask_difference(before, after, projects)
    if same or before.suffix != ".csv":
        return "bytes", None if same else "bytes differ"
    import pandas as pd

    a, b = pd.read_csv(before), pd.read_csv(after)
    timing = [c for c in a.columns if timing_key(str(c))]
    if not timing:
        return "bytes", "bytes differ"
    try:
        pd.testing.assert_frame_equal(a.drop(columns=timing), b.drop(columns=[c for c in timing if c in b]))
    except (AssertionError, KeyError) as err:
        return "csv without timing", str(err).splitlines()[0]
    return "csv without timing", None


def _mask_difference(before: Path, after: Path, projects: tuple[str, str]) -> str | None:
    import numpy as np

    from maskbench.masking.codec import read_mask_file

    (masks_a, meta_a), (masks_b, meta_b) = read_mask_file(before), read_mask_file(after)
    if masks_a.keys() != masks_b.keys():
        return f"masked modules differ: {sorted(set(masks_a) ^ set(masks_b))[:5]}"
    bad = [k for k in masks_a if not np.array_equal(masks_a[k], masks_b[k])]
    if bad:
        return f"{len(bad)} of {len(masks_a)} masks differ, e.g. {bad[0]}"
    if not _json_equal(without_ignored(meta_a, projects[0]), without_ignored(meta_b, projects[1])):
        return "metadata differs (provenance ignored)"
    return None


def compare_trees(before: Path, after: Path, rules: list[tuple[str, str]]) -> dict:
    counted: Counter = Counter()
    mismatches, missing = [], []
    projects = (str(before.resolve().parent), str(after.resolve().parent))
    for rel in _outputs(before):
        target = after / renamed(rel, rules)
        if not target.is_file():
            missing.append(rel.as_posix())
            continue
        how, problem = compare_file(before / rel, target, projects)
        counted[how] += 1
        if problem:
            mismatches.append({"file": rel.as_posix(), "compared": how, "differs": problem})
    mapped = {renamed(rel, rules).as_posix() for rel in _outputs(before)}
    only_after = [rel.as_posix() for rel in _outputs(after) if rel.as_posix() not in mapped]
    return {"before": str(before), "after": str(after), "renames": [f"{o}={n}" for o, n in rules],
            "compared": dict(sorted(counted.items())), "equal": sum(counted.values()) - len(mismatches),
            "mismatches": mismatches, "missing_after": missing, "only_after": only_after}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maskbench.tools.compare_results", description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                        help="a path prefix of BEFORE and where AFTER has it (repeatable)")
    parser.add_argument("--out", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    for folder in (args.before, args.after):
        if not folder.is_dir():
            print(f"compare_results: {folder} is not a folder", file=sys.stderr)
            return 2
    rules = []
    for rule in args.rename:
        old, sep, new = rule.partition("=")
        if not sep or not old:
            print(f"compare_results: --rename {rule!r} is not OLD=NEW", file=sys.stderr)
            return 2
        rules.append((old, new))
    report = compare_trees(args.before, args.after, rules)
    if args.out:
        with atomic_path(args.out) as tmp:
            Path(tmp).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"{report['equal']} files equal ({report['compared']}), {len(report['mismatches'])} differ, "
          f"{len(report['missing_after'])} missing after, {len(report['only_after'])} only after")
    for item in report["mismatches"][:20]:
        print(f"  differs: {item['file']} ({item['compared']}: {item['differs']})")
    for rel in report["missing_after"][:20]:
        print(f"  missing after: {rel}")
    return 0 if not report["mismatches"] and not report["missing_after"] else 1


if __name__ == "__main__":
    sys.exit(main())

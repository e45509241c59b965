"""A write that fails for lack of disk space (src/maskbench/runtime.py's atomic_path, and checkpoints): nothing that
looks complete is left — neither the file nor its temporary — and the one-line message names the file, the bytes it
needed and the bytes free. On a real full file system (a small tmpfs, mounted where the tests run as root) and, where
mounting is not allowed, on a writer that raises ENOSPC."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from maskbench import errors, runtime
from maskbench.masking.codec import write_mask_file

REPO = Path(__file__).resolve().parents[1]
SIZE = 256 * 1024


def left_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.fixture
def full_disk(tmp_path):
    """A 256-KiB tmpfs filled but for about 20 KB (root only: skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()[:80]})")
    try:
        (mount / "filler").write_bytes(b"\0" * (SIZE - 20 * 1024))
        (mount / "out").mkdir()
        yield mount / "out"
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_write_that_fills_the_disk_leaves_nothing_and_names_the_file_and_the_bytes(full_disk):
    free = runtime.free_bytes(full_disk)
    assert 0 < free <= 20 * 1024
    # a writer that does not know its size (parquet): more than what it wrote before the device filled
    frame = pd.DataFrame({"text": [os.urandom(64).hex() for _ in range(2000)]})  # ~260 KB of incompressible text
    with pytest.raises(runtime.DiskFullError) as caught:
        runtime.atomic_write_parquet(frame, full_disk / "data.parquet")
    message = str(caught.value)
    assert message.startswith(f"{full_disk / 'data.parquet'}: no space left on the device writing it: needed more "
                              "than the ")
    assert f"bytes written before the device filled, {runtime.free_bytes(full_disk):,} bytes free there" in message
    assert errors.is_user_error(caught.value) and "\n" not in message
    assert left_in(full_disk) == []  # no file, no temporary
    # a writer that knows its size (JSON, a mask file) is refused before it writes a byte, with the exact size
    record = {"values": list(range(10_000))}
    needed = len(json.dumps(record, indent=2)) + 1  # the file's bytes, its last newline included
    with pytest.raises(runtime.DiskFullError) as caught:
        runtime.atomic_write_json(full_disk / "record.json", record)
    assert str(caught.value).startswith(f"{full_disk / 'record.json'}: no space left on the device writing it: "
                                        f"needed {needed:,} bytes, {runtime.free_bytes(full_disk):,} bytes free there")
    with pytest.raises(runtime.DiskFullError, match=r"seed~1\.mask: no space left on the device writing it: needed "):
        write_mask_file(full_disk / "seed~1.mask", {"w": np.random.default_rng(0).random(400_000) < 0.5}, {})
    assert left_in(full_disk) == []


def test_a_checkpoint_that_fills_the_disk_leaves_no_finished_looking_folder(full_disk):
    from tiny_models import tiny_bert

    from maskbench.checkpoints import write_checkpoint
    from maskbench.text.models import data_vocab_tokenizer

    tokenizer = data_vocab_tokenizer(["the cat sat", "a dog ran"], full_disk.parent.parent / "vocab")
    model = tiny_bert(layers=4)  # about 40 KB of weights for the 20 KB left
    weights = sum(p.numel() * p.element_size() for p in model.state_dict().values())
    with pytest.raises(runtime.DiskFullError) as caught:
        write_checkpoint(full_disk / "seed~1", model, tokenizer, {"seed": 1})
    assert str(caught.value).startswith(f"{full_disk / 'seed~1/model.safetensors'}: no space left on the device "
                                        f"writing it: needed about {weights:,} bytes")
    assert not (full_disk / "seed~1/train_summary.json").exists()
    assert [name for name in left_in(full_disk) if name.startswith(".")] == []  # the staging folder is gone


def test_a_step_that_fills_the_disk_ends_in_one_line_naming_the_file(full_disk):
    out = full_disk / "mnli_dev.parquet"
    spec = {"task": "mnli", "source": "local:data/nli/mnli_dev_matched.tsv", "format": "tsv",
            "columns": {"id": "index", "text_a": "premise", "text_b": "hypothesis", "label": "gold_label"},
            "labels": ["entailment", "neutral", "contradiction"]}
    result = subprocess.run([sys.executable, "-m", "maskbench.steps.prepare", "--name", "mnli_dev", "--spec",
                             json.dumps(spec), "--local-file", str(REPO / "data/nli/mnli_dev_matched.tsv"), "--out",
                             str(out), "--summary", str(full_disk / "mnli_dev.summary.json")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    [line] = [row for row in result.stderr.splitlines() if ": error: " in row]
    assert line.startswith(f"maskbench.steps.prepare: error: {out}: no space left on the device writing it: needed ")
    assert left_in(full_disk) == []


def test_a_writer_failing_with_enospc_anywhere_is_named_and_cleaned(tmp_path):
    """Where no tmpfs can be mounted: a writer that writes some bytes and then meets ENOSPC, the way pyarrow,
    safetensors and torch report it."""
    def writer(tmp: Path, error: BaseException):
        tmp.write_bytes(b"x" * 1000)
        raise error

    for error in (OSError(errno.ENOSPC, "No space left on device"),
                  OSError("IOError: [Errno 28] error writing: No space left on device"),  # pyarrow: errno unset
                  RuntimeError("Error while serializing: IoError(Os { code: 28, kind: StorageFull })"),  # safetensors
                  OSError(errno.EDQUOT, "Disk quota exceeded")):
        with pytest.raises(runtime.DiskFullError) as caught:
            with runtime.atomic_path(tmp_path / "x.bin") as tmp:
                writer(tmp, error)
        assert "x.bin: no space left on the device writing it: needed more than the 1,000 bytes written" in str(
            caught.value)
        assert caught.value.__cause__ is error and left_in(tmp_path) == []
    with pytest.raises(ValueError, match="not a disk"):  # any other failure is not renamed
        with runtime.atomic_path(tmp_path / "x.bin") as tmp:
            writer(tmp, ValueError("not a disk"))
    assert left_in(tmp_path) == []


def test_a_resume_state_that_fills_the_disk_keeps_the_last_good_one_and_says_so_in_one_line(full_disk):
    import torch

    from maskbench.resume import read_state, write_state

    path = full_disk / "model.safetensors.state"
    write_state(path, {"step": 100, "weights": torch.zeros(100)})  # about 2 KB: fits
    with pytest.raises(runtime.DiskFullError) as caught:
        write_state(path, {"step": 200, "weights": torch.zeros(50_000)})  # 200 KB: does not
    message = str(caught.value)
    assert message.startswith(f"{path}: no space left on the device writing it: needed more than the ")
    assert message.endswith(f"; the last good state ({path.name}) is kept: a rerun goes on from its step")
    assert "\n" not in message and errors.is_user_error(caught.value)
    assert read_state(path)["step"] == 100  # verified against its checksum, whole
    assert left_in(full_disk) == [path.name]  # no temporary, no .prev
